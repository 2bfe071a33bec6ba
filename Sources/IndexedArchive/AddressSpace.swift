import CPlatform
import Foundation
import XZ

/// The process's address-space limit (`ulimit -v`, `RLIMIT_AS`) and what of it is left for a
/// pack's encoders and chunks or an extraction's decoders and blocks.
///
/// Under such a limit every mapping counts whole when it is made, whether or not it is ever
/// touched: each thread's stack (8 MiB by default), each malloc arena's 64 MiB reservation, the
/// program's own image. When the limit is reached a thread cannot start, and the cooperative
/// pool waits for one forever; an allocation fails, and the Swift runtime stops the process.
/// A pack therefore sizes itself to what is left (``PackOptions/memoryBudget``), and `amk`
/// refuses to start, with a message naming the limit, when what is left cannot hold its threads.
public enum AddressSpace {
    /// The soft `RLIMIT_AS` in bytes; nil when there is none.
    /// `error`'s message, and for a decoder refused memory under an address-space limit, that
    /// the limit is why: "block needs 6357048 bytes of memory to decode, the limit is 1048576"
    /// read as damage under `ulimit -v`, and salvage then called every member lost.
    static func explained(_ error: XZError) -> String {
        guard error.code == .memoryLimit, let limit else { return error.message }
        return error.message + " (what the address-space limit, ulimit -v \(limit / 1024) KiB, leaves for decoding; "
            + "the archive is not damaged: raise the limit)"
    }

    public static var limit: Int? {
        let bytes = amk_soft_limit(0)
        return bytes < 0 ? nil : Int(clamping: bytes)
    }

    /// Bytes of address space mapped now (`/proc/self/statm`); nil where that cannot be read.
    public static var inUse: Int? {
        let descriptor = open("/proc/self/statm", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 128)
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        // The first field is the mapped size in pages.
        let pages = buffer[..<count].prefix { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
        guard !pages.isEmpty, let value = Int(String(decoding: pages, as: UTF8.self)) else { return nil }
        return value.multipliedReportingOverflow(by: Int(sysconf(Int32(_SC_PAGESIZE)))).partialValue
    }

    /// The address space each new thread's stack takes: `RLIMIT_STACK`, which glibc gives every
    /// thread it starts without a size of its own, or its 8 MiB when the stack is unlimited.
    static var threadStack: Int {
        let bytes = amk_soft_limit(1)
        return bytes <= 0 ? 8 << 20 : Int(clamping: bytes)
    }

    /// Address space kept for what a pack or extraction maps beside its codecs and buffers: the
    /// stacks of the threads it starts (one per core and five more), and 16 MiB for the
    /// runtime's own allocations, the index and small buffers. Measured with one arena: a
    /// two-worker pack at preset 6 mapped 60 MiB beside its encoders, chunks and the 71.5 MiB
    /// amk maps at start.
    static func reserve(cores: Int = PackOptions.activeCores) -> Int {
        (max(1, cores) + 5) * threadStack + (16 << 20)
    }

    /// What is left under the limit for codecs and buffers after what is mapped now and
    /// ``reserve(cores:)``: nil without a limit, 0 when nothing is left.
    public static var available: Int? {
        limit.map(available(under:))
    }

    /// What `limit` leaves for codecs and buffers (see ``available``).
    static func available(under limit: Int) -> Int {
        max(0, limit - (inUse ?? 0) - reserve())
    }

    /// The least ``available`` a command starts with: an extraction decodes with a dictionary
    /// and holds a few blocks (8 MiB each in amk's archives), and a pack at preset 0 holds an
    /// encoder of a few MiB and its chunks.
    public static let minimumAvailable = 48 << 20

    /// Why the process cannot run under its limit, naming it and what it needs; nil when it can
    /// (or there is no limit).
    public static func shortfall() -> String? {
        guard let limit, let available, available < minimumAvailable else { return nil }
        let used = inUse ?? 0
        let needed = used + reserve() + minimumAvailable
        return "the address-space limit (ulimit -v) of \(mebibytes(limit)) is too small: amk maps \(mebibytes(used)) "
            + "already and needs \(mebibytes(needed)) to start its threads and buffers; raise it to at least "
            + "\((needed + 1023) / 1024) KiB (ulimit -v \((needed + 1023) / 1024))"
    }

    /// `bytes` as the messages about memory give it: MiB, one decimal.
    static func mebibytes(_ bytes: Int) -> String {
        String(format: "%.1f MiB", Double(bytes) / 1_048_576)
    }
}
