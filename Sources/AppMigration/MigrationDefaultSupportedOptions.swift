/// The export options of an extension that declares none of its own.
///
/// AppMigrationKit documents no cases for it, and neither does this module: the type has no
/// values, so a ``ResourcesExporting`` extension always receives an empty options dictionary. It
/// exists so that ``MigrationRequest`` has a concrete options type.
public enum MigrationDefaultSupportedOptions: CaseIterable, Hashable, Sendable, RawRepresentable {
    /// No raw value names an option.
    public init?(rawValue: String) {
        nil
    }

    public var rawValue: String {
        switch self {}
    }
}
