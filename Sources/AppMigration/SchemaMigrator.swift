public import Foundation

/// Brings stored data from the schema version it was written at to the version today's code
/// reads, one registered step at a time.
///
/// Users skip releases: someone updating from 1.2 straight to 3.0 has data at version 1, and the
/// migrator runs 1 -> 2 and 2 -> 3 in order. It checks that the whole chain of steps exists before
/// touching anything, runs it in memory, validates the result, and only then writes it (see
/// ``migrateStored(_:in:to:validate:)`` for the order that keeps a crash harmless).
///
/// ```swift
/// var migrator = SchemaMigrator()
/// migrator.register(.json(model: "user_profile", from: 1) { profile in
///     profile["preferences"] = ["theme": "system"]
/// })
/// let profile = try migrator.migrateStored("user_profile", in: store, to: 2, validatingAs: UserProfile.self)
/// ```
public struct SchemaMigrator: Sendable {
    private var steps: [String: [Int: SchemaMigrationStep]] = [:]

    /// A migrator that knows `steps`.
    public init(_ steps: [SchemaMigrationStep] = []) {
        for step in steps { register(step) }
    }

    /// Adds `step`, replacing any step registered for the same model and version.
    public mutating func register(_ step: SchemaMigrationStep) {
        steps[step.model, default: [:]][step.fromVersion] = step
    }

    /// Adds a step from `version` to `version + 1` of `model`.
    public mutating func register(model: String, from version: Int, _ transform: @escaping @Sendable (Data) throws -> Data) {
        register(SchemaMigrationStep(model: model, from: version, transform))
    }

    /// The steps that take `model` from `version` to `current`, in order.
    /// - Throws: ``SchemaMigrationError`` `.missingStep` naming the first gap, `.storedVersionNewer`.
    public func steps(for model: String, from version: Int, to current: Int) throws(SchemaMigrationError) -> [SchemaMigrationStep] {
        guard version <= current else { throw .storedVersionNewer(model: model, stored: version, current: current) }
        var chain: [SchemaMigrationStep] = []
        for from in version..<current {
            guard let step = steps[model]?[from] else { throw .missingStep(model: model, from: from, to: from + 1) }
            chain.append(step)
        }
        return chain
    }

    /// Runs every step from `version` to `current` over `data`, in memory.
    /// - Throws: ``SchemaMigrationError`` `.missingStep` (before any step runs), `.stepFailed`.
    public func migrate(_ data: Data, model: String, from version: Int, to current: Int) throws(SchemaMigrationError) -> Data {
        var data = data
        for step in try steps(for: model, from: version, to: current) {
            do {
                data = try step.transform(data)
            } catch {
                throw .stepFailed(model: model, from: step.fromVersion, to: step.toVersion, underlying: error)
            }
        }
        return data
    }

    /// Migrates data that arrived with a version string, such as the `sourceVersion` of an
    /// imported archive (`"1"`, `"2.0"`, `"v3"`): its leading number selects the first step.
    public func migrate(
        _ data: Data, model: String, fromSourceVersion sourceVersion: String,
        to current: Int
    ) throws(SchemaMigrationError) -> Data {
        guard let version = Self.schemaVersion(from: sourceVersion) else {
            throw .unparsableVersion(model: model, version: sourceVersion)
        }
        return try migrate(data, model: model, from: version, to: current)
    }

    /// The leading integer of a version string, after an optional `v`: `"2.0"` -> 2, `"v3"` -> 3.
    public static func schemaVersion(from text: String) -> Int? {
        var digits = Substring(text.trimmingCharacters(in: .whitespaces))
        if digits.first == "v" || digits.first == "V" { digits = digits.dropFirst() }
        return Int(digits.prefix { $0.isASCII && $0.isNumber })
    }

    /// Migrates `model` in `store` to `current` and returns its data, or nil if it has none.
    ///
    /// In order: settle any migration a crash interrupted (``VersionedStore/recover(_:)``); check
    /// the chain of steps (a gap throws before anything is written); write a durable backup of the
    /// stored data; run the steps in memory; `validate` the result; write the data durably; write
    /// the version durably; remove the backup. If a step, the validation or a write fails, the
    /// backup is put back, so the stored data and version are exactly what they were.
    ///
    /// - Throws: ``SchemaMigrationError`` (`.missingStep`, `.stepFailed`, `.validationFailed`,
    ///   `.storedVersionNewer`, `.rollbackFailed`), or a ``DurableFileError`` from the backup.
    @discardableResult
    public func migrateStored(
        _ model: String, in store: VersionedStore, to current: Int,
        validate: (Data) throws -> Void = { _ in }
    ) throws -> Data? {
        try store.recover(model)
        guard let record = try store.read(model) else { return nil }
        if record.version == current { return record.data }
        let chain = try steps(for: model, from: record.version, to: current)
        try store.writeBackup(record, for: model)
        var data = record.data
        do {
            for step in chain {
                do {
                    data = try step.transform(data)
                } catch {
                    throw SchemaMigrationError.stepFailed(
                        model: model, from: step.fromVersion, to: step.toVersion,
                        underlying: error)
                }
            }
            do {
                try validate(data)
            } catch {
                throw SchemaMigrationError.validationFailed(model: model, version: current, underlying: error)
            }
            try store.write(data, version: current, for: model)
        } catch {
            do {
                // Puts the backup back if the data was already replaced, then removes it.
                try store.recover(model)
            } catch let rollback {
                throw SchemaMigrationError.rollbackFailed(model: model, underlying: error, rollback: rollback)
            }
            throw error
        }
        // The migration is complete and durable; a backup that cannot be removed now is removed
        // by the next recover(), which sees the new version.
        try store.removeBackup(model)
        return data
    }

    /// Migrates `model` in `store` to `current`, validating that the result decodes as `type`,
    /// and returns the decoded value (nil if the model has no data).
    public func migrateStored<Model: Decodable>(
        _ model: String, in store: VersionedStore, to current: Int,
        validatingAs type: Model.Type,
        decoder: JSONDecoder = JSONDecoder()
    ) throws -> Model? {
        guard
            let data = try migrateStored(
                model, in: store, to: current,
                validate: { data in
                    _ = try decoder.decode(type, from: data)
                })
        else { return nil }
        return try decoder.decode(type, from: data)
    }
}
