import Foundation
import TestSupport
import Testing

extension AMKTests {
    /// Owner names beside the ids, and extended attributes (`--xattrs`) as GNU tar and bsdtar
    /// see and write them. Attributes are set and read with Python's os.setxattr/os.getxattr in
    /// the `user.` name space.
    @Suite(.enabled(if: UserAttributes.canSet, "needs python3 and a file system with user.* extended attributes"))
    @MainActor struct MetadataInterop {
        let tree: TestTree

        init() throws {
            tree = try TestTree()
            try tree.write("d/f.txt", "hi\n")
            try tree.mkdir("d/dir")
            try UserAttributes.python(
                "import os; os.setxattr('d/f.txt', 'user.comment', b'hello \\xff'); os.setxattr('d/dir', 'user.kind', b'folder')",
                in: tree.root)
        }

        func amk(_ arguments: String...) throws -> AMKProcess.Result {
            try AMKProcess.run(arguments, in: tree.root)
        }

        func attribute(_ path: String, _ name: String) throws -> String {
            try UserAttributes.python(
                "import os, sys\ntry: sys.stdout.write(os.getxattr('\(path)', '\(name)').hex())\nexcept OSError: sys.stdout.write('none')",
                in: tree.root)
        }

        @Test func packedAttributesAreRestoredByAmkGNUTarAndBsdtar() throws {
            #expect(try amk("pack", "d", "-o", "a.tar.xz", "--xattrs").status == 0)
            let restored = try amk("extract", "a.tar.xz", "-C", "x", "--xattrs")
            #expect(restored.status == 0, "\(restored.stderr)")
            #expect(try attribute("x/d/f.txt", "user.comment") == "68656c6c6f20ff")
            #expect(try attribute("x/d/dir", "user.kind") == Array("folder".utf8).map { String(format: "%02x", $0) }.joined())
            // Without --xattrs nothing is restored, as with GNU tar.
            #expect(try amk("extract", "a.tar.xz", "-C", "y").status == 0)
            #expect(try attribute("y/d/f.txt", "user.comment") == "none")

            if ChildProcess.lookUp("tar") != nil {
                let listing = try ShellPipeline.run("tar --xattrs -tvvJf a.tar.xz", in: tree.root)
                #expect(listing.stdout.contains("user.comment"), "\(listing.stdout)")
                let gnu = try ShellPipeline.run(
                    "mkdir g && tar --xattrs --xattrs-include='*' -xJf a.tar.xz -C g", in: tree.root)
                #expect(gnu.status == 0, "\(gnu.stderr)")
                #expect(try attribute("g/d/f.txt", "user.comment") == "68656c6c6f20ff")
            }
            if ChildProcess.lookUp("bsdtar") != nil {
                let bsd = try ShellPipeline.run("mkdir b && bsdtar -xf a.tar.xz -C b", in: tree.root)
                #expect(bsd.status == 0, "\(bsd.stderr)")
                #expect(try attribute("b/d/f.txt", "user.comment") == "68656c6c6f20ff")
            }
        }

        @Test(.enabled(if: ChildProcess.lookUp("tar") != nil && ChildProcess.lookUp("xz") != nil, "needs GNU tar and xz"))
        func gnuTarAttributesAreRestoredByAmk() throws {
            let made = try ShellPipeline.run("tar --xattrs -cJf g.tar.xz d", in: tree.root)
            #expect(made.status == 0, "\(made.stderr)")
            let result = try amk("extract", "g.tar.xz", "-C", "x", "--xattrs")
            #expect(result.status == 0, "\(result.stderr)")
            #expect(try attribute("x/d/f.txt", "user.comment") == "68656c6c6f20ff")
        }

        /// Attributes of a symbolic link itself (Linux allows only `trusted.` and `security.`
        /// names there, so this needs root): `pack --xattrs` stores them, and `extract
        /// --xattrs-include 'trusted.*'` restores them on the link (they were once dropped without
        /// a word, where GNU tar restores them). `--xattrs` alone leaves such privileged names
        /// out, as GNU tar does, and says so: an archive from elsewhere extracted by root once gave
        /// a file the capability `cap_setuid`.
        @Test(.enabled(if: getuid() == 0, "trusted.* attributes need root"))
        func attributesOfASymbolicLinkAreRestoredOnTheLink() throws {
            try tree.symlink("d/link", to: "f.txt")
            try UserAttributes.python(
                "import os; os.setxattr('d/link', 'trusted.note', b'on the link', follow_symlinks=False)", in: tree.root)
            #expect(try amk("pack", "d", "-o", "l.tar.xz", "--xattrs").status == 0)
            let left = try amk("extract", "l.tar.xz", "-C", "left", "--xattrs")
            #expect(left.status == 0, "\(left.stderr)")
            #expect(
                left.stderr.contains("d/link: extended attributes not restored, as no --xattrs-include pattern names them: trusted.note"),
                "\(left.stderr)")
            let notRestored = try UserAttributes.python(
                "import os\ntry: print(os.getxattr('left/d/link', 'trusted.note', follow_symlinks=False))\nexcept OSError: print('none')",
                in: tree.root)
            #expect(notRestored == "none\n" || notRestored == "none", "\(notRestored)")
            let restored = try amk("extract", "l.tar.xz", "-C", "x", "--xattrs-include", "trusted.*", "--xattrs-include", "user.*")
            #expect(restored.status == 0 && restored.stderr.isEmpty, "no warning: \(restored.stderr)")
            let read = """
                import os, sys
                try: sys.stdout.write(os.getxattr('x/d/link', 'trusted.note', follow_symlinks=False).decode())
                except OSError as error: sys.stdout.write('none: ' + str(error))
                """
            #expect(try UserAttributes.python(read, in: tree.root) == "on the link")
            #expect(try attribute("x/d/f.txt", "trusted.note") == "none", "set on the link, not on what it points to")
        }

        /// A file's attribute names and values as Python sees them: (name bytes, value bytes) in hex,
        /// sorted.
        func attributeBytes(_ path: String) throws -> String {
            try UserAttributes.python(
                "import os; print(sorted((os.fsencode(n).hex(), os.getxattr('\(path)', n).hex()) for n in os.listxattr('\(path)')))",
                in: tree.root)
        }

        /// Linux attribute names are bytes: `user.café` precomposed and with a combining accent
        /// (equal as Swift `String`s) are two attributes of one file, and so is a name that is not
        /// UTF-8. All come back with their own values, through amk and through GNU tar. amk once
        /// kept them in a `String`-keyed dictionary: one of the pair was lost, with exit status 0.
        @Test func attributeNamesKeepTheirBytes() throws {
            try UserAttributes.python(
                #"""
                import os
                for name, value in [(b'user.caf\xc3\xa9', b'one'), (b'user.cafe\xcc\x81', b'two'), (b'user.\xff\xfe', b'three')]:
                    os.setxattr('d/f.txt', name, value)
                """#, in: tree.root)
            let source = try attributeBytes("d/f.txt")
            #expect(source.contains("757365722e636166c3a9") && source.contains("757365722e63616665cc81"), "\(source)")
            #expect(try amk("pack", "d", "-o", "a.tar.xz", "--xattrs").status == 0)
            let restored = try amk("extract", "a.tar.xz", "-C", "x", "--xattrs")
            #expect(restored.status == 0, "\(restored.stderr)")
            #expect(try attributeBytes("x/d/f.txt") == source)
            if ChildProcess.lookUp("tar") != nil {
                let gnu = try ShellPipeline.run("mkdir g && tar --xattrs --xattrs-include='*' -xJf a.tar.xz -C g", in: tree.root)
                #expect(gnu.status == 0, "\(gnu.stderr)")
                #expect(try attributeBytes("g/d/f.txt") == source)
            }
        }

        /// Names holding `=`, `%` or a newline: amk packs them (it refused the whole pack) in GNU
        /// tar's spelling, which GNU tar restores, and restores GNU tar's (it kept `%3D` and `%25`
        /// in the names). bsdtar's archives spell every other byte `%XX` too (`user.caf%C3%A9`).
        @Test(.enabled(if: ChildProcess.lookUp("tar") != nil && ChildProcess.lookUp("xz") != nil, "needs GNU tar and xz"))
        func namesWithEqualsPercentOrNewlineAreGNUTars() throws {
            try UserAttributes.python(
                #"""
                import os
                for name, value in [(b'user.with=equals', b'eq'), (b'user.pct%41', b'pct'), (b'user.nl\nx', b'nl')]:
                    os.setxattr('d/f.txt', name, value)
                """#, in: tree.root)
            let source = try attributeBytes("d/f.txt")
            #expect(source.contains("757365722e776974683d657175616c73"), "user.with=equals: \(source)")
            let packed = try amk("pack", "d", "-o", "a.tar.xz", "--xattrs")
            #expect(packed.status == 0, "\(packed.stderr)")
            #expect(try amk("extract", "a.tar.xz", "-C", "x", "--xattrs").status == 0)
            #expect(try attributeBytes("x/d/f.txt") == source)
            let gnu = try ShellPipeline.run("mkdir g && tar --xattrs --xattrs-include='*' -xJf a.tar.xz -C g", in: tree.root)
            #expect(gnu.status == 0, "\(gnu.stderr)")
            #expect(try attributeBytes("g/d/f.txt") == source)
            let made = try ShellPipeline.run("tar --xattrs --xattrs-include='*' -cJf t.tar.xz d", in: tree.root)
            #expect(made.status == 0, "\(made.stderr)")
            #expect(try amk("extract", "t.tar.xz", "-C", "t", "--xattrs").status == 0)
            #expect(try attributeBytes("t/d/f.txt") == source)
            if ChildProcess.lookUp("bsdtar") != nil {
                try UserAttributes.python("import os; os.setxattr('d/f.txt', 'user.caf\u{E9}'.encode(), b'c')", in: tree.root)
                let withAccent = try attributeBytes("d/f.txt")
                #expect(try ShellPipeline.run("bsdtar -cJf b.tar.xz d", in: tree.root).status == 0)
                #expect(try amk("extract", "b.tar.xz", "-C", "b", "--xattrs").status == 0)
                #expect(try attributeBytes("b/d/f.txt") == withAccent)
            }
        }

        @Test(.enabled(if: ChildProcess.lookUp("tar") != nil, "needs GNU tar"))
        func ownerNamesAreStoredBesideTheIds() throws {
            #expect(try amk("pack", "d", "-o", "a.tar.xz").status == 0)
            let user = try ShellPipeline.run("id -un; id -gn", in: tree.root).stdout.split(separator: "\n")
            try #require(user.count == 2)
            let listing = try ShellPipeline.run("tar -tvJf a.tar.xz", in: tree.root)
            #expect(listing.stdout.contains(" \(user[0])/\(user[1]) "), "\(listing.stdout)")
            let numeric = try ShellPipeline.run("tar --numeric-owner -tvJf a.tar.xz", in: tree.root)
            #expect(numeric.stdout.contains(" \(getuid())/\(getgid()) "), "\(numeric.stdout)")
        }
    }
}

/// Python's os.setxattr/os.getxattr, for the metadata tests.
enum UserAttributes {
    /// Runs a Python snippet in `directory` and returns its standard output.
    @discardableResult
    static func python(_ code: String, in directory: URL) throws -> String {
        let python = try ChildProcess.run("python3", ["-c", code], in: directory, environment: [:])
        guard python.status == 0 else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "python3 failed: \(code)"])
        }
        return python.stdoutString
    }

    static let canSet: Bool = {
        guard let tree = try? TestTree(), (try? tree.write("probe", "x")) != nil else { return false }
        return (try? python("import os; os.setxattr('probe', 'user.probe', b'1')", in: tree.root)) != nil
    }()
}
