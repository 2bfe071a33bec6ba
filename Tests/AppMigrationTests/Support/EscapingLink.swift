import AppMigration
import Foundation
import Testing

/// A top-level folder of an archive (`Documents` or `Library`, which importers merge into the
/// container) given as a symbolic link to a folder outside the container.
struct EscapingLink: Sendable, CustomTestStringConvertible {
    enum Target: Sendable {
        /// The outside folder's absolute path.
        case absolute
        /// `../../../outside`: from `<container>/.amk/staging-<id>/`, where the link is staged,
        /// up to the scratch folder that holds both the container and `outside`.
        case climbing
    }

    var member: String
    var target: Target

    static let all = [
        EscapingLink(member: "Documents", target: .absolute), EscapingLink(member: "Documents", target: .climbing),
        EscapingLink(member: "Library", target: .absolute), EscapingLink(member: "Library", target: .climbing)
    ]

    func linkTarget(to outside: OutsideFolder) -> String {
        switch target {
        case .absolute: outside.path
        case .climbing: "../../../" + outside.url.lastPathComponent
        }
    }

    /// An archive holding the link and, beside it, an ordinary file.
    func archive(to outside: OutsideFolder) throws -> [UInt8] {
        let other = member == "Documents" ? "Library" : "Documents"
        return try HostileArchive.indexed([
            HostileArchive.symlink(member, to: linkTarget(to: outside)),
            HostileArchive.directory(other),
            HostileArchive.file("\(other)/ordinary.txt", "ordinary\n")
        ])
    }

    /// Makes `container`'s folder a link like the one in ``archive(to:)``: what a sender whose
    /// container holds such a link exports (the engine stores a link as a link).
    func plant(in container: MigrationDataContainer, to outside: OutsideFolder) throws {
        let url = container.containerRootDirectory.appending(path: member, directoryHint: .notDirectory)
        try FileManager.default.removeItem(at: url)
        try FileManager.default.createSymbolicLink(atPath: url.path(percentEncoded: false), withDestinationPath: linkTarget(to: outside))
    }

    /// An `export` container in `scratch` with an ordinary file in `Documents` and in
    /// `Application Support`, and this link planted (``plant(in:to:)``).
    func plantedSource(in scratch: Scratch, to outside: OutsideFolder) throws -> MigrationDataContainer {
        let source = try scratch.container("export")
        try write("ordinary\n", to: "ordinary.txt", in: source.documentsDirectory)
        try write("ordinary\n", to: "ordinary.txt", in: source.applicationSupportDirectory)
        try plant(in: source, to: outside)
        return source
    }

    var testDescription: String { "\(member) -> \(target == .absolute ? "/absolute/outside" : "../../../outside")" }
}

extension Scratch {
    /// An `import` container holding `Documents/keep.txt`, and a ``snapshot(_:excluding:)`` of it:
    /// what a refused import must leave as it was.
    func importContainerWithKeptFile() throws -> (destination: MigrationDataContainer, before: [String: Data]) {
        let destination = try container("import")
        try write("mine", to: "keep.txt", in: destination.documentsDirectory)
        return (destination, try snapshot(destination.containerRootDirectory))
    }
}

/// What a refused import must leave: the outside folder as it was, the container as it was with no
/// staging folder, and a failure recorded whose message names the member; `message` (the error
/// the caller got) names it too.
func expectRefused(
    _ link: EscapingLink, message: String?, destination: MigrationDataContainer, containerBefore: [String: Data],
    outside: OutsideFolder, outsideBefore: [String: Data], sourceLocation: SourceLocation = #_sourceLocation
) throws {
    #expect(
        message?.contains("'\(link.member)'") == true, "the error names the member: \(message ?? "no error")",
        sourceLocation: sourceLocation)
    #expect(try outside.contents() == outsideBefore, "the outside folder was touched", sourceLocation: sourceLocation)
    #expect(
        try snapshot(destination.containerRootDirectory) == containerBefore, "the container changed",
        sourceLocation: sourceLocation)
    #expect(try stagingFolders(in: destination).isEmpty, sourceLocation: sourceLocation)
    guard case .failure(let recorded)? = importStatus(of: destination) else {
        Issue.record("no failure recorded: \(String(describing: importStatus(of: destination)))", sourceLocation: sourceLocation)
        return
    }
    #expect(
        "\(recorded)".contains("'\(link.member)'"), "the recorded failure names the member: \(recorded)",
        sourceLocation: sourceLocation)
}
