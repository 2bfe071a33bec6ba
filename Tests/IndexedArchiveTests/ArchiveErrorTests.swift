import Foundation
import IndexedArchive
import TestSupport
import Testing
import XZ

@Suite(.background) struct ArchiveErrorTests {
    /// Through Foundation (`localizedDescription`, an `NSError`), the error says what it says.
    @Test func foundationSeesTheDescription() {
        let error: any Error = ArchiveError(.corrupt, "bad block", path: "a.tar.xz", offset: 42)
        #expect(error.localizedDescription == "a.tar.xz, offset 42: bad block")
        #expect((error as NSError).localizedDescription == "a.tar.xz, offset 42: bad block")
    }

    /// A damaged block keeps the codec's own error, not only its text.
    @Test func aDamagedBlockKeepsTheCodecsError() async throws {
        let dir = try TemporaryDirectory()
        let packed = try await PackedTree.make()
        var bytes = try await readBytes(packed.archive)
        bytes[bytes.count / 3] ^= 0x55
        try await writeBytes(dir.path + "/bad.tar.xz", bytes)
        let error = await expectArchiveError("verify") { try await ArchiveReader(path: dir.path + "/bad.tar.xz").verify() }
        #expect(error?.code == .corrupt)
        #expect(error?.underlying is XZError, "\(String(describing: error?.underlying))")
    }

    @Test func descriptionNamesPathMemberAndOffset() {
        let error = ArchiveError(.corrupt, "bad block", path: "a.tar.xz", member: "dir/file", offset: 42)
        #expect(error.description == "a.tar.xz, member 'dir/file', offset 42: bad block")
        #expect(ArchiveError(.corrupt, "bad block").description == "bad block")
    }

    /// A member name is chosen by whoever made the archive: printed raw, its escape sequences
    /// would reach the terminal of whoever reads the error.
    @Test func descriptionEscapesControlCharacters() {
        let error = ArchiveError(
            .unsafePath, "link to '\u{1B}]0;owned\u{7}' refused",
            path: "in\ncoming.tar.xz", member: "x\u{1B}[2J\\y\u{202E}", offset: 7)
        #expect(error.description == #"in\ncoming.tar.xz, member 'x\x1b[2J\\y\u202e', offset 7: link to '\x1b]0;owned\x07' refused"#)
        #expect(!error.description.unicodeScalars.contains { $0.properties.generalCategory == .control })
        // The fields themselves stay raw, for programs.
        #expect(error.member == "x\u{1B}[2J\\y\u{202E}")
    }
}
