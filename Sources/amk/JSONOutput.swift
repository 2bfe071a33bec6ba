import Foundation

/// The `--json` output of every command: one pretty-printed object (or array) on standard output,
/// keys sorted, names as the archive stores them with what a terminal would act on escaped
/// (``ListCommand/terminalSafeJSON(_:)``). README's "JSON output" section documents each schema;
/// the field names are stable.
enum JSONOutput {
    static func text(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        let data = try encoder.encode(value)
        return ListCommand.terminalSafeJSON(String(decoding: data, as: UTF8.self))
    }

    /// Prints `value` on standard output, or on standard error when the archive itself goes to
    /// standard output (`amk pack -o - --json`).
    static func print(_ value: some Encodable, toStandardError: Bool = false) throws {
        let text = try text(value)
        if toStandardError {
            StandardError.line(text)
        } else {
            Swift.print(text)
        }
    }
}

/// An optional field that `--json` writes as `null` when absent, so that every object of a schema
/// has every key (synthesized `Encodable` would leave the key out).
// swift-format-ignore: UseSynthesizedInitializer
@propertyWrapper
struct AlwaysPresent<Value: Encodable>: Encodable {
    var wrappedValue: Value?

    // Not the same as the synthesized one: declaring `init(wrappedValue:)` is what lets a struct
    // with `@AlwaysPresent var x: T?` keep a memberwise initializer that takes a plain `T?`.
    init(wrappedValue: Value?) { self.wrappedValue = wrappedValue }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue { try container.encode(wrappedValue) } else { try container.encodeNil() }
    }
}
