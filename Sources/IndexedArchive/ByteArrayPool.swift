import Synchronization

/// Large byte arrays a pipeline gives back when it is done with them, for its next chunk, block or
/// read to fill, instead of returning them to the kernel and mapping fresh ones.
///
/// `amk` keeps every buffer of 1 MiB and more in a mapping of its own (``AllocatorTuning``), so
/// that a pack's memory goes back to the system as it goes. The price was paid on every buffer:
/// each of the 4 KiB pages of a fresh mapping faults when first touched, and on this class of VM a
/// fault costs microseconds. A full extraction of a 364 MiB tree took 118,000 page faults (a
/// decoded block of 8 MiB is 2,048 of them) against 18,500 for `xz -dc | tar -x`, and a seventh
/// of its CPU time was system time; packing a 1 GiB sparse file spent 2.1 of its 2.6 s there.
///
/// A pipeline holds a bounded number of such buffers at once, so it keeps at most `limit` of them
/// here, and they go when the pool goes: memory stays what the pipeline's bounds allow, and its
/// pages stay mapped between one use and the next.
///
/// Arrays are values, so giving one back is safe even while another copy of it lives (a piece a
/// consumer kept): ``take(minimumCapacity:)`` empties it, which then allocates fresh storage
/// instead of touching the shared one. Only the reuse is lost.
final class ByteArrayPool: Sendable {
    private let kept = Mutex<[[UInt8]]>([])
    /// The most arrays kept.
    let limit: Int
    /// Arrays smaller than this are not worth keeping: the allocator reuses small blocks itself.
    let smallest: Int
    /// Takes that got a kept array's storage back (for tests).
    let reuses = Atomic<Int>(0)

    init(limit: Int, smallest: Int = 256 << 10) {
        self.limit = limit
        self.smallest = smallest
    }

    /// An empty array with room for at least `minimumCapacity` bytes: a kept one when one is
    /// large enough, else a new one (and the kept ones, all too small, are let go).
    func take(minimumCapacity: Int) -> [UInt8] {
        // The array is swapped out of the pool's own, so that no second reference is left
        // behind to make the emptying below copy. A request that no kept array fits empties the
        // pool: arrays smaller than what the reading now needs would otherwise stay beside the
        // larger ones made for it, and blocks of growing sizes could keep `limit` of them on top
        // of what the reading holds in flight.
        var array: [UInt8] = []
        var outgrown: [[UInt8]] = []
        let found = kept.withLock { kept -> Bool in
            guard let index = kept.firstIndex(where: { $0.capacity >= minimumCapacity }) else {
                swap(&outgrown, &kept)
                return false
            }
            swap(&array, &kept[index])
            kept.remove(at: index)
            return true
        }
        outgrown = []  // freed here, outside the lock
        guard found else {
            array.reserveCapacity(minimumCapacity)
            return array
        }
        let storage = array.withUnsafeBytes { $0.baseAddress }
        array.removeAll(keepingCapacity: true)
        if storage == array.withUnsafeBytes({ $0.baseAddress }) { reuses.add(1, ordering: .relaxed) }
        return array
    }

    /// An empty array with room for at least `minimumCapacity` bytes, from `pool` when there is
    /// one: for the pipelines that run with a pool or without (the tests' serializer, a single
    /// block's reading).
    static func take(from pool: ByteArrayPool?, minimumCapacity: Int) -> [UInt8] {
        if let pool { return pool.take(minimumCapacity: minimumCapacity) }
        var array: [UInt8] = []
        array.reserveCapacity(minimumCapacity)
        return array
    }

    /// Keeps `array` for a later ``take(minimumCapacity:)``, unless it is small or the pool is
    /// full (then it is freed as usual).
    func recycle(_ array: consuming [UInt8]) {
        guard array.capacity >= smallest else { return }
        let array = consume array
        kept.withLock { kept in
            if kept.count < limit { kept.append(array) }
        }
    }

    /// How many arrays are kept now (for tests).
    var count: Int { kept.withLock { $0.count } }

    /// Makes `array` hold `count` bytes in its own storage when it has room (a read then writes
    /// over them); the bytes it gains are zeros.
    ///
    /// Appended from a buffer of zeros, not from `repeatElement`: a debug build copies that one
    /// element at a time, a megabyte in tens of milliseconds, which the stall tests' read stage
    /// then mistook for a stall.
    static func resize(_ array: inout [UInt8], to count: Int) {
        if array.count > count { array.removeSubrange(count...) }
        array.reserveCapacity(count)
        while array.count < count {
            array.append(contentsOf: zeros[..<min(count - array.count, zeros.count)])
        }
    }

    private static let zeros = [UInt8](repeating: 0, count: 64 << 10)
}
