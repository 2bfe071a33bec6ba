import CPlatform
import Foundation
import IndexedArchive
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An extension process the host started, from its spawning to its reaping.
///
/// It runs in a process group of its own (its pid is the group's id), so that the host can kill
/// it and everything it started with one signal. Every call here blocks its thread: the host
/// makes them from the session's own thread (see ``ExtensionSession``).
///
/// `Sendable`: the pid, the name and the channel are immutable (the channel is itself
/// `Sendable`); whether the process was reaped is kept in a `Mutex`.
final class ExtensionProcess: Sendable {
    let pid: pid_t
    let name: String
    let channel: ExtensionChannel
    private let termination = Mutex<ExtensionTermination?>(nil)

    private init(pid: pid_t, name: String, channel: ExtensionChannel) {
        self.pid = pid
        self.name = name
        self.channel = channel
    }

    /// Starts `executable` for `container`: a new process group, the container as working
    /// directory, a minimal environment, and only descriptors 0 (/dev/null), 1 and 2 (the host's
    /// standard error: an extension's output must never mix into an archive written to standard
    /// output) and 3 (the channel).
    static func spawn(_ executable: ExtensionExecutable, name: String, container: MigrationDataContainer) throws -> ExtensionProcess {
        let path = absolutePath(executable.path, from: FileManager.default.currentDirectoryPath)
        guard !path.isEmpty else {
            throw AppMigrationError(.extensionProcessFailed, "no extension executable was given", extensionName: name)
        }
        guard access(path, X_OK) == 0 else {
            throw AppMigrationError(
                .extensionProcessFailed, "cannot run the extension executable: \(String(cString: strerror(errno)))",
                extensionName: name, path: path)
        }
        var sockets: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &sockets) == 0 else {
            throw AppMigrationError(
                .extensionProcessFailed, "cannot make the extension's channel: \(String(cString: strerror(errno)))",
                extensionName: name)
        }
        let root = container.containerRootDirectory.path(percentEncoded: false)
        var environment = [
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": root,
            "TMPDIR": container.temporaryDirectory.path(percentEncoded: false),
            "LANG": "C.UTF-8",
            "AMK_CONTAINER_ROOT": root,
            "AMK_BUNDLE_IDENTIFIER": container.bundleIdentifier,
            ExtensionProtocol.channelVariable: String(ExtensionProtocol.channelDescriptor),
            "AMK_EXTENSION_NAME": name
        ]
        if let groups = MigrationDataContainer.encodeAppGroups(container.appGroupDirectories) {
            environment[MigrationDataContainer.appGroupsVariable] = groups
        }
        environment.merge(executable.environment) { _, given in given }
        let arguments = [path] + executable.arguments
        let variables = environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        var pid: pid_t = 0
        var status: Int32 = 0
        // ETXTBSY: the executable is open for writing somewhere. Most often that is not whoever
        // wrote it (it has closed it) but a child another thread of this program is forking at
        // that moment, which holds a copy of every descriptor not marked close-on-exec until its
        // own exec. That lasts microseconds to milliseconds; an installer still writing lasts
        // longer, and is then reported.
        let busyDeadline = ContinuousClock.now + Self.busyExecutableWait
        var pause = Duration.milliseconds(2)
        while true {
            status = withCStrings(arguments) { argv in
                withCStrings(variables) { envp in
                    amk_spawn_extension(path, argv, envp, root, sockets[1], 2, &pid)
                }
            }
            guard status == ETXTBSY, ContinuousClock.now < busyDeadline else { break }
            Thread.sleep(forTimeInterval: pause.secondsValue)
            pause = min(pause * 2, .milliseconds(100))
        }
        _ = Platform.close(sockets[1])
        guard status == 0 else {
            _ = Platform.close(sockets[0])
            throw AppMigrationError(
                .extensionProcessFailed,
                "cannot start the extension process: \(String(cString: strerror(status)))"
                    + (status == ETXTBSY ? " (the executable was still open for writing after \(Self.busyExecutableWait))" : ""),
                extensionName: name, path: path)
        }
        return ExtensionProcess(pid: pid, name: name, channel: ExtensionChannel(descriptor: sockets[0], owning: true))
    }

    /// How long a spawn that fails with ETXTBSY ("text file busy") is retried.
    static let busyExecutableWait: Duration = .seconds(2)

    /// `path` made absolute against `folder` (the host's working directory): the process starts
    /// in its container, where a relative path would mean something else.
    static func absolutePath(_ path: String, from folder: String) -> String {
        guard !path.isEmpty, !PathBytes.isAbsolute(path) else { return path }
        return folder.utf8.last == PathBytes.slash ? folder + path : folder + "/" + path
    }

    /// Whether the process has exited (it is not reaped until ``finish(waitingUpTo:)``).
    var hasExited: Bool {
        termination.withLock { $0 != nil } || amk_child_has_exited(pid) == 1
    }

    /// Sends `signal` to the whole process group, to the process itself, and to every process of
    /// its session: it, or a process it started, may have moved into another group of its
    /// session (`setpgid`), which the group's signal then misses. Safe until
    /// ``finish(waitingUpTo:)`` reaps it: until then its pid, and so the group's and the
    /// session's id, cannot be reused.
    func signalGroup(_ signal: Int32) {
        guard termination.withLock({ $0 == nil }) else { return }
        _ = Platform.kill(-pid, signal)
        _ = Platform.kill(pid, signal)
        signalMembers(signal)
    }

    /// Sends `signal` to each running process of the extension's session (or group), one by
    /// one: those that left its group are reached only so. Returns how many there were, or -1
    /// where they cannot be listed.
    @discardableResult
    private func signalMembers(_ signal: Int32) -> Int {
        var members = [pid_t](repeating: 0, count: 256)
        let counted = Int(amk_process_group_members(pid, &members, Int32(members.count)))
        for member in members.prefix(max(0, min(counted, members.count))) { _ = Platform.kill(member, signal) }
        return counted
    }

    /// Waits up to `wait` for the process to exit on its own, then kills its whole group, waits
    /// until no member is left running, and reaps it. Idempotent; returns how it ended.
    func finish(waitingUpTo wait: Duration) -> ExtensionTermination {
        if let known = termination.withLock({ $0 }) { return known }
        let deadline = ContinuousClock.now + wait
        while amk_child_has_exited(pid) == 0 && ContinuousClock.now < deadline {
            Thread.sleep(forTimeInterval: 0.005)
        }
        let exitedOnItsOwn = amk_child_has_exited(pid) == 1
        // Running members of its session, each killed as it is counted: the leader, once exited,
        // is a zombie and not among them, so these are processes it started and left behind (a
        // child that moved to a group of its own with setpgid went on writing into the container
        // after the host had cleared it).
        let counted = signalMembers(SIGKILL)
        let leftBehind = exitedOnItsOwn ? max(0, counted) : 0
        _ = Platform.kill(-pid, SIGKILL)
        // The process itself too (not yet reaped, so the pid is still its): one that left its
        // group would otherwise hold this wait, and go on writing, for as long as it liked.
        _ = Platform.kill(pid, SIGKILL)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        // SIGKILL is asynchronous: wait until nothing in the group runs any more, so that nothing
        // it started can write after the host answers. Bounded: a process stuck in the kernel
        // (an NFS read) cannot hold the host for ever.
        let settled = ContinuousClock.now + .seconds(5)
        while signalMembers(SIGKILL) > 0 && ContinuousClock.now < settled {
            _ = Platform.kill(-pid, SIGKILL)
            Thread.sleep(forTimeInterval: 0.002)
        }
        if counted < 0 {
            // Where processes cannot be listed, a group that still answers had members left.
            _ = Platform.kill(-pid, SIGKILL)
        }
        // Not closed: the session may still hold the channel (a cancellation coming after the
        // reaping still says `cancel`); it closes its descriptor when it is gone.
        channel.hangUp()
        let ended = ExtensionTermination(status: status, killed: !exitedOnItsOwn, leftBehind: leftBehind)
        termination.withLock { $0 = ended }
        return ended
    }
}

/// Calls `body` with `strings` as a NULL-terminated array of C strings.
private func withCStrings<T>(_ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> T) -> T {
    var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
    pointers.append(nil)
    defer { for pointer in pointers { free(pointer) } }
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}
