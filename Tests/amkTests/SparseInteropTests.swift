import Foundation
import TestSupport
import Testing

extension AMKTests {
    /// A disk image or database with holes, archived by bsdtar (macOS's `tar`, which stores every
    /// sparse file as a pax 1.0 sparse member without being asked) or by GNU tar's `--sparse`, is
    /// listed, extracted, sent to standard output and read from a pipe by `amk` as the file it is.
    @Suite(.enabled(if: ChildProcess.lookUp("xz") != nil && ChildProcess.lookUp("tar") != nil, "needs xz and GNU tar"))
    @MainActor struct SparseInterop {
        let tree: TestTree
        static let realSize = 3 << 20

        init() throws {
            tree = try TestTree()
            // Three runs of data in 3 MiB: at the start, in the middle, and 100 bytes before the end.
            let made = try ShellPipeline.run(
                "mkdir src && truncate -s \(Self.realSize) src/disk.img"
                    + " && printf 'head' | dd of=src/disk.img conv=notrunc status=none"
                    + " && head -c 70000 /dev/urandom | dd of=src/disk.img bs=1 seek=1500000 conv=notrunc status=none"
                    + " && printf 'tail' | dd of=src/disk.img bs=1 seek=\(Self.realSize - 100) conv=notrunc status=none"
                    + " && printf 'note\\n' > src/note.txt",
                in: tree.root)
            try #require(made.status == 0, "\(made.stderr)")
        }

        func amk(_ arguments: String...) throws -> AMKProcess.Result {
            try AMKProcess.run(arguments, in: tree.root)
        }

        func check(_ archive: String) throws {
            let listing = try amk("list", "-l", archive)
            #expect(listing.status == 0, "\(listing.stderr)")
            #expect(listing.stdout.contains(" \(Self.realSize) ") && listing.stdout.contains("disk.img"), "\(listing.stdout)")

            let out = "out-\(archive)"
            let extracted = try amk("extract", archive, "-C", out)
            #expect(extracted.status == 0, "\(extracted.stderr)")
            let same = try ShellPipeline.run(
                "cmp src/disk.img \(out)/disk.img && cmp src/note.txt \(out)/note.txt && stat -c %b \(out)/disk.img", in: tree.root)
            #expect(same.status == 0, "\(archive): \(same.stdout) \(same.stderr)")
            // About 70 KB of data: the holes stayed holes (at most 1 MiB of blocks allocated).
            let blocks = Int(same.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? .max
            #expect(blocks * 512 < 1 << 20, "\(archive): \(blocks) blocks allocated")

            let piped = try ShellPipeline.run(
                "\"$AMK\" extract -O \(archive) disk.img | cmp - src/disk.img && cat \(archive) | \"$AMK\" extract - -C pipe-\(archive)"
                    + " && cmp src/disk.img pipe-\(archive)/disk.img && \"$AMK\" verify \(archive)", in: tree.root)
            #expect(piped.status == 0, "\(archive): \(piped.stderr)")
        }

        @Test(.enabled(if: ChildProcess.lookUp("bsdtar") != nil, "bsdtar (libarchive-tools) is not installed"))
        func bsdtarsArchiveOfASparseFile() throws {
            let made = try ShellPipeline.run("cd src && bsdtar -cJf ../bsd.tar.xz disk.img note.txt", in: tree.root)
            #expect(made.status == 0, "\(made.stderr)")
            // bsdtar stored it sparse: the GNU.sparse keywords are in its pax header.
            let raw = try ShellPipeline.run("xz -dc bsd.tar.xz | grep -c GNU.sparse.realsize", in: tree.root)
            try #require(raw.status == 0, "bsdtar stored the file whole: the file system made no holes")
            try check("bsd.tar.xz")
        }

        /// amk stores a sparse file's holes as zeros; `extract --sparse` (`-S`) makes them holes
        /// again, and counts only the rest against `--max-bytes`.
        @Test func amksOwnArchiveGetsItsHolesBackWithSparse() throws {
            #expect(try amk("pack", "src", "-o", "amk.tar.xz").status == 0)
            let refused = try amk("extract", "amk.tar.xz", "-C", "full", "--max-bytes", "200K")
            #expect(refused.status == 1 && refused.stderr.contains("the limit set"), "\(refused.stderr)")
            let extracted = try amk("extract", "amk.tar.xz", "-C", "holes", "--sparse", "--max-bytes", "200K")
            #expect(extracted.status == 0, "\(extracted.stderr)")
            let short = try amk("extract", "amk.tar.xz", "-C", "short", "-S")
            #expect(short.status == 0, "\(short.stderr)")
            #expect(try amk("extract", "amk.tar.xz", "-C", "full").status == 0)
            let sizes = try ShellPipeline.run(
                "cmp src/disk.img holes/src/disk.img && cmp src/disk.img short/src/disk.img && cmp src/disk.img full/src/disk.img"
                    + " && stat -c %b holes/src/disk.img full/src/disk.img", in: tree.root)
            #expect(sizes.status == 0, "\(sizes.stderr)")
            let blocks = sizes.stdout.split(separator: "\n").compactMap { Int($0) }
            #expect(blocks.count == 2 && blocks[0] * 512 < 1 << 20 && blocks[1] * 512 >= Self.realSize, "\(blocks)")
        }

        @Test(arguments: ["--format=gnu", "--format=pax"])
        func gnuTarsSparseArchive(format: String) throws {
            let name = "gnu\(format.dropFirst(9)).tar.xz"
            let made = try ShellPipeline.run("tar --sparse \(format) -cJf \(name) -C src disk.img note.txt", in: tree.root)
            #expect(made.status == 0, "\(made.stderr)")
            try check(name)
        }
    }
}
