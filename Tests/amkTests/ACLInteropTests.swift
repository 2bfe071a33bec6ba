import Foundation
import TestSupport
import Testing

extension AMKTests {
    /// POSIX ACLs as GNU tar (`--acls`) and bsdtar store them, as text in `SCHILY.acl.access` and
    /// `SCHILY.acl.default`: `extract --acls` restores them as the `system.posix_acl_*` attributes
    /// Linux keeps them in (amk used to drop them without a word). ACLs are set and read as those
    /// attributes with Python, so no `setfacl` is needed.
    @Suite(.enabled(if: ACLAttributes.canSet, "needs python3 and a file system with POSIX ACLs"))
    @MainActor struct ACLInterop {
        let tree: TestTree

        /// user::rw-, user:4242:r--, group::r--, group:4343:r-x, mask::r-x, other::r--: ids no
        /// name stands for here, so that every tar writes and reads them as numbers.
        static let entries =
            "[(1, 6, 0xFFFFFFFF), (2, 4, 4242), (4, 4, 0xFFFFFFFF), (8, 5, 4343), (0x10, 5, 0xFFFFFFFF), (0x20, 4, 0xFFFFFFFF)]"

        init() throws {
            tree = try TestTree()
            try tree.write("d/f.txt", "hi\n")
            try tree.mkdir("d/dir")
            try ACLAttributes.python(
                """
                \(ACLAttributes.helpers)
                value = encode(\(Self.entries))
                os.chmod('d/f.txt', 0o654)
                os.setxattr('d/f.txt', 'system.posix_acl_access', value)
                os.setxattr('d/dir', 'system.posix_acl_default', value)
                """, in: tree.root)
        }

        func amk(_ arguments: String...) throws -> AMKProcess.Result {
            try AMKProcess.run(arguments, in: tree.root)
        }

        /// The entries of `path`'s ACL attribute (`access` or `default`) as (tag, permissions,
        /// id), or "none".
        func acl(_ path: String, _ which: String = "access") throws -> String {
            try ACLAttributes.python(
                """
                \(ACLAttributes.helpers)
                try: sys.stdout.write(str(decode(os.getxattr('\(path)', 'system.posix_acl_\(which)'))))
                except OSError: sys.stdout.write('none')
                """, in: tree.root)
        }

        @Test(.enabled(if: ChildProcess.lookUp("bsdtar") != nil, "needs bsdtar"))
        func bsdtarsACLsAreRestored() throws {
            let expected = try acl("d/f.txt")
            #expect(expected.contains("(2, 4, 4242)"), "the premise: \(expected)")
            let made = try ShellPipeline.run("bsdtar --acls -cJf b.tar.xz d", in: tree.root)
            #expect(made.status == 0, "\(made.stderr)")
            let restored = try amk("extract", "b.tar.xz", "-C", "x", "--acls")
            #expect(restored.status == 0 && restored.stderr.isEmpty, "\(restored.stderr)")
            #expect(try acl("x/d/f.txt") == expected)
            #expect(try acl("x/d/dir", "default") == acl("d/dir", "default"))
            // Without --acls nothing is restored, as with GNU tar.
            #expect(try amk("extract", "b.tar.xz", "-C", "y").status == 0)
            #expect(try acl("y/d/f.txt") == "none")
        }

        /// `salvage` takes `--xattrs`, `--xattrs-include` and `--acls` as `extract` does: a
        /// salvage of an archive packed with `--xattrs` restored no attribute or ACL, had no
        /// option to, and said "no damage found".
        @Test func salvageRestoresAttributesAndACLsAsExtractDoes() throws {
            try ACLAttributes.python("import os; os.setxattr('d/f.txt', 'user.origin', b'phone')", in: tree.root)
            #expect(try amk("pack", "d", "-o", "x.tar.xz", "--xattrs").status == 0)
            #expect(try amk("pack", "d", "-o", "a.tar.xz", "--acls").status == 0)
            let plain = try amk("salvage", "x.tar.xz", "-C", "plain")
            #expect(plain.status == 0, "\(plain.stderr)")
            let salvaged = try amk("salvage", "x.tar.xz", "-C", "s", "--xattrs")
            #expect(salvaged.status == 0, "\(salvaged.stderr)")
            let acls = try amk("salvage", "a.tar.xz", "-C", "t", "--acls")
            #expect(acls.status == 0, "\(acls.stderr)")
            let values = try ACLAttributes.python(
                """
                import os
                print(os.getxattr('s/d/f.txt', 'user.origin'), 'user.origin' in os.listxattr('plain/d/f.txt'))
                """, in: tree.root)
            #expect(values.trimmingCharacters(in: .whitespacesAndNewlines) == "b'phone' False")
            #expect(try acl("s/d/f.txt") == acl("d/f.txt"))
            #expect(try acl("t/d/f.txt") == acl("d/f.txt"))
            #expect(try acl("t/d/dir", "default") == acl("d/dir", "default"))
            #expect(try acl("plain/d/f.txt") == "none")
        }

        @Test(.enabled(if: ChildProcess.lookUp("tar") != nil && ChildProcess.lookUp("xz") != nil, "needs GNU tar and xz"))
        func gnuTarsACLsAreRestored() throws {
            // --acls alone: only the SCHILY.acl.* text, no SCHILY.xattr.system.posix_acl_* copy.
            let made = try ShellPipeline.run("tar --acls -cJf g.tar.xz d", in: tree.root)
            #expect(made.status == 0, "\(made.stderr)")
            let restored = try amk("extract", "g.tar.xz", "-C", "x", "--acls")
            #expect(restored.status == 0 && restored.stderr.isEmpty, "\(restored.stderr)")
            #expect(try acl("x/d/f.txt") == acl("d/f.txt"))
            #expect(try acl("x/d/dir", "default") == acl("d/dir", "default"))
        }

        /// `pack --acls` stores them as bsdtar does: bsdtar, GNU tar and amk restore them. A file
        /// whose ACL says no more than its mode gets no record.
        @Test func packedACLsAreRestoredByAmkBsdtarAndGNUTar() throws {
            try tree.write("d/plain.txt", "no ACL\n")
            let packed = try amk("pack", "d", "-o", "a.tar.xz", "--acls")
            #expect(packed.status == 0, "\(packed.stderr)")
            let records = try ACLAttributes.python(
                """
                import lzma, tarfile
                with tarfile.open(fileobj=lzma.open('a.tar.xz')) as archive:
                    print(sorted((m.name, k) for m in archive.getmembers() for k in m.pax_headers if k.startswith('SCHILY.acl')))
                """, in: tree.root)
            #expect(
                records.trimmingCharacters(in: .whitespacesAndNewlines)
                    == "[('d/dir', 'SCHILY.acl.default'), ('d/f.txt', 'SCHILY.acl.access')]")
            var extractions = [("amk", "mkdir m && \"$AMK\" extract a.tar.xz -C m --acls -q")]
            if ChildProcess.lookUp("bsdtar") != nil { extractions.append(("b", "mkdir b && bsdtar --acls -xf a.tar.xz -C b")) }
            if ChildProcess.lookUp("tar") != nil { extractions.append(("g", "mkdir g && tar --acls -xJf a.tar.xz -C g")) }
            for (folder, command) in extractions {
                let result = try ShellPipeline.run(command, in: tree.root)
                #expect(result.status == 0, "\(command): \(result.stderr)")
                let into = folder == "amk" ? "m" : folder
                #expect(try acl("\(into)/d/f.txt") == acl("d/f.txt"), "\(command)")
                #expect(try acl("\(into)/d/dir", "default") == acl("d/dir", "default"), "\(command)")
            }
            // Without --acls nothing is stored.
            #expect(try amk("pack", "d", "-o", "n.tar.xz").status == 0)
            #expect(try amk("extract", "n.tar.xz", "-C", "n", "--acls").status == 0)
            #expect(try acl("n/d/f.txt") == "none")
        }

        /// `--xattrs` stores an ACL as its raw `system.posix_acl_access` attribute, beside the
        /// `user.*` ones. On a read-only file that ACL's owner entry is r--, and set before a
        /// `user.*` attribute it made the kernel refuse that attribute to anyone but root: an
        /// unprivileged extraction lost it, with a warning. The ACLs are set last.
        @Test(.enabled(if: geteuid() != 0 || FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")))
        func anACLDoesNotKeepAUserAttributeOffAReadOnlyFile() throws {
            try ACLAttributes.python(
                """
                \(ACLAttributes.helpers)
                os.setxattr('d/f.txt', 'user.k', b'v1')
                os.setxattr('d/dir', 'user.k', b'v2')
                os.setxattr('d/f.txt', 'system.posix_acl_access', encode([(1, 4, 0xFFFFFFFF), (2, 4, 4242), (4, 4, 0xFFFFFFFF), (0x10, 4, 0xFFFFFFFF), (0x20, 4, 0xFFFFFFFF)]))
                os.chmod('d/f.txt', 0o444)
                os.chmod('d/dir', 0o555)
                """, in: tree.root)
            let packed = try amk("pack", "d", "-o", "a.tar.xz", "--xattrs")
            #expect(packed.status == 0, "\(packed.stderr)")
            chmod(tree.path("."), 0o777)
            let arguments = ["extract", tree.path("a.tar.xz"), "-C", tree.path("x"), "--xattrs"]
            let extracted = try AMKProcess.runUnprivileged(arguments)
            #expect(extracted.status == 0, "\(extracted.stderr)")
            #expect(extracted.stderr.isEmpty, "\(extracted.stderr)")
            let values = try ACLAttributes.python(
                "import os; print(os.getxattr('x/d/f.txt', 'user.k'), os.getxattr('x/d/dir', 'user.k'))", in: tree.root)
            #expect(values.trimmingCharacters(in: .whitespacesAndNewlines) == "b'v1' b'v2'")
            #expect(try acl("x/d/f.txt") == acl("d/f.txt"))
            #expect(try acl("x/d/dir", "default") == acl("d/dir", "default"))
        }

        /// A name this system knows is its user here (root: 0), whatever number was written
        /// beside it, unless `--numeric-owner`; an unknown name falls back to its number; one
        /// without a number cannot be restored, which is a warning naming the member, and the
        /// rest of the archive is extracted.
        @Test func namesAreMappedAndAnUnknownOneIsAWarning() throws {
            try ACLAttributes.python(
                """
                import io, lzma, tarfile
                buffer = io.BytesIO()
                with tarfile.open(fileobj=buffer, mode='w', format=tarfile.PAX_FORMAT) as archive:
                    for name, acl in [
                        ('named', 'user::rw-,user:root:r--:777,user:nosuch-amk-user:r--:4242,group::r--,mask::r--,other::---'),
                        ('unknown', 'user::rw-\\nuser:nosuch-amk-user:r--\\ngroup::r--\\nother::---\\n')]:
                        member = tarfile.TarInfo(name)
                        member.mode = 0o640
                        member.pax_headers = {'SCHILY.acl.access': acl}
                        archive.addfile(member, io.BytesIO(b''))
                open('h.tar.xz', 'wb').write(lzma.compress(buffer.getvalue()))
                """, in: tree.root)
            let restored = try amk("extract", "h.tar.xz", "-C", "x", "--acls")
            #expect(restored.status == 0, "\(restored.stderr)")
            #expect(
                try acl("x/named")
                    == "[(1, 6, 4294967295), (2, 4, 0), (2, 4, 4242), (4, 4, 4294967295), (16, 4, 4294967295), (32, 0, 4294967295)]")
            #expect(restored.stderr.contains("unknown: ACL not restored"), "\(restored.stderr)")
            #expect(restored.stderr.contains("no user 'nosuch-amk-user' here"), "\(restored.stderr)")
            #expect(FileManager.default.fileExists(atPath: tree.root.appending(path: "x/unknown").path), "the member itself is extracted")
            #expect(try acl("x/unknown") == "none")

            let numeric = try amk("extract", "h.tar.xz", "-C", "n", "--acls", "--numeric-owner")
            #expect(numeric.status == 0, "\(numeric.stderr)")
            #expect(try acl("n/named").contains("(2, 4, 777), (2, 4, 4242)"))

            let json = try amk("extract", "h.tar.xz", "-C", "j", "--acls", "--json")
            #expect(json.stdout.contains("\"accessControlListsNotRestored\""), "\(json.stdout)")
        }
    }
}

/// ACLs as the attributes Linux keeps them in, through Python.
enum ACLAttributes {
    /// `encode` makes an ACL attribute's value from (tag, permissions, id) entries; `decode`
    /// reads one back.
    static let helpers = """
        import os, struct, sys
        def encode(entries):
            return struct.pack('<I', 2) + b''.join(struct.pack('<HHI', *entry) for entry in entries)
        def decode(value):
            return [struct.unpack_from('<HHI', value, offset) for offset in range(4, len(value), 8)]
        """

    @discardableResult
    static func python(_ code: String, in directory: URL) throws -> String {
        try UserAttributes.python(code, in: directory)
    }

    static let canSet: Bool = {
        guard let tree = try? TestTree(), (try? tree.write("probe", "x")) != nil else { return false }
        let code = """
            \(helpers)
            os.setxattr('probe', 'system.posix_acl_access', encode([(1, 6, 0xFFFFFFFF), (2, 4, 4242), (4, 4, 0xFFFFFFFF), (0x10, 4, 0xFFFFFFFF), (0x20, 4, 0xFFFFFFFF)]))
            """
        return (try? python(code, in: tree.root)) != nil
    }()
}
