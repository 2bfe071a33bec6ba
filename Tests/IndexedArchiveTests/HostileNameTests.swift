import Foundation
import IndexedArchive
import Tar
import Testing

extension EngineSuites {
    /// Names are bytes that the kernel reads up to the first NUL. A name whose checked form differs
    /// from the bytes handed to the kernel must be refused before anything is written, on every
    /// path that writes: full extraction (indexed and sequential), random-access selection,
    /// salvage, and a stream arriving on a descriptor. Each archive is consistent below the check
    /// under attack (valid xz checks, xz Index, AMKINDEX and pixz index agreeing with the tar).
    @Suite struct HostileNameTests {
        enum WritingPath: String, CaseIterable, Sendable {
            case fullIndexed, fullSequential, selection, salvage, stream
        }

        /// One hostile member and the member name a selection asks for.
        struct Case: Sendable, CustomTestStringConvertible {
            let label: String
            /// The field that carries the NUL, the bytes put there, and the member.
            let key: String
            let value: String
            let member: @Sendable (String) -> (TarHeader, [UInt8])
            var testDescription: String { label }
        }

        static let cases: [Case] = [
            Case(label: "pax path '..\\0/escape'", key: "path", value: "..\0/escape") { tarFile($0, "pwned") },
            Case(label: "pax path 'ok/..\\0/../escape2'", key: "path", value: "ok/..\0/../escape2") { tarFile($0, "pwned") },
            Case(label: "pax path '/tmp\\0' absolute", key: "path", value: "/\0tmp/escape") { tarFile($0, "pwned") },
            Case(label: "pax path of a folder '..\\0'", key: "path", value: "..\0/escape") { tarDirectory($0) },
            Case(label: "pax linkpath of a symlink to '/etc/passwd\\0'", key: "linkpath", value: "/etc/passwd\0x") { tarSymlink("link", to: $0) },
            Case(label: "pax linkpath of a hard link '../outside/target.txt\\0'", key: "linkpath", value: "../outside/target.txt\0") {
                tarHardLink("hl", to: $0)
            },
        ]

        /// The member with `value` in its pax `key` record, and a twin with a harmless value of the
        /// same length (the encoder refuses NUL, so the record is patched in place).
        static func hostile(_ c: Case) throws -> (evil: [UInt8], twin: [UInt8]) {
            let bytes = Array(c.value.utf8)
            // A non-ASCII placeholder forces a pax record; it has exactly the value's length.
            let placeholder = "é" + String(repeating: "x", count: bytes.count - 2)
            let twin = try tarStream([c.member(placeholder)], end: false)
            let record = Array(" \(c.key)=\(placeholder)".utf8)
            guard let at = twin.firstRange(of: record) else { throw CocoaError(.fileReadCorruptFile) }
            var evil = twin
            evil.replaceSubrange((at.upperBound - bytes.count)..<at.upperBound, with: bytes)
            return (evil, twin)
        }

        @Test(arguments: WritingPath.allCases, cases)
        func aNulInANameIsRefusedBeforeAnythingIsWritten(_ path: WritingPath, _ c: Case) async throws {
            let scene = try HostileArchiveTests.Scene()
            let (evil, twin) = try Self.hostile(c)
            let before = try tarStream([tarDirectory("ok"), tarFile("ok/a.txt", "fine")], end: false)
            let tar = before + evil + TarEncoder.endOfArchive
            let hostileIndex = path != .fullSequential
            if hostileIndex {
                // The index agrees with the tar: it carries the same NUL-bearing name.
                try await writeBytes(scene.archive, try indexedArchive(tar: tar, describing: before + twin + TarEncoder.endOfArchive) {
                    if c.key == "path" { $0.entries[2].path = c.value } else { $0.entries[2].linkTarget = c.value }
                })
            } else {
                try await writeBytes(scene.archive, try await xzTool(tar))
            }
            let error = await expectArchiveError("\(path) \(c.label)") {
                switch path {
                case .fullIndexed, .fullSequential:
                    try await ArchiveReader(path: scene.archive).extract(to: scene.dest)
                case .selection:
                    let reader = try ArchiveReader(path: scene.archive)
                    var options = ExtractOptions()
                    options.members = Set(try await reader.entries().dropFirst(2).map(\.path))
                    try await reader.extract(to: scene.dest, options: options)
                case .salvage:
                    let report = try await ArchiveSalvager.salvage(path: scene.archive, to: scene.dest)
                    // Salvage reports a refused member as damage rather than throwing.
                    if report.damage != nil && !report.recovered.contains(where: { $0.utf8.contains(0) }) {
                        throw ArchiveError(.unsafePath, "salvage refused it: \(report.damage!)")
                    }
                case .stream:
                    _ = try await ArchiveStreamReaderTests.extract(try await readBytes(scene.archive), to: scene.dest)
                }
            }
            #expect(error.map { [.unsafePath, .corrupt].contains($0.code) } == true, "\(String(describing: error))")
            try await scene.expectNothingEscaped()
            #expect(!exists(scene.dest + "/link") && !exists(scene.dest + "/hl"), "no link was made")
            #expect(!exists("/tmp/escape"))
            #expect(!exists(scene.base.path + "/escape/"))
        }
    }
}
