import Foundation

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
