import AppMigration
import Foundation
import IndexedArchive
import TestSupport
import Testing

@testable import amk

extension AMKTests {
    /// The demo's last phase: it must notice a container that differs, and stop when cancelled.
    @Suite struct DemoComparisonTests {
        /// Two containers with the same file `Documents/a.txt`, holding `first` and `second`.
        static func containers(
            _ first: String, _ second: String, in directory: TemporaryDirectory
        ) throws -> (MigrationDataContainer, MigrationDataContainer) {
            func container(_ name: String, _ text: String) throws -> MigrationDataContainer {
                let container = MigrationDataContainer(
                    bundleIdentifier: "com.example.demo", containerRootDirectory: directory.url(name))
                try container.createStandardDirectories()
                try Data(text.utf8).write(to: container.documentsDirectory.appending(path: "a.txt"))
                return container
            }
            return (try container("source", first), try container("destination", second))
        }

        @Test func equalContainersCompareAndDifferentBytesAreNamed() throws {
            let directory = try TemporaryDirectory()
            let (source, same) = try Self.containers("alpha", "alpha", in: directory)
            #expect(try DemoComparison.compare(source, same, cancellation: CancellationFlag()).files == 1)
            let other = try TemporaryDirectory()
            let (_, changed) = try Self.containers("alpha", "alphx", in: other)
            let error = #expect(throws: DemoComparison.Mismatch.self) {
                try DemoComparison.compare(source, changed, cancellation: CancellationFlag())
            }
            #expect(error?.description.contains("a.txt: the bytes differ") == true, "\(String(describing: error))")
        }

        @Test func aCancelledComparisonStops() throws {
            let directory = try TemporaryDirectory()
            let (source, destination) = try Self.containers("alpha", "alpha", in: directory)
            let flag = CancellationFlag()
            flag.cancel()
            #expect(throws: CancellationError.self) { try DemoComparison.compare(source, destination, cancellation: flag) }
        }
    }
}
