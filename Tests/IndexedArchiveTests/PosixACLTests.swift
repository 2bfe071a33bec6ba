import Testing

@testable import IndexedArchive

/// ``PosixACL``: the ACL text GNU tar and bsdtar store, made into Linux's attribute value.
@Suite struct PosixACLTests {
    typealias Entry = PosixACL.Entry

    static let users = ["alice": UInt32(1001), "root": 0]
    static let groups = ["staff": UInt32(50)]

    static func parse(_ text: String) throws -> PosixACL {
        try PosixACL(text: text, userID: { users[$0] }, groupID: { groups[$0] })
    }

    /// GNU tar's form (a line each, names) and bsdtar's (commas, the number after the
    /// permissions, its own order) of one ACL are the same entries, in the kernel's order.
    @Test func gnuTarsAndBsdtarsFormsAreTheSameACL() throws {
        let gnu = try Self.parse("user::rw-\nuser:alice:r--\ngroup::r--\ngroup:staff:r-x\nmask::r-x\nother::r--\n")
        let bsd = try Self.parse("user::rw-,group::r--,other::r--,user:alice:r--:1001,group:staff:r-x:50,mask::r-x")
        #expect(gnu == bsd)
        #expect(
            gnu.entries == [
                Entry(tag: PosixACL.userObject, permissions: 6, id: PosixACL.noID),
                Entry(tag: PosixACL.user, permissions: 4, id: 1001),
                Entry(tag: PosixACL.groupObject, permissions: 4, id: PosixACL.noID),
                Entry(tag: PosixACL.group, permissions: 5, id: 50),
                Entry(tag: PosixACL.mask, permissions: 5, id: PosixACL.noID),
                Entry(tag: PosixACL.other, permissions: 4, id: PosixACL.noID)
            ])
    }

    /// The bytes Linux keeps (as `getfattr -e hex` shows them for `setfacl -m u:1001:r`):
    /// version 2, then tag, permissions and id of each entry, little-endian.
    @Test func theAttributeValueIsTheKernelsLayout() throws {
        let acl = try Self.parse("user::rw-,user:1001:r--,group::r--,mask::r--,other::r--")
        #expect(
            acl.attributeValue == [
                2, 0, 0, 0,
                1, 0, 6, 0, 0xFF, 0xFF, 0xFF, 0xFF,
                2, 0, 4, 0, 0xE9, 0x03, 0, 0,
                4, 0, 4, 0, 0xFF, 0xFF, 0xFF, 0xFF,
                0x10, 0, 4, 0, 0xFF, 0xFF, 0xFF, 0xFF,
                0x20, 0, 4, 0, 0xFF, 0xFF, 0xFF, 0xFF
            ])
    }

    /// A name this system knows is its id here, whatever number the archive wrote beside it (as
    /// owners are mapped); an unknown name falls back to the number; a bare number is itself.
    @Test func namesAreThisSystemsAndNumbersTheFallback() throws {
        let acl = try Self.parse("u::rwx,u:alice:r--:77,u:bob:-w-:78,u:4242:--x,g::---,m::rwx,o::---")
        #expect(acl.entries.filter { $0.tag == PosixACL.user }.map(\.id) == [78, 1001, 4242])
        let unmapped = try PosixACL(text: "u::rwx,u:alice:r--:77,g::---,m::r--,o::---")
        #expect(unmapped.entries.filter { $0.tag == PosixACL.user }.map(\.id) == [77])
    }

    /// A named entry without a mask gets one, the union of the group class, as setfacl makes it;
    /// the kernel refuses such an ACL without one.
    @Test func aMissingMaskIsComputed() throws {
        let acl = try Self.parse("user::rw-\nuser:alice:-w-\ngroup::r--\nother::---")
        #expect(acl.entries.first { $0.tag == PosixACL.mask }?.permissions == 6)
        // Without named entries there is no mask to add.
        #expect(try Self.parse("user::rw-,group::r--,other::---").entries.count == 3)
    }

    /// getfacl's comments and a comment after an entry are not entries; blank lines and spaces
    /// around an entry are allowed; "mask:r-x" is read as "mask::r-x".
    @Test func commentsSpacesAndShortMasksAreRead() throws {
        let acl = try Self.parse(
            "# file: f\n# owner: root\nuser::rw- \n\n user:alice:r--\t# effective:r--\ngroup::r--\nmask:r--\nother:r--\n")
        #expect(acl == (try Self.parse("user::rw-,user:alice:r--,group::r--,mask::r--,other::r--")))
    }

    @Test(arguments: [
        ("group::r--,other::r--", "no 'user::' entry"),
        ("user::rw-,other::r--", "no 'group::' entry"),
        ("user::rw-,group::r--", "no 'other::' entry"),
        ("user::rw-,user::r--,group::r--,other::r--", "given twice"),
        ("user::rw-,user:alice:r--,user:alice:rw-,group::r--,other::r--", "given twice"),
        ("user::rwxr,group::r--,other::r--", "permissions"),
        ("user::rr-,group::r--,other::r--", "permissions"),
        ("user::rwz,group::r--,other::r--", "permissions"),
        ("user::,group::r--,other::r--", "permissions"),
        ("user:nobody-here:r--,user::rw-,group::r--,other::r--", "no user 'nobody-here' here"),
        ("user:nobody-here:r--:12x,user::rw-,group::r--,other::r--", "no user 'nobody-here' here"),
        ("user:4294967295:r--,user::rw-,group::r--,other::r--", "no user '4294967295' here"),
        ("user:99999999999:r--,user::rw-,group::r--,other::r--", "no user"),
        ("group:nogroup-here:r--:,user::rw-,group::r--,other::r--", "no group 'nogroup-here' here"),
        ("user::rw-:5,group::r--,other::r--", "an owner entry with a number"),
        ("mask:alice:r--,user::rw-,group::r--,other::r--", "names no one"),
        ("class::r--,user::rw-,group::r--,other::r--", "unknown tag 'class'"),
        ("user,group::r--,other::r--", "not tag:qualifier:permissions")
    ])
    func malformedACLsAreRefusedSayingWhy(text: String, why: String) {
        #expect {
            try Self.parse(text)
        } throws: { error in
            "\(error)".contains(why)
        }
    }

    /// What the kernel keeps reads back as the same entries, and is written as bsdtar writes it
    /// (owner, owning group, other, the named ones with their numbers, the mask), which reads
    /// back as the same ACL.
    @Test func theKernelsValueIsWrittenAsBsdtarWritesIt() throws {
        let acl = try Self.parse("user::rw-\nuser:alice:r--\ngroup::r--\ngroup:staff:r-x\nmask::r-x\nother::r--\n")
        let read = try PosixACL(attributeValue: acl.attributeValue)
        #expect(read == acl)
        let names: [UInt32: String] = [1001: "alice", 50: "staff"]
        let text = read.text(userName: { names[$0] }, groupName: { names[$0] })
        #expect(text == "user::rw-,group::r--,other::r--,user:alice:r--:1001,group:staff:r-x:50,mask::r-x")
        #expect(try Self.parse(text) == acl)
        // Without names here, the numbers stand for them; a name that would not read back as one
        // entry (a comma, a colon, a space) is written as its number too.
        #expect(read.text(userName: { _ in nil }, groupName: { _ in nil }).contains("user:1001:r--:1001,group:50:r-x:50"))
        #expect(read.text(userName: { _ in "a,b" }, groupName: { _ in "x y" }).contains("user:1001:r--:1001,group:50:r-x:50"))
    }

    /// An ACL of the owner, owning group and other alone says what the mode says: not stored.
    @Test func onlyAnACLBeyondTheModeIsExtended() throws {
        #expect(try Self.parse("user::rw-,group::r--,other::---").isMinimal)
        #expect(!(try Self.parse("user::rw-,user:alice:r--,group::r--,other::---").isMinimal))
    }

    @Test(arguments: [[], [2, 0, 0], [1, 0, 0, 0], [2, 0, 0, 0, 1, 0, 6, 0, 0xFF, 0xFF, 0xFF]] as [[UInt8]])
    func attributeValuesTheKernelDoesNotWriteAreRefused(bytes: [UInt8]) {
        #expect(throws: PosixACL.Problem.self) { try PosixACL(attributeValue: bytes) }
    }

    /// A NUL in a name is no name of this system, and the message shows it escaped. (Apart from
    /// the cases above, whose arguments the test log prints as they are.)
    @Test func aNameHidingANulIsRefusedAndEscaped() {
        #expect {
            try Self.parse("user:a\u{0}b:r--,user::rw-,group::r--,other::r--")
        } throws: { error in
            "\(error)".contains("no user 'a\(TerminalSafe.name("\u{0}"))b' here") && !"\(error)".contains("\u{0}")
        }
    }
}
