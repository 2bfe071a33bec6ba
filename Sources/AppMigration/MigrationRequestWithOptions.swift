public import Foundation

/// What the destination asks of an export: its platform, and the data categories it wants.
///
/// The options are the extension's own ``ResourcesExportingWithOptions/OptionsType``; each may
/// carry a payload, as in AppMigrationKit, whose meaning the extension defines.
public struct MigrationRequestWithOptions<OptionsType>: Sendable
where
    OptionsType: CaseIterable, OptionsType: Hashable, OptionsType: RawRepresentable, OptionsType: Sendable,
    OptionsType.RawValue == String
{
    /// The platform that will import the data.
    public var destinationPlatform: MigrationPlatform
    /// The categories requested, each with an optional payload.
    public var options: [OptionsType: Data]

    /// A request from `destinationPlatform` for `options`.
    public init(destinationPlatform: MigrationPlatform, options: [OptionsType: Data] = [:]) {
        self.destinationPlatform = destinationPlatform
        self.options = options
    }

    /// The same request for an extension with other options: keys are matched by raw value and
    /// those the extension does not know are dropped, as a destination's unknown request would be.
    func converted<Other>(to _: Other.Type) -> MigrationRequestWithOptions<Other>
    where Other: CaseIterable, Other: Hashable, Other: RawRepresentable, Other: Sendable, Other.RawValue == String {
        var converted: [Other: Data] = [:]
        for (key, value) in options {
            if let other = Other(rawValue: key.rawValue) { converted[other] = value }
        }
        return MigrationRequestWithOptions<Other>(destinationPlatform: destinationPlatform, options: converted)
    }
}
