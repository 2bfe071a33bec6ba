import ArgumentParser
import Foundation

/// A byte count typed on the command line (`16M`, `16MiB`, `1048576`) or shown to a person
/// (`5.6 MiB`).
///
/// Suffixes are binary whatever their spelling: `K`/`KiB`, `M`/`MiB`, `G`/`GiB`, `T`/`TiB` (any case, with
/// or without a trailing `B`). Chunk sizes are powers of two, and mixing decimal and binary
/// megabytes would make `16MB` quietly differ from `16M` by 5%.
struct ByteSize: Sendable, Hashable, ExpressibleByArgument, CustomStringConvertible {
    var bytes: Int

    /// The `--chunk-size` help of every command that packs, worded once.
    static let chunkSizeHelp =
        "Uncompressed bytes per xz block, the unit of parallelism and random access: 1M to 1G (16M, 16MiB and 16777216 are the same)."

    init(bytes: Int) {
        self.bytes = bytes
    }

    init?(argument: String) {
        let text = argument.trimmingCharacters(in: .whitespaces)
        let digits = text.prefix { $0.isASCII && $0.isNumber }
        guard !digits.isEmpty, let value = Int(digits) else { return nil }
        var suffix = text.dropFirst(digits.count).lowercased()
        if suffix.hasSuffix("b") { suffix.removeLast() }
        if suffix.hasSuffix("i") { suffix.removeLast() }
        let shift: Int
        switch suffix {
        case "": shift = 0
        case "k": shift = 10
        case "m": shift = 20
        case "g": shift = 30
        case "t": shift = 40
        default: return nil
        }
        let (product, overflow) = value.multipliedReportingOverflow(by: 1 << shift)
        guard !overflow else { return nil }
        self.bytes = product
    }

    var description: String { ByteSize.format(UInt64(max(0, bytes))) }

    static var defaultCompletionKind: CompletionKind { .default }

    /// `512 B`, `12.0 KiB`, `5.6 MiB`: one decimal above a KiB, binary units.
    static func format(_ bytes: UInt64) -> String {
        if bytes < 1024 { return "\(bytes) B" }
        let units = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
        var value = Double(bytes) / 1024
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return String(format: "%.1f", value) + " " + units[unit]
    }

    /// A rate in bytes per second, as `10.8 MiB/s`.
    static func formatRate(_ bytesPerSecond: Double) -> String {
        guard bytesPerSecond.isFinite, bytesPerSecond > 0 else { return "0 B/s" }
        return format(UInt64(bytesPerSecond)) + "/s"
    }

    /// A duration for a summary line: `0.52 s` below ten seconds, `12.3 s` above.
    static func formatSeconds(_ seconds: Double) -> String {
        seconds < 10 ? String(format: "%.2f s", seconds) : String(format: "%.1f s", seconds)
    }
}
