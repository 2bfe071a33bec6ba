import Foundation
import Testing

@testable import IndexedArchive

/// What the address space has room for. The test process runs without a limit; amk's behaviour
/// under one is tested through the program (`amkTests.AddressSpaceLimit`).
@Suite struct AddressSpaceTests {
    /// Without a limit nothing is held back and nothing is refused.
    @Test(.enabled(if: AddressSpace.limit == nil, "the tests run under ulimit -v"))
    func withoutALimitNothingIsHeldBack() throws {
        #expect(AddressSpace.available == nil)
        #expect(AddressSpace.shortfall() == nil)
        let limits = ArchiveReader.Limits(maxIndexBytes: nil, maxEntries: nil, maxBufferedBlockSize: 64 << 20, maxDecoderMemory: 128 << 20)
        let fitted = limits.fitted(toAvailable: AddressSpace.available)
        #expect(fitted.maxBufferedBlockSize == 64 << 20 && fitted.maxDecoderMemory == 128 << 20)
        #expect(ArchiveReader.Limits.decoderMemory(within: nil) == ArchiveReader.defaultMaxDecoderMemory)
    }

    /// The mapped size is read from the kernel: a 64 MiB mapping shows in it, and its removal too.
    @Test func theMappedSizeFollowsAMapping() throws {
        let before = try #require(AddressSpace.inUse)
        let size = 64 << 20
        let region = try #require(mmap(nil, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0))
        try #require(region != MAP_FAILED)
        let during = try #require(AddressSpace.inUse)
        munmap(region, size)
        let after = try #require(AddressSpace.inUse)
        // Other tests map and unmap beside this one: the mapping's own 64 MiB dominates.
        #expect(during - before > size / 2, "\(before) -> \(during)")
        #expect(during - after > size / 2, "\(during) -> \(after)")
    }

    /// Under a limit, the reader's decoders get half of what is left each and its blocks half
    /// among them, never more than asked and never under 1 MiB.
    @Test func readerLimitsFitWhatIsLeft() {
        let asked = ArchiveReader.Limits(maxIndexBytes: nil, maxEntries: nil, maxBufferedBlockSize: 64 << 20, maxDecoderMemory: 128 << 20)
        let fitted = asked.fitted(toAvailable: 48 << 20, parallelism: 2)
        #expect(fitted.maxDecoderMemory == 24 << 20)
        #expect(fitted.maxBufferedBlockSize == 4 << 20, "six blocks in half of 48 MiB")
        #expect(fitted.maxBufferedBlockSize * 6 <= 24 << 20, "the blocks held at once stay within half")

        let roomy = asked.fitted(toAvailable: 4 << 30, parallelism: 2)
        #expect(roomy.maxDecoderMemory == 128 << 20 && roomy.maxBufferedBlockSize == 64 << 20, "never above what was asked")

        let tiny = asked.fitted(toAvailable: 0, parallelism: 8)
        #expect(tiny.maxDecoderMemory == 1 << 20 && tiny.maxBufferedBlockSize == 1 << 20)
        #expect(ArchiveReader.Limits.decoderMemory(within: 10 << 20) == 5 << 20)
    }

    /// The reserve counts a stack per thread a pack starts, so it grows with the cores.
    @Test func theReserveGrowsWithTheCores() {
        let stack = AddressSpace.threadStack
        #expect(stack > 0)
        #expect(AddressSpace.reserve(cores: 8) - AddressSpace.reserve(cores: 2) == 6 * stack)
    }
}
