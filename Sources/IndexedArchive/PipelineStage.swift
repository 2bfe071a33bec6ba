/// A part of the work that the ``Watchdog`` watches separately, each with its own stall timeout.
///
/// The engine has four (``enumerate``, ``read``, ``compress``, ``write``). A caller supervising
/// work of its own names its stages the same way, in an extension: the AppMigration host adds
/// `extensionCode` (`"extension"`) for an extension's own code, and stall reports and
/// ``WatchdogPolicy/stallTimeouts`` take it like the engine's.
public struct PipelineStage: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The stage's name, as stall reports print it.
    public var rawValue: String

    /// A stage named `rawValue`; two stages with the same name are the same stage.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// Listing directories.
    public static let enumerate = PipelineStage(rawValue: "enumerate")
    /// Reading file contents.
    public static let read = PipelineStage(rawValue: "read")
    /// Compressing or decompressing blocks.
    public static let compress = PipelineStage(rawValue: "compress")
    /// Writing the archive or extracted files.
    public static let write = PipelineStage(rawValue: "write")

    /// The engine's stages, in the order the watchdog checks them (callers' stages come after).
    public static let engineStages: [PipelineStage] = [.enumerate, .read, .compress, .write]

    /// The stage's name in stall reports.
    public var description: String { rawValue }
}
