/// The export options of an extension that declares none of its own.
///
/// AppMigrationKit documents no options for it, and neither does this module: ``allCases`` is
/// empty, and the host never puts an option in a ``MigrationRequest`` it builds, so a
/// ``ResourcesExporting`` extension receives an empty options dictionary. It is a struct rather
/// than an enum without cases so that code iterating over a request's options (as the reference
/// patterns do) compiles without a warning about an uninhabited type.
public struct MigrationDefaultSupportedOptions: CaseIterable, Hashable, Sendable, RawRepresentable {
    /// The option's name.
    public let rawValue: String

    /// An option named `rawValue`; no host sends one.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// No option is defined.
    public static var allCases: [MigrationDefaultSupportedOptions] { [] }
}
