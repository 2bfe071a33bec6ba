import Synchronization
import Testing

@testable import IndexedArchive

/// A descriptor shared by threads that read it and one that closes it: closed exactly once, and
/// never while a read holds it.
@Suite struct SharedDescriptorTests {
    /// Records the descriptors closed.
    final class Closes: Sendable {
        let closed = Mutex<[Int32]>([])
        func close(_ fd: Int32) { closed.withLock { $0.append(fd) } }
        var list: [Int32] { closed.withLock { $0 } }
    }

    @Test func closingWithNoUserClosesAtOnceAndOnlyOnce() throws {
        let closes = Closes()
        let shared = SharedDescriptor(7, close: closes.close)
        #expect(try shared.use { $0 } == 7)
        shared.close()
        shared.close()
        #expect(closes.list == [7])
    }

    @Test func aCloseWhileInUseWaitsForTheLastUser() throws {
        let closes = Closes()
        let shared = SharedDescriptor(9, close: closes.close)
        try shared.use { fd in
            #expect(fd == 9)
            shared.close()
            // Still held: the read in progress keeps its descriptor.
            #expect(closes.list.isEmpty)
        }
        #expect(closes.list == [9])
    }

    @Test func aUseAfterCloseIsRefusedAsCancelled() {
        let closes = Closes()
        let shared = SharedDescriptor(3, close: closes.close)
        shared.close()
        #expect(throws: CancellationError.self) { try shared.use { _ in () } }
        #expect(closes.list == [3])
    }

    @Test func manyThreadsAndACloseCloseItExactlyOnce() async throws {
        let closes = Closes()
        let shared = SharedDescriptor(11, close: closes.close)
        let uses = Closes()  // one entry per use that got the descriptor
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<200 {
                group.addTask {
                    if index == 100 { shared.close() }
                    if (try? shared.use({ fd -> Int32 in
                        #expect(closes.list.isEmpty, "closed while in use")
                        return fd
                    })) != nil {
                        uses.close(0)
                    }
                }
            }
        }
        shared.close()
        #expect(closes.list == [11])
        #expect(!uses.list.isEmpty)
    }
}
