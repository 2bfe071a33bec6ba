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
            #expect(MigrationDataContainer.withCurrent(container) {
                FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: "group.other")
            } == nil)
        }
    }
}
