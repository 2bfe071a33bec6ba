import AppMigration
import Foundation
import IndexedArchive
import Synchronization
import Tar
import Testing

@Suite struct ResourcesArchiverTests {
    /// An exporter that runs `body` with the archiver.
    struct Scripted: ResourcesExporting {
        var body: @Sendable (ResourcesArchiver, MigrationDataContainer) async throws -> Void = { _, _ in }
        var resourcesSizeEstimate: Int { 0 }
        var resourcesVersion: String { "1" }
        var resourcesCompressible: Bool { true }
        func exportResources(to archiver: sending ResourcesArchiver, request: MigrationRequest) async throws {
            try await body(archiver, appContainer)
        }
    }

    func export(
        in scratch: Scratch, system: MigrationSystem = quickSystem,
        seed: (MigrationDataContainer) throws -> Void = { _ in },
        _ body: @escaping @Sendable (ResourcesArchiver, MigrationDataContainer) async throws -> Void
    ) async throws -> URL {
        let container = try scratch.container("app-\(UUID().uuidString)")
        try SampleData.seed(container)
        try seed(container)
        let archive = scratch.url("\(UUID().uuidString).tar.xz")
        try await system.exportResources(
            of: Scripted(body: body), from: container,
            request: MigrationRequest(destinationPlatform: .android), to: archive)
        return archive
    }

    @Test func nilPathUsesTheLastComponentAndDirectoriesGoWhole() async throws {
        try await Scratch.with { scratch in
            let archive = try await export(in: scratch) { archiver, container in
                try await archiver.appendItem(at: container.documentsDirectory.appending(path: "profile.json"))
                try await archiver.appendItem(at: container.documentsDirectory.appending(path: "media"))
            }
            #expect(
                try await memberNames(of: archive) == [
                    "profile.json", "media", "media/clips", "media/clips/one.mp4",
                    "media/cover.jpg"
                ])
        }
    }

    @Test(arguments: [
        ("a/b/c.json", "a/b/c.json"), ("/rooted/c.json", "rooted/c.json"), ("./x//y/./c.json", "x/y/c.json"),
        ("x/../y/c.json", "y/c.json")
    ])
    func pathInArchiveIsUsedAsGivenWithinTheRoot(given: String, stored: String) async throws {
        try await Scratch.with { scratch in
            let archive = try await export(in: scratch) { archiver, container in
                try await archiver.appendItem(at: container.documentsDirectory.appending(path: "profile.json"), pathInArchive: given)
            }
            #expect(try await memberNames(of: archive) == [stored])
        }
    }

    @Test(arguments: ["../escape.json", "a/../../escape.json", "", "/", "./.", "../\u{301}escape.json", "a/../../\u{301}escape"])
    func pathInArchiveThatLeavesTheRootIsRefused(given: String) async throws {
        try await expectRefusedPathInArchive(given)
    }

    /// The host's folder by any spelling: a file appended as `.amk/import-status.json` reached an
    /// importer that copies the staged items into its container as the host's own status.
    @Test(arguments: [".amk", ".amk/import-status.json", "./.amk/container", "x/../.amk/y", "/.amk"])
    func pathInArchiveInsideTheHostsFolderIsRefused(given: String) async throws {
        try await expectRefusedPathInArchive(given)
    }

    func expectRefusedPathInArchive(_ given: String) async throws {
        try await Scratch.with { scratch in
            await #expect {
                _ = try await export(in: scratch) { archiver, container in
                    try await archiver.appendItem(
                        at: container.documentsDirectory.appending(path: "profile.json"),
                        pathInArchive: given)
                }
            } throws: { error in
                (error as? AppMigrationError)?.code == .invalidPathInArchive
            }
        }
    }

    @Test func symbolicLinkInsideTheContainerIsStoredAsALinkNotFollowed() async throws {
        try await Scratch.with { scratch in
            try write("secret", to: "outside/secret.txt", in: scratch.root)
            let outside = scratch.url("outside").path(percentEncoded: false)
            let archive = try await export(in: scratch) { archiver, container in
                let link = container.documentsDirectory.appending(path: "link")
                try FileManager.default.createSymbolicLink(atPath: link.path(percentEncoded: false), withDestinationPath: outside)
                try await archiver.appendItem(at: link)
                // Named as a folder (as `documentsDirectory` is), it is a link all the same.
                try await archiver.appendItem(
                    at: container.documentsDirectory.appending(path: "link", directoryHint: .isDirectory), pathInArchive: "as-folder")
            }
            let entries = try await ArchiveReader(path: archive.path(percentEncoded: false)).entries()
            #expect(entries.map(\.name) == ["link", "as-folder"])
            #expect(entries.allSatisfy { $0.kind == .symbolicLink && $0.linkTarget == outside })
        }
    }

    /// A path in the archive longer than any path (an extension sent 100 KB names: the export
    /// succeeded with an archive nothing could read, and 600 of them took the host to 2.7 GB) is
    /// refused, by its length, without printing it.
    @Test func aPathInArchiveLongerThanAPathCanBeIsRefused() async throws {
        try await Scratch.with { scratch in
            let long = String(repeating: "d/", count: 2048) + "x"
            let error = await #expect(throws: AppMigrationError.self) {
                _ = try await export(in: scratch) { archiver, container in
                    try await archiver.appendItem(at: container.documentsDirectory.appending(path: "profile.json"), pathInArchive: long)
                }
            }
            #expect(error?.code == .invalidPathInArchive)
            #expect(
                error?.message.contains("\(long.utf8.count) bytes") == true && error?.message.contains("d/d/d/") == false,
                "\(String(describing: error))")
        }
    }

    /// A NUL in the item's path: the system would read the path up to it, so `Documents/..\0`
    /// passed as a name in the container and was then walked as the container's root, its
    /// folders inside themselves without end.
    @Test(arguments: ["..\u{0}", "profile.json\u{0}", "profile.json\u{0}/x"])
    func aPathHoldingANULIsRefused(name: String) async throws {
        try await Scratch.with { scratch in
            let error = await #expect(throws: AppMigrationError.self) {
                _ = try await export(in: scratch) { archiver, container in
                    let path = container.documentsDirectory.path(percentEncoded: false) + "/" + name
                    try await archiver.appendItem(at: URL(filePath: path), pathInArchive: "x")
                }
            }
            #expect(error?.code == .itemNotFound && error?.message.contains("NUL") == true, "\(String(describing: error))")
        }
    }

    /// A `pathInArchive` under one already stored as a file, or with a component longer than a
    /// file name: the export once committed an archive that its own import, GNU tar and bsdtar
    /// all refused. Refused as appended; the export goes on and imports.
    @Test(arguments: ["x/child", "x/deeper/child", "Documents/" + String(repeating: "z", count: 300)])
    func aPathInArchiveNoSystemCouldExtractIsRefused(second: String) async throws {
        try await Scratch.with { scratch in
            let refusal = Mutex<AppMigrationError?>(nil)
            let archive = try await export(in: scratch) { archiver, container in
                let profile = container.documentsDirectory.appending(path: "profile.json")
                try await archiver.appendItem(at: profile, pathInArchive: "x")
                do {
                    try await archiver.appendItem(at: profile, pathInArchive: second)
                } catch let error as AppMigrationError {
                    refusal.withLock { $0 = error }
                }
            }
            let error = try #require(refusal.withLock { $0 }, "'\(second)' was appended after 'x'")
            #expect(error.code == .invalidPathInArchive, "\(error)")
            let out = scratch.url("out")
            try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
            try await ArchiveReader.open(path: archive.path(percentEncoded: false)).extract(to: out.path(percentEncoded: false))
        }
    }

    /// A folder holding a name already in the archive: its first members were stored before
    /// the taken name was met, so the refusal the extension caught ended the archive, every
    /// later append failed with it (naming the next, innocent file) and so did the export. The
    /// folder is refused whole before any of it is stored, and the export goes on.
    @Test func aCaughtRefusalOfAFolderLeavesTheArchiveAsItWas() async throws {
        try await Scratch.with { scratch in
            let refusal = Mutex<AppMigrationError?>(nil)
            let archive = try await export(
                in: scratch,
                seed: { container in
                    let folder = container.documentsDirectory.appending(path: "x")
                    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                    try Data("a".utf8).write(to: folder.appending(path: "a.txt"))
                    try Data("m".utf8).write(to: folder.appending(path: "m.txt"))
                }
            ) { archiver, container in
                let folder = container.documentsDirectory.appending(path: "x")
                try await archiver.appendItem(at: folder.appending(path: "m.txt"), pathInArchive: "x/m.txt")
                do {
                    try await archiver.appendItem(at: folder)
                } catch let error as AppMigrationError {
                    refusal.withLock { $0 = error }
                }
                try await archiver.appendItem(at: container.documentsDirectory.appending(path: "profile.json"))
            }
            let error = try #require(refusal.withLock { $0 }, "the folder was appended over x/m.txt")
            #expect(error.code == .invalidPathInArchive && "\(error)".contains("'x/m.txt' is already in the archive"), "\(error)")
            #expect(try await memberNames(of: archive) == ["x/m.txt", "profile.json"])
        }
    }

    /// An append once the export has returned (the archiver kept, or an unawaited task): an
    /// error that code written for AppMigrationKit can name, saying so, and the archive as it was.
    @Test func anAppendAfterTheExportReturnedIsTheHostsError() async throws {
        try await Scratch.with { scratch in
            let kept = Mutex<ResourcesArchiver?>(nil)
            let container = Mutex<MigrationDataContainer?>(nil)
            let archive = try await export(in: scratch) { archiver, appContainer in
                try await archiver.appendItem(at: appContainer.documentsDirectory.appending(path: "profile.json"))
                kept.withLock { $0 = archiver }
                container.withLock { $0 = appContainer }
            }
            let archiver = try #require(kept.withLock { $0 })
            let documents = try #require(container.withLock { $0 }).documentsDirectory
            let error = await #expect(throws: AppMigrationError.self) {
                try await archiver.appendItem(at: documents.appending(path: "media"))
            }
            #expect(error?.code == .itemUnreadable)
            #expect("\(String(describing: error))".contains("after exportResources(to:request:) returned"), "\(String(describing: error))")
            #expect(try await memberNames(of: archive) == ["profile.json"])
        }
    }

    /// A FIFO appended by itself returned normally with nothing stored (the engine skips such
    /// files with a warning only a log saw): it is refused by name, and the export goes on.
    @Test func aFIFOAppendedByItselfIsRefusedByName() async throws {
        try await Scratch.with { scratch in
            let refusal = Mutex<AppMigrationError?>(nil)
            let archive = try await export(
                in: scratch,
                seed: { container in #expect(mkfifo(container.documentsDirectory.appending(path: "ipc.fifo").path, 0o600) == 0) }
            ) { archiver, container in
                do {
                    try await archiver.appendItem(at: container.documentsDirectory.appending(path: "ipc.fifo"))
                } catch let error as AppMigrationError {
                    refusal.withLock { $0 = error }
                }
                try await archiver.appendItem(at: container.documentsDirectory.appending(path: "profile.json"))
            }
            let error = try #require(refusal.withLock { $0 }, "the FIFO was taken without a word")
            #expect(error.code == .itemUnreadable)
            #expect("\(error)".contains("ipc.fifo") && "\(error)".contains("a FIFO"), "\(error)")
            #expect(try await memberNames(of: archive) == ["profile.json"])
        }
    }

    @Test func missingItemIsAClearError() async throws {
        try await Scratch.with { scratch in
            await #expect {
                _ = try await export(in: scratch) { archiver, container in
                    try await archiver.appendItem(at: container.documentsDirectory.appending(path: "nope/missing.json"))
                }
            } throws: { error in
                (error as? AppMigrationError)?.code == .itemNotFound && "\(error)".contains("missing.json")
            }
        }
    }

    /// A '/' followed by a combining mark is one Swift Character: a confinement that split the
    /// path as a String saw one component where the kernel climbs out of the container.
    @Test func aPathClimbingOutBehindACombiningMarkIsRefused() async throws {
        try await Scratch.with { scratch in
            try write("someone else's\n", to: "\u{301}secret.txt", in: scratch.root)
            await #expect {
                _ = try await export(in: scratch) { archiver, container in
                    let sneaky = container.documentsDirectory.path(percentEncoded: false) + "/../../\u{301}secret.txt"
                    try await archiver.appendItem(at: URL(fileURLWithPath: sneaky), pathInArchive: "stolen.txt")
                }
            } throws: { error in
                (error as? AppMigrationError)?.code == .outsideContainer
            }
        }
    }

    /// An app's group containers hold its shared data, which Apple's import code writes back
    /// into the group: an export may append from them (it was refused as outside the container),
    /// and nothing beside them, a sibling folder or a climb out of the group, is let through.
    @Test func anAppGroupsDataMayBeAppendedAndNothingBesideIt() async throws {
        try await Scratch.with { scratch in
            let made = try scratch.container("app")
            try SampleData.seed(made)
            let group = scratch.url("groups/group.example")
            try write("shared\n", to: "groups/group.example/shared.txt", in: scratch.root)
            try write("not the app's\n", to: "groups/other/secret.txt", in: scratch.root)
            let container = MigrationDataContainer(
                bundleIdentifier: made.bundleIdentifier, containerRootDirectory: made.containerRootDirectory,
                appGroupDirectories: ["group.example": group])
            let archive = scratch.url("group.tar.xz")
            let refusals = Mutex<[AppMigrationError.Code]>([])
            try await quickSystem.exportResources(
                of: Scripted { archiver, _ in
                    let url = try #require(FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: "group.example"))
                    try await archiver.appendItem(at: url.appending(path: "shared.txt"), pathInArchive: "Group/shared.txt")
                    for outside in [
                        scratch.url("groups/other/secret.txt"), URL(filePath: url.path(percentEncoded: false) + "/../other/secret.txt")
                    ] {
                        do {
                            try await archiver.appendItem(at: outside, pathInArchive: "stolen.txt")
                        } catch let error as AppMigrationError {
                            refusals.withLock { $0.append(error.code) }
                        }
                    }
                }, from: container, request: MigrationRequest(destinationPlatform: .android), to: archive)
            #expect(try await memberNames(of: archive) == ["Group/shared.txt"])
            #expect(refusals.withLock { $0 } == [.outsideContainer, .outsideContainer])
        }
    }

    /// A group folder that does not exist when the export starts: the extension's
    /// `containerURL(forSecurityApplicationGroupIdentifier:)` creates it, and what the extension
    /// puts there may be appended (it was refused as outside the container: the roots were the
    /// folders that existed when the export began).
    @Test func anAppGroupMadeDuringTheExportMayBeAppended() async throws {
        try await Scratch.with { scratch in
            let made = try scratch.container("app")
            let container = MigrationDataContainer(
                bundleIdentifier: made.bundleIdentifier, containerRootDirectory: made.containerRootDirectory,
                appGroupDirectories: ["group.example": scratch.url("groups/not-yet")])
            let archive = scratch.url("group.tar.xz")
            try await quickSystem.exportResources(
                of: Scripted { archiver, _ in
                    let url = try #require(FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: "group.example"))
                    try Data("made now\n".utf8).write(to: url.appending(path: "state.txt"))
                    try await archiver.appendItem(at: url, pathInArchive: "Group")
                }, from: container, request: MigrationRequest(destinationPlatform: .android), to: archive)
            #expect(try await memberNames(of: archive) == ["Group", "Group/state.txt"])
        }
    }

    @Test func theHostsOwnFolderIsRefused() async throws {
        try await Scratch.with { scratch in
            await #expect {
                _ = try await export(in: scratch) { archiver, container in
                    try await archiver.appendItem(at: container.containerRootDirectory.appending(path: ".amk/migration.lock"))
                }
            } throws: { error in
                (error as? AppMigrationError)?.code == .outsideContainer
            }
        }
    }

    /// Appending the whole container stores the app's data but not the host's own folder (its
    /// lock, its marker, the source's import status), which an importer copying everything back
    /// would have carried into the destination.
    @Test func theWholeContainerLeavesTheHostsFolderOut() async throws {
        try await Scratch.with { scratch in
            let archive = try await export(
                in: scratch,
                seed: { container in
                    #expect(
                        FileManager.default.fileExists(
                            atPath: container.containerRootDirectory.appending(path: ".amk").path(percentEncoded: false)), "the premise")
                }
            ) { archiver, container in
                try await archiver.appendItem(at: container.containerRootDirectory, pathInArchive: "everything")
            }
            let names = try await memberNames(of: archive)
            #expect(names.contains("everything/Documents/profile.json"), "\(names)")
            #expect(!names.contains { $0.hasPrefix("everything/.amk") }, "\(names.filter { $0.contains(".amk") })")
        }
    }

    @Test func backpressureInsideAppendItemIsNotAStall() async throws {
        // The extension's stage may be silent for 5 s. One append of 6 chunks, with one
        // compressor whose first chunk takes 15 s and room for 2 chunks in flight, waits in
        // appendItem for about 15 s: the engine's stages are watched meanwhile, and the export
        // succeeds. Were the extension's clock running inside appendItem, it would stall while
        // the first chunk compresses.
        //
        // What the test cannot decide is a loaded machine keeping the extension's body from
        // reaching appendItem for 5 s (in CI's full suite the cooperative pool has been held for
        // 20 s): such a stall comes before the first chunk, proves nothing either way, and the
        // export is tried again.
        let policy = WatchdogPolicy(
            stallTimeouts: [.extensionCode: .seconds(5)], defaultStallTimeout: .seconds(60),
            gracePeriod: .seconds(20), checkInterval: .milliseconds(10))
        for attempt in 1...4 {
            let chunksStarted = Box(0)
            var system = MigrationSystem(watchdogPolicy: policy, compressionPreset: 0, chunkSize: 1 << 20, workers: 1)
            system.compressionHook = { _ in
                let first = chunksStarted.update { $0 += 1 } == 1
                if first { usleep(15_000_000) }
            }
            let elapsed = Box(Duration.zero)
            do {
                try await Scratch.with { scratch in
                    let archive = try await export(
                        in: scratch, system: system,
                        seed: { container in
                            try write(Data(count: 6 << 20), to: "big.bin", in: container.documentsDirectory)
                        }
                    ) { archiver, container in
                        let start = ContinuousClock.now
                        try await archiver.appendItem(at: container.documentsDirectory.appending(path: "big.bin"))
                        elapsed.current = ContinuousClock.now - start
                    }
                    #expect(elapsed.current > .seconds(5), "the append must outlast the extension's timeout to prove anything")
                    #expect(try await memberNames(of: archive) == ["big.bin"])
                }
                return
            } catch is AppMigrationError where chunksStarted.current == 0 && attempt < 4 {
                // A stall before the append began is the machine's load, not the engine's (see
                // above); any other failure, or the last one, is the test's answer.
                continue
            }
        }
    }

    /// Never stalls, and waits 20 s for a cancelled extension to return: the test below cancels
    /// the export itself once the extension's body runs.
    ///
    /// It once relied on a 2 s stall timeout to cancel, and in CI's full suite the extension's
    /// body, waiting for a thread of a pool every other test was using, had not started 2 s after
    /// the stall clock had: the test then proved nothing about appendItem.
    static let patientSystem: MigrationSystem = {
        let policy = WatchdogPolicy(defaultStallTimeout: .seconds(600), gracePeriod: .seconds(20))
        return MigrationSystem(
            watchdogPolicy: policy, importWatchdogPolicy: policy, compressionPreset: 0,
            chunkSize: 1 << 20, workers: 2)
    }()

    @Test func appendItemThrowsCancellationErrorOnceTheExportIsCancelled() async throws {
        try await Scratch.with { scratch in
            let started = Box(false)
            let seen = Box<String?>(nil)
            let result: Result<URL, any Error> = try await withThrowingTaskGroup(of: Result<URL, any Error>.self) { group in
                group.addTask {
                    do {
                        return .success(
                            try await export(in: scratch, system: Self.patientSystem) { archiver, container in
                                started.current = true
                                // Appends only once the export is cancelled: waiting for the
                                // cancellation itself, not for a time.
                                await waitUntilCancelledIgnoringIt()
                                do {
                                    try await archiver.appendItem(at: container.documentsDirectory.appending(path: "profile.json"))
                                    seen.current = "appended"
                                } catch {
                                    seen.current = String(describing: type(of: error))
                                    throw error
                                }
                            })
                    } catch {
                        return .failure(error)
                    }
                }
                let deadline = ContinuousClock.now + .seconds(120)
                while !started.current && ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(10))
                }
                group.cancelAll()
                return try await group.next()!
            }
            try #require(started.current, "the export's body never ran: \(result)")
            let error = try #require(throws: (any Error).self) { try result.get() }
            #expect(error is CancellationError, "the caller cancelled: \(error)")
            // The host may answer the caller before the cancelled extension's code has run on (it
            // leaves an extension behind rather than wait for it): wait for the extension itself.
            let deadline = ContinuousClock.now + .seconds(30)
            while seen.current == nil && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(seen.current == "CancellationError", "answered with \(error)")
        }
    }
}
