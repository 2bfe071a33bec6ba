import Foundation
import IndexedArchive
import Testing

/// The allocator setting is the program's choice: applying it reports whether it was made, and
/// applying it again changes nothing.
@Suite struct AllocatorTuningTests {
    @Test func applyingIsIdempotentAndMadeOnGlibc() {
        let first = AllocatorTuning.apply()
        let second = AllocatorTuning.apply()
        #expect(first == second)
        #if os(Linux)
            #expect(first, "glibc takes M_MMAP_THRESHOLD")
        #endif
    }
}
