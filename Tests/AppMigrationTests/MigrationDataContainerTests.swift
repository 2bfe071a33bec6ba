import AppMigration
import Foundation
import Testing

@Suite struct MigrationDataContainerTests {
    @Test func directoriesFollowTheAppSandboxLayout() {
        let container = MigrationDataContainer(bundleIdentifier: "com.example.app", containerRootDirectory: URL(filePath: "/data/app/"))
        #expect(container.containerRootDirectory.path(percentEncoded: false) == "/data/app")
        #expect(container.documentsDirectory.path(percentEncoded: false) == "/data/app/Documents")
        #expect(container.applicationSupportDirectory.path(percentEncoded: false) == "/data/app/Library/Application Support")
        #expect(container.temporaryDirectory.path(percentEncoded: false) == "/data/app/tmp")
        // No trailing slash: `file.path().replacingOccurrences(of: docs.path(), with: "")` leaves "/name".
        #expect(!container.documentsDirectory.path().hasSuffix("/"))
    }

    struct Probe: AppMigrationExtension {}

    @Test func appContainerIsTheOneTheHostBound() async throws {
        let first = MigrationDataContainer(bundleIdentifier: "one", containerRootDirectory: URL(filePath: "/c/one"))
        let second = MigrationDataContainer(bundleIdentifier: "two", containerRootDirectory: URL(filePath: "/c/two"))
        let seen = await MigrationDataContainer.withCurrent(first) {
            async let inner = MigrationDataContainer.withCurrent(second) { Probe().appContainer.bundleIdentifier }
            return (Probe().appContainer.bundleIdentifier, await inner)
        }
        #expect(seen.0 == "one")
        #expect(seen.1 == "two")
    }

    @Test func withoutABindingTheProcessContainerComesFromTheEnvironment() throws {
        // Other tests always bind a container, so changing the environment here affects none.
        setenv("AMK_CONTAINER_ROOT", "/tmp/amk-process-container", 1)
        setenv("AMK_BUNDLE_IDENTIFIER", "com.example.process", 1)
        defer {
            unsetenv("AMK_CONTAINER_ROOT")
            unsetenv("AMK_BUNDLE_IDENTIFIER")
        }
        let container = MigrationDataContainer.processContainer
        #expect(container.containerRootDirectory.path(percentEncoded: false) == "/tmp/amk-process-container")
        #expect(container.bundleIdentifier == "com.example.process")
    }

    @Test func appGroupContainersResolveThroughTheCurrentContainer() async throws {
        try await Scratch.with { scratch in
            let container = try scratch.container("app")
            let group = MigrationDataContainer.withCurrent(container) {
                FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: "group.com.example.myapp")
            }
            #expect(group == container.appGroupDirectories["group.com.example.myapp"])
            #expect(FileManager.default.fileExists(atPath: try #require(group).path(percentEncoded: false)), "created on demand")
            #expect(
                MigrationDataContainer.withCurrent(container) {
                    FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: "group.other")
                } == nil)
        }
    }
}

/// Containers are never guessed, and the host clears only a folder it knows (issue #13, item 5).
@Suite(.serialized) struct ContainerSafetyTests {
    /// Exports an `export` container in `scratch`, seeded with 1000 bytes of noise, to `a.tar.xz`
    /// there.
    static func exportSeededContainer(in scratch: Scratch) async throws -> (source: MigrationDataContainer, archive: URL) {
        let source = try scratch.container("export")
        try seedTransferContainer(source, bigBytes: 1000)
        let archive = scratch.url("a.tar.xz")
        _ = try await quickSystem.exportResources(
            of: TreeCopyMigration(), from: source, request: MigrationRequest(destinationPlatform: .current), to: archive)
        return (source, archive)
    }

    /// Without a host's binding and without AMK_CONTAINER_ROOT there is no container: not the
    /// home folder. An import into `current` is refused before anything runs, and so is an export.
    @Test func withoutAConfiguredRootCurrentIsNoContainer() async throws {
        unsetenv("AMK_CONTAINER_ROOT")
        let current = MigrationDataContainer.current
        #expect(current.containerRootDirectory.path(percentEncoded: false).hasPrefix("/dev/null/"))
        #expect(current.containerRootDirectory != FileManager.default.homeDirectoryForCurrentUser)
        #expect(throws: AppMigrationError.self) { try current.createStandardDirectories() }
        try await Scratch.with { scratch in
            let archive = try await Self.exportSeededContainer(in: scratch).archive
            let importer = TreeCopyMigration()
            let error = try #require(
                await #expect(throws: AppMigrationError.self, "an import into no container went ahead") {
                    try await quickSystem.importResources(from: archive, into: current, using: importer)
                })
            #expect(error.code == .notAContainer)
            #expect(error.message.contains("AMK_CONTAINER_ROOT"), "\(error)")
            #expect(!importer.importCalled.value, "the extension never ran")
            await #expect(throws: AppMigrationError.self) {
                _ = try await quickSystem.exportResources(
                    of: TreeCopyMigration(), from: current, request: MigrationRequest(destinationPlatform: .current),
                    to: scratch.url("b.tar.xz"))
            }
        }
    }

    /// A folder that holds data but was never marked by createStandardDirectories (a home folder,
    /// a project folder) is refused before the extension runs, and nothing in it changes, even
    /// when the import would have failed (which clears a container).
    @Test func anUnmarkedFolderWithDataIsRefusedAndLeftAlone() async throws {
        try await Scratch.with { scratch in
            let archive = try await Self.exportSeededContainer(in: scratch).archive
            let folder = scratch.url("home")
            try FileManager.default.createDirectory(at: folder.appending(path: "projects"), withIntermediateDirectories: true)
            try Data("precious\n".utf8).write(to: folder.appending(path: "projects/thesis.tex"))
            let before = try snapshot(folder, excluding: [])
            let home = MigrationDataContainer(bundleIdentifier: "com.example.app", containerRootDirectory: folder)
            var importer = TreeCopyMigration()
            importer.importFails = true
            let error = try #require(
                await #expect(throws: AppMigrationError.self, "an import into an unmarked folder went ahead") {
                    try await quickSystem.importResources(from: archive, into: home, using: importer)
                })
            #expect(error.code == .notAContainer)
            #expect(error.message.contains("is not marked as a container"), "\(error)")
            #expect(!importer.importCalled.value)
            #expect(try snapshot(folder, excluding: []) == before, "nothing in the folder changed")
            #expect(!FileManager.default.fileExists(atPath: folder.appending(path: ".amk").path(percentEncoded: false)))
        }
    }

    /// An absent or empty folder is the host's to make: it is created, marked, and imported into.
    @Test func anEmptyFolderBecomesAMarkedContainer() async throws {
        try await Scratch.with { scratch in
            let (source, archive) = try await Self.exportSeededContainer(in: scratch)
            let fresh = MigrationDataContainer(bundleIdentifier: "com.example.app", containerRootDirectory: scratch.url("fresh"))
            try await quickSystem.importResources(from: archive, into: fresh, using: TreeCopyMigration())
            #expect(FileManager.default.fileExists(atPath: scratch.url("fresh/.amk/container").path(percentEncoded: false)))
            #expect(try snapshot(fresh.containerRootDirectory) == snapshot(source.containerRootDirectory))
        }
    }
}
