import Foundation
import TestSupport
import Testing

@testable import IndexedArchive

extension EngineSuites {
    /// Blocks of machine code carry the x86 branch filter in their headers (issue #12); every
    /// stock tool and every amk path reads them.
    @Suite struct BranchFilterInteropTests {
        /// Executables among text: an x86-64 ELF program and library, large enough to fill blocks
        /// of 1 MiB, an ARM64 "library" that is not x86, and text in folders of its own.
        static func tree(in dir: TemporaryDirectory) async throws -> String {
            try await offPool {
                try dir.file("tree/bin/tool", MachineCode.elfExecutable(codeSize: 3 << 20, seed: 71), mode: 0o755)
                try dir.file("tree/lib/libcore.so.1", MachineCode.elfExecutable(codeSize: 2 << 20, seed: 72), mode: 0o755)
                var arm = MachineCode.elfExecutable(codeSize: 1 << 20, seed: 73)
                arm[18] = 183  // e_machine: AArch64
                arm[19] = 0
                try dir.file("tree/lib/libarm.so", arm)
                try dir.file("tree/share/doc/notes.txt", sampleBytes(count: 2 << 20, seed: 74, text: true))
                try dir.file("tree/share/doc/readme.md", sampleBytes(count: 300_000, seed: 75, text: true))
                let root = dir.path + "/tree"
                CompatTree.setTimes(root)
                return root
            }
        }

        @discardableResult
        static func pack(_ root: String, to archive: String, filter: Bool) async throws -> PackSummary {
            var options = testOptions(preset: 1, chunk: 1 << 20)
            options.workers = 2
            options.filtersExecutables = filter
            return try await ArchivePacker.pack([PackSource(path: root, archivePath: "tree")], to: .file(archive), options: options)
        }

        /// The filter chain of every block, as `xz -lvv` prints it.
        static func blockFilters(_ archive: String) async throws -> [String] {
            let list = try await runTool(["xz", "-lvv", archive])
            #expect(list.status == 0, "\(list.stderr)")
            return list.stdoutString.split(separator: "\n").filter { $0.contains("--lzma2") }.map(String.init)
        }

        @Test(.enabled(if: toolExists("xz") && toolExists("tar")))
        func codeBlocksAreFilteredAndEveryReaderGetsTheSameTree() async throws {
            let dir = try TemporaryDirectory()
            let root = try await Self.tree(in: dir)
            let source = try await TreeSnapshot.of(root)
            let archive = dir.path + "/t.tar.xz"
            let summary = try await Self.pack(root, to: archive, filter: true)

            let filters = try await Self.blockFilters(archive)
            let filtered = filters.filter { $0.contains("--x86") }.count
            #expect(summary.x86Blocks == filtered, "the summary counts the filtered blocks")
            // The two x86 files are 5 MiB of the tree's 8.3: about five blocks of code, the rest not.
            #expect(filtered >= 4, "\(filters.joined(separator: "\n"))")
            #expect(filters.count - filtered >= 3, "text and the ARM file are not filtered: \(filters.joined(separator: "\n"))")

            let reader = try ArchiveReader(path: archive)
            let amkOut = dir.path + "/amk"
            try await reader.extract(to: amkOut)
            expectSameTree(source.droppingSetIDBits(), try await TreeSnapshot.of(amkOut + "/tree"), "amk extract")
            #expect(try await reader.verify() == source.items.count + 1)

            // One member from the middle of a filtered block, by random access.
            let one = dir.path + "/one"
            var selection = ExtractOptions()
            selection.members = ["tree/lib/libcore.so.1"]
            try await reader.extract(to: one, options: selection)
            let original = try Data(contentsOf: URL(fileURLWithPath: root + "/lib/libcore.so.1"))
            #expect(try Data(contentsOf: URL(fileURLWithPath: one + "/tree/lib/libcore.so.1")) == original)

            let expected = source.truncatingNanoseconds()
            var tools = [("gnu", "xz -dc '\(archive)' | tar -xpf -")]
            if toolExists("bsdtar") { tools.append(("bsd", "bsdtar -xpf '\(archive)'")) }
            if toolExists("pixz") { tools.append(("pixz", "pixz -d < '\(archive)' | tar -xpf -")) }
            for (name, script) in tools {
                let out = dir.path + "/" + name
                try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: false)
                let result = try await runShell("cd '\(out)' && \(script)")
                #expect(result.status == 0 && result.stderr.isEmpty, "\(script): \(result.stderr)")
                expectSameTree(expected, try await TreeSnapshot.of(out + "/tree"), script)
            }
            if toolExists("pixz") {
                let member = "tree/bin/tool"
                let result = try await runShell("pixz -x '\(member)' < '\(archive)' | tar -xOf - '\(member)'")
                #expect(result.status == 0, "\(result.stderr)")
                #expect(
                    Data(result.stdout) == (try Data(contentsOf: URL(fileURLWithPath: root + "/bin/tool"))), "pixz -x of a filtered block")
            }
        }

        @Test(.enabled(if: toolExists("xz")))
        func turnedOffNoBlockIsFilteredAndTheArchiveIsLarger() async throws {
            let dir = try TemporaryDirectory()
            let root = try await Self.tree(in: dir)
            let on = dir.path + "/on.tar.xz"
            let off = dir.path + "/off.tar.xz"
            try await Self.pack(root, to: on, filter: true)
            #expect(try await Self.pack(root, to: off, filter: false).x86Blocks == 0)
            #expect(try await Self.blockFilters(off).allSatisfy { !$0.contains("--x86") })
            let size = { (path: String) in (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0 }
            #expect(size(on) < size(off), "filtered \(size(on)) bytes, plain \(size(off))")
            let decoded = try await runShell("xz -dc '\(on)' | cmp - <(xz -dc '\(off)')")
            #expect(decoded.status == 0, "the same tar stream either way: \(decoded.stdoutString)\(decoded.stderr)")
        }
    }
}
