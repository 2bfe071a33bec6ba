/// The export options of an extension that declares none of its own.
///
/// As in AppMigrationKit it is an enumeration without cases: no value of it exists, so a
/// ``MigrationRequest`` never carries an option, `init?(rawValue:)` always fails, and an empty
/// `switch` over a value of it is exhaustive. An option from a request in another options type
/// (through the tester's generic export, or a destination that sends one) cannot be converted and
/// is dropped before a ``ResourcesExporting`` extension sees the request.
public enum MigrationDefaultSupportedOptions: CaseIterable, Hashable, Sendable, RawRepresentable {
    /// No option is defined: an empty array.
    public static let allCases: [MigrationDefaultSupportedOptions] = []

    /// Always `nil`: there is no option to name.
    public init?(rawValue: String) {
        return nil
    }

    /// The option's name; never called, since no value exists.
    public var rawValue: String {
        switch self {}
    }
}
