import AppMigration
import Dispatch
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An extension executable for the host's tests, written as an app's would be: a `@main` type
/// conforming to the extension protocols, with the library's entry point.
///
/// It exports `Documents` file by file (and `shared.txt` of the app group `group.amk.test`, when
/// the host configures it) and imports by copying the staged files back, one by one, advancing
/// its progress. `AMK_TEST_BEHAVIOUR` makes it misbehave once `AMK_TEST_AFTER` items
/// (default 0) are done:
/// - `sleep`: blocks its thread for an hour, deaf to cancellation;
/// - `spin`: burns CPU for ever, deaf to cancellation;
/// - `ignore-term`: ignores SIGTERM, then blocks like `sleep`;
/// - `trap`: a Swift runtime trap (`preconditionFailure`);
/// - `segv`: dies by SIGSEGV;
/// - `exit`: exits with status 3 without a word;
/// - `close`: closes the protocol's channel, then blocks;
/// - `kill`: SIGKILLs itself (as the OOM killer would);
/// - `grandchild`: starts a shell that rewrites `AMK_TEST_SENTINEL` every 20 ms, then blocks;
/// - `orphan`: starts that shell, then finishes normally;
/// - `throw`: throws an error of its own;
/// - `outside`: appends /etc/hostname, outside its container (the host refuses it);
/// - `cancellable`: waits until cancelled, then stops as asked.
///
/// When it starts to misbehave it writes the time (seconds since 1970) into `AMK_TEST_STUCK_MARK`,
/// if set: the tests time the host's answer from there, not from a start that a loaded machine
/// can delay by seconds.
///
/// `AMK_TEST_ESTIMATE_MS` makes its size estimate take that long, computing, or blocked on a
/// semaphore with `AMK_TEST_ESTIMATE_BLOCKS` set (Apple's estimate walks the container).
///
/// Independently, `AMK_TEST_KILL_AFTER_MS` has a thread SIGKILL the process that many milliseconds
/// after its export or import starts, wherever it then is; `AMK_TEST_ITEM_DELAY_MS` makes each item
/// take that long, so that such a kill lands in the middle of the work.
@main
struct MisbehavingMigration: ResourcesExporting, ResourcesImporting {
    init() {}

    let resourcesImportProgress = Progress(totalUnitCount: 0)

    var resourcesSizeEstimate: Int {
        get async {
            let environment = ProcessInfo.processInfo.environment
            guard let milliseconds = environment["AMK_TEST_ESTIMATE_MS"].flatMap(Int.init) else { return 4096 }
            if environment["AMK_TEST_ESTIMATE_BLOCKS"] != nil {
                _ = DispatchSemaphore(value: 0).wait(timeout: .now() + .milliseconds(milliseconds))
                return 4096
            }
            let end = ContinuousClock.now + .milliseconds(milliseconds)
            var state: UInt64 = 1
            while ContinuousClock.now < end {
                for _ in 0..<100_000 { state = state &* 6_364_136_223_846_793_005 &+ 1 }
            }
            return 4096 + Int(state & 1)
        }
    }
    var resourcesVersion: String { "7.1" }
    var resourcesCompressible: Bool { true }

    struct OwnError: Error, CustomStringConvertible {
        var description: String { "the test extension's own error" }
    }

    func exportResources(to archiver: sending ResourcesArchiver, request: MigrationRequest) async throws {
        Self.armKiller()
        let documents = appContainer.documentsDirectory
        let names = try FileManager.default.contentsOfDirectory(atPath: documents.path(percentEncoded: false)).sorted()
        for (index, name) in names.enumerated() {
            do {
                try await Self.misbehave(at: index)
            } catch is Outside {
                try await archiver.appendItem(at: URL(filePath: "/etc/hostname"))
            }
            try await archiver.appendItem(at: documents.appending(path: name), pathInArchive: "Documents/\(name)")
        }
        // The app group's shared file, when the host gave the process one: a group's data is the
        // app's to export, and the import writes it back into the group, as Apple's code does.
        if let group = FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: Self.group) {
            let shared = group.appending(path: "shared.txt")
            if FileManager.default.fileExists(atPath: shared.path(percentEncoded: false)) {
                try await archiver.appendItem(at: shared, pathInArchive: "Group/shared.txt")
            }
        }
        try await Self.misbehave(at: names.count)
    }

    /// The app group the test extension exports and imports, if the host configures it.
    static let group = "group.amk.test"

    func importResources(at url: URL, request: ResourcesImportRequest) async throws {
        Self.armKiller()
        let staged = url.appending(path: "Documents")
        let manager = FileManager.default
        let names = ((try? manager.contentsOfDirectory(atPath: staged.path(percentEncoded: false))) ?? []).sorted()
        resourcesImportProgress.totalUnitCount = Int64(names.count + 1)
        for (index, name) in names.enumerated() {
            try await Self.misbehave(at: index)
            let target = appContainer.documentsDirectory.appending(path: name)
            try? manager.removeItem(at: target)
            try manager.copyItem(at: staged.appending(path: name), to: target)
            resourcesImportProgress.completedUnitCount = Int64(index + 1)
        }
        let shared = url.appending(path: "Group/shared.txt")
        if let group = manager.containerURL(forSecurityApplicationGroupIdentifier: Self.group),
            manager.fileExists(atPath: shared.path(percentEncoded: false))
        {
            // Cleared first: a failed import does not clear app groups.
            try? manager.removeItem(at: group.appending(path: "shared.txt"))
            try manager.copyItem(at: shared, to: group.appending(path: "shared.txt"))
        }
        try await Self.misbehave(at: names.count)
        resourcesImportProgress.completedUnitCount = resourcesImportProgress.totalUnitCount
    }

    /// Thrown by `misbehave` to ask the export to append outside the container.
    struct Outside: Error {}

    /// Starts the thread of `AMK_TEST_KILL_AFTER_MS`, if set.
    static func armKiller() {
        guard let text = ProcessInfo.processInfo.environment["AMK_TEST_KILL_AFTER_MS"], let milliseconds = UInt32(text) else { return }
        let thread = Thread {
            usleep(milliseconds * 1000)
            kill(getpid(), SIGKILL)
        }
        thread.start()
    }

    static func misbehave(at step: Int) async throws {
        let environment = ProcessInfo.processInfo.environment
        if let delay = environment["AMK_TEST_ITEM_DELAY_MS"].flatMap(UInt64.init) {
            try await Task.sleep(for: .milliseconds(delay))
        }
        let after = environment["AMK_TEST_AFTER"].flatMap(Int.init) ?? 0
        guard step == after, let behaviour = environment["AMK_TEST_BEHAVIOUR"] else { return }
        if let mark = environment["AMK_TEST_STUCK_MARK"] {
            try? String(Date().timeIntervalSince1970).write(toFile: mark, atomically: true, encoding: .utf8)
        }
        switch behaviour {
        case "sleep":
            blockForAnHour()
        case "spin":
            var counter: UInt64 = 0
            while true { counter = counter &* 6_364_136_223_846_793_005 &+ 1 }
        case "ignore-term":
            signal(SIGTERM, SIG_IGN)
            blockForAnHour()
        case "trap":
            preconditionFailure("the test extension traps on purpose")
        case "segv":
            // A real bad access, as a bug would make it.
            UnsafeMutablePointer<Int>(bitPattern: 16)!.pointee = 1
        case "exit":
            exit(3)
        case "close":
            close(3)
            blockForAnHour()
        case "kill":
            kill(getpid(), SIGKILL)
        case "grandchild":
            startSentinelWriter(environment["AMK_TEST_SENTINEL"] ?? "/dev/null")
            blockForAnHour()
        case "orphan":
            startSentinelWriter(environment["AMK_TEST_SENTINEL"] ?? "/dev/null")
        case "orphan-own-group":
            // A worker in a process group of its own (setpgid, which needs no new session): a
            // kill of the extension's group misses it.
            startSentinelWriter(environment["AMK_TEST_SENTINEL"] ?? "/dev/null", ownGroup: true)
        case "leave-group":
            // Into the group of the process that started it, allowed within one session: a kill
            // of its own group would then miss it. The extension now leads a session of its own,
            // so the move is refused (EPERM); the test keeps a host that spawned it into a mere
            // group honest.
            _ = setpgid(0, getpgid(getppid()))
            let sentinel = environment["AMK_TEST_SENTINEL"] ?? "/dev/null"
            Thread {
                while true {
                    try? String(Date().timeIntervalSince1970).write(toFile: sentinel, atomically: false, encoding: .utf8)
                    usleep(20_000)
                }
            }.start()
            blockForAnHour()
        case "throw":
            throw OwnError()
        case "outside":
            throw Outside()
        case "cancellable":
            while true { try await Task.sleep(for: .milliseconds(10)) }
        default:
            return
        }
    }

    static func blockForAnHour() {
        // A blocking call, as a stuck read would be: cancellation cannot reach it.
        sleep(3600)
    }

    /// A grandchild that keeps writing the time into `sentinel`, as a leaked worker would write
    /// into the container.
    static func startSentinelWriter(_ sentinel: String, ownGroup: Bool = false) {
        let script = "while true; do date +%s%N > '\(sentinel)'; sleep 0.02; done"
        var pid: pid_t = 0
        let arguments = ["/bin/sh", "-c", script]
        var pointers: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in pointers { free(pointer) } }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        if ownGroup {
            posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
            posix_spawnattr_setpgroup(&attributes, 0)
        }
        _ = posix_spawn(&pid, "/bin/sh", nil, &attributes, &pointers, environ)
        // Let it write once, so the test sees it alive.
        usleep(100_000)
    }
}
