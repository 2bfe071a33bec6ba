public import IndexedArchive

@_exported public import struct IndexedArchive.PipelineStage
// MigrationSystem's stall timeouts are written in the engine's types: code that imports
// AppMigration or AppMigrationKit alone (as Apple's snippets do) must be able to name them
// to set them, as the README's `system:` example does. Re-exported one by one, so that the rest
// of the engine's names stay out of an app's namespace.
@_exported public import struct IndexedArchive.WatchdogPolicy

extension PipelineStage {
    /// An extension's own code, between its calls into the archiver: the host's stage, named
    /// `extension` in stall reports. The engine's stages watch the work an `appendItem` starts.
    public static let extensionCode = PipelineStage(rawValue: "extension")
}
