import Foundation
import TestSupport
import Testing

extension AMKTests {
    /// `amk extract` and `amk salvage` run by an ordinary user (`nobody`, through `setpriv`) on
    /// an archive from elsewhere, as tar would be: the umask comes off the archive's permission
    /// bits unless `-p` asks for them whole, and every folder gets its own mode and time whatever
    /// the order of the folders in the archive.
    @Suite(.enabled(if: UnprivilegedScene.canRunAsNobody, "needs root, setpriv, python3 and an amk that nobody may run"))
    struct UnprivilegedExtractTests {
        typealias Scene = UnprivilegedScene

        static let looseModes = """
            ('.ssh', tarfile.DIRTYPE, 0o777, 1, b''), ('.ssh/authorized_keys', tarfile.REGTYPE, 0o666, 1, b'key'),
            ('bin', tarfile.DIRTYPE, 0o2777, 1, b''), ('bin/run', tarfile.REGTYPE, 0o777, 1, b'#!/bin/sh')
            """

        /// An archive's 0777 `.ssh` and 0666 `authorized_keys` were given to an ordinary user as
        /// they were; GNU tar and bsdtar take the umask off.
        @Test(arguments: ["extract", "salvage"])
        func theUmaskComesOffAnOrdinaryUsersModes(command: String) throws {
            let test = try Scene(members: Self.looseModes)
            let result = try test.run(command, into: "out")
            #expect(result.status == 0, "\(result.stderr)")
            for (path, expected) in [("out/.ssh", 0o755), ("out/.ssh/authorized_keys", 0o644), ("out/bin", 0o755), ("out/bin/run", 0o755)] {
                #expect(test.mode(path) == mode_t(expected), "\(command) \(path): \(String(test.mode(path), radix: 8))")
            }
            // `-p` asks for the archive's bits whole, as `tar -p` does.
            let whole = try test.run(command, "-p", into: "whole")
            #expect(whole.status == 0, "\(whole.stderr)")
            #expect(test.mode("whole/.ssh") == 0o777 && test.mode("whole/.ssh/authorized_keys") == 0o666)
        }

        /// `a/b/` then `a/` with mode 0000: applied in the archive's reverse order, `a` was closed
        /// to nobody before `a/b` was reached, which kept 0700 and the extraction's time,
        /// silently. Deepest first, as GNU tar and bsdtar give them.
        @Test(arguments: ["extract", "salvage"])
        func aSubfolderGetsItsModeAndTimeWhenItsParentComesLater(command: String) throws {
            let test = try Scene(
                members: """
                    ('a/b', tarfile.DIRTYPE, 0o751, 1111111111, b''), ('a/b/f', tarfile.REGTYPE, 0o644, 1111111111, b'x'),
                    ('a', tarfile.DIRTYPE, 0o000, 1000000000, b'')
                    """)
            let result = try test.run(command, into: "out")
            #expect(result.status == 0, "\(result.stderr)")
            #expect(test.mode("out/a/b") == 0o751, "\(String(test.mode("out/a/b"), radix: 8))")
            #expect(test.mtime("out/a/b") == 1_111_111_111)
            #expect(test.mode("out/a") == 0 && test.mtime("out/a") == 1_000_000_000)
        }
    }
}

/// An archive written by Python's tarfile, extracted by amk as `nobody`.
struct UnprivilegedScene {
    static let asNobody = "/usr/bin/setpriv --reuid=65534 --regid=65534 --clear-groups"

    /// Whether the built binary can be run by `nobody` (the build may sit under a private
    /// home folder).
    static let canRunAsNobody: Bool = {
        guard geteuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"),
            ChildProcess.lookUp("python3") != nil
        else { return false }
        let probe = try? ChildProcess.run("/bin/sh", ["-c", "\(asNobody) \"$AMK\" --version"], environment: ["AMK": AMKProcess.binary])
        return probe?.status == 0
    }()

    let tree: TestTree

    /// Writes `a.tar.xz` from `members`, Python tuples of (name, type, mode, mtime, content).
    init(members: String) throws {
        tree = try TestTree()
        chmod(tree.root.path(percentEncoded: false), 0o755)
        let made = try ShellPipeline.run(
            """
            python3 -c "
            import io, lzma, tarfile
            with lzma.open('a.tar.xz', 'w') as out, tarfile.open(fileobj=out, mode='w', format=tarfile.PAX_FORMAT) as t:
                for name, kind, mode, mtime, data in [\(members)]:
                    m = tarfile.TarInfo(name); m.type = kind; m.mode = mode; m.mtime = mtime; m.size = len(data)
                    t.addfile(m, io.BytesIO(data))
            " && chmod 644 a.tar.xz
            """, in: tree.root)
        #expect(made.status == 0, "\(made.stderr)")
    }

    /// Runs `amk <command> a.tar.xz <extra> -C <out>` as nobody with umask 022, into a new
    /// folder of nobody's.
    func run(_ command: String, _ extra: String = "", into out: String) throws -> AMKProcess.Result {
        try tree.mkdir(out)
        chown(tree.path(out), 65534, 65534)
        return try ShellPipeline.run("umask 022; \(Self.asNobody) \"$AMK\" \(command) a.tar.xz \(extra) -C \(out)", in: tree.root)
    }

    func mode(_ relative: String) -> mode_t {
        var info = stat()
        lstat(tree.path(relative), &info)
        return info.st_mode & 0o7777
    }

    func mtime(_ relative: String) -> Int {
        var info = stat()
        lstat(tree.path(relative), &info)
        return info.st_mtim.tv_sec
    }
}
