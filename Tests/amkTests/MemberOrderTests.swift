import Foundation
import TestSupport
import Testing

@testable import amk

extension AMKTests {
    /// `amk pack --sort type|name`: the order of each folder's members in the archive.
    @Suite struct MemberOrderTests {
        @Test func typeIsTheDefaultAndNameSortsAsLsDoes() throws {
            let tree = try TestTree()
            for name in ["b.txt", "a.md", "a.txt", "Makefile", "z.c", "lib/y.h", "lib/x.c"] {
                try tree.write("src/" + name, name + "\n")
            }
            func listing(_ extra: [String]) throws -> [String] {
                let archive = tree.path("out.tar.xz")
                let pack = try AMKProcess.run(["pack", tree.path("src"), "-o", archive, "-q"] + extra)
                #expect(pack.status == 0, "\(pack.stderr)")
                let list = try AMKProcess.run(["list", archive])
                #expect(list.status == 0, "\(list.stderr)")
                return list.stdout.split(separator: "\n").map(String.init)
            }
            let byType = ["src/", "src/Makefile", "src/lib/", "src/lib/x.c", "src/lib/y.h", "src/z.c", "src/a.md", "src/a.txt", "src/b.txt"]
            #expect(try listing([]) == byType)
            #expect(try listing(["--sort", "type"]) == byType)
            #expect(
                try listing(["--sort", "name"]) == [
                    "src/", "src/Makefile", "src/a.md", "src/a.txt", "src/b.txt", "src/lib/", "src/lib/x.c", "src/lib/y.h", "src/z.c"
                ])
        }

        @Test func anUnknownOrderIsAUsageError() throws {
            let tree = try TestTree()
            try tree.write("src/a.txt", "a\n")
            let result = try AMKProcess.run(["pack", tree.path("src"), "-o", tree.path("out.tar.xz"), "--sort", "size"])
            #expect(result.status == 2)
            #expect(result.stderr.contains("--sort") && result.stderr.contains("size"), "\(result.stderr)")
            #expect(!tree.exists("out.tar.xz"))
        }
    }
}
