import Foundation
import TestSupport
import Testing

extension AMKTests {
    @Suite(.offPool) struct DiagnosticsTests {
        /// 7,000 empty files under a 3,000-byte folder path: 22 MB of names, front-coded into an
        /// index that fits a file of about 50 KB but not what the reader holds for it. `amk pack`
        /// wrote it with status 0 and amk's own list, verify and extract refused it; each now
        /// reads it from its tar stream, with a note saying why.
        @Test func anArchiveWhoseIndexIsLeftUnreadIsReadWithANote() throws {
            let tree = try TestTree()
            let folder = "src/" + Array(repeating: String(repeating: "c", count: 200), count: 15).joined(separator: "/")
            try tree.mkdir(folder)
            let leaf = String(repeating: "f", count: 200)
            for i in 0..<7_000 {
                #expect(FileManager.default.createFile(atPath: tree.path("\(folder)/\(leaf)\(i)"), contents: nil))
            }
            let archive = tree.path("A.tar.xz")
            let pack = try AMKProcess.run(["pack", tree.path("src"), "-o", archive, "-q"])
            #expect(pack.status == 0, "\(pack.stderr)")
            let commands = [
                ["list", archive], ["list", "--json", archive], ["verify", archive], ["info", archive],
                ["extract", archive, "-C", tree.path("out"), "-q"]
            ]
            for arguments in commands {
                let result = try AMKProcess.run(arguments)
                #expect(result.status == 0, "amk \(arguments[0]): \(result.stderr)")
                #expect(
                    result.stderr.hasPrefix("amk: note: ") && result.stderr.contains("read from its tar stream instead"),
                    "amk \(arguments[0]): \(result.stderr)")
            }
            #expect(try AMKProcess.run(["list", archive]).stdout.split(separator: "\n").count == 7_016)
            #expect(try FileManager.default.contentsOfDirectory(atPath: tree.path("out/\(folder)")).count == 7_000)
        }
    }
}
