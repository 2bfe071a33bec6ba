public import Foundation
public import Logging
import XZ

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
    /// The match length at which LZMA's match finder stops looking for a longer match
    /// (`xz --lzma2=nice=N`), 2...273; `nil` takes ``defaultNiceLength(preset:extreme:)``.
    /// Set the preset's own value (64 at preset 6) for exactly the LZMA work of `xz -6`.
    public var niceLength: Int? = nil
    /// Uncompressed bytes per xz block: the unit of parallelism and of random access.
    /// At least 1 MiB; 8 MiB by default: preset 6's dictionary, and half the 16 MiB of `pixz`'s
    /// blocks, which on a 364 MiB real tree lowered peak RSS from 305 to 256 MiB and halves the
    /// decoding to reach one member, for 1.4% more bytes (issue #12). The encoders' dictionary is
    /// three quarters of it at presets 5 and 6 (``defaultDictionarySize(preset:extreme:chunkSize:)``).
    public var chunkSize: Int = 8 << 20
    /// Compressing threads; by default one per active core.
    public var workers: Int = PackOptions.activeCores
    /// The most memory the pack's encoders and chunks may hold together, in bytes; `nil` sets no
    /// bound beyond the defaults.
    ///
    /// Each worker's encoder holds its match-finder state (``XZ/BlockEncoder/memoryUsage(preset:extreme:maxChunkSize:niceLength:dictionarySize:)``,
    /// about 75 MiB at preset 6 with 8 MiB chunks), and each chunk `chunkSize` bytes. A pack holds one chunk per
    /// worker (a chunk is taken for compression only when a worker is free), one more done early
    /// and waiting for an earlier block, and three on the serializer's side: the one handed over,
    /// the last full chunk held back to be cut for the tail, and the one being filled. So by
    /// default it holds `workers` encoders and about `workers + 4` chunks.
    ///
    /// With a budget, the early chunk is dropped first, then workers, until the rest fits; a
    /// budget too small for one worker is refused as `.invalidOptions`, naming what one needs.
    /// Other memory (the index being built, buffers of a few MiB, the runtime) is not counted.
    ///
    /// Without a budget, under an address-space limit (`ulimit -v`), the pack takes what the limit
    /// leaves (``AddressSpace/available``) as its budget: past it an encoder cannot start and a
    /// chunk cannot be allocated.
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
    /// The order of each folder's members in the archive: grouped by extension (the default,
    /// for a smaller archive) or by name (``WalkOrder``). A folder's members follow it either way.
    public var order = WalkOrder.type
    /// Compress blocks that are mostly linked x86 machine code (ELF executables and shared
    /// objects, Mach-O, PE; not object files or static libraries, which the filter makes larger:
    /// ``FileClass/isX86Code(_:)``) through the x86 branch filter before LZMA2, as `xz --x86`
    /// does (``XZ/BranchFilter``).
    /// On by default: a Swift toolchain's folder of x86-64 libraries packs 2.3% smaller and no
    /// slower (a mixed real tree 0.9%). Every xz decoder reads the filter from the block header;
    /// turn it off only for a reader that decodes LZMA2 alone.
    public var filtersExecutables = true
    /// Store extended attributes as pax `SCHILY.xattr.*` records (`tar --xattrs`). Off by
    /// default, as in GNU tar: reading them costs a system call per file.
    public var storeExtendedAttributes = false
    /// Store each file's and folder's POSIX ACLs as the text bsdtar writes and GNU tar `--acls`
    /// reads (pax `SCHILY.acl.access`, and a folder's `SCHILY.acl.default`): `tar --acls`. An ACL
    /// that says no more than the mode is not stored. Off by default, as in GNU tar.
    public var storeAccessControlLists = false

    /// Where the pack's diagnostics go: its start and settings (`debug`), each block written
    /// (`trace`), each ``PackWarning`` (`warning`), a stall or failure (`error`) and the summary
    /// (`info`). Silent by default: as swift-nio and AsyncHTTPClient do, the library logs only to
    /// a logger its caller hands it (`amk -v` hands one that writes to standard error).
    public var logger = Logger(label: "IndexedArchive.pack", factory: { _ in SwiftLogNoOpLogHandler() })
    /// Called for every ``PackEvent``, from whichever thread produced it; keep it quick. Drives
    /// progress displays; diagnostics go to ``logger``.
    public var onEvent: (@Sendable (PackEvent) -> Void)? = nil
    /// Advanced by the content bytes of each member stored, as far as the blocks already written
    /// cover them: it follows the compression, not the reading, which runs ahead of it. Set its
    /// `totalUnitCount` to the expected byte count (``ArchivePacker/contentSize(of:exclusion:)``
    /// measures it) to get a fraction. The pack never changes the total: past it (files that grew,
    /// a low estimate) the completed count holds at the total.
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
    /// The address-space limit ``memoryBudget`` was taken from, when it was (for the message
    /// that refuses it).
    var addressSpaceLimit: Int? = nil
    /// The file system read from; tests substitute one that injects faults.
    package var fileSystem: FileSystem = .system
    /// Called on the compressing thread before chunk `sequence` is compressed; tests use it to make
    /// compression stall or fail. Nil, and free, in production.
    package var compressionHook: (@Sendable (_ sequence: Int) throws -> Void)? = nil

    /// The defaults: preset 6 (nice length 16), 8 MiB chunks, one compressor per active core.
    public init() {}

    /// amk's nice length for a preset: 16 at presets 5 and 6 (without `extreme`), liblzma's own
    /// elsewhere (`nil`).
    ///
    /// At preset 6 the binary-tree match finder spends most of the time looking for matches
    /// longer than 16 bytes; stopping there cut the CPU time of packing a 364 MiB tree of
    /// documentation, C headers and libraries by 27% for 3.4% more bytes (issue #12; README,
    /// "Performance"). Names are walked in sorted order, which puts similar files together: with
    /// xz's own search the archive of that tree was 6% smaller than `tar | xz -T2`'s, so with the
    /// shorter one it stays smaller than the peers' while the work drops. Presets 7 to 9 and `extreme` are asked for to be
    /// small, so they keep liblzma's settings.
    public static func defaultNiceLength(preset: Int, extreme: Bool) -> Int? {
        !extreme && (5...6).contains(preset) ? 16 : nil
    }

    /// The nice length the encoders use: ``niceLength``, or the preset's default.
    var effectiveNiceLength: Int? { niceLength ?? Self.defaultNiceLength(preset: preset, extreme: extreme) }

    /// amk's LZMA2 dictionary for a preset and chunk size: three quarters of the chunk at presets
    /// 5 and 6 (without `extreme`), when that is less than the preset's 8 MiB; `nil` elsewhere
    /// (the preset's, at most the chunk).
    ///
    /// The match finder's memory is about 7.5 times the dictionary, and a pack holds one per
    /// worker: most of its peak. Within a chunk of 8 MiB, a dictionary of 6 MiB misses only the
    /// matches further back than that from the chunk's last quarter; on a 364 MiB real tree it
    /// took 31 MiB off the peak RSS of a two-worker pack (248 to 217 MiB) for 0.15% more bytes,
    /// and on 50,000 small text files 33 MiB (255 to 222) for 0.01% (issue #12). Presets 7 to 9
    /// and `extreme` are asked for to be small, and keep their dictionaries.
    package static func defaultDictionarySize(preset: Int, extreme: Bool, chunkSize: Int) -> Int? {
        !extreme && (5...6).contains(preset) ? chunkSize - chunkSize / 4 : nil
    }

    /// The dictionary the encoders are held to: ``defaultDictionarySize(preset:extreme:chunkSize:)``.
    var effectiveDictionarySize: Int? { Self.defaultDictionarySize(preset: preset, extreme: extreme, chunkSize: chunkSize) }

    /// Cores this process may run on.
    public static var activeCores: Int { max(1, ProcessInfo.processInfo.activeProcessorCount) }

    /// Chunks held on the serializer's side besides those in flight: the one handed over, the
    /// one held back for the tail, the one being filled.
    static let serializerChunks = 3

    /// Chunks allowed in flight between the serializer and the writer: one per worker, and one
    /// done early, waiting for an earlier block, when the budget leaves room for it.
    var chunksInFlight: Int {
        let defaultCount = workers + 1
        guard let memoryBudget, let encoder = try? encoderMemory else { return defaultCount }
        let left = memoryBudget - workers * encoder
        return max(workers, min(defaultCount, left / max(chunkSize, 1) - Self.serializerChunks))
    }

    /// The memory each worker's encoder holds; none when nothing is compressed.
    var encoderMemory: Int {
        get throws(ArchiveError) {
            guard compressible else { return 0 }
            do {
                return Int(
                    clamping: try BlockEncoder.memoryUsage(
                        preset: preset, extreme: extreme, maxChunkSize: chunkSize, niceLength: effectiveNiceLength,
                        dictionarySize: effectiveDictionarySize))
            } catch {
                throw ArchiveError(.invalidOptions, "preset \(preset): \(error)")
            }
        }
    }

    /// The most workers `memoryBudget` holds (at most `workers`), each with its encoder and its
    /// chunk, beside the serializer's chunks.
    func workersWithinBudget() throws(ArchiveError) -> Int {
        guard let memoryBudget else { return workers }
        let encoder = try encoderMemory
        let perWorker = encoder + chunkSize
        let fixed = Self.serializerChunks * chunkSize
        let fitting = (memoryBudget - fixed) / perWorker
        guard fitting >= 1 else {
            let mib = AddressSpace.mebibytes
            let budget =
                addressSpaceLimit.map { "the address-space limit (ulimit -v) of \(mib($0)) leaves \(mib(memoryBudget)), which" }
                ?? "a memory budget of \(mib(memoryBudget))"
            throw ArchiveError(
                .invalidOptions,
                "\(budget) cannot hold one worker: it needs \(mib(perWorker + fixed)) "
                    + "(an encoder of \(mib(encoder)) at preset \(preset) and \(1 + Self.serializerChunks) chunks of "
                    + "\(mib(chunkSize))); raise the \(addressSpaceLimit == nil ? "budget" : "limit"), or lower the preset or the chunk size"
            )
        }
        return min(workers, fitting)
    }

    /// Throws unless the metadata, with the packer's own `writer` key, is within what a reader
    /// keeps: past it, the archive would be written whole and then refused by every reader.
    private func checkMetadataSize() throws(ArchiveError) {
        var stored = metadata
        stored["writer"] = ArchivePacker.writerVersion
        let bytes = stored.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
        let (maxKeys, maxBytes) = (TarConsumer.maxMetadataKeys, TarConsumer.maxMetadataBytes)
        guard stored.count > maxKeys || bytes > maxBytes,
            let largest = stored.max(by: { $0.value.utf8.count < $1.value.utf8.count })
        else { return }
        throw ArchiveError(
            .invalidOptions,
            "metadata of \(stored.count) keys and \(bytes) bytes is more than a reader accepts (\(maxKeys) keys and "
                + "\(maxBytes) bytes); the largest, '\(largest.key)', has \(largest.value.utf8.count) bytes")
    }

    func validated() throws(ArchiveError) -> PackOptions {
        guard (0...9).contains(preset) else {
            throw ArchiveError(.invalidOptions, "preset must be 0 to 9, not \(preset)")
        }
        guard chunkSize >= 1 << 20, chunkSize <= 1 << 30 else {
            throw ArchiveError(.invalidOptions, "chunk size must be 1 MiB to 1 GiB, not \(chunkSize)")
        }
        if let niceLength, !BlockEncoder.niceLengths.contains(niceLength) {
            let range = BlockEncoder.niceLengths
            throw ArchiveError(.invalidOptions, "nice length must be \(range.lowerBound) to \(range.upperBound), not \(niceLength)")
        }
        guard workers >= 1, workers <= 256 else {
            throw ArchiveError(.invalidOptions, "workers must be 1 to 256, not \(workers)")
        }
        var options = self
        if options.memoryBudget == nil, let limit = AddressSpace.limit {
            options.memoryBudget = AddressSpace.available(under: limit)
            options.addressSpaceLimit = limit
        }
        options.workers = try options.workersWithinBudget()
        if options.workers < workers {
            logger.notice(
                "fewer workers to stay within the memory budget",
                metadata: ["workers": "\(options.workers)", "asked": "\(workers)", "budget": "\(options.memoryBudget ?? 0)"])
        }
        // Keys become pax keywords (AMK.<key>), which cannot hold these bytes.
        for key in metadata.keys where key.utf8.contains(where: { $0 == UInt8(ascii: "=") || $0 == UInt8(ascii: "\n") || $0 == 0 }) {
            throw ArchiveError(.invalidOptions, "metadata key \(key.debugDescription) must not contain '=', a newline or NUL")
        }
        try checkMetadataSize()
        return options
    }
}
