import Testing

@testable import IndexedArchive

extension EngineSuites {
    /// `ByteArrayPool`: storage comes back for the next use, never while someone else still
    /// reads it, and the pool holds no more than its bound.
    @Suite struct ByteArrayPoolTests {
        static func address(_ array: [UInt8]) -> UnsafeRawPointer? { array.withUnsafeBytes { $0.baseAddress } }

        @Test func anArrayGivenBackIsFilledAgainInPlace() {
            let pool = ByteArrayPool(limit: 2, smallest: 1024)
            var first = pool.take(minimumCapacity: 4096)
            #expect(first.isEmpty && first.capacity >= 4096)
            first.append(contentsOf: repeatElement(7, count: 4096))
            let storage = Self.address(first)
            pool.recycle(first)
            first = []
            let second = pool.take(minimumCapacity: 4000)
            #expect(second.isEmpty, "a kept array comes back empty")
            #expect(Self.address(second) == storage)
            #expect(pool.reuses.load(ordering: .relaxed) == 1)
            #expect(pool.count == 0)
        }

        /// A consumer that kept a copy of a delivered array still reads its bytes after the pool
        /// hands the array out again and it is refilled.
        @Test func aCopyStillHeldKeepsItsBytes() {
            let pool = ByteArrayPool(limit: 2, smallest: 1024)
            var bytes = pool.take(minimumCapacity: 2048)
            bytes.append(contentsOf: (0..<2048).map { UInt8(truncatingIfNeeded: $0) })
            let kept = bytes
            pool.recycle(bytes)
            bytes = []
            var reused = pool.take(minimumCapacity: 2048)
            reused.append(contentsOf: repeatElement(0xEE, count: 2048))
            #expect(kept == (0..<2048).map { UInt8(truncatingIfNeeded: $0) })
            #expect(Self.address(reused) != Self.address(kept))
            #expect(pool.reuses.load(ordering: .relaxed) == 0)
        }

        @Test func itKeepsNoMoreThanItsLimitAndNothingSmall() {
            let pool = ByteArrayPool(limit: 2, smallest: 1024)
            for _ in 0..<5 { pool.recycle(pool.take(minimumCapacity: 1024)) }
            #expect(pool.count == 1)
            let arrays = (0..<5).map { _ in pool.take(minimumCapacity: 1024) }
            for array in arrays { pool.recycle(array) }
            #expect(pool.count == 2)
            var small: [UInt8] = []
            small.reserveCapacity(100)
            let fresh = ByteArrayPool(limit: 2, smallest: 1024)
            fresh.recycle(small)
            #expect(fresh.count == 0)
        }

        /// Resizing keeps the storage and the bytes below the new count; what is gained is zeros,
        /// across more than one buffer of zeros.
        @Test func resizingKeepsTheStorage() {
            var array: [UInt8] = []
            array.reserveCapacity(300_000)
            array.append(contentsOf: repeatElement(9, count: 1000))
            let storage = Self.address(array)
            ByteArrayPool.resize(&array, to: 200_001)
            #expect(array.count == 200_001)
            #expect(array.prefix(1000).allSatisfy { $0 == 9 } && array.dropFirst(1000).allSatisfy { $0 == 0 })
            ByteArrayPool.resize(&array, to: 10)
            #expect(array == [UInt8](repeating: 9, count: 10))
            #expect(Self.address(array) == storage)
        }

        /// A take asks for room: a kept array too small for it stays kept, and the oldest large
        /// enough one is given.
        @Test func aTakeGetsAnArrayLargeEnough() {
            let pool = ByteArrayPool(limit: 3, smallest: 1024)
            let small = pool.take(minimumCapacity: 2048)
            var large = pool.take(minimumCapacity: 64 << 10)
            let largeStorage = Self.address(large)
            pool.recycle(small)
            pool.recycle(large)
            large = []
            let taken = pool.take(minimumCapacity: 32 << 10)
            #expect(Self.address(taken) == largeStorage)
            #expect(taken.capacity >= 32 << 10)
            #expect(pool.count == 1, "the small one stays")
            // A request none fits lets the smaller ones go.
            _ = pool.take(minimumCapacity: 128 << 10)
            #expect(pool.count == 0)
        }
    }
}
