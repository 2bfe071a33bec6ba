/// A part of the work that the ``Watchdog`` watches separately, each with its own stall timeout.
public enum PipelineStage: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Listing directories.
    case enumerate
    /// Reading file contents.
    case read
    /// Compressing or decompressing blocks.
    case compress
    /// Writing the archive or extracted files.
    case write
    /// An extension's own code, between its calls into the archiver.
    case extensionCode = "extension"

    /// The stage's name in stall reports (`extension` for ``extensionCode``).
    public var description: String { rawValue }
}
