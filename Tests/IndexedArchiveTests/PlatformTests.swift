import Foundation
import TestSupport
import Testing

@testable import IndexedArchive

#if canImport(Glibc)
    import Glibc
#endif

extension EngineSuites {
    @Suite(.background) struct PlatformTests {
        /// A directory entry's name is read in place, up to its NUL. `readdir` packs records only
        /// as long as their names; copying `d_name` as Swift's 256-byte tuple read past the last
        /// record of its buffer, and `amk pack` crashed in a tree of 20 folders of 1,000 files
        /// when nothing was mapped after that buffer. Here a record ends 32 bytes before a page
        /// that cannot be read: the old way faults, this one reads the name.
        @Test func anEntryAtTheEndOfMappedMemoryIsRead() throws {
            let page = Int(sysconf(Int32(_SC_PAGESIZE)))
            let base = try #require(mmap(nil, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0))
            try #require(base != MAP_FAILED)
            defer { munmap(base, 2 * page) }
            try #require(mprotect(base + page, page, PROT_NONE) == 0)
            let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
            let record = base + page - 32 - nameOffset
            let name = Array("file-00042.txt".utf8) + [0]
            name.withUnsafeBytes { (record + nameOffset).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            let entry = record.assumingMemoryBound(to: dirent.self)
            #expect(Array(Platform.name(of: entry)) == Array("file-00042.txt".utf8))
        }

        /// The walk lists folders of many entries whole, whatever their names' lengths.
        @Test func foldersOfManyEntriesAreListedWhole() throws {
            let dir = try TemporaryDirectory()
            var expected: [String] = []
            for index in 0..<3000 {
                let name = "f\(index)" + String(repeating: "x", count: index % 200)
                expected.append(name)
                let fd = open(dir.path + "/" + name, O_WRONLY | O_CREAT | O_EXCL, 0o644)
                try #require(fd >= 0)
                close(fd)
            }
            let listed = try FileSystem.systemListDirectory(dir.path)
            #expect(listed == expected.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) })
        }
    }
}
