import Foundation
import IndexedArchive
import Tar
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

extension EngineSuites.HostileNameTests {
    /// Names that Swift's `==` and hashing call equal (canonical equivalence) but that are
    /// different bytes, so different files in one folder. Each one's content says which it is.
    static let equivalentFiles: [(path: String, content: String)] = [
        ("t/caf\u{E9}/same", "in the precomposed folder"),
        ("t/cafe\u{301}/same", "in the decomposed folder, longer"),
        ("t/caf\u{E9}/only-precomposed", "p"),
        ("t/cafe\u{301}/only-decomposed", "dd"),
        ("t/K", "latin capital K"),
        ("t/\u{212A}", "the Kelvin sign")
    ]

    /// Writes `text` at `path`, whose bytes go to the kernel as they are (no normalisation).
    static func writeExactly(_ path: String, _ text: String) throws {
        var parts = path.utf8.split(separator: UInt8(ascii: "/")).map { String(decoding: $0, as: UTF8.self) }
        let name = parts.removeLast()
        var folder = path.utf8.first == UInt8(ascii: "/") ? "" : "."
        for part in parts {
            folder += "/" + part
            guard mkdir(folder, 0o755) == 0 || errno == EEXIST else { throw POSIXError(.EIO) }
        }
        let fd = open(folder + "/" + name, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        defer { close(fd) }
        let bytes = Array(text.utf8)
        guard write(fd, bytes, bytes.count) == bytes.count else { throw POSIXError(.EIO) }
    }

    /// The content at exactly `path`'s bytes, or nil.
    static func readExactly(_ path: String) -> String? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    private static func parent(_ path: String) -> [UInt8] {
        Array(path.utf8.split(separator: UInt8(ascii: "/")).dropLast().joined(separator: [UInt8(ascii: "/")]))
    }

    private static func leaf(_ path: String) -> [UInt8] { Array(path.utf8.split(separator: UInt8(ascii: "/")).last ?? []) }

    private static func isFolder(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
    }

    /// Every file is back under its own bytes with its own content, and its folder holds no file
    /// besides those expected there: nothing was written into the equivalent folder or over the
    /// equivalent file.
    static func expectEachInItsPlace(_ root: String, _ files: [(path: String, content: String)], _ label: String) {
        for file in files {
            #expect(readExactly(root + "/" + file.path) == file.content, "\(label): \(Array(file.path.utf8))")
        }
        for folder in Set(files.map { parent($0.path) }) {
            let path = root + "/" + String(decoding: folder, as: UTF8.self)
            let expected = files.filter { parent($0.path) == folder }.map { leaf($0.path) }.sorted { $0.lexicographicallyPrecedes($1) }
            let here = rawListing(path).filter { !isFolder(path + "/" + String(decoding: $0, as: UTF8.self)) }
            #expect(here == expected, "\(label): folder \(folder)")
        }
    }

    /// More names than ``TarConsumer`` compares one by one, so that a selection of them is
    /// looked up in a set.
    static let fillers = (0..<20).map { (path: "t/fill/\($0)", content: "filler \($0)") }

    /// A tree holding both forms of a name packs (it was refused as "already in the archive"),
    /// and every writing path puts each file back under its own bytes.
    @Test(arguments: WritingPath.allCases)
    func canonicallyEqualNamesStayApart(_ path: WritingPath) async throws {
        let dir = try TemporaryDirectory()
        for file in Self.equivalentFiles + Self.fillers { try Self.writeExactly(dir.path + "/src/" + file.path, file.content) }
        let archive = dir.path + "/packed.tar.xz"
        try await ArchivePacker.pack([PackSource(path: dir.path + "/src/t", archivePath: "t")], to: .file(archive), options: testOptions())
        let names = try await ArchiveReader(path: archive).entries().map { Array($0.path.utf8) }
        // The files, and the folders t/, t/fill/ and the two equivalent ones.
        #expect(Set(names).count == names.count && names.count == Self.equivalentFiles.count + Self.fillers.count + 4, "\(names)")

        // A foreign archive of files alone, alternating between the two folders: the extractor's
        // open folder must not stand in for the equivalent one.
        let foreign = dir.path + "/foreign.tar.xz"
        let order = [0, 1, 3, 2, 5, 4].map { Self.equivalentFiles[$0] }
        try await writeBytes(foreign, try await xzTool(try tarStream(order.map { tarFile($0.path, $0.content) })))

        let out = dir.path + "/out"
        switch path {
        case .fullIndexed:
            try await ArchiveReader(path: archive).extract(to: out)
            if toolExists("tar") {
                // The stock tool finds both forms in the archive too.
                let tarOut = dir.path + "/tar"
                try FileManager.default.createDirectory(atPath: tarOut, withIntermediateDirectories: false)
                let result = try await runTool(["tar", "-xJf", archive, "-C", tarOut])
                #expect(result.status == 0, "\(result.stderr)")
                Self.expectEachInItsPlace(tarOut, Self.equivalentFiles, "tar -x")
            }
        case .fullSequential:
            try await ArchiveReader(path: foreign).extract(to: out)
        case .selection:
            // One of each pair of twins, by name, with the fillers: looked up in a set. (A
            // `Set<String>` holds only one of two equivalent names, so both cannot be asked for.)
            let reader = try ArchiveReader(path: archive)
            let chosen = [1, 2, 3, 5].map { Self.equivalentFiles[$0] }
            var options = ExtractOptions()
            options.members = Set((chosen + Self.fillers).map(\.path))
            try await reader.extract(to: out, options: options)
            for twin in [0, 4] {
                #expect(Self.readExactly(out + "/" + Self.equivalentFiles[twin].path) == nil, "the unselected twin stays out")
            }
            Self.expectEachInItsPlace(out, chosen, "selection")
            return
        case .salvage:
            let report = try await ArchiveSalvager.salvage(path: archive, to: out)
            #expect(report.damage == nil && report.lost.isEmpty)
            #expect(Set(report.recovered.map { Array($0.utf8) }).count == report.recovered.count)
        case .stream:
            _ = try await ArchiveStreamReaderTests.extract(try await readBytes(archive), to: out)
            let again = dir.path + "/again"
            _ = try await ArchiveStreamReaderTests.extract(try await readBytes(foreign), to: again)
            Self.expectEachInItsPlace(again, Self.equivalentFiles, "foreign stream")
        }
        Self.expectEachInItsPlace(out, Self.equivalentFiles, path.rawValue)
    }

    /// Choosing one name takes that name, not its equivalent, by every lookup: a selection of
    /// one folder, a member's entry and its content.
    @Test func aSelectionTakesTheBytesItNames() async throws {
        let dir = try TemporaryDirectory()
        for file in Self.equivalentFiles { try Self.writeExactly(dir.path + "/src/" + file.path, file.content) }
        let archive = dir.path + "/packed.tar.xz"
        try await ArchivePacker.pack([PackSource(path: dir.path + "/src/t", archivePath: "t")], to: .file(archive), options: testOptions())
        let reader = try ArchiveReader(path: archive)
        for file in Self.equivalentFiles {
            #expect(String(decoding: try await reader.contents(of: file.path), as: UTF8.self) == file.content)
            #expect(try await reader.entry(named: file.path)?.size == UInt64(file.content.utf8.count))
        }
        var options = ExtractOptions()
        options.members = ["t/cafe\u{301}"]
        try await reader.extract(to: dir.path + "/out", options: options)
        Self.expectEachInItsPlace(
            dir.path + "/out", Self.equivalentFiles.filter { $0.path.utf8.starts(with: "t/cafe\u{301}/".utf8) }, "one folder")
        #expect(Self.rawListing(dir.path + "/out/t") == [Array("cafe\u{301}".utf8)])
        let selection = MemberSelection(["t/cafe\u{301}/same", "t/\u{212A}"])
        #expect(selection.selects("t/\u{212A}") && !selection.selects("t/K"))
        #expect(selection.unmatched(in: ["t/caf\u{E9}/same", "t/K"], order: ["t/cafe\u{301}/same", "t/\u{212A}"]).count == 2)
    }

    /// Both of two equivalent names can be asked for together (`amk extract` passes its
    /// arguments this way): few names, compared in turn, and many, looked up.
    @Test(arguments: [false, true])
    func aFilterTakesBothTwins(_ many: Bool) async throws {
        let dir = try TemporaryDirectory()
        for file in Self.equivalentFiles + Self.fillers { try Self.writeExactly(dir.path + "/src/" + file.path, file.content) }
        let archive = dir.path + "/packed.tar.xz"
        try await ArchivePacker.pack([PackSource(path: dir.path + "/src/t", archivePath: "t")], to: .file(archive), options: testOptions())
        let twins = [0, 1, 4, 5].map { Self.equivalentFiles[$0] }
        var options = ExtractOptions()
        options.selection = MemberSelection((twins + (many ? Self.fillers : [])).map(\.path))
        #expect(options.memberFilter?.count == twins.count + (many ? Self.fillers.count : 0))
        #expect(options.members?.count == twins.count - 2 + (many ? Self.fillers.count : 0), "a set holds one of each pair")
        try await ArchiveReader(path: archive).extract(to: dir.path + "/out", options: options)
        Self.expectEachInItsPlace(dir.path + "/out", twins, "both twins")
        let selection = MemberSelection(twins.map(\.path))
        #expect(twins.allSatisfy { selection.selects($0.path) })
        #expect(selection.unmatched(in: twins.map(\.path), order: twins.map(\.path)).isEmpty)
        #expect(
            selection.unmatched(in: [twins[0].path], order: twins.map(\.path)).map { Array($0.utf8) }
                == twins.dropFirst().map { Array($0.path.utf8) })
    }

    /// A hard link names the latest member of its target's exact bytes: extracted alone (its
    /// target written in its place) or read, it has that member's content, not the equivalent's
    /// that came later.
    @Test func aHardLinkFindsItsTargetByBytes() async throws {
        let dir = try TemporaryDirectory()
        let tar = try tarStream([
            tarFile("t/caf\u{E9}", "precomposed"), tarFile("t/cafe\u{301}", "decomposed"), tarHardLink("t/link", to: "t/caf\u{E9}")
        ])
        try await writeBytes(dir.path + "/l.tar.xz", try indexedArchive(tar: tar))
        let reader = try ArchiveReader(path: dir.path + "/l.tar.xz")
        #expect(String(decoding: try await reader.contents(of: "t/link"), as: UTF8.self) == "precomposed")
        var options = ExtractOptions()
        options.members = ["t/link"]
        try await reader.extract(to: dir.path + "/out", options: options)
        #expect(Self.readExactly(dir.path + "/out/t/link") == "precomposed")
        #expect(Self.rawListing(dir.path + "/out/t") == [Array("link".utf8)])
    }
}
