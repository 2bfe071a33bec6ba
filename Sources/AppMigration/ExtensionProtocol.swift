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
