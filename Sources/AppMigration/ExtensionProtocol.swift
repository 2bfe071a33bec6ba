import Foundation

/// The protocol between a host and an extension process, version 1.
///
/// The host starts the extension's executable with one end of a stream socket as descriptor 3
/// (named in `AMK_EXTENSION_CHANNEL`). Both sides send frames: a 4-byte big-endian length, then
/// that many bytes of JSON. The extension speaks first, with an ``ExtensionHello``; the host
/// answers with the task (``ExtensionMessage/export(destinationPlatform:options:)`` or
/// ``ExtensionMessage/import(staging:sourceStore:sourceBundle:sourcePlatform:sourceVersion:)``);
/// then the extension sends its properties, `append` calls, heartbeats and at last its result,
/// and exits. The host may send `cancel` at any time, and kills the process group if it does
/// not stop.
enum ExtensionProtocol {
    /// The name in every hello, so that a program that is not an extension is told apart from
    /// one that speaks another version.
    static let name = "amk-extension"
    /// The version this library speaks.
    static let version = 1
    /// The largest frame either side accepts: appends carry one path, heartbeats a few numbers.
    static let maxMessageBytes = 1 << 20
    /// The descriptor the extension's end of the channel has in the extension process.
    static let channelDescriptor: Int32 = 3
    /// The environment variable that names it there.
    static let channelVariable = "AMK_EXTENSION_CHANNEL"
    /// How often the extension process reports its CPU time and progress.
    static let heartbeatInterval: Duration = .milliseconds(100)
}

/// The first frame an extension sends, the same in every version of the protocol.
struct ExtensionHello: Codable, Sendable, Equatable {
    /// Always ``ExtensionProtocol/name``.
    var `protocol`: String
    /// The version the extension speaks.
    var version: Int
    /// Whether the extension exports (conforms to `ResourcesExportingWithOptions`).
    var exports: Bool
    /// Whether the extension imports (conforms to `ResourcesImporting`).
    var imports: Bool
}

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
