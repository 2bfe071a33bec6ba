/// The platform of the other device in a migration: where exported data goes, or where imported
/// data came from.
///
/// A struct rather than an enum, as in AppMigrationKit, so that a migration between two platforms
/// this module has never heard of can still be described: `MigrationPlatform("windows")`.
public struct MigrationPlatform: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
    /// The platform's name, compared exactly and recorded in archives.
    public let rawValue: String

    /// The platform named `rawValue`.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// A platform named by `rawValue`, for platforms without a constant here.
    public init(_ rawValue: String) {
        self.rawValue = rawValue
    }

    /// Android devices.
    public static let android = MigrationPlatform("android")
    /// Apple's iOS and iPadOS.
    public static let iOS = MigrationPlatform("iOS")
    /// Linux.
    public static let linux = MigrationPlatform("linux")
    /// macOS.
    public static let macOS = MigrationPlatform("macOS")

    /// The platform this process runs on; recorded as the source platform of an export when the
    /// caller does not name one.
    public static var current: MigrationPlatform {
        #if os(Linux)
            .linux
        #elseif os(macOS)
            .macOS
        #elseif os(iOS)
            .iOS
        #else
            MigrationPlatform("unknown")
        #endif
    }

    /// The raw value, as archive metadata records it.
    public var description: String { rawValue }
}
