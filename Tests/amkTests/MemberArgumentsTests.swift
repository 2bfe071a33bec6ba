import Foundation
import TestSupport
import Testing

@testable import amk

extension AMKTests {
    /// Member names by the thousand: after `--`, parsed apart from the rest (ArgumentParser took
    /// time in their square), and from a file (`--files-from`, tar's `-T`).
    @Suite struct MemberArgumentsTests {
        @Test func theNamesAfterTheSeparatorOfListOrExtractAreParsedApart() throws {
            let split = try #require(MemberArguments.split(["extract", "A", "-C", "out", "--", "x", "-y", "--"]))
            #expect(split.parsed == ["extract", "A", "-C", "out", "--"])
            #expect(split.names == ["x", "-y", "--"], "everything after the first --, whatever it looks like")
            #expect(MemberArguments.split(["pack", "d", "--", "x"]) == nil, "pack's sources are not members")
            #expect(MemberArguments.split(["list", "A", "x"])?.parsed == ["list", "A", "--"], "without -- too")
            #expect(MemberArguments.split(["list", "A", "--"]) == nil)
        }

        /// Names without `--` (`amk extract A $(cat names)`): the options, wherever they stand,
        /// and the archive are parsed before a `--`, the rest are the names.
        @Test func namesWithoutTheSeparatorAreSplitFromTheOptionsWhereverTheyStand() throws {
            let split = try #require(
                MemberArguments.split(["extract", "A", "x", "-C", "out", "y", "--json", "--strip-components=1", "-T", "-", "z"]))
            #expect(split.parsed == ["extract", "-C", "out", "--json", "--strip-components=1", "-T", "-", "A", "--"])
            #expect(split.names == ["x", "y", "z"])
            let list = try #require(MemberArguments.split(["list", "-", "a b", "-l"]))
            #expect(list.parsed == ["list", "-l", "-", "--"], "- is standard input, not an option")
            #expect(list.names == ["a b"])
        }

        /// Whatever could be read two ways is not split, so ArgumentParser parses it as ever and
        /// says what it always said.
        @Test func anArgumentLineThatReadsTwoWaysIsNotSplit() {
            for arguments in [
                ["extract", "A", "x", "-qv"],  // a cluster of flags
                ["extract", "A", "x", "--nope"],  // not an option of extract
                ["extract", "A", "x", "-C"],  // a value missing
                ["extract", "A", "x", "-C", "-q"],  // a value that looks like an option
                ["extract", "A", "x", "--json=1"],  // a flag given a value
                ["extract", "A", "x", "-C=out"],
                ["list", "A"],  // no names: nothing to gain
                ["pack", "d", "e", "-o", "A"]  // pack's sources are not members
            ] {
                #expect(MemberArguments.split(arguments) == nil, "\(arguments)")
            }
        }

        /// Split or not, a line parses to the same command.
        @Test func aSplitLineParsesToTheSameCommand() throws {
            for arguments in [
                ["extract", "A", "x", "-C", "out", "y", "--json", "--strip-components=1", "z"],
                ["extract", "-q", "A", "x", "--overwrite", "y", "-T", "-"],
                ["list", "A", "-l", "x", "y"]
            ] {
                let split = try #require(MemberArguments.split(arguments))
                let head = try AMK.parseAsRoot(split.parsed)
                let whole = try #require(MemberArguments.adding(split.names, to: head))
                let plain = try AMK.parseAsRoot(arguments)
                #expect(String(describing: whole) == String(describing: plain), "\(arguments)")
                #expect(String(describing: whole).contains("\"y\""), "the description shows the values: \(whole)")
            }
        }

        /// A tree of `count` empty files, packed; their member names, in order.
        static func packed(_ tree: TestTree, count: Int) throws -> (archive: String, names: [String]) {
            var names: [String] = []
            for index in 0..<count {
                let name = index == 0 ? "-starts-like-an-option" : "file-\(index)"
                try tree.write("src/many/" + name, "")
                names.append("many/" + name)
            }
            let archive = tree.path("many.tar.xz")
            let packed = try AMKProcess.run(["pack", tree.path("src/many"), "-o", archive, "--preset", "0"])
            try #require(packed.status == 0, "\(packed.stderr)")
            return (archive, names)
        }

        @Test func thousandsOfNamesAfterTheSeparatorSelectTheirMembers() throws {
            let tree = try TestTree()
            let (archive, names) = try Self.packed(tree, count: 3_000)
            let listed = try AMKProcess.run(["list", archive, "--"] + names)
            #expect(listed.status == 0, "\(listed.stderr)")
            #expect(Set(listed.stdout.split(separator: "\n").map(String.init)) == Set(names))
            // Without `--` too (but for the one name that reads as an option), options among them.
            let plain = Array(names.dropFirst())
            let unseparated = try AMKProcess.run(["list", archive] + plain.prefix(1_000) + ["-l"] + plain.dropFirst(1_000))
            #expect(unseparated.status == 0, "\(unseparated.stderr)")
            let long = unseparated.stdout.split(separator: "\n")
            #expect(long.count == plain.count && long.allSatisfy { $0.hasPrefix("-rw") }, "a long listing of every name")
            #expect(Set(long.compactMap { $0.split(separator: " ").last.map(String.init) }) == Set(plain))
            let chosen = Array(names.prefix(2_000))
            let extracted = try AMKProcess.run(["extract", archive, "-C", tree.path("out"), "-q", "--"] + chosen)
            #expect(extracted.status == 0, "\(extracted.stderr)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: tree.path("out/many")).count == chosen.count)
            // A name among them that is not a member is named, once the others are written (as
            // GNU tar's "Not found in archive"), and the status says so.
            let misspelt = try AMKProcess.run(["extract", archive, "-C", tree.path("some"), "--"] + chosen + ["many/nope"])
            #expect(misspelt.status == 1 && misspelt.stderr.contains("member 'many/nope': no such member"), "\(misspelt.stderr)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: tree.path("some/many")).count == chosen.count)
        }

        /// `--` before the archive still means what it meant: the archive is its first argument.
        @Test func anArchiveAfterTheSeparatorIsStillTheArchive() throws {
            let tree = try TestTree()
            let (archive, names) = try Self.packed(tree, count: 3)
            let listed = try AMKProcess.run(["list", "--", archive, names[0]])
            #expect(listed.status == 0, "\(listed.stderr)")
            #expect(listed.stdout == names[0] + "\n")
        }

        @Test func namesComeFromAFileOrFromStandardInput() throws {
            let tree = try TestTree()
            let (archive, names) = try Self.packed(tree, count: 5)
            // Lines as `amk list` prints them, with blank lines and a Windows line end.
            try tree.write("names.txt", "\(names[1])\r\n\n\(names[2])\n")
            let fromFile = try AMKProcess.run(["list", archive, names[0], "-T", tree.path("names.txt")])
            #expect(fromFile.status == 0, "\(fromFile.stderr)")
            #expect(fromFile.stdout.split(separator: "\n").map(String.init).sorted() == names[0...2].sorted())
            let fromInput = try AMKProcess.Result(
                ChildProcess.run(
                    AMKProcess.binary, ["extract", archive, "--files-from", "-", "-C", tree.path("out"), "-q"],
                    stdin: Array("\(names[3])\n\(names[4])\n".utf8)))
            #expect(fromInput.status == 0, "\(fromInput.stderr)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: tree.path("out/many")).sorted() == ["file-3", "file-4"])
        }

        /// A file that names nothing would select every member (no names means all): refused,
        /// as is standard input asked to hold both the archive and the names.
        @Test func aFileWithoutNamesOrStandardInputTwiceIsAUsageError() throws {
            let tree = try TestTree()
            let (archive, _) = try Self.packed(tree, count: 2)
            for arguments in [
                ["list", archive, "-T", "/dev/null"], ["extract", archive, "-T", "/dev/null", "-C", tree.path("out")],
                ["list", "-", "-T", "-"], ["list", archive, "-T", tree.path("missing.txt")],
                ["list", archive, "-T", tree.path(".")]
            ] {
                let result = try AMKProcess.run(arguments)
                #expect(result.status == 2, "\(arguments): \(result.stderr)")
                #expect(!result.stderr.contains("NSCocoaErrorDomain"), "\(arguments): \(result.stderr)")
                #expect(result.stdout.isEmpty)
            }
            #expect(!FileManager.default.fileExists(atPath: tree.path("out")))
        }
    }
}
