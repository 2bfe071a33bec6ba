/// Progress of a pack, as it happens, for displays (`amk pack`'s bar and `-v` listing). The
/// watchdog does not read them: it times the jobs that threads run (see ``Watchdog``).
public enum PackEvent: Sendable {
    /// A member was stored under `path`, its name in the archive (a folder's ends in `/`);
    /// `bytes` is its content size.
    case entryStored(path: String, bytes: UInt64)
    /// A chunk of the tar stream went to the compressors; `tarBytes` is the stream length so far.
    case chunkSerialized(sequence: Int, tarBytes: UInt64)
    /// A block was compressed (or stored).
    case blockCompressed(sequence: Int, stored: Bool)
    /// A block reached the output; `archiveBytes` is the archive length so far.
    case blockWritten(sequence: Int, archiveBytes: UInt64)
    /// Something was skipped or tolerated.
    case warning(PackWarning)
}
