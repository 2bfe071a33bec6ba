import Foundation
import IndexedArchive
import Tar
import TestSupport
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
            Case(label: "pax linkpath of a symlink to '/etc/passwd\\0'", key: "linkpath", value: "/etc/passwd\0x") {
                tarSymlink("link", to: $0)
            },
            Case(label: "pax linkpath of a hard link '../outside/target.txt\\0'", key: "linkpath", value: "../outside/target.txt\0") {
                tarHardLink("hl", to: $0)
            }
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
                try await writeBytes(
                    scene.archive,
                    try indexedArchive(tar: tar, describing: before + twin + TarEncoder.endOfArchive) {
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

extension EngineSuites.HostileNameTests {
    /// `name` (ASCII with `X` placeholders) as a ustar member whose placeholders are replaced by
    /// `bytes` in the header, with the checksum recomputed: a name that is not valid UTF-8, which
    /// the encoder refuses to write.
    static func rawNameMember(_ name: String, replacing bytes: [UInt8], content: String) throws -> [UInt8] {
        var member = try tarStream([tarFile(name, content)], end: false)
        let placeholder = Array(String(repeating: "X", count: bytes.count).utf8)
        guard let at = member[0..<100].firstRange(of: placeholder) else { throw CocoaError(.fileReadCorruptFile) }
        member.replaceSubrange(at, with: bytes)
        // The checksum: the header's bytes summed with its own field read as spaces.
        for i in 148..<156 { member[i] = 0x20 }
        let sum = member[0..<512].reduce(0) { $0 + Int($1) }
        let octal = Array(String(sum, radix: 8).utf8)
        let field = [UInt8](repeating: 0x30, count: 6 - octal.count) + octal + [0, 0x20]
        member.replaceSubrange(148..<156, with: field)
        return member
    }

    /// Two names that are not valid UTF-8 and differ only in those bytes stay two names: a
    /// repairing decoder would make both `a\u{FFFD}.txt`, and one would replace the other.
    /// Each is written under its own bytes, on every reading path.
    @Test(arguments: ReadMode.allCases)
    func namesThatAreNotUTF8AreWrittenByteForByte(_ mode: ReadMode) async throws {
        let dir = try TemporaryDirectory()
        let tar =
            try tarStream([tarFile("ok.txt", "fine")], end: false)
            + Self.rawNameMember("aX.txt", replacing: [0xFF], content: "first")
            + Self.rawNameMember("aX.txt", replacing: [0xFE], content: "second")
            + TarEncoder.endOfArchive
        let reader = try await hostileArchive(tar, mode: mode, at: dir.path + "/l.tar.xz")
        let summary = try await reader.extract(to: dir.path + "/out")
        #expect(summary.entries == 3)
        #expect(summary.warnings.isEmpty)
        let first: [UInt8] = [0x61, 0xFF, 0x2E, 0x74, 0x78, 0x74]
        let second: [UInt8] = [0x61, 0xFE, 0x2E, 0x74, 0x78, 0x74]
        #expect(Self.rawListing(dir.path + "/out") == [second, first, Array("ok.txt".utf8)])
        #expect(Self.rawContent(dir.path + "/out", first) == Array("first".utf8))
        #expect(Self.rawContent(dir.path + "/out", second) == Array("second".utf8))
    }

    /// The names in a folder as the kernel holds them, sorted by bytes.
    static func rawListing(_ path: String) -> [[UInt8]] {
        guard let dir = opendir(path) else { return [] }
        defer { closedir(dir) }
        var names: [[UInt8]] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { Array($0.prefix { $0 != 0 }) }
            if name != [0x2E] && name != [0x2E, 0x2E] { names.append(name) }
        }
        return names.sorted { $0.lexicographicallyPrecedes($1) }
    }

    /// The content of the file `name` (raw bytes) in `folder`.
    static func rawContent(_ folder: String, _ name: [UInt8]) -> [UInt8]? {
        let path = Array(folder.utf8) + [0x2F] + name + [0]
        let fd = path.withUnsafeBufferPointer { $0.withMemoryRebound(to: CChar.self) { open($0.baseAddress!, O_RDONLY) } }
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, 64) }
        return count < 0 ? nil : Array(buffer.prefix(count))
    }

    /// The index's metadata keys are names too: one holding a NUL is refused when the archive opens.
    @Test func aMetadataKeyWithANulIsRefused() async throws {
        let dir = try TemporaryDirectory()
        let tar = try tarStream([tarFile("ok.txt", "fine")])
        try await writeBytes(dir.path + "/m.tar.xz", try indexedArchive(tar: tar, tamper: { $0.metadata["resources\0Version"] = "9" }))
        let error = await expectArchiveError("NUL in a metadata key") { try ArchiveReader(path: dir.path + "/m.tar.xz") }
        #expect(error?.code == .corrupt)
        #expect(error?.message.contains("metadata key") == true, "\(String(describing: error))")
    }

    /// An xz stream of something else is not called a damaged tar stream.
    @Test func xzOfSomethingElseIsNotAnArchive() async throws {
        let dir = try TemporaryDirectory()
        try await writeBytes(dir.path + "/t.tar.xz", try await xzTool(Array(String(repeating: "just some text\n", count: 100).utf8)))
        let error = await expectArchiveError("text in xz") { try await ArchiveReader(path: dir.path + "/t.tar.xz").entries() }
        #expect(error?.code == .notAnArchive)
        #expect(error?.message.contains("not a tar stream") == true, "\(String(describing: error))")
        #expect(error?.underlying is TarError)
    }
}

extension EngineSuites.HostileNameTests {
    /// "café" precomposed and "cafe" + U+0301 are equal Swift strings but different names on disk:
    /// an index naming one while the tar header names the other is a disagreement.
    @Test(arguments: [false, true])
    func anIndexNameThatIsOnlyCanonicallyEqualDisagrees(_ selective: Bool) async throws {
        let dir = try TemporaryDirectory()
        let tar = try tarStream([tarFile("cafe\u{301}.txt", "decomposed")])
        try await writeBytes(dir.path + "/c.tar.xz", try indexedArchive(tar: tar, tamper: { $0.entries[0].path = "caf\u{E9}.txt" }))
        let reader = try ArchiveReader(path: dir.path + "/c.tar.xz")
        var options = ExtractOptions()
        if selective { options.members = ["caf\u{E9}.txt"] }
        let error = await expectArchiveError("canonically equal names") {
            try await reader.extract(to: dir.path + "/out", options: options)
        }
        #expect(error?.code == .corrupt, "\(String(describing: error))")
        #expect(listing(dir.path + "/out").isEmpty)
    }
}
