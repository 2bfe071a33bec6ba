import Foundation
import Testing

@testable import IndexedArchive

extension EngineSuites {
    /// The names tar stores beside the ids, checked against the system's own databases.
    @Suite(.enabled(if: FileManager.default.fileExists(atPath: "/etc/passwd") && FileManager.default.fileExists(atPath: "/etc/group")))
    struct OwnerNamesTests {
        /// The first field of the line of `file` (`/etc/passwd` or `/etc/group`) whose third field
        /// is `id`: what the C library answers for a local account.
        static func name(of id: UInt64, in file: String) throws -> String? {
            let text = try String(contentsOfFile: file, encoding: .utf8)
            for line in text.split(separator: "\n") {
                let fields = line.split(separator: ":", omittingEmptySubsequences: false)
                if fields.count > 2, UInt64(fields[2]) == id { return String(fields[0]) }
            }
            return nil
        }

        @Test func localAccountsAreNamedAsTheDatabaseNamesThem() throws {
            #expect(OwnerNames.user(0) == (try Self.name(of: 0, in: "/etc/passwd")))
            #expect(OwnerNames.group(0) == (try Self.name(of: 0, in: "/etc/group")))
            let mine = UInt64(getuid())
            #expect(OwnerNames.user(mine) == (try Self.name(of: mine, in: "/etc/passwd")))
            // Asked again, the same answer (from the cache).
            #expect(OwnerNames.user(0) == (try Self.name(of: 0, in: "/etc/passwd")))
        }

        /// An id no account has, or one too large for the system's id type, has no name: the id
        /// alone is stored, as tar does.
        @Test func idsWithoutAnAccountHaveNoName() throws {
            let unused = UInt64(3_999_999_999)
            try #require(try Self.name(of: unused, in: "/etc/passwd") == nil)
            #expect(OwnerNames.user(unused) == nil)
            #expect(OwnerNames.group(unused) == nil)
            #expect(OwnerNames.user(1 << 40) == nil)
            #expect(OwnerNames.group(1 << 40) == nil)
        }
    }
}
