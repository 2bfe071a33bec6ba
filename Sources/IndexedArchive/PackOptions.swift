public import Foundation
public import Logging

/// How to pack.
public struct PackOptions: Sendable {
    /// What to do when something cannot be stored exactly.
    public enum Tolerance: Sendable, Hashable {
        /// Fail the pack with an error naming the file.
        case fail
        /// Record a ``PackWarning`` and carry on (skip the entry, or store what was read).
        case warn
    }

    /// LZMA preset, 0 (fastest) to 9 (smallest).
    public var preset: Int = 6
    /// LZMA's extreme variant of the preset: slower, a little smaller.
    public var extreme: Bool = false
    /// Uncompressed bytes per xz block: the unit of parallelism and of random access.
    /// At least 1 MiB; 16 MiB by default (twice preset 6's dictionary, as pixz does).
    public var chunkSize: Int = 16 << 20
    /// Compressing threads; by default one per active core.
    public var workers: Int = PackOptions.activeCores
    /// Upper bound for the memory that chunks in flight may hold; `nil` allows `workers + 1`
    /// chunks (one per worker and one done early, waiting for an earlier block). The bound is
    /// never below what one chunk per worker needs. A chunk is taken for compression only when a
    /// worker is free, so none waits for one. Each worker's encoder holds its match-finder state
    /// besides (about 95 MiB at preset 6), so by default a pack holds the encoders plus about
    /// `workers + 3` chunks: one per worker, one handed over, the held-back last full chunk (cut
    /// for the tail) and the one being filled.
    public var memoryBudget: Int? = nil
    /// `false` stores every block uncompressed (data known not to compress, or speed above all).
    public var compressible: Bool = true
    /// Key/value pairs carried in the archive's pax global header (as `AMK.<key>`) and in its index.
    public var metadata: [String: String] = [:]
    /// Unreadable files or directories: fail (default) or skip with a warning.
    public var unreadable: Tolerance = .fail
    /// Files whose size changes while they are read: fail (default) or store the bytes read, padded
    /// or cut to the size in the header, with a warning.
    public var changedWhileReading: Tolerance = .fail

    /// Entries left out (`tar --exclude`, `--one-file-system`); nothing by default.
    public var exclusion = PackExclusion()
    /// Store extended attributes as pax `SCHILY.xattr.*` records (`tar --xattrs`). Off by
    /// default, as in GNU tar: reading them costs a system call per file.
    public var storeExtendedAttributes = false

    /// Where the pack's diagnostics go: its start and settings (`debug`), each block written
    /// (`trace`), each ``PackWarning`` (`warning`), a stall or failure (`error`) and the summary
    /// (`info`). Silent by default: as swift-nio and AsyncHTTPClient do, the library logs only to
    /// a logger its caller hands it (`amk -v` hands one that writes to standard error).
    public var logger = Logger(label: "IndexedArchive.pack", factory: { _ in SwiftLogNoOpLogHandler() })
    /// Called for every ``PackEvent``, from whichever thread produced it; keep it quick. Drives
    /// progress displays; diagnostics go to ``logger``.
    public var onEvent: (@Sendable (PackEvent) -> Void)? = nil
    /// Advanced by the content bytes of each member stored. Set its `totalUnitCount` to the
    /// expected byte count (``ArchivePacker/contentSize(of:exclusion:)`` measures it) to get a fraction.
    public var progress: Progress? = nil

    /// Receives the heartbeats of every stage. Set it to watch the pack with a ``Watchdog`` of
    /// your own (the extension host does); ``ArchivePacker/pack(_:to:options:)`` otherwise makes
    /// one from ``stallPolicy``.
    public var watchdog: Watchdog? = nil
    /// The stall timeouts ``ArchivePacker/pack(_:to:options:)`` watches with when no ``watchdog``
    /// is given; `nil` turns the watchdog off.
    public var stallPolicy: WatchdogPolicy? = WatchdogPolicy()
    /// Gathers files that ``FileClass`` finds already compressed apart from the rest, into stored
    /// blocks later in the tar stream (issue #12). Off: GNU tar sets a folder's time when it
    /// meets a member outside the folder, so a file written into the folder afterwards leaves
    /// the folder with the extraction's time (bsdtar and amk are unaffected), and a folder
    /// without write permission would refuse it for a user who is not root. Turn it on only
    /// once folder headers follow their gathered files.
    package var gathersIncompressibleApart = false
    /// The file system read from; tests substitute one that injects faults.
    package var fileSystem: FileSystem = .system
    /// Called on the compressing thread before chunk `sequence` is compressed; tests use it to make
    /// compression stall or fail. Nil, and free, in production.
    package var compressionHook: (@Sendable (_ sequence: Int) throws -> Void)? = nil

    /// The defaults: preset 6, 16 MiB chunks, one compressor per active core.
    public init() {}

    /// Cores this process may run on.
    public static var activeCores: Int { max(1, ProcessInfo.processInfo.activeProcessorCount) }

    /// Chunks allowed in flight between the serializer and the writer.
    var chunksInFlight: Int {
        // Issue #12: 2 * workers kept one chunk more than the compressors need queued; every
        // chunk is 16 MiB of RSS against pixz's.
        let defaultCount = workers + 1
        guard let memoryBudget else { return defaultCount }
        return max(workers, min(defaultCount, memoryBudget / max(chunkSize, 1)))
    }

    func validated() throws(ArchiveError) -> PackOptions {
        guard (0...9).contains(preset) else {
            throw ArchiveError(.invalidOptions, "preset must be 0 to 9, not \(preset)")
        }
        guard chunkSize >= 1 << 20, chunkSize <= 1 << 30 else {
            throw ArchiveError(.invalidOptions, "chunk size must be 1 MiB to 1 GiB, not \(chunkSize)")
        }
        guard workers >= 1, workers <= 256 else {
            throw ArchiveError(.invalidOptions, "workers must be 1 to 256, not \(workers)")
        }
        // Keys become pax keywords (AMK.<key>), which cannot hold these bytes.
        for key in metadata.keys where key.utf8.contains(where: { $0 == UInt8(ascii: "=") || $0 == UInt8(ascii: "\n") || $0 == 0 }) {
            throw ArchiveError(.invalidOptions, "metadata key \(key.debugDescription) must not contain '=', a newline or NUL")
        }
        return self
    }
}
