import Foundation
import TestSupport
import Testing

extension AMKTests {
    /// `--same-owner`, `--no-same-owner` and `--numeric-owner` of `amk extract` and `amk salvage`, against an archive GNU
    /// tar wrote with foreign owners: `nobody`/`nogroup` under the numbers 4242/4343, which no
    /// system gives them. Only root can give files away, hence only as root.
    @Suite(
        .enabled(
            if: geteuid() == 0 && ChildProcess.lookUp("tar") != nil && ChildProcess.lookUp("xz") != nil
                && getpwnam("nobody") != nil && getgrnam("nogroup") != nil,
            "needs root, GNU tar, xz and the nobody user and nogroup group"))
    struct OwnershipOptionsTests {
        let tree: TestTree
        let nobody = (getpwnam("nobody")!.pointee.pw_uid, getgrnam("nogroup")!.pointee.gr_gid)

        init() throws {
            tree = try TestTree()
            try tree.write("d/f.txt", "hi\n")
            try tree.write("d/tool", Array("#!/bin/sh\n".utf8), mode: 0o755)
            let made = try ShellPipeline.run(
                "chmod 4755 d/tool && tar --owner=nobody:4242 --group=nogroup:4343 -cJf g.tar.xz d", in: tree.root)
            #expect(made.status == 0, "\(made.stderr)")
        }

        func owner(_ relative: String) -> (uid_t, gid_t) {
            var info = stat()
            lstat(tree.path(relative), &info)
            return (info.st_uid, info.st_gid)
        }

        func mode(_ relative: String) -> mode_t {
            var info = stat()
            lstat(tree.path(relative), &info)
            return info.st_mode & 0o7777
        }

        @Test func rootRestoresOwnersByNameByDefaultAsTarDoes() throws {
            let result = try AMKProcess.run(["extract", "g.tar.xz", "-C", "x"], in: tree.root)
            #expect(result.status == 0, "\(result.stderr)")
            for path in ["x/d", "x/d/f.txt", "x/d/tool"] {
                #expect(owner(path) == nobody, "\(path)")
            }
            #expect(mode("x/d/tool") == 0o4755, "set-user-ID is kept with the owner")
            #expect(!result.stderr.contains("warning"), "\(result.stderr)")

            let same = try AMKProcess.run(["extract", "g.tar.xz", "-C", "s", "--same-owner"], in: tree.root)
            #expect(same.status == 0, "\(same.stderr)")
            #expect(owner("s/d/f.txt") == nobody)
        }

        @Test func salvageRestoresOwnersLikeExtract() throws {
            let result = try AMKProcess.run(["salvage", "g.tar.xz", "-C", "x"], in: tree.root)
            #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
            #expect(owner("x/d/f.txt") == nobody)
            let numeric = try AMKProcess.run(["salvage", "g.tar.xz", "-C", "n", "--numeric-owner"], in: tree.root)
            #expect(numeric.status == 0, "\(numeric.stdout)\(numeric.stderr)")
            #expect(owner("n/d/f.txt") == (4242, 4343))
            let mine = try AMKProcess.run(["salvage", "g.tar.xz", "-C", "m", "--no-same-owner"], in: tree.root)
            #expect(mine.status == 0, "\(mine.stdout)\(mine.stderr)")
            #expect(owner("m/d/f.txt") == (getuid(), getgid()))
        }

        @Test func numericOwnerUsesTheIds() throws {
            let result = try AMKProcess.run(["extract", "g.tar.xz", "-C", "x", "--numeric-owner"], in: tree.root)
            #expect(result.status == 0, "\(result.stderr)")
            for path in ["x/d", "x/d/f.txt", "x/d/tool"] {
                #expect(owner(path) == (4242, 4343), "\(path)")
            }
        }

        @Test func noSameOwnerKeepsTheExtractingUserAndDropsSetIDBits() throws {
            let result = try AMKProcess.run(["extract", "g.tar.xz", "-C", "x", "--no-same-owner"], in: tree.root)
            #expect(result.status == 0, "\(result.stderr)")
            for path in ["x/d", "x/d/f.txt", "x/d/tool"] {
                #expect(owner(path) == (getuid(), getgid()), "\(path)")
            }
            #expect(mode("x/d/tool") == 0o755)
            #expect(result.stderr.contains("set-user-ID/set-group-ID bits dropped"), "\(result.stderr)")
        }

        @Test func amkPackedOwnersComeBackFromAmkAndGNUTar() throws {
            // An id with no name here travels as a number; one with a name as both.
            #expect(chown(tree.path("d/f.txt"), 4242, 4343) == 0)
            #expect(chown(tree.path("d/tool"), nobody.0, nobody.1) == 0)
            let packed = try AMKProcess.run(["pack", "d", "-o", "a.tar.xz", "-q"], in: tree.root)
            #expect(packed.status == 0, "\(packed.stderr)")
            let amk = try AMKProcess.run(["extract", "a.tar.xz", "-C", "x"], in: tree.root)
            #expect(amk.status == 0, "\(amk.stderr)")
            let gnu = try ShellPipeline.run("mkdir g && tar -xJf a.tar.xz -C g", in: tree.root)
            #expect(gnu.status == 0, "\(gnu.stderr)")
            for root in ["x", "g"] {
                #expect(owner(root + "/d/f.txt") == (4242, 4343), "\(root)")
                #expect(owner(root + "/d/tool") == nobody, "\(root)")
            }
        }
    }
}
