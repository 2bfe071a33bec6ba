import ArgumentParser
import IndexedArchive

/// `--max-bytes` and `--sparse` of `extract` and `salvage`: the most content they may write, which
/// the refusal of a file of zeros past the default limit tells the user to raise, and whether
/// blocks of zeros take space at all.
struct ContentLimitOption: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Refuse to write more content than this (16G, 2T; default: 1000 times the archive's size, at least 4G, "
                + "and for a stream into a folder, its free space). Raise it for a trusted archive holding files of zeros.",
            valueName: "size"))
    var maxBytes: ByteSize?

    @Flag(
        name: [.customShort("S"), .long],
        help:
            "Leave blocks of zeros (4 KiB, aligned) as holes that take no space, as bsdtar -S does; they do not count against --max-bytes."
    )
    var sparse = false

    func validate() throws {
        if let maxBytes, maxBytes.bytes <= 0 {
            throw ValidationError("--max-bytes must be more than 0, not \(maxBytes.bytes).")
        }
    }

    /// Sets the limit given, if any; otherwise the engine's default stays.
    func apply(to options: inout ExtractOptions) {
        if let maxBytes { options.maxBytes = UInt64(maxBytes.bytes) }
        options.sparse = sparse
    }
}
