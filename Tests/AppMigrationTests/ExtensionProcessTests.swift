import AppMigration
import Foundation
import IndexedArchive
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Extensions in processes of their own (``ExtensionExecutable``): the test extension executable
/// (Tests/TestExtension, an `@main` type conforming to the extension protocols) misbehaving in
/// each way a process can, and scripts that do not speak the protocol.
///
/// For each, the caller's answer comes within stall timeout + grace period + 1 s, it is a typed
/// `AppMigrationError` naming what happened, nothing is left at an export's output, a failed
/// import clears the container and records the failure, and nothing the extension started runs
/// (or writes) after the answer.
@Suite(.serialized) struct ExtensionProcessTests {
    static let testExtension = BuildProducts.path("amk-test-extension")

    /// The ladder's stall timeout: short, so that each stuck test is quick, yet longer than a
    /// loaded 2-core machine has taken to start the debug extension (CI saw more than 1 s).
    static let stall: Duration = .seconds(2)
    static let grace: Duration = .seconds(1)
    /// The issue's bound: stall timeout + grace period + 1 s.
    static let answerBound: Duration = stall + grace + .seconds(1)

    static let system: MigrationSystem = {
        let policy = WatchdogPolicy(defaultStallTimeout: stall, gracePeriod: grace, checkInterval: .milliseconds(20))
        return MigrationSystem(
            watchdogPolicy: policy, importWatchdogPolicy: policy, compressionPreset: 0, chunkSize: 1 << 20, workers: 2)
    }()

    /// For tests about what an extension says or does rather than how long it takes to stall:
    /// the default of ``export(_:from:to:using:)`` and ``importArchive(_:into:using:system:)``.
    /// A loaded machine has taken longer than a short stall timeout to start an extension, which
    /// `system` then reports as a stall where the test expected the extension's own outcome.
    static let patientSystem: MigrationSystem = {
        let policy = WatchdogPolicy(defaultStallTimeout: .seconds(60), gracePeriod: .seconds(5), checkInterval: .milliseconds(20))
        return MigrationSystem(
            watchdogPolicy: policy, importWatchdogPolicy: policy, compressionPreset: 0, chunkSize: 1 << 20, workers: 2)
    }()

    static func misbehaving(_ behaviour: String?, after: Int = 0, sentinel: URL? = nil) -> ExtensionExecutable {
        // No crash backtraces: symbolicating a debug binary takes a core for a second or more,
        // which the concurrent suites' timing bounds then pay for.
        var environment: [String: String] = ["AMK_TEST_AFTER": String(after), "SWIFT_BACKTRACE": "enable=no"]
        environment["AMK_TEST_BEHAVIOUR"] = behaviour
        environment["AMK_TEST_SENTINEL"] = sentinel?.path(percentEncoded: false)
        if behaviour != nil {
            environment["AMK_TEST_STUCK_MARK"] = FileManager.default.temporaryDirectory
                .appending(path: "amk-stuck-\(UUID().uuidString)").path(percentEncoded: false)
        }
        return ExtensionExecutable(path: testExtension, environment: environment)
    }

    /// A container with three small documents.
    static func seeded(_ scratch: Scratch, _ name: String) throws -> MigrationDataContainer {
        let container = try scratch.container(name)
        for index in 1...3 {
            _ = try write("document \(index)\n", to: "Documents/doc\(index).txt", in: container.containerRootDirectory)
        }
        return container
    }

    struct Answer {
        var error: (any Error)?
        var elapsed: Duration
        /// From the moment the extension began to misbehave (its stuck mark) to the answer: what
        /// the issue's bound is about. A loaded machine can take seconds to start a debug
        /// process, which `elapsed` counts and this does not. `elapsed` when there is no mark.
        var sinceStuck: Duration
        /// Whether the extension left its stuck mark.
        var marked = false
        /// How late, at worst, the cooperative pool ran a short sleep's wake-up while the call
        /// ran (``withPoolLateness(_:)``).
        var poolLateness: Duration = .zero
        var appError: AppMigrationError? { error as? AppMigrationError }
        /// The issue's bound, plus the time this process's pool could not run anything: the
        /// host's answer hops through the cooperative pool, which the suites running beside
        /// this one share, and on a 2-core machine a full `swift test` held it for up to 0.8 s at a time (and an answer
        /// came 1.7 s later than alone).
        var bound: Duration { ExtensionProcessTests.answerBound + poolLateness }
        var timing: String { "answered \(sinceStuck) after it went wrong, \(elapsed) after the start, pool late by \(poolLateness)" }

        init(error: (any Error)?, start: ContinuousClock.Instant, executable: ExtensionExecutable) {
            let answeredAt = Date()
            self.error = error
            elapsed = ContinuousClock.now - start
            sinceStuck = elapsed
            if let mark = executable.environment["AMK_TEST_STUCK_MARK"] {
                defer { try? FileManager.default.removeItem(atPath: mark) }
                if let text = try? String(contentsOfFile: mark, encoding: .utf8), let stuckAt = Double(text) {
                    sinceStuck = .milliseconds(Int64((answeredAt.timeIntervalSince1970 - stuckAt) * 1000))
                    marked = true
                }
            }
        }
    }

    static func export(
        _ executable: ExtensionExecutable, from container: MigrationDataContainer, to archive: URL,
        using system: MigrationSystem = patientSystem
    ) async -> Answer {
        let start = ContinuousClock.now
        var (answer, lateness) = await withPoolLateness {
            do {
                try await system.exportResources(
                    of: executable, from: container, request: MigrationRequest(destinationPlatform: .android), to: archive)
                return Answer(error: nil, start: start, executable: executable)
            } catch {
                return Answer(error: error, start: start, executable: executable)
            }
        }
        answer.poolLateness = lateness
        return answer
    }

    static func importArchive(
        _ archive: URL, into container: MigrationDataContainer, using executable: ExtensionExecutable,
        system: MigrationSystem = patientSystem
    ) async -> Answer {
        let start = ContinuousClock.now
        var (answer, lateness) = await withPoolLateness {
            do {
                try await system.importResources(from: archive, into: container, using: executable)
                return Answer(error: nil, start: start, executable: executable)
            } catch {
                return Answer(error: error, start: start, executable: executable)
            }
        }
        answer.poolLateness = lateness
        return answer
    }

    /// Runs `body` beside a probe that sleeps 10 ms at a time on the cooperative pool, and returns
    /// the probe's worst lateness: how long, at worst, the pool could not run a task that was
    /// ready. That is the machine's share of a late answer, not the host's: the host's own work
    /// stays off the pool (the watchdog tests hold it to that while every core compresses).
    static func withPoolLateness<T: Sendable>(_ body: () async -> T) async -> (T, Duration) {
        await withTaskGroup(of: Duration.self) { group in
            group.addTask {
                var worst: Duration = .zero
                while true {
                    let before = ContinuousClock.now
                    do {
                        try await Task.sleep(for: .milliseconds(10))
                    } catch {
                        return worst  // cancelled: the call has answered
                    }
                    worst = max(worst, ContinuousClock.now - before - .milliseconds(10))
                }
            }
            let result = await body()
            group.cancelAll()
            return (result, await group.next() ?? .zero)
        }
    }

    /// A good archive of the seeded container, made by the well-behaved executable.
    static func goodArchive(_ scratch: Scratch) async throws -> URL {
        let source = try seeded(scratch, "source-\(UUID().uuidString)")
        let archive = scratch.url("good-\(UUID().uuidString).tar.xz")
        let answer = await export(misbehaving(nil), from: source, to: archive)
        if let error = answer.error { throw error }
        return archive
    }

    // MARK: - Working

    @Test func anExtensionExecutableExportsAndImportsOutOfProcess() async throws {
        try await Scratch.with { scratch in
            let source = try Self.seeded(scratch, "source")
            let archive = scratch.url("notes.tar.xz")
            let properties = try await Self.patientSystem.exportResources(
                of: Self.misbehaving(nil), from: source, request: MigrationRequest(destinationPlatform: .android), to: archive)
            // The properties are the process's, not the placeholders ExtensionExecutable holds.
            #expect(properties.version == "7.1")
            #expect(properties.sizeEstimate == 4096)
            #expect(try await memberNames(of: archive).sorted() == ["Documents/doc1.txt", "Documents/doc2.txt", "Documents/doc3.txt"])
            let reader = try await ArchiveReader.open(path: archive.path(percentEncoded: false))
            #expect(try await reader.metadata()["extension"] == "amk-test-extension")

            let destination = try scratch.container("destination")
            try await Self.patientSystem.importResources(from: archive, into: destination, using: Self.misbehaving(nil))
            #expect(try read("Documents/doc2.txt", in: destination.containerRootDirectory) == "document 2\n")
            guard case .success? = importStatus(of: destination) else {
                Issue.record("the import status is not success")
                return
            }
        }
    }

    /// An extension process is told its container's app groups (`AMK_APP_GROUPS`): its
    /// `containerURL(forSecurityApplicationGroupIdentifier:)` found none, so a group's data was
    /// neither exported nor cleared and written back on import. And the host lets it append from
    /// a group: a group's data is the app's to export.
    @Test func anExtensionProcessExportsAndImportsItsAppGroup() async throws {
        try await Scratch.with { scratch in
            let seeded = try Self.seeded(scratch, "source")
            let groups = scratch.url("groups")
            let source = MigrationDataContainer(
                bundleIdentifier: seeded.bundleIdentifier, containerRootDirectory: seeded.containerRootDirectory,
                appGroupDirectories: ["group.amk.test": groups.appending(path: "source", directoryHint: .isDirectory)])
            try FileManager.default.createDirectory(at: groups.appending(path: "source"), withIntermediateDirectories: true)
            try Data("shared by the app\n".utf8).write(to: groups.appending(path: "source/shared.txt"))
            let archive = scratch.url("group.tar.xz")
            try await Self.patientSystem.exportResources(
                of: Self.misbehaving(nil), from: source, request: MigrationRequest(destinationPlatform: .android), to: archive)
            #expect(try await memberNames(of: archive).contains("Group/shared.txt"))

            let made = try scratch.container("destination")
            let destination = MigrationDataContainer(
                bundleIdentifier: made.bundleIdentifier, containerRootDirectory: made.containerRootDirectory,
                appGroupDirectories: ["group.amk.test": groups.appending(path: "destination", directoryHint: .isDirectory)])
            try await Self.patientSystem.importResources(from: archive, into: destination, using: Self.misbehaving(nil))
            #expect(try read("destination/shared.txt", in: groups) == "shared by the app\n")
            #expect(try read("Documents/doc2.txt", in: destination.containerRootDirectory) == "document 2\n")
        }
    }

    @Test func anExtensionExecutableRunsUnderAppMigrationTester() async throws {
        try await Scratch.with { scratch in
            let source = try Self.seeded(scratch, "source")
            let destination = try scratch.container("destination")
            try await AppMigrationTester.withExtension(
                Self.misbehaving(nil), exportContainer: source, importContainer: destination, workDirectory: scratch.url("work"),
                system: Self.patientSystem
            ) {
                let tester = try await AppMigrationTester(platform: .android)
                let exported = try await tester.exportController.exportResources()
                #expect(exported.exportProperties.version == "7.1")
                try await tester.importController.importResources(from: exported.extractedResourcesURL)
            }
            #expect(try read("Documents/doc3.txt", in: destination.containerRootDirectory) == "document 3\n")
        }
    }

    @Test func calledDirectlyItsImportMirrorsTheProcesssProgress() async throws {
        try await Scratch.with { scratch in
            let staged = scratch.url("staged")
            _ = try write("one\n", to: "Documents/one.txt", in: staged)
            _ = try write("two\n", to: "Documents/two.txt", in: staged)
            let destination = try scratch.container("destination")
            let executable = Self.misbehaving(nil)
            try await MigrationDataContainer.withCurrent(destination) {
                try await executable.importResources(
                    at: staged,
                    request: ResourcesImportRequest(
                        sourceAppIdentifier: MigrationAppIdentifier(
                            storeIdentifier: .unknown, bundleIdentifier: "com.example.myapp", platform: .current),
                        sourceVersion: "7.1"))
            }
            #expect(try read("Documents/two.txt", in: destination.containerRootDirectory) == "two\n")
            #expect(executable.resourcesImportProgress.fractionCompleted == 1)
        }
    }

    @Test func anExtensionThatAppendsOutsideItsContainerGetsTheHostsRefusal() async throws {
        try await Scratch.with { scratch in
            // The process's appendItem goes to the host, which confines it as for an in-process one.
            let source = try Self.seeded(scratch, "source")
            let archive = scratch.url("escape.tar.xz")
            let answer = await Self.export(Self.misbehaving("outside", after: 1), from: source, to: archive)
            #expect(answer.appError?.code == .extensionFailed)
            #expect(answer.appError?.message.contains("outside") == true, "\(String(describing: answer.error))")
            #expect(!FileManager.default.fileExists(atPath: archive.path(percentEncoded: false)))
        }
    }

    // MARK: - Stuck: the ladder

    @Test(arguments: ["sleep", "spin", "ignore-term"])
    func aStuckExportIsKilledAndAnsweredOnTime(behaviour: String) async throws {
        try await Scratch.with { scratch in
            let source = try Self.seeded(scratch, "source")
            let archive = scratch.url("stuck.tar.xz")
            let answer = await Self.export(Self.misbehaving(behaviour, after: 1), from: source, to: archive, using: Self.system)
            let error = try #require(answer.appError, "\(String(describing: answer.error))")
            #expect(error.code == .terminated, "\(error)")
            #expect(error.message.contains("stalled"), "\(error)")
            #expect(answer.marked, "the extension never reached its misbehaviour")
            if behaviour == "ignore-term" {
                #expect(error.message.contains("SIGKILL"), "\(error)")
            } else {
                // SIGTERM, the ladder's middle step, ends a process that does not ignore it.
                #expect(error.message.contains("SIGTERM") || error.message.contains("SIGKILL"), "\(error)")
            }
            #expect(answer.sinceStuck < answer.bound, "\(answer.timing)")
            #expect(!FileManager.default.fileExists(atPath: archive.path(percentEncoded: false)))
        }
    }

    /// A grandchild the extension started is killed with it, and writes nothing after the host
    /// answers. An extension that moves itself into another process group (its parent's, which
    /// the kernel allows within a session) escaped the kill of its group: the host waited out its
    /// bound, answered, and the extension went on writing into the container. The host kills
    /// the process itself as well as its group.
    @Test(arguments: [("grandchild", "the grandchild"), ("leave-group", "the extension")])
    func whatTheExtensionLeftRunningIsKilledAndWritesNothingAfterTheAnswer(mode: String, writer: String) async throws {
        try await Scratch.with { scratch in
            let source = try Self.seeded(scratch, "source")
            let sentinel = source.documentsDirectory.appending(path: "zz-sentinel")
            let archive = scratch.url("\(mode).tar.xz")
            let answer = await Self.export(
                Self.misbehaving(mode, after: 1, sentinel: sentinel), from: source, to: archive, using: Self.system)
            #expect(answer.appError?.code == .terminated, "\(String(describing: answer.error))")
            #expect(answer.sinceStuck < answer.bound, "\(answer.timing)")
            let path = sentinel.path(percentEncoded: false)
            #expect(FileManager.default.fileExists(atPath: path), "\(writer) never ran")
            let atAnswer = try? String(contentsOfFile: path, encoding: .utf8)
            try await Task.sleep(for: .milliseconds(300))
            #expect((try? String(contentsOfFile: path, encoding: .utf8)) == atAnswer, "\(writer) wrote after the answer")
        }
    }

    @Test func aStuckImportIsKilledTheContainerClearedAndTheFailureRecorded() async throws {
        try await Scratch.with { scratch in
            let archive = try await Self.goodArchive(scratch)
            let destination = try scratch.container("destination")
            let sentinel = destination.documentsDirectory.appending(path: "zz-sentinel")
            let answer = await Self.importArchive(
                archive, into: destination, using: Self.misbehaving("grandchild", after: 1, sentinel: sentinel), system: Self.system)
            let error = try #require(answer.appError, "\(String(describing: answer.error))")
            #expect(error.code == .terminated, "\(error)")
            #expect(answer.sinceStuck < answer.bound, "\(answer.timing)")
            // Cleared: the first document it copied and the grandchild's sentinel are gone, and
            // stay gone.
            #expect(files(under: destination.documentsDirectory).isEmpty)
            try await Task.sleep(for: .milliseconds(300))
            #expect(files(under: destination.documentsDirectory).isEmpty, "something wrote into the cleared container")
            guard case .failure(let recorded)? = importStatus(of: destination) else {
                Issue.record("no failure recorded")
                return
            }
            #expect("\(recorded)".contains("terminated"))
        }
    }

    @Test func anExtensionThatStopsWhenCancelledIsReportedAsStalled() async throws {
        try await Scratch.with { scratch in
            let source = try Self.seeded(scratch, "source")
            let archive = scratch.url("cancellable.tar.xz")
            let answer = await Self.export(Self.misbehaving("cancellable", after: 1), from: source, to: archive, using: Self.system)
            #expect(answer.appError?.code == .stalled, "\(String(describing: answer.error)) after \(answer.elapsed)")
            #expect(answer.sinceStuck < answer.bound, "\(answer.timing)")
        }
    }

    @Test func theCallersCancellationReachesTheProcess() async throws {
        try await Scratch.with { scratch in
            let source = try Self.seeded(scratch, "source")
            let archive = scratch.url("cancelled.tar.xz")
            let task = Task { await Self.export(Self.misbehaving("cancellable", after: 1), from: source, to: archive, using: Self.system) }
            try await Task.sleep(for: .milliseconds(400))
            let cancelledAt = ContinuousClock.now
            task.cancel()
            let answer = await task.value
            #expect(answer.error is CancellationError, "\(String(describing: answer.error))")
            #expect(ContinuousClock.now - cancelledAt < Self.grace + .seconds(1))
            #expect(!FileManager.default.fileExists(atPath: archive.path(percentEncoded: false)))
        }
    }

    // MARK: - Failed processes

    @Test(arguments: [
        ("trap", "a Swift runtime trap"), ("segv", "SIGSEGV (11)"), ("exit", "exited with status 3"),
        ("kill", "SIGKILL (9) (from outside the host"), ("close", "closed the channel"),
        ("orphan", "of its group running (killed by the host)"),
        // setpgid moves a process out of the extension's group but not out of its session: it
        // was neither counted nor killed, and the export succeeded with it still writing.
        ("orphan-own-group", "of its group running (killed by the host)")
    ])
    func aFailedExportProcessIsNamedAndLeavesNoArchive(behaviour: String, named: String) async throws {
        try await Scratch.with { scratch in
            let source = try Self.seeded(scratch, "source")
            let sentinel = scratch.url("sentinel-\(behaviour)")
            let archive = scratch.url("failed.tar.xz")
            let answer = await Self.export(Self.misbehaving(behaviour, after: 1, sentinel: sentinel), from: source, to: archive)
            let error = try #require(answer.appError, "\(String(describing: answer.error))")
            #expect(error.code == .extensionProcessFailed, "\(error)")
            #expect(error.extensionName == "amk-test-extension")
            #expect(error.message.contains(named), "\(error)")
            #expect(answer.sinceStuck < answer.bound + .seconds(1), "\(answer.timing)")
            #expect(!FileManager.default.fileExists(atPath: archive.path(percentEncoded: false)))
            if behaviour.hasPrefix("orphan") {
                let atAnswer = try? String(contentsOfFile: sentinel.path(percentEncoded: false), encoding: .utf8)
                #expect(atAnswer != nil, "the orphan never ran")
                try await Task.sleep(for: .milliseconds(300))
                #expect((try? String(contentsOfFile: sentinel.path(percentEncoded: false), encoding: .utf8)) == atAnswer)
            }
        }
    }

    @Test func anExtensionsOwnErrorReachesTheCallerAsText() async throws {
        try await Scratch.with { scratch in
            let source = try Self.seeded(scratch, "source")
            let answer = await Self.export(Self.misbehaving("throw", after: 2), from: source, to: scratch.url("thrown.tar.xz"))
            #expect(answer.appError?.code == .extensionFailed)
            #expect(answer.appError?.message.contains("the test extension's own error") == true, "\(String(describing: answer.error))")
        }
    }

    /// A copy of the test extension, open for writing (as a child that another thread is forking
    /// holds every descriptor until its exec) for `held`, or until the export returns if nil.
    static func exportWhileOpenForWriting(for held: Duration?, in scratch: Scratch) async throws -> (Answer, URL) {
        let source = try Self.seeded(scratch, "source")
        let copy = scratch.url("busy-extension")
        try FileManager.default.copyItem(atPath: Self.testExtension, toPath: copy.path(percentEncoded: false))
        let writer = try FileHandle(forWritingTo: copy)
        defer { try? writer.close() }
        let archive = scratch.url("busy.tar.xz")
        let answer = try await withThrowingTaskGroup(of: Answer?.self) { group in
            group.addTask { await Self.export(ExtensionExecutable(path: copy.path(percentEncoded: false)), from: source, to: archive) }
            if let held {
                group.addTask {
                    try await Task.sleep(for: held)
                    try writer.close()
                    return nil
                }
            }
            while let answer = try await group.next() {
                if let answer { return answer }
            }
            preconditionFailure("the export's task returns an answer")
        }
        return (answer, archive)
    }

    /// Apple's size estimate walks the container, which can outlast a stall timeout: an estimate
    /// that computes for twice the timeout (its heartbeats report the CPU time) was taken for a
    /// stall, and the export ended before `exportResources` was called. One that blocks for as
    /// long is still stopped.
    @Test(arguments: [false, true])
    func aSizeEstimateIsAliveWhileItComputes(blocks: Bool) async throws {
        try await Scratch.with { scratch in
            let source = try Self.seeded(scratch, "source")
            let archive = scratch.url("estimate.tar.xz")
            var executable = Self.misbehaving(nil)
            executable.environment["AMK_TEST_ESTIMATE_MS"] = String(Self.stall.components.seconds * 2000)
            if blocks { executable.environment["AMK_TEST_ESTIMATE_BLOCKS"] = "1" }
            let answer = await Self.export(executable, from: source, to: archive, using: Self.system)
            if blocks {
                let error = try #require(answer.appError, "\(String(describing: answer.error))")
                #expect(error.code == .terminated && error.message.contains("stalled"), "\(error)")
                #expect(!FileManager.default.fileExists(atPath: archive.path(percentEncoded: false)))
            } else {
                #expect(answer.error == nil, "\(String(describing: answer.error))")
                #expect(answer.elapsed >= Self.stall * 2, "it computed past the stall timeout")
                let metadata = try await ArchiveReader(path: archive.path(percentEncoded: false)).metadata()
                #expect(metadata["sizeEstimate"].flatMap(Int.init).map { $0 >= 4096 } == true)
            }
        }
    }

    /// ETXTBSY at spawn is retried for a while: a program that spawns processes on other threads
    /// (the test suite does) made the host fail to start an extension it had just written.
    @Test func anExecutableBusyForAMomentStillStarts() async throws {
        try await Scratch.with { scratch in
            let (answer, archive) = try await Self.exportWhileOpenForWriting(for: .milliseconds(300), in: scratch)
            #expect(answer.error == nil, "\(String(describing: answer.error))")
            #expect(answer.elapsed >= .milliseconds(300), "it started only once the executable was closed")
            #expect(FileManager.default.fileExists(atPath: archive.path(percentEncoded: false)))
        }
    }

    @Test func anExecutableThatStaysOpenForWritingIsReported() async throws {
        try await Scratch.with { scratch in
            let (answer, archive) = try await Self.exportWhileOpenForWriting(for: nil, in: scratch)
            let error = try #require(answer.appError, "\(String(describing: answer.error))")
            #expect(error.code == .extensionProcessFailed, "\(error)")
            #expect(error.message.contains("still open for writing"), "\(error)")
            #expect(answer.elapsed >= .seconds(2), "retried before giving up: \(answer.elapsed)")
            #expect(!FileManager.default.fileExists(atPath: archive.path(percentEncoded: false)))
        }
    }

    @Test(arguments: ["trap", "segv", "exit", "kill", "throw"])
    func aFailedImportProcessClearsTheContainerAndRecordsWhy(behaviour: String) async throws {
        try await Scratch.with { scratch in
            let archive = try await Self.goodArchive(scratch)
            let destination = try scratch.container("destination")
            _ = try write("old\n", to: "Documents/old.txt", in: destination.containerRootDirectory)
            let answer = await Self.importArchive(archive, into: destination, using: Self.misbehaving(behaviour, after: 1))
            let error = try #require(answer.appError, "\(String(describing: answer.error))")
            #expect(error.code == (behaviour == "throw" ? .extensionFailed : .extensionProcessFailed), "\(error)")
            #expect(files(under: destination.documentsDirectory).isEmpty)
            guard case .failure(let recorded)? = importStatus(of: destination) else {
                Issue.record("no failure recorded")
                return
            }
            #expect("\(recorded)".contains(error.message), "recorded \(recorded), thrown \(error)")
        }
    }

    // MARK: - Not the protocol

    /// A script that writes `bytes` (a Python expression) on the channel after an optional hello.
    static func script(in scratch: Scratch, hello: String?, then bytes: String, exitStatus: Int = 0) throws -> ExtensionExecutable {
        let helloLine = hello.map { "frame(\($0))" } ?? ""
        let text = """
            #!/usr/bin/env python3
            import os, struct, sys, time
            def frame(payload):
                os.write(3, struct.pack('>I', len(payload)) + payload)
            \(helloLine)
            os.write(3, \(bytes))
            time.sleep(0.2)
            sys.exit(\(exitStatus))
            """
        let url = try Self.writeExecutable(text, named: "script-\(UUID().uuidString).py", in: scratch)
        return ExtensionExecutable(path: url.path(percentEncoded: false))
    }

    /// Writes `text` (a script with its `#!` line) as an executable file named `name` in
    /// `scratch`, for tests that speak the protocol by hand.
    static func writeExecutable(_ text: String, named name: String, in scratch: Scratch) throws -> URL {
        let url = scratch.url(name)
        try Data(text.utf8).write(to: url)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: url.path(percentEncoded: false))
        return url
    }

    static let goodHello = #"b'{"protocol":"amk-extension","version":1,"exports":true,"imports":true}'"#

    @Test(
        arguments: [
            (nil, "b'hello, I am not an extension\\n'", "not the extension protocol at byte 0"),
            (goodHello, "b'\\x00\\x00\\x00\\x05nope!'", "not the extension protocol at byte 74"),
            (goodHello, "struct.pack('>I', 64 << 20)", "a message of 67108864 bytes at byte 74"),
            (#"b'{"protocol":"amk-extension","version":99,"exports":true,"imports":true}'"#, "b''", "version 99"),
            (goodHello, "b''", "closed the channel at byte 74")
        ] as [(String?, String, String)])
    func bytesThatAreNotTheProtocolAreRefusedWithTheirOffset(hello: String?, bytes: String, named: String) async throws {
        try await Scratch.with { scratch in
            let source = try Self.seeded(scratch, "source")
            let archive = scratch.url("garbage.tar.xz")
            let answer = await Self.export(
                try Self.script(in: scratch, hello: hello, then: bytes), from: source, to: archive)
            let error = try #require(answer.appError, "\(String(describing: answer.error))")
            #expect(error.code == .extensionProcessFailed, "\(error)")
            #expect(error.message.contains(named), "\(error)")
            #expect(!FileManager.default.fileExists(atPath: archive.path(percentEncoded: false)))
        }
    }

    /// An extension speaking the protocol by hand: hello, the export's properties, then it leaves
    /// `ready` and, as `behaviour` says, finishes when cancelled (`finish-on-cancel`), exits
    /// without a word when cancelled (`exit-on-cancel`), or reports that it finished, leaves
    /// `finished`, and exits half a second later (`finished-before-cancel`).
    static func cancellableScript(in scratch: Scratch, behaviour: String, marks: String) throws -> ExtensionExecutable {
        let text = """
            #!/usr/bin/env python3
            import json, os, struct, sys, time
            def frame(message):
                payload = json.dumps(message).encode()
                os.write(3, struct.pack('>I', len(payload)) + payload)
            def exactly(count):
                data = b''
                while len(data) < count:
                    more = os.read(3, count - len(data))
                    if not more: sys.exit(4)
                    data += more
                return data
            def receive():
                return json.loads(exactly(struct.unpack('>I', exactly(4))[0]))
            def mark(name):
                open(os.path.join('\(marks)', name), 'w').close()
            frame({"protocol": "amk-extension", "version": 1, "exports": True, "imports": True})
            receive()
            frame({"properties": {"sizeEstimate": 0, "version": "1", "compressible": True}})
            behaviour = '\(behaviour)'
            if behaviour == 'finished-before-cancel':
                frame({"finished": {}})
                mark('finished')
                time.sleep(0.5)
                sys.exit(0)
            mark('ready')
            while 'cancel' not in receive():
                pass
            if behaviour == 'finish-on-cancel':
                frame({"finished": {}})
            sys.exit(0)
            """
        let url = try Self.writeExecutable(text, named: "cancellable-\(UUID().uuidString).py", in: scratch)
        return ExtensionExecutable(path: url.path(percentEncoded: false))
    }

    /// The caller cancels an export whose extension then stops at once: by finishing (its work
    /// ended as the cancel came), by exiting without a report, or having finished before the
    /// cancel reached it. Each is a cancellation, `CancellationError`, and no archive. The host
    /// used to report each as the extension's fault (`.terminated`: "returned normally after
    /// being cancelled", or, for the exit, a SIGTERM sent the moment the channel closed and
    /// "did not stop within 5 s").
    @Test(arguments: ["finish-on-cancel", "exit-on-cancel", "finished-before-cancel"])
    func anExtensionThatStopsWhenTheCallerCancelsIsACancellation(behaviour: String) async throws {
        try await Scratch.with { scratch in
            let source = try Self.seeded(scratch, "source")
            let marks = scratch.url("marks").path(percentEncoded: false)
            try FileManager.default.createDirectory(atPath: marks, withIntermediateDirectories: true)
            let script = try Self.cancellableScript(in: scratch, behaviour: behaviour, marks: marks)
            let archive = scratch.url("cancelled.tar.xz")
            let mark = marks + "/" + (behaviour == "finished-before-cancel" ? "finished" : "ready")
            let answer = try await withThrowingTaskGroup(of: Answer.self) { group in
                group.addTask { await Self.export(script, from: source, to: archive) }
                let deadline = ContinuousClock.now + .seconds(60)
                while !FileManager.default.fileExists(atPath: mark) && ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(10))
                }
                group.cancelAll()
                return try await group.next()!
            }
            #expect(FileManager.default.fileExists(atPath: mark), "the script never got to its mark")
            #expect(answer.error is CancellationError, "\(String(describing: answer.error))")
            #expect(!FileManager.default.fileExists(atPath: archive.path(percentEncoded: false)))
        }
    }

    /// An extension that exits (status 0, no report) after starting a child that keeps the
    /// channel open: no report can come, and the host says so half a second after the exit. It
    /// used to wait for the whole stall timeout (here a minute; ten for an import) and call it a
    /// stall; the child, left in the group, is killed.
    @Test func anExtensionThatExitsWhileItsChildHoldsTheChannelFailsAtOnce() async throws {
        try await Scratch.with { scratch in
            let source = try Self.seeded(scratch, "source")
            let text = """
                #!/usr/bin/env python3
                import json, os, struct, sys
                def frame(message):
                    payload = json.dumps(message).encode()
                    os.write(3, struct.pack('>I', len(payload)) + payload)
                frame({"protocol": "amk-extension", "version": 1, "exports": True, "imports": True})
                os.read(3, 65536)
                frame({"properties": {"sizeEstimate": 0, "version": "1", "compressible": True}})
                if os.fork() == 0:
                    os.execvp('sleep', ['sleep', '60'])
                os._exit(0)
                """
            let url = try Self.writeExecutable(text, named: "exits-early.py", in: scratch)
            let archive = scratch.url("early.tar.xz")
            let answer = await Self.export(
                ExtensionExecutable(path: url.path(percentEncoded: false)), from: source, to: archive)
            let error = try #require(answer.appError, "\(String(describing: answer.error))")
            #expect(error.code == .extensionProcessFailed, "\(error)")
            #expect(error.message.contains("it exited while a process it started still held the channel open"), "\(error)")
            #expect(error.message.contains("it exited with status 0, leaving 1 process of its group running"), "\(error)")
            #expect(answer.elapsed < .seconds(45), "answered after \(answer.elapsed), as a stall")
            #expect(!FileManager.default.fileExists(atPath: archive.path(percentEncoded: false)))
        }
    }

    /// A process that never says hello (here `sleep`) stalls like an extension stuck anywhere
    /// else, for the export and for the import: the host used to wait for its hello for good.
    @Test(arguments: [false, true])
    func aProcessThatNeverSaysHelloStalls(importing: Bool) async throws {
        try await Scratch.with { scratch in
            let source = try Self.seeded(scratch, "source")
            let url = try Self.writeExecutable("#!/bin/sh\nexec sleep 120\n", named: "mute.sh", in: scratch)
            let mute = ExtensionExecutable(path: url.path(percentEncoded: false))
            let answer: Answer
            if importing {
                let archive = scratch.url("good.tar.xz")
                _ = await Self.export(ExtensionExecutable(path: Self.testExtension), from: source, to: archive)
                answer = await Self.importArchive(archive, into: try scratch.container("destination"), using: mute, system: Self.system)
            } else {
                answer = await Self.export(mute, from: source, to: scratch.url("mute.tar.xz"), using: Self.system)
            }
            // It cannot be asked to stop before its hello either: it stalls, and is killed.
            let error = answer.appError
            #expect(
                error?.code == .terminated && error?.message.contains("stage 'extension' made no progress") == true,
                "\(String(describing: answer.error)) after \(answer.elapsed)")
            #expect(answer.elapsed < Self.answerBound + .seconds(5), "answered after \(answer.elapsed)")
        }
    }

    /// Heartbeat figures are the extension's: `Int64.max` then `Int64.min` CPU nanoseconds once
    /// made the host trap on the subtraction (the whole host died, leaving its staging folder and
    /// no status). They are only numbers: the import goes on and ends as the extension says.
    @Test func extremeHeartbeatFiguresAreOnlyNumbers() async throws {
        try await Scratch.with { scratch in
            let source = try Self.seeded(scratch, "source")
            let archive = scratch.url("good.tar.xz")
            _ = await Self.export(ExtensionExecutable(path: Self.testExtension), from: source, to: archive)
            let text = """
                #!/usr/bin/env python3
                import json, os, struct, time
                def send(message):
                    payload = json.dumps(message).encode()
                    os.write(3, struct.pack('>I', len(payload)) + payload)
                send({"protocol": "amk-extension", "version": 1, "exports": True, "imports": True})
                os.read(3, 1 << 20)
                for cpu in [2**63 - 1, -2**63, 0]:
                    send({"heartbeat": {"cpuNanoseconds": cpu, "completed": 0, "total": 0}})
                send({"finished": {}})
                time.sleep(0.2)
                """
            let url = try Self.writeExecutable(text, named: "beats.py", in: scratch)
            let answer = await Self.importArchive(
                archive, into: try scratch.container("destination"), using: ExtensionExecutable(path: url.path(percentEncoded: false)))
            #expect(answer.error == nil, "\(String(describing: answer.error))")
        }
    }

    @Test func aMissingExecutableIsAClearError() async throws {
        try await Scratch.with { scratch in
            let source = try Self.seeded(scratch, "source")
            let answer = await Self.export(
                ExtensionExecutable(path: scratch.url("no-such-extension").path(percentEncoded: false)), from: source,
                to: scratch.url("none.tar.xz"))
            #expect(answer.appError?.code == .extensionProcessFailed)
            #expect(answer.appError?.message.contains("No such file") == true, "\(String(describing: answer.error))")
        }
    }

    @Test func theProcessGetsOnlyItsContainerAndAMinimalEnvironment() async throws {
        try await Scratch.with { scratch in
            let source = try Self.seeded(scratch, "source")
            // A script extension that reports what it was given: descriptors, environment, folder.
            let text = """
                #!/bin/sh
                ls /proc/self/fd > "$AMK_CONTAINER_ROOT/Documents/fds"
                env | sort > "$AMK_CONTAINER_ROOT/Documents/env"
                pwd > "$AMK_CONTAINER_ROOT/Documents/pwd"
                ps -o pgid= -p $$ > "$AMK_CONTAINER_ROOT/Documents/pgid"
                echo $$ >> "$AMK_CONTAINER_ROOT/Documents/pgid"
                exit 5
                """
            let url = try Self.writeExecutable(text, named: "report.sh", in: scratch)
            let answer = await Self.export(
                ExtensionExecutable(path: url.path(percentEncoded: false), environment: ["EXTRA": "1"]), from: source,
                to: scratch.url("report.tar.xz"))
            #expect(answer.appError?.message.contains("exited with status 5") == true, "\(String(describing: answer.error))")
            let documents = source.documentsDirectory
            // 0-3, and the one `ls` opens to list them.
            let descriptors = try read("fds", in: documents).split(separator: "\n").compactMap { Int($0) }.sorted()
            #expect(descriptors.filter { $0 > 3 }.count <= 1, "descriptors: \(descriptors)")
            #expect(Array(descriptors.prefix(4)) == [0, 1, 2, 3])
            let variables = Set(try read("env", in: documents).split(separator: "\n").map { String($0.split(separator: "=")[0]) })
            #expect(
                variables.isSubset(of: [
                    "PATH", "HOME", "TMPDIR", "LANG", "AMK_CONTAINER_ROOT", "AMK_BUNDLE_IDENTIFIER", "AMK_EXTENSION_CHANNEL",
                    "AMK_EXTENSION_NAME", "AMK_APP_GROUPS", "EXTRA", "PWD", "SHLVL", "_", "OLDPWD"
                ]), "\(variables)")
            #expect(variables.contains("EXTRA"))
            let folder = try read("pwd", in: documents).trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(URL(filePath: folder).resolvingSymlinksInPath() == source.containerRootDirectory.resolvingSymlinksInPath())
            let ids = try read("pgid", in: documents).split(whereSeparator: \.isWhitespace)
            #expect(ids.count == 2 && ids[0] == ids[1], "its own process group: \(ids)")
        }
    }
}
