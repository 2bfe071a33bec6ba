import Foundation
import TestSupport
import Testing

extension AMKTests {
    /// `amk list A MEMBER…`: only what the names select, as `amk extract` and tar choose, and an
    /// error for a name that selects nothing.
    @Suite struct ListMembersTests {
        let tree: TestTree
        let archive: String

        init() throws {
            tree = try TestTree()
            // A folder whose name starts like docs, which selecting docs must not take.
            archive = try tree.packApp(extra: [("docsx/d.txt", "delta\n"), ("new\nline.txt", "echo\n")])
        }

        static let selections: [[String]] = [
            ["app/docs"], ["app/docs/"], ["app/a.txt", "app/link"], ["app/docs/c.txt", "app/empty"], ["app"]
        ]

        /// GNU tar lists the same members for the same names (a folder with what is under it, and
        /// not `app/docsx`, which only starts like `app/docs`).
        @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/tar")), arguments: selections)
        func theMembersAreTars(members: [String]) throws {
            let ours = try AMKProcess.run(["list", archive] + members)
            #expect(ours.status == 0, "\(ours.stderr)")
            let tars = try ChildProcess.run("/usr/bin/tar", ["-tJf", archive] + members, environment: [:])
            #expect(tars.status == 0)
            let tarLines = String(decoding: tars.stdout, as: UTF8.self).split(separator: "\n").map(String.init)
            #expect(ours.stdout.split(separator: "\n").map(String.init).sorted() == tarLines.sorted(), "\(ours.stdout)")
            #expect(!ours.stdout.isEmpty)
        }

        /// What `list` shows for some names is what `extract` writes for them.
        @Test(arguments: selections)
        func theMembersAreWhatExtractionWrites(members: [String]) throws {
            let listed = try AMKProcess.run(["list", archive] + members)
            #expect(listed.status == 0, "\(listed.stderr)")
            let out = tree.path("out-\(members.count)-\(members[0].count)")
            let extracted = try AMKProcess.run(["extract", "-v", archive] + members + ["-C", out])
            #expect(extracted.status == 0, "\(extracted.stderr)")
            // -v names each member as it is written; the summary line follows.
            let written = extracted.stdout.split(separator: "\n").filter { !$0.hasPrefix("extracted ") }
            #expect(listed.stdout.split(separator: "\n") == written, "list:\n\(listed.stdout)extract -v:\n\(extracted.stdout)")
        }

        /// From a pipe, in the long form and as JSON, the same members.
        @Test func everyFormAndAPipeSelectTheSame() throws {
            let plain = try AMKProcess.run(["list", archive, "app/docs"])
            let piped = try ShellPipeline.run("cat app.tar.xz | \"$AMK\" list - app/docs", in: tree.url("."))
            #expect(piped.status == 0, "\(piped.stderr)")
            #expect(piped.stdout == plain.stdout)
            let long = try AMKProcess.run(["list", "-l", archive, "app/docs"])
            #expect(
                long.stdout.split(separator: "\n").map { String($0.split(separator: " ").last ?? "") }
                    == plain.stdout.split(separator: "\n").map(String.init))
            let json = try AMKProcess.run(["list", "--json", archive, "app/docs"])
            let decoded = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]]
            #expect(decoded?.compactMap { $0["path"] as? String } == plain.stdout.split(separator: "\n").map(String.init))
        }

        /// A name as `amk list` prints it (a newline as `\n`) selects its member.
        @Test func anEscapedNameSelectsItsMember() throws {
            let all = try AMKProcess.run(["list", archive])
            let printed = try #require(all.stdout.split(separator: "\n").first { $0.hasPrefix("app/new") })
            #expect(printed == "app/new\\nline.txt")
            let one = try AMKProcess.run(["list", archive, String(printed)])
            #expect(one.status == 0, "\(one.stderr)")
            #expect(one.stdout == "app/new\\nline.txt\n")
        }

        /// As tar does, what matches is listed, then the names that matched nothing are an error.
        @Test(arguments: [false, true])
        func aNameThatMatchesNothingIsAnError(throughAPipe: Bool) throws {
            let result =
                throughAPipe
                ? try ShellPipeline.run("cat app.tar.xz | \"$AMK\" list - app/none app/a.txt app/doc", in: tree.url("."))
                : try AMKProcess.run(["list", archive, "app/none", "app/a.txt", "app/doc"])
            #expect(result.status == 1)
            #expect(result.stdout == "app/a.txt\n")
            #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
            #expect(result.stderr.contains("'app/none', 'app/doc'"), "a prefix of a name is no match: \(result.stderr)")
        }
    }
}
