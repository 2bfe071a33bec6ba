import Foundation
import Testing

@testable import AppMigration

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

@Suite struct ContainerLockTests {
    /// Duplicates each descriptor this process has open on `url`'s file. A `dup` shares the open
    /// file description, exactly as the copy that a process spawned by another thread holds until it
    /// execs.
    static func copiesOfDescriptors(on url: URL) throws -> [Int32] {
        var target = stat()
        try #require(stat(url.path(percentEncoded: false), &target) == 0)
        let open = (Int32(0)..<Int32(4096)).filter { fd in
            var info = stat()
            return fstat(fd, &info) == 0 && info.st_dev == target.st_dev && info.st_ino == target.st_ino
        }
        return try open.map { fd in
            let copy = dup(fd)
            try #require(copy >= 0)
            return copy
        }
    }

    @Test func aSecondMigrationIsRefusedWhileTheFirstHoldsTheLock() async throws {
        try await Scratch.with { scratch in
            let container = try scratch.container("app")
            #expect(!ContainerLock.isHeld(on: container))
            try await ContainerLock.withLock(on: container, extensionName: "first") {
                #expect(ContainerLock.isHeld(on: container))
                let refused = await #expect(throws: AppMigrationError.self) {
                    try await ContainerLock.withLock(on: container, extensionName: "second") {}
                }
                #expect(refused?.code == .migrationInProgress)
                #expect(refused?.message.contains("another migration is running in this container") == true)
                #expect(refused?.extensionName == "second")
            }
            #expect(!ContainerLock.isHeld(on: container))
            let ran = try await ContainerLock.withLock(on: container, extensionName: "third") { true }
            #expect(ran)
        }
    }

    /// A reservation (a receive waiting for its sender) holds the lock: the one migration run
    /// under it goes ahead, anything nested in that one and anything outside is refused.
    @Test func aReservationLetsOneMigrationThroughAndRefusesTheRest() async throws {
        try await Scratch.with { scratch in
            let container = try scratch.container("app")
            try await ContainerLock.reserving(container, extensionName: "receive") {
                #expect(ContainerLock.isHeld(on: container))
                let ran = try await ContainerLock.withLock(on: container, extensionName: "import") {
                    let nested = await #expect(throws: AppMigrationError.self) {
                        try await ContainerLock.withLock(on: container, extensionName: "nested") {}
                    }
                    #expect(nested?.code == .migrationInProgress)
                    return true
                }
                #expect(ran)
                let outside = await Task.detached {
                    try await ContainerLock.withLock(on: container, extensionName: "elsewhere") {}
                }.result
                #expect((try? outside.get()) == nil, "a task that did not reserve it is refused")
                #expect(ContainerLock.isHeld(on: container), "the import gave the lock back to the reservation")
            }
            #expect(!ContainerLock.isHeld(on: container))
        }
    }

    @Test func aCopyOfTheDescriptorInASpawnedProcessDoesNotKeepTheContainerLocked() async throws {
        try await Scratch.with { scratch in
            let container = try scratch.container("app")
            let lock = ContainerLock.url(for: container)
            let copies = try await ContainerLock.withLock(on: container, extensionName: "export") {
                try Self.copiesOfDescriptors(on: lock)
            }
            defer { for fd in copies { close(fd) } }
            #expect(copies.count == 1, "the lock's own descriptor, copied while it was held")
            #expect(!ContainerLock.isHeld(on: container), "released for every copy, not only ours")
            let ran = try await ContainerLock.withLock(on: container, extensionName: "import") { true }
            #expect(ran, "the migration that follows at once is not refused")
        }
    }

    @Test func aFailingMigrationReleasesTheLockToo() async throws {
        struct Failed: Error {}
        try await Scratch.with { scratch in
            let container = try scratch.container("app")
            let lock = ContainerLock.url(for: container)
            let copies = Box<[Int32]>([])
            defer { for fd in copies.current { close(fd) } }
            await #expect(throws: Failed.self) {
                try await ContainerLock.withLock(on: container, extensionName: "export") {
                    copies.current = try Self.copiesOfDescriptors(on: lock)
                    throw Failed()
                }
            }
            #expect(copies.current.count == 1)
            #expect(!ContainerLock.isHeld(on: container))
        }
    }
}
