import Foundation
import TestSupport
import Testing

extension AMKTests {
    /// File names, link targets and folder names that are not UTF-8 (Latin-1 `caf\xe9`, a stray
    /// `\xff`, a name too long for the ustar field) are stored and restored byte for byte, by amk and
    /// between amk and GNU tar and bsdtar in both directions. Trees are built and compared with
    /// Python's bytes API, which never decodes a name.
    @Suite(.enabled(if: ChildProcess.lookUp("python3") != nil, "needs python3"))
    @MainActor struct RawNameInterop {
        let tree: TestTree

        /// The tree: every kind of member whose name (or link target) is not UTF-8.
        static let build = """
            import os
            os.makedirs(b'd/dir\\xff/sub')
            open(b'd/caf\\xe9.txt', 'wb').write(b'latin-1 name')
            open(b'd/dir\\xff/sub/in', 'wb').write(b'inside a folder whose name is not UTF-8')
            open(b'd/' + b'x' * 120 + b'\\xe9', 'wb').write(b'long name')
            os.symlink(b'caf\\xe9.txt', b'd/link\\xfe')
            os.link(b'd/caf\\xe9.txt', b'd/hard\\xfd')
            open(b'd/plain.txt', 'wb').write(b'a UTF-8 neighbour')
            """

        /// Every path under a folder with its type and content or link target, as hex: a
        /// byte-exact description to compare.
        static func describe(_ root: String) -> String {
            """
            import os, sys
            out = []
            for base, dirs, files in os.walk(b'\(root)'):
                for name in sorted(dirs + files):
                    path = os.path.join(base, name)
                    rel = os.path.relpath(path, b'\(root)').hex()
                    if os.path.islink(path): out.append(rel + ' l ' + os.readlink(path).hex())
                    elif os.path.isdir(path): out.append(rel + ' d')
                    else: out.append(rel + ' f ' + open(path, 'rb').read().hex())
            sys.stdout.write('\\n'.join(sorted(out)))
            """
        }

        init() throws {
            tree = try TestTree()
            try UserAttributes.python(Self.build, in: tree.root)
        }

        func amk(_ arguments: String...) throws -> AMKProcess.Result {
            try AMKProcess.run(arguments, in: tree.root)
        }

        func shell(_ command: String) throws -> AMKProcess.Result {
            try ShellPipeline.run(command, in: tree.root)
        }

        func snapshot(_ root: String) throws -> String {
            try UserAttributes.python(Self.describe(root), in: tree.root)
        }

        @Test func amkRestoresNamesThatAreNotUTF8ByteForByte() throws {
            let original = try snapshot("d")
            #expect(original.split(separator: "\n").count == 8, "\(original)")
            let packed = try amk("pack", "d", "-o", "a.tar.xz")
            #expect(packed.status == 0, "\(packed.stderr)")
            let extracted = try amk("extract", "a.tar.xz", "-C", "x")
            #expect(extracted.status == 0, "\(extracted.stderr)")
            #expect(try snapshot("x/d") == original)
            // The sequential reader (a stream on standard input) writes the same names.
            let streamed = try shell("mkdir s && \(AMKProcess.binary) extract - -C s < a.tar.xz")
            #expect(streamed.status == 0, "\(streamed.stderr)")
            #expect(try snapshot("s/d") == original)
        }

        /// Two names that Swift calls equal (precomposed and decomposed `é`) are two members:
        /// named together on the command line, both are extracted, and each is listed alone.
        @Test func canonicallyEquivalentNamesAreSelectedApart() throws {
            try UserAttributes.python(
                """
                import os
                os.makedirs(b'e')
                open(b'e/caf\\xc3\\xa9', 'wb').write(b'precomposed')
                open(b'e/cafe\\xcc\\x81', 'wb').write(b'decomposed')
                open(b'e/other', 'wb').write(b'other')
                """, in: tree.root)
            #expect(try amk("pack", "e", "-o", "e.tar.xz").status == 0)
            let both = try amk("extract", "e.tar.xz", "-C", "both", "e/caf\u{E9}", "e/cafe\u{301}")
            #expect(both.status == 0, "\(both.stderr)")
            let written = try UserAttributes.python(
                "import os, sys; sys.stdout.write(repr(sorted((n, open(b'both/e/' + n, 'rb').read()) for n in os.listdir(b'both/e'))))",
                in: tree.root)
            #expect(written == "[(b'cafe\\xcc\\x81', b'decomposed'), (b'caf\\xc3\\xa9', b'precomposed')]")
            for (name, other) in [("e/caf\u{E9}", "e/cafe\u{301}"), ("e/cafe\u{301}", "e/caf\u{E9}")] {
                let listed = try amk("list", "e.tar.xz", name)
                #expect(listed.status == 0, "\(listed.stderr)")
                #expect(listed.stdout.split(separator: "\n").map { Array($0.utf8) } == [Array(name.utf8)], "not \(other)")
            }
        }

        @Test func listingShowsTheBytesAndSelectionTakesThemBack() throws {
            #expect(try amk("pack", "d", "-o", "a.tar.xz").status == 0)
            let listed = try amk("list", "a.tar.xz")
            #expect(listed.status == 0)
            let lines = listed.stdout.split(separator: "\n").map(String.init)
            #expect(lines.contains("d/caf\\xe9.txt"), "\(listed.stdout)")
            #expect(lines.contains("d/dir\\xff/sub/in"), "\(listed.stdout)")
            // The printed form selects the member, as bash's $'...' would spell it.
            let one = try amk("extract", "a.tar.xz", "-C", "one", "d/caf\\xe9.txt")
            #expect(one.status == 0, "\(one.stderr)")
            let content = try UserAttributes.python(
                "import sys; sys.stdout.write(open(b'one/d/caf\\xe9.txt', 'rb').read().decode())", in: tree.root)
            #expect(content == "latin-1 name")
        }

        /// An argument that is not UTF-8 reached amk with its bad bytes replaced (U+FFFD): `-o`
        /// and `-C` wrote to a name that was never given, with status 0, and a folder to pack that
        /// exists was "not found". It is a usage error now, naming the argument's bytes, and
        /// nothing is written.
        @Test func anArgumentThatIsNotUTF8IsAUsageErrorAndNothingIsWritten() throws {
            #expect(try amk("pack", "d", "-o", "ok.tar.xz").status == 0)
            let before = try FileManager.default.contentsOfDirectory(atPath: tree.root.path)
            for command in [
                #"exec "$AMK" pack d -o "$(printf 'caf\351.tar.xz')""#,
                #"exec "$AMK" extract ok.tar.xz -C "$(printf 'out\351')""#,
                #"exec "$AMK" pack "$(printf 'd/dir\377')" -o sub.tar.xz"#
            ] {
                let result = try AMKProcess.Result(
                    ChildProcess.run("/bin/sh", ["-c", command], in: tree.root, environment: ["AMK": AMKProcess.binary]))
                #expect(result.status == 2, "\(command): \(result.stderr)")
                #expect(
                    result.stderr.contains("is not UTF-8") && result.stderr.contains(#"\xe9"#) != result.stderr.contains(#"\xff"#),
                    "\(command): \(result.stderr)")
                #expect(try FileManager.default.contentsOfDirectory(atPath: tree.root.path).sorted() == before.sorted(), "\(command)")
            }
        }

        /// pixz checks its file index against the names libarchive reads from the tar headers, so
        /// the index must hold the same bytes: it held the library's escaped form, and `pixz -d`
        /// refused the whole archive ("Index and archive differ").
        @Test(.enabled(if: ChildProcess.lookUp("pixz") != nil && ChildProcess.lookUp("tar") != nil, "needs pixz and GNU tar"))
        func pixzReadsAmksNamesThroughItsIndex() throws {
            let original = try snapshot("d")
            #expect(try amk("pack", "d", "-o", "a.tar.xz").status == 0)
            let whole = try shell("mkdir p && pixz -d < a.tar.xz | tar -xf - -C p")
            #expect(whole.status == 0, "\(whole.stderr)")
            #expect(try snapshot("p/d") == original)
            let listed = try shell("pixz -l a.tar.xz | od -An -tx1 | tr -d ' \n'")
            #expect(listed.stdout.contains("642f636166e92e747874"), "d/caf\\xe9.txt as its bytes: \(listed.stdout)")
            let one = try shell("pixz -x \"$(printf 'd/dir\\377/sub/in')\" < a.tar.xz | tar -xOf -")
            #expect(one.status == 0 && one.stdout == "inside a folder whose name is not UTF-8", "\(one.stdout) \(one.stderr)")
        }

        @Test(
            .enabled(
                if: ChildProcess.lookUp("tar") != nil && ChildProcess.lookUp("bsdtar") != nil && ChildProcess.lookUp("xz") != nil,
                "needs GNU tar, bsdtar and xz")
        )
        func gnuTarAndBsdtarExtractAmksNamesAsTheyWere() throws {
            let original = try snapshot("d")
            #expect(try amk("pack", "d", "-o", "a.tar.xz").status == 0)
            let gnu = try shell("mkdir g && tar -xJf a.tar.xz -C g")
            #expect(gnu.status == 0, "\(gnu.stderr)")
            #expect(try snapshot("g/d") == original)
            // bsdtar must not have to convert a name from UTF-8: no warning, exit 0.
            let bsd = try shell("mkdir b && bsdtar -xf a.tar.xz -C b")
            #expect(bsd.status == 0 && bsd.stderr.isEmpty, "\(bsd.stderr)")
            #expect(try snapshot("b/d") == original)
        }

        @Test(
            .enabled(
                if: ChildProcess.lookUp("tar") != nil && ChildProcess.lookUp("bsdtar") != nil && ChildProcess.lookUp("xz") != nil,
                "needs GNU tar, bsdtar and xz"),
            arguments: [
                "tar -cJf t.tar.xz d", "tar --format=pax -cJf t.tar.xz d", "bsdtar -cJf t.tar.xz d", "bsdtar --format=pax -cJf t.tar.xz d"
            ])
        func amkExtractsNamesOtherToolsWrote(command: String) throws {
            let original = try snapshot("d")
            // bsdtar warns (in the names' raw bytes) that it cannot convert them to UTF-8, then
            // writes them raw with hdrcharset=BINARY: keep its warnings out of the text we read.
            let made = try shell(command + " 2>create.log")
            #expect(made.status == 0)
            let extracted = try amk("extract", "t.tar.xz", "-C", "x")
            #expect(extracted.status == 0, "\(extracted.stderr)")
            #expect(try snapshot("x/d") == original)
        }
    }
}
