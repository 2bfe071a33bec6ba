import Foundation
import Synchronization
import TestSupport
import Testing

@testable import IndexedArchive

extension EngineSuites {
    /// `PackExclusion`: GNU tar's matching rules, and a pack that honours them.
    @Suite struct PackExclusionTests {
        @Test func patternsWithoutASlashMatchNamesAndWithOneThePath() {
            let exclusion = PackExclusion(patterns: ["*.o", ".git", "app/build/*"])
            #expect(exclusion.excludes(archivePath: "app/main.o"))
            #expect(exclusion.excludes(archivePath: "app/deep/er/x.o"))
            #expect(exclusion.excludes(archivePath: "app/.git"))
            #expect(exclusion.excludes(archivePath: "app/build/out/x.bin"), "* crosses '/' as in GNU tar")
            #expect(!exclusion.excludes(archivePath: "app/build"))
            #expect(!exclusion.excludes(archivePath: "app/main.c"))
            #expect(!exclusion.excludes(archivePath: "app/.gitignore"))
            #expect(!PackExclusion().excludes(archivePath: "anything"))
        }

        /// The names `tar -t` printed, without a folder's trailing `/`.
        static func names(_ output: [UInt8]) -> [String] {
            String(decoding: output, as: UTF8.self).split(separator: "\n").map { line in
                line.hasSuffix("/") ? String(line.dropLast()) : String(line)
            }
        }

        static func excludedWithAFolder(_ path: String, by exclusion: PackExclusion) -> Bool {
            var prefix = ""
            for part in path.split(separator: "/") {
                prefix += prefix.isEmpty ? String(part) : "/" + part
                if exclusion.excludes(archivePath: prefix) { return true }
            }
            return false
        }

        /// Each pattern leaves out what GNU tar's `--exclude` leaves out of the same tree: a pattern
        /// with a `/` matches at any depth (`build/*` in `src/x/build/obj`), where it matched only
        /// from the top and excluded nothing a GNU tar user expected.
        @Test(
            .enabled(if: toolExists("tar")),
            arguments: ["a/b", "build/*", "*.o", ".git", "src/x", "x/*/z", "s*", "*/b/*", "b", "sub/a/b/c.txt"])
        func excludesWhatGNUTarExcludes(pattern: String) async throws {
            let dir = try TemporaryDirectory()
            for file in [
                "src/a/b/c.txt", "src/x/a/b", "src/build/obj", "src/x/build/deep/y.o", "src/.git/HEAD", "src/x/q/z/w",
                "src/sub/a/b/c.txt", "src/keep.txt", "src/b"
            ] {
                try dir.file(file, "x")
            }
            let listed = try await runShell("tar -cf - --exclude '\(pattern)' src | tar -tf -", in: dir.path)
            try #require(listed.status == 0, "\(listed.stderr)")
            let byTar = Set(Self.names(listed.stdout))
            let all = try await runShell("tar -cf - src | tar -tf -", in: dir.path)
            let exclusion = PackExclusion(patterns: [pattern])
            // Left out itself, or under a folder left out (which is not entered).
            let byAmk = Set(Self.names(all.stdout).filter { !Self.excludedWithAFolder($0, by: exclusion) })
            #expect(byAmk == byTar, "\(pattern): amk keeps \(byAmk.subtracting(byTar).sorted()), tar \(byTar.subtracting(byAmk).sorted())")
        }

        @Test func aPackLeavesOutMatchesAndWhatIsUnderThem() async throws {
            let dir = try TemporaryDirectory()
            try dir.file("app/main.c", "int main;\n")
            try dir.file("app/main.o", "obj")
            try dir.file("app/.git/HEAD", "ref\n")
            try dir.file("app/build/out.bin", "out")
            var options = testOptions()
            options.exclusion = PackExclusion(patterns: ["*.o", ".git", "app/build/*"])
            let archive = dir.path + "/a.tar.xz"
            let summary = try await ArchivePacker.pack([PackSource(path: dir.path + "/app")], to: .file(archive), options: options)
            let names = try await ArchiveReader(path: archive).entries().map(\.path)
            #expect(names == ["app/", "app/build/", "app/main.c"])
            #expect(summary.entries == 3)
            #expect(try await ArchivePacker.contentSize(of: [PackSource(path: dir.path + "/app")], exclusion: options.exclusion) == 10)
        }
    }

    /// Extraction's `stripComponents`, `existingFiles` and per-member callbacks.
    @Suite struct ExtractionPolicyTests {
        @Test func stripComponentsDropsLeadingNamesAndHardLinkTargets() async throws {
            let packed = try await PackedTree.make()
            var options = ExtractOptions()
            options.stripComponents = 1
            let out = packed.dir.path + "/out"
            let summary = try await ArchiveReader(path: packed.archive).extract(to: out, options: options)
            #expect(summary.entries == packed.summary.entries - 1, "the root folder has no name left")
            #expect(exists(out + "/docs/notes.txt") && !exists(out + "/src"))
            var a = stat()
            var b = stat()
            lstat(out + "/docs/notes.txt", &a)
            lstat(out + "/hardlink-to-notes", &b)
            #expect(a.st_ino == b.st_ino, "the hard link's target was stripped too")
        }

        @Test func keepRefusesAnExistingFileAndLeavesIt() async throws {
            let packed = try await PackedTree.make()
            let out = packed.dir.path + "/out"
            try createFile(out + "/src/docs/notes.txt", Array("mine".utf8))
            var options = ExtractOptions()
            options.existingFiles = .keep
            await #expect(throws: ArchiveError.self) {
                try await ArchiveReader(path: packed.archive).extract(to: out, options: options)
            }
            #expect(try await readBytes(out + "/src/docs/notes.txt") == Array("mine".utf8))
            options.existingFiles = .replace
            try await ArchiveReader(path: packed.archive).extract(to: out, options: options)
            #expect(try await readBytes(out + "/src/docs/notes.txt") != Array("mine".utf8))
        }

        @Test func callbacksSeeEveryMemberAndTheBytes() async throws {
            let packed = try await PackedTree.make()
            let names = Mutex<[String]>([])
            let bytes = Atomic<UInt64>(0)
            var options = ExtractOptions()
            options.onMember = { name in names.withLock { $0.append(name) } }
            options.onProgress = { written in bytes.store(written, ordering: .relaxed) }
            let summary = try await ArchiveReader(path: packed.archive).extract(to: packed.dir.path + "/out", options: options)
            #expect(names.withLock { $0.count } == summary.entries)
            #expect(bytes.load(ordering: .relaxed) == summary.bytes)
        }
    }
}
