import CPlatform
import Foundation
import IndexedArchive
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The extension process's side of the protocol (see ``ExtensionProtocol``): what
/// ``AppMigrationExtension/main()`` runs.
///
/// Two threads of its own serve the channel: a reader (the task, append answers, `cancel`) and a
/// heartbeat that reports, every 100 ms, the CPU time of the process minus those two threads, and
/// the import's progress. The extension's code runs in one task, which `cancel` cancels.
///
/// `Sendable`: the channel is; everything that changes is in the `state` Mutex or in atomics.
final class ExtensionRuntime: Sendable {
    private struct State {
        var task: CheckedContinuation<ExtensionMessage, any Error>?
        var pendingTask: Result<ExtensionMessage, any Error>?
        var appends: [UInt64: CheckedContinuation<Void, any Error>] = [:]
        var nextAppend: UInt64 = 0
        var work: Task<Void, Never>?
        var cancelled = false
        var progress: Progress?
    }

    private let channel: ExtensionChannel
    private let state = Mutex(State())
    /// CPU time of the reader and heartbeat threads, each stored by the thread itself.
    private let readerCPU = Atomic<Int64>(0)
    private let heartbeatCPU = Atomic<Int64>(0)

    private init(channel: ExtensionChannel) {
        self.channel = channel
    }

    /// Serves `migrationExtension` to the host that started this process, and exits.
    static func serve(_ migrationExtension: some AppMigrationExtension) async -> Never {
        let environment = ProcessInfo.processInfo.environment
        guard let value = environment[ExtensionProtocol.channelVariable], let descriptor = Int32(value),
            fcntl(descriptor, F_GETFD) >= 0
        else {
            let program = CommandLine.arguments.first ?? "this program"
            FileHandle.standardError.write(
                Data(
                    ("\(program) is an AppMigration extension: a host runs it, for example\n"
                        + "  amk export --extension-executable \(program) --container DIR -o ARCHIVE\n").utf8))
            Platform.exit(64)
        }
        // A program the extension starts must not inherit the channel.
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        let runtime = ExtensionRuntime(channel: ExtensionChannel(descriptor: descriptor))
        await runtime.run(migrationExtension)
    }

    private func run(_ migrationExtension: some AppMigrationExtension) async -> Never {
        let exporter = migrationExtension as? any ResourcesExportingWithOptions
        let importer = migrationExtension as? any ResourcesImporting
        do {
            try channel.send(
                ExtensionHello(
                    protocol: ExtensionProtocol.name, version: ExtensionProtocol.version, exports: exporter != nil,
                    imports: importer != nil))
        } catch {
            Platform.exit(70)
        }
        startReader()
        startHeartbeat()
        let task: ExtensionMessage
        do {
            task = try await withCheckedThrowingContinuation { continuation in
                let ready = state.withLock { state -> Result<ExtensionMessage, any Error>? in
                    if let pending = state.pendingTask { return pending }
                    state.task = continuation
                    return nil
                }
                if let ready { continuation.resume(with: ready) }
            }
        } catch {
            Platform.exit(70)
        }
        let outcome = Mutex<Result<Void, any Error>>(.success(()))
        let work = Task {
            do {
                switch task {
                case .export(let platform, let options):
                    guard let exporter else { throw AppMigrationError(.unsupportedExtension, "this extension does not export") }
                    try await self.export(exporter, platform: platform, options: options)
                case .import(let staging, let store, let bundle, let platform, let version):
                    guard let importer else { throw AppMigrationError(.unsupportedExtension, "this extension does not import") }
                    let source = MigrationAppIdentifier(
                        storeIdentifier: .init(store), bundleIdentifier: bundle, platform: MigrationPlatform(platform))
                    try await self.import(
                        importer, staging: URL(filePath: staging, directoryHint: .isDirectory),
                        request: ResourcesImportRequest(sourceAppIdentifier: source, sourceVersion: version))
                default:
                    throw AppMigrationError(.extensionProcessFailed, "the host sent '\(task.kind)' instead of a task")
                }
            } catch {
                outcome.withLock { $0 = .failure(error) }
            }
        }
        let cancelNow = state.withLock { state -> Bool in
            state.work = work
            return state.cancelled
        }
        if cancelNow { work.cancel() }
        await work.value
        switch outcome.withLock({ $0 }) {
        case .success:
            try? channel.send(ExtensionMessage.finished)
            Platform.exit(0)
        case .failure(let error):
            try? channel.send(ExtensionMessage.failed(message: "\(error)", cancelled: error is CancellationError))
            Platform.exit(1)
        }
    }

    private func export<Exporter: ResourcesExportingWithOptions>(
        _ exporter: Exporter, platform: String, options: [String: Data]
    ) async throws {
        let estimate = await exporter.resourcesSizeEstimate
        try channel.send(
            ExtensionMessage.properties(
                sizeEstimate: estimate, version: exporter.resourcesVersion, compressible: exporter.resourcesCompressible))
        var converted: [Exporter.OptionsType: Data] = [:]
        for (key, value) in options {
            if let option = Exporter.OptionsType(rawValue: key) { converted[option] = value }
        }
        let request = MigrationRequestWithOptions<Exporter.OptionsType>(
            destinationPlatform: MigrationPlatform(platform), options: converted)
        let archiver = ResourcesArchiver { [self] path, pathInArchive in
            try await append(path: path, pathInArchive: pathInArchive)
        }
        try await exporter.exportResources(to: archiver, request: request)
    }

    private func `import`<Importer: ResourcesImporting>(
        _ importer: Importer, staging: URL, request: ResourcesImportRequest
    ) async throws {
        let progress = importer.resourcesImportProgress
        state.withLock { $0.progress = progress }
        try await importer.importResources(at: staging, request: request)
    }

    /// One `appendItem`: a request to the host and its answer.
    private func append(path: String, pathInArchive: String?) async throws {
        try Task.checkCancellation()
        let id = state.withLock { state -> UInt64 in
            state.nextAppend += 1
            return state.nextAppend
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                state.withLock { $0.appends[id] = continuation }
                do {
                    try channel.send(ExtensionMessage.append(id: id, path: path, pathInArchive: pathInArchive))
                } catch {
                    state.withLock { $0.appends.removeValue(forKey: id) }?.resume(throwing: error)
                }
            }
        } onCancel: {
            // The host that cancels no longer answers appends.
            state.withLock { $0.appends.removeValue(forKey: id) }?.resume(throwing: CancellationError())
        }
    }

    // MARK: - Threads

    private func startReader() {
        let thread = Thread { [self] in
            amk_set_thread_name("amk-ext-reader")
            while true {
                let message: ExtensionMessage?
                do {
                    message = try channel.receive(within: .seconds(3600))
                    // cancellation: no task runs on this thread; the channel throws only its own failures
                } catch {
                    // The host is gone, or speaks nonsense: nobody will take the result.
                    Self.giveUp("reading from the host", error)
                }
                readerCPU.store(Self.threadCPU(), ordering: .relaxed)
                guard let message else { continue }
                handle(message)
            }
        }
        thread.name = "amk-extension-reader"
        thread.start()
    }

    private func handle(_ message: ExtensionMessage) {
        switch message {
        case .export, .import:
            let waiting = state.withLock { state -> CheckedContinuation<ExtensionMessage, any Error>? in
                guard let task = state.task else {
                    state.pendingTask = .success(message)
                    return nil
                }
                state.task = nil
                return task
            }
            waiting?.resume(returning: message)
        case .appended(let id, let error, let code):
            let waiting = state.withLock { $0.appends.removeValue(forKey: id) }
            if let error {
                waiting?.resume(throwing: AppMigrationError(AppMigrationError.code(named: code), error))
            } else {
                waiting?.resume()
            }
        case .cancel:
            let work = state.withLock { state -> Task<Void, Never>? in
                state.cancelled = true
                return state.work
            }
            work?.cancel()
        default:
            break
        }
    }

    private func startHeartbeat() {
        let thread = Thread { [self] in
            amk_set_thread_name("amk-ext-beat")
            while true {
                Thread.sleep(forTimeInterval: ExtensionProtocol.heartbeatInterval.secondsValue)
                let progress = state.withLock { $0.progress }
                heartbeatCPU.store(Self.threadCPU(), ordering: .relaxed)
                let cpu =
                    Self.processCPU() - heartbeatCPU.load(ordering: .relaxed) - readerCPU.load(ordering: .relaxed)
                let beat = ExtensionMessage.heartbeat(
                    cpuNanoseconds: max(cpu, 0), completed: progress?.completedUnitCount ?? 0, total: progress?.totalUnitCount ?? 0)
                // A beat the socket has no room for is dropped, never waited for: the host does
                // not read while it packs one large appended file, and a blocked heartbeat
                // thread would end a long, healthy export.
                do {
                    _ = try channel.sendNow(beat)
                    // cancellation: no task runs on this thread; the channel throws only its own failures
                } catch {
                    Self.giveUp("sending a heartbeat", error)
                }
            }
        }
        thread.name = "amk-extension-heartbeat"
        thread.start()
    }

    /// Exits with status 2 once the channel failed, saying why on standard error (the host's, see
    /// ``ExtensionProcess``): the host reports only that the channel closed, and this line is all
    /// that tells a developer which side broke it.
    private static func giveUp(_ doing: String, _ error: any Error) -> Never {
        let name = ProcessInfo.processInfo.environment["AMK_EXTENSION_NAME"] ?? "extension"
        let reason: String
        switch error as? ExtensionChannel.Failure {
        case .closed(let offset, let why)?: reason = "\(why) at byte \(offset)"
        case .notProtocol(let offset, let why)?: reason = "not the extension protocol at byte \(offset): \(why)"
        case .tooLarge(let offset, let bytes)?: reason = "a message of \(bytes) bytes at byte \(offset)"
        case nil: reason = "\(error)"
        }
        FileHandle.standardError.write(Data("amk extension \(name): the channel failed while \(doing): \(reason); exiting\n".utf8))
        Platform.exit(2)
    }

    private static func processCPU() -> Int64 { ExtensionExecutor.reading(of: CLOCK_PROCESS_CPUTIME_ID) }
    private static func threadCPU() -> Int64 { ExtensionExecutor.reading(of: CLOCK_THREAD_CPUTIME_ID) }
}
