import IndexedArchive
import Tar
import Testing

@testable import amk

extension AMKTests {
    /// `list --json`'s entries.
    @Suite struct ListedEntryTests {
        static func entry(mode: UInt32) -> ArchiveEntry {
            ArchiveEntry(
                path: "f", kind: .regular, size: 0, mode: mode, uid: 0, gid: 0, mtime: TarTimestamp(seconds: 0), linkTarget: nil,
                headerOffset: 0, dataOffset: 512, checksum: nil, hasPaxHeader: false)
        }

        /// The mode is always four octal digits, as `stat -c %04a` prints it: a "0" put before
        /// the digits made "04755" of a set-user-ID file and "00" of mode 0, beside "0644".
        @Test(arguments: [
            (UInt32(0o644), "0644"), (0o4755, "4755"), (0, "0000"), (0o7, "0007"), (0o1777, "1777"), (0o7777, "7777"),
            (0o100644, "0644")
        ])
        func theModeIsFourOctalDigits(mode: UInt32, shown: String) {
            #expect(ListedEntry(Self.entry(mode: mode)).mode == shown)
        }
    }
}
