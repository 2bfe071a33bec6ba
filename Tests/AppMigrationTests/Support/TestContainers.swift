import AppMigration
import Foundation
import IndexedArchive
import TestSupport
import Testing

/// A scratch folder for one test, with the containers it makes; removed when the last copy of the
/// value goes away (``with(_:)`` keeps it until its body returns).
struct Scratch: Sendable {
    let directory: TemporaryDirectory
    var root: URL { directory.url }

    init(in parent: String? = nil) throws {
        directory = try TemporaryDirectory(prefix: "amk-tests", in: parent)
    }

    /// A new container under the scratch folder, with its standard folders, and an app group
    /// `group.com.example.myapp` outside its root.
    func container(_ name: String, bundleIdentifier: String = "com.example.myapp") throws -> MigrationDataContainer {
        let container = MigrationDataContainer(
            bundleIdentifier: bundleIdentifier,
            containerRootDirectory: root.appending(path: name, directoryHint: .notDirectory),
            appGroupDirectories: [
                "group.com.example.myapp": root.appending(
                    path: "\(name)-group.com.example.myapp",
                    directoryHint: .notDirectory)
            ])
        try container.createStandardDirectories()
        return container
    }

    func url(_ name: String) -> URL { directory.url(name) }

    /// Runs `body` with a scratch folder that is removed afterwards.
    @discardableResult
    static func with<T>(_ body: (Scratch) async throws -> T) async throws -> T {
        let scratch = try Scratch()
        defer { withExtendedLifetime(scratch) {} }
        return try await body(scratch)
    }
}

/// Short timeouts, so that misbehaviour is caught in a fraction of a second.
let fastSystem: MigrationSystem = {
    let policy = WatchdogPolicy(
        defaultStallTimeout: .milliseconds(300), gracePeriod: .milliseconds(300),
        checkInterval: .milliseconds(10))
    return MigrationSystem(
        watchdogPolicy: policy, importWatchdogPolicy: policy, compressionPreset: 0,
        chunkSize: 1 << 20, workers: 2)
}()

/// 300 ms stall timeout, but a grace period long enough for a cancelled export to unwind (the
/// engine waits up to 600 ms for its threads), so that a stall that stops is told from one that
/// does not. Every test that uses it expects the work to stop (or return) once cancelled, so the
/// grace costs nothing where the machine is quiet; it was 2 s, and an importer that stopped at
/// once was reported `terminated` when other suites held the cooperative pool for longer than
/// that at the start of a run (its unwinding needs a thread of the pool).
let stallSystem: MigrationSystem = {
    let policy = WatchdogPolicy(
        defaultStallTimeout: .milliseconds(300), gracePeriod: .seconds(10),
        checkInterval: .milliseconds(10))
    return MigrationSystem(
        watchdogPolicy: policy, importWatchdogPolicy: policy, compressionPreset: 0,
        chunkSize: 1 << 20, workers: 2)
}()

/// A quick host for tests that do not test the watchdog: preset 0, generous timeouts.
let quickSystem = MigrationSystem(compressionPreset: 0, chunkSize: 1 << 20, workers: 2)

/// Writes `text` at `path` under `directory`, creating folders.
@discardableResult
func write(_ text: String, to path: String, in directory: URL) throws -> URL {
    try write(Data(text.utf8), to: path, in: directory)
}

@discardableResult
func write(_ data: Data, to path: String, in directory: URL) throws -> URL {
    let url = directory.appending(path: path, directoryHint: .notDirectory)
    try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
    try data.write(to: url)
    return url
}

func read(_ path: String, in directory: URL) throws -> String {
    try String(decoding: Data(contentsOf: directory.appending(path: path, directoryHint: .notDirectory)), as: UTF8.self)
}

func exists(_ path: String, in directory: URL) -> Bool {
    FileManager.default.fileExists(atPath: directory.appending(path: path, directoryHint: .notDirectory).path(percentEncoded: false))
}

/// Every regular file under `directory`, as relative paths, sorted.
func files(under directory: URL) -> [String] {
    let base = directory.path(percentEncoded: false)
    guard let enumerator = FileManager.default.enumerator(atPath: base) else { return [] }
    var found: [String] = []
    while let relative = enumerator.nextObject() as? String {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: base + "/" + relative, isDirectory: &isDirectory), !isDirectory.boolValue {
            found.append(relative)
        }
    }
    return found.sorted()
}

/// The member names of an archive, directories without their trailing `/`.
func memberNames(of archive: URL) async throws -> [String] {
    try await ArchiveReader(path: archive.path(percentEncoded: false)).entries().map(\.name)
}

/// Registers an extension for ``AppMigrationTester`` for each test of a suite, with fresh export
/// and import containers, the export container seeded by `seed`. This is the "one registration
/// line" a ported AppMigrationKit test suite needs: `@Suite(.appMigrationExtension(MyExtension()))`.
struct AppMigrationExtensionTrait: SuiteTrait, TestTrait, TestScoping {
    let makeExtension: @Sendable () -> any AppMigrationExtension
    let seed: @Sendable (MigrationDataContainer) throws -> Void

    var isRecursive: Bool { true }

    /// Containers are per test case: a suite gets no scope of its own.
    func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase == nil ? nil : self
    }

    func provideScope(
        for test: Test, testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        let scratch = try Scratch()
        defer { withExtendedLifetime(scratch) {} }
        let exportContainer = try scratch.container("export")
        let importContainer = try scratch.container("import")
        try seed(exportContainer)
        try await AppMigrationTester.withExtension(
            makeExtension(), exportContainer: exportContainer, importContainer: importContainer,
            workDirectory: scratch.url("work"), system: quickSystem, operation: function)
    }
}

extension Trait where Self == AppMigrationExtensionTrait {
    /// Registers `migrationExtension` for the tests of a suite; `seed` fills the export container.
    static func appMigrationExtension(
        _ migrationExtension: @autoclosure @escaping @Sendable () -> any AppMigrationExtension,
        seed: @escaping @Sendable (MigrationDataContainer) throws -> Void = SampleData.seed
    ) -> Self {
        AppMigrationExtensionTrait(makeExtension: migrationExtension, seed: seed)
    }
}

/// The files the reference examples read, so that their exports have something to export.
enum SampleData {
    static let profile = #"{"name":"Test User","email":"test@example.com"}"#
    static let settings = #"{"theme":"dark","language":"en"}"#

    @Sendable static func seed(_ container: MigrationDataContainer) throws {
        let docs = container.documentsDirectory
        let support = container.applicationSupportDirectory
        try write(profile, to: "profile.json", in: docs)
        try write(profile, to: "user_profile.json", in: docs)
        try write(profile, to: "user_data.json", in: docs)
        try write(#"{"items":[1,2,3]}"#, to: "core_data.json", in: docs)
        try write(String(repeating: "SQLite format 3\u{0}", count: 512), to: "app.sqlite", in: docs)
        try write("<plist/>", to: "settings.plist", in: docs)
        try write(Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 7) }), to: "media/cover.jpg", in: docs)
        try write("clip", to: "media/clips/one.mp4", in: docs)
        try write(Data((0..<2048).map { UInt8(truncatingIfNeeded: $0 &* 13) }), to: "photos/a.heic", in: docs)
        try write(settings, to: "settings.json", in: support)
    }
}

/// Exports `exporter` from a `source` container in `scratch`, seeded with ``SampleData/seed(_:)``,
/// for an Android destination, to `a.tar.xz` there; returns the archive.
func exportSampleArchive<Exporter: ResourcesExportingWithOptions>(of exporter: Exporter, in scratch: Scratch) async throws -> URL
where Exporter.OptionsType == MigrationDefaultSupportedOptions {
    let source = try scratch.container("source")
    try SampleData.seed(source)
    let archive = scratch.url("a.tar.xz")
    try await quickSystem.exportResources(
        of: exporter, from: source,
        request: MigrationRequest(destinationPlatform: .android), to: archive)
    return archive
}
