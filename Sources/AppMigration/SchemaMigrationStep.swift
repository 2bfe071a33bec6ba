public import Foundation

/// One step of a model's schema history: turns data stored at version `fromVersion` into data at
/// `fromVersion + 1`.
///
/// Steps work on raw bytes (or, through ``json(model:from:_:)``, on a JSON object), never on
/// today's types: the schema a step reads may have no type left in the current code, and a step
/// written years ago must keep compiling and meaning the same thing.
public struct SchemaMigrationStep: Sendable {
    /// The model this step belongs to, e.g. `"user_profile"`.
    public let model: String
    /// The version the step reads; it writes `fromVersion + 1`.
    public let fromVersion: Int
    /// The transformation. It may throw to refuse data it cannot migrate.
    public let transform: @Sendable (Data) throws -> Data

    /// A step that turns `model`'s data at `fromVersion` into the next version with `transform`.
    public init(model: String, from fromVersion: Int, _ transform: @escaping @Sendable (Data) throws -> Data) {
        self.model = model
        self.fromVersion = fromVersion
        self.transform = transform
    }

    /// The version the step writes.
    public var toVersion: Int { fromVersion + 1 }

    /// A step that edits the stored JSON object in place. The result is written with sorted keys,
    /// so that the same input always migrates to the same bytes.
    ///
    /// - Throws: from the step, ``SchemaMigrationError`` `.notAJSONObject` if the stored data is
    ///   not a JSON object, or what `edit` throws.
    public static func json(
        model: String, from fromVersion: Int,
        _ edit: @escaping @Sendable (inout [String: Any]) throws -> Void
    ) -> SchemaMigrationStep {
        SchemaMigrationStep(model: model, from: fromVersion) { data in
            guard var object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
                throw SchemaMigrationError.notAJSONObject(model: model, version: fromVersion)
            }
            try edit(&object)
            return try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        }
    }
}
