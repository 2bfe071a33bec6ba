import CPlatform

/// Keeps the pipeline's large buffers out of malloc's arenas: a process-wide choice that a
/// program makes for itself, as `amk` does at start-up.
///
/// glibc raises its mmap threshold each time a large mmapped block is freed. After the first
/// 16 MiB chunk, chunk and block buffers then come from per-thread heap arenas, which keep what is
/// freed, fragmented by the several threads that allocate and free them: measured on a 375 MiB pack
/// at preset 0, peak RSS was 275 MiB without this and 139 MiB with it. A fixed 1 MiB threshold
/// keeps every large buffer in its own mapping, returned to the kernel when freed.
///
/// The setting changes where every block of 1 MiB and more comes from, in the whole process, so a
/// library does not make it behind its caller's back: call ``apply()`` from your program's entry
/// point if it packs or extracts large trees and its peak memory matters.
///
/// Under an address-space limit (`ulimit -v`) it also keeps malloc to one arena: each further
/// arena reserves 64 MiB of address space when a thread first allocates, and a pack's threads
/// took 455 MiB of a limit that way before they held a byte (844 MiB mapped against 389 MiB
/// with two arenas). Without a limit the reservations cost nothing, and are left alone.
public enum AllocatorTuning {
    private static let applied: Bool = {
        if AddressSpace.limit != nil { _ = amk_set_arena_max(1) }
        return amk_set_mmap_threshold(1 << 20) == 1
    }()

    /// Fixes glibc's mmap threshold at 1 MiB for the rest of the process and, under an
    /// address-space limit, keeps malloc to one arena. Idempotent.
    ///
    /// - Returns: whether the setting was made (false where there is nothing to set, off glibc).
    @discardableResult
    public static func apply() -> Bool { applied }
}
