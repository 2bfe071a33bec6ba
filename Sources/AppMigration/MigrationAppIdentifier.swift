/// Identifies an app on the other side of a migration: the store it came from, its bundle (or
/// package) identifier there, and its platform.
///
/// The importer receives the source app's identifier in ``ResourcesImportRequest`` and can use it
/// to tell, say, the Android build of the app from a sibling app with a different data layout.
public struct MigrationAppIdentifier: Sendable, Hashable, Codable {
    /// The store an app is distributed through.
    public struct StoreIdentifier: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
        /// The store's name, as recorded in archives.
        public let rawValue: String

        /// The store named `rawValue`.
        public init(rawValue: String) {
            self.rawValue = rawValue
        }

        /// A store named by `rawValue`.
        public init(_ rawValue: String) {
            self.rawValue = rawValue
        }

        /// Google Play, where the Android apps that migrate to iOS come from.
        public static let googlePlay = StoreIdentifier("googlePlay")
        /// The store was not recorded in the archive (an archive exported without a source app
        /// identity, or by another tool).
        public static let unknown = StoreIdentifier("unknown")

        /// The raw value, as archive metadata records it.
        public var description: String { rawValue }
    }

    /// The store the app was installed from.
    public var storeIdentifier: StoreIdentifier
    /// The app's identifier in that store (a bundle identifier, or an Android package name).
    public var bundleIdentifier: String
    /// The platform the app runs on.
    public var platform: MigrationPlatform

    /// The app `bundleIdentifier` from `storeIdentifier` on `platform`.
    public init(storeIdentifier: StoreIdentifier, bundleIdentifier: String, platform: MigrationPlatform) {
        self.storeIdentifier = storeIdentifier
        self.bundleIdentifier = bundleIdentifier
        self.platform = platform
    }
}
