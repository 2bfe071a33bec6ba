import Tar
import Testing

@testable import IndexedArchive

extension EngineSuites {
    @Suite struct WalkOrderTests {
        static func type(_ name: String) -> String { String(decoding: WalkOrder.type(of: Array(name.utf8)), as: UTF8.self) }

        @Test func theTypeIsTheLowerCasedExtension() {
            #expect(Self.type("photo.JPG") == "jpg")
            #expect(Self.type("archive.tar.gz") == "gz")
            #expect(Self.type("Makefile") == "")
            // A leading dot hides a file; it does not start an extension.
            #expect(Self.type(".profile") == "")
            #expect(Self.type(".config.json") == "json")
            #expect(Self.type("trailing.") == "")
            // Only ASCII letters change case: other bytes are kept as they are.
            #expect(Self.type("notes.Ä") == "Ä")
        }

        @Test func typeGroupsByExtensionThenSortsBytewise() {
            // As listDirectory returns them: bytewise.
            var names = ["B.txt", "Makefile", "a.c", "a.txt", "b.C", "c.md", "z.c", "ä.txt", ".profile"].sorted {
                RawName.encode($0).lexicographicallyPrecedes(RawName.encode($1))
            }
            let byName = names
            WalkOrder.name.arrange(&names)
            #expect(names == byName)
            WalkOrder.type.arrange(&names)
            #expect(names == [".profile", "Makefile", "a.c", "b.C", "z.c", "c.md", "B.txt", "a.txt", "ä.txt"])
        }

        @Test func namesThatAreNotUTF8KeepTheirBytesAndTheirPlace() {
            // RawName keeps a name's invalid bytes, so the file is found again under its own name.
            let latin1 = RawName.decode([0x63, 0xE9, 0x2E, 0x74, 0x78, 0x74])  // "cé.txt" in Latin-1
            let other = RawName.decode([0x61, 0x2E, 0x62, 0x69, 0x6E, 0xFF])  // "a.bin\xff"
            var names = [other, latin1, "b.txt", "a.bin"].sorted { RawName.encode($0).lexicographicallyPrecedes(RawName.encode($1)) }
            WalkOrder.type.arrange(&names)
            #expect(
                names.map(RawName.encode) == [
                    Array("a.bin".utf8), [0x61, 0x2E, 0x62, 0x69, 0x6E, 0xFF], Array("b.txt".utf8), [0x63, 0xE9, 0x2E, 0x74, 0x78, 0x74]
                ])
        }
    }
}
