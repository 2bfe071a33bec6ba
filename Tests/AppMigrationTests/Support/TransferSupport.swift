import AppMigration
import Foundation
import Synchronization
import Testing

/// A test extension that exports `Documents` and `Library` whole and imports them by moving the
/// received folders into the container, with seams for the streaming tests.
struct TreeCopyMigration: ResourcesExporting, ResourcesImporting {
    let resourcesImportProgress = Progress(totalUnitCount: 100)
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    var version = "1"
    /// Called after the first folder has been appended, before the second; throwing fails the export.
    var afterFirstAppend: (@Sendable () async throws -> Void)? = nil
    /// Set when the importer is called.
    var importCalled = RanFlag()
    /// Makes the importer write a file and then throw.
    var importFails = false
    /// Makes the importer throw `CancellationError`, as an import cancelled on the receiver does.
    var importCancelled = false

    var resourcesVersion: String { version }
    var resourcesCompressible: Bool { true }
    var resourcesSizeEstimate: Int { get async { 1 << 20 } }

    func exportResources(to archiver: sending ResourcesArchiver, request: MigrationRequest) async throws {
        let root = appContainer.containerRootDirectory
        try await archiver.appendItem(at: root.appending(path: "Documents", directoryHint: .isDirectory), pathInArchive: "Documents")
        try await afterFirstAppend?()
        try await archiver.appendItem(at: root.appending(path: "Library", directoryHint: .isDirectory), pathInArchive: "Library")
    }

    func importResources(at url: URL, request: ResourcesImportRequest) async throws {
        importCalled.set()
        if importCancelled { throw CancellationError() }
        let root = appContainer.containerRootDirectory
        for folder in ["Documents", "Library"] {
            let target = root.appending(path: folder, directoryHint: .isDirectory)
            if FileManager.default.fileExists(atPath: target.path(percentEncoded: false)) {
                try FileManager.default.removeItem(at: target)
            }
            try FileManager.default.moveItem(at: url.appending(path: folder, directoryHint: .isDirectory), to: target)
            if importFails { throw Failure(description: "importer failed after moving \(folder)") }
        }
    }
}

/// Every item under `directory` (relative path -> content; directories as "<dir>", symlinks as
/// "-> target"), so that two trees can be compared for byte-identical equality.
func snapshot(_ directory: URL, excluding excluded: Set<String> = [".amk"]) throws -> [String: Data] {
    let base = directory.path(percentEncoded: false)
    var result: [String: Data] = [:]
    guard let walker = FileManager.default.enumerator(atPath: base) else { return result }
    while let relative = walker.nextObject() as? String {
        if excluded.contains(where: { relative == $0 || relative.hasPrefix($0 + "/") }) { continue }
        let path = base + "/" + relative
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        switch attributes[.type] as? FileAttributeType {
        case .typeDirectory?: result[relative] = Data("<dir>".utf8)
        case .typeSymbolicLink?: result[relative] = Data("-> \(try FileManager.default.destinationOfSymbolicLink(atPath: path))".utf8)
        default: result[relative] = try Data(contentsOf: URL(filePath: path))
        }
    }
    return result
}

/// Random bytes from the kernel: incompressible, so they make several blocks, and quick to make
/// (a generator in Swift is slow in a debug build, and these tests share two cores).
func noise(_ count: Int) throws -> Data {
    let random = try FileHandle(forReadingFrom: URL(fileURLWithPath: "/dev/urandom"))
    defer { try? random.close() }
    return random.readData(ofLength: count)
}

/// Fills an export container: small files, a nested folder, a symlink, and `bigBytes` of noise.
func seedTransferContainer(_ container: MigrationDataContainer, bigBytes: Int = 1_500_000) throws {
    let docs = container.documentsDirectory
    try write("hello, transfer\n", to: "notes/a.txt", in: docs)
    try write(try noise(bigBytes), to: "media/big.bin", in: docs)
    try write(#"{"theme":"dark"}"#, to: "settings.json", in: container.applicationSupportDirectory)
    try FileManager.default.createSymbolicLink(
        atPath: docs.appending(path: "notes/link").path(percentEncoded: false),
        withDestinationPath: "a.txt")
}

extension Scratch {
    /// The two ends of a migration: an `export` container filled by
    /// ``seedTransferContainer(_:bigBytes:)`` and an empty `import` container.
    func seededExportAndImport(bigBytes: Int = 1_500_000) throws -> (source: MigrationDataContainer, destination: MigrationDataContainer) {
        (try seededExport(bigBytes: bigBytes), try container("import"))
    }

    /// An `export` container filled by ``seedTransferContainer(_:bigBytes:)``.
    func seededExport(bigBytes: Int = 1_500_000) throws -> MigrationDataContainer {
        let source = try container("export")
        try seedTransferContainer(source, bigBytes: bigBytes)
        return source
    }
}

/// The import status recorded in `container`.
func importStatus(of container: MigrationDataContainer) -> MigrationStatus? {
    MigrationDataContainer.withCurrent(container) { MigrationStatus.importStatus }
}

/// Expects the import status recorded in `container` to be a success.
func expectSuccessStatus(in container: MigrationDataContainer, sourceLocation: SourceLocation = #_sourceLocation) {
    let status = importStatus(of: container)
    guard case .success? = status else {
        Issue.record("no success status: \(String(describing: status))", sourceLocation: sourceLocation)
        return
    }
}

/// Expects a failed import to have left `container` as it was (`before`, a ``snapshot(_:excluding:)``
/// of its root), with no staging folder, and its failure recorded; `context` says which case.
func expectLeftAsItWas(
    _ container: MigrationDataContainer, before: [String: Data], _ context: String? = nil,
    sourceLocation: SourceLocation = #_sourceLocation
) throws {
    #expect(try snapshot(container.containerRootDirectory) == before, "\(context ?? "")", sourceLocation: sourceLocation)
    #expect(try stagingFolders(in: container).isEmpty, "\(context ?? "")", sourceLocation: sourceLocation)
    expectFailureStatus(in: container, context, sourceLocation: sourceLocation)
}

/// Expects the import status recorded in `container` to be a failure; `context` says which case.
func expectFailureStatus(
    in container: MigrationDataContainer, _ context: String? = nil, sourceLocation: SourceLocation = #_sourceLocation
) {
    let status = importStatus(of: container)
    guard case .failure? = status else {
        Issue.record("\(context.map { "\($0): " } ?? "")no failure status: \(String(describing: status))", sourceLocation: sourceLocation)
        return
    }
}

/// The staging folders in `container`'s host folder.
func stagingFolders(in container: MigrationDataContainer) throws -> [String] {
    let host = container.containerRootDirectory.appending(path: ".amk").path(percentEncoded: false)
    guard FileManager.default.fileExists(atPath: host) else { return [] }
    return try FileManager.default.contentsOfDirectory(atPath: host).filter { $0.hasPrefix("staging-") }
}
