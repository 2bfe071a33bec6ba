import Foundation

/// Every frame after the hello.
enum ExtensionMessage: Codable, Sendable, Equatable {
    // Host to extension.
    /// Run `exportResources(to:request:)` for this request.
    case export(destinationPlatform: String, options: [String: Data])
    /// Run `importResources(at:request:)` on the staged folder.
    case `import`(staging: String, sourceStore: String, sourceBundle: String, sourcePlatform: String, sourceVersion: String)
    /// The answer to `append` number `id`: nil, or why it failed (and the ``AppMigrationError`` code's name).
    case appended(id: UInt64, error: String?, code: String?)
    /// Stop: cancel the extension's work.
    case cancel

    // Extension to host.
    /// The export's properties, sent before the first append.
    case properties(sizeEstimate: Int, version: String, compressible: Bool)
    /// `ResourcesArchiver.appendItem(at:pathInArchive:)`, with the path made absolute.
    case append(id: UInt64, path: String, pathInArchive: String?)
    /// The process's CPU time on the extension's own threads, and its import progress.
    case heartbeat(cpuNanoseconds: Int64, completed: Int64, total: Int64)
    /// The extension's work returned normally.
    case finished
    /// The extension's work threw: what, and whether it was a `CancellationError`.
    case failed(message: String, cancelled: Bool)

    /// The case's name, for errors about a message that came at the wrong time.
    var kind: String {
        switch self {
        case .export: "export"
        case .import: "import"
        case .appended: "appended"
        case .cancel: "cancel"
        case .properties: "properties"
        case .append: "append"
        case .heartbeat: "heartbeat"
        case .finished: "finished"
        case .failed: "failed"
        }
    }
}
