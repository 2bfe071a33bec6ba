import Testing

@testable import IndexedArchive

extension EngineSuites {
    /// ``MemberSelection``: the names that select nothing, found in one pass, agree with
    /// ``MemberSelection/selects(_:)`` name by name.
    @Suite struct MemberSelectionTests {
        static let paths = [
            "app/", "app/a.txt", "app/docs/", "app/docs/b.txt", "app/docsx/", "app/docsx/d.txt", "app/link", "top.txt"
        ]

        /// A name with doubled slashes selects what GNU tar and bsdtar select for it, the name with
        /// each run of `/` made one (`app/docs//` selected nothing), and is not reported unmatched.
        @Test func aNameWithDoubledSlashesSelectsWhatItsSingleSlashedFormDoes() {
            let selection = MemberSelection(["app//docs//", "app///a.txt", "app//none"])
            #expect(selection.selects("app/docs/b.txt") && selection.selects("app/docs/") && selection.selects("app/a.txt"))
            #expect(!selection.selects("app/docsx/d.txt") && !selection.selects("top.txt"))
            #expect(selection.unmatched(in: Self.paths, order: ["app//docs//", "app///a.txt", "app//none"]) == ["app//none"])
            #expect(MemberFilter.collapsed("a//b///c//") == "a/b/c" && MemberFilter.collapsed("/") == "/")
        }

        @Test func namesThatSelectNothingAreReportedInTheirOrder() {
            let names = ["app/none", "app/docs/", "top.txt", "app/doc", "app/docs/b.txt/", "app/none", "app/a.txt/x", "app"]
            let selection = MemberSelection(names)
            #expect(selection.unmatched(in: Self.paths, order: names) == ["app/none", "app/doc", "app/a.txt/x"])
        }

        /// For every name, alone and among many (past the few-members path of `selects`):
        /// unmatched exactly when it selects none of the paths.
        @Test(arguments: [0, TarConsumer.fewMembers + 1])
        func unmatchedAgreesWithSelects(padding: Int) {
            let candidates = [
                "app", "app/", "app/a.txt", "app/a.txt/", "app/docs", "app/docs/", "app/doc", "app/docs/b", "app/docsx",
                "top.txt", "top", "app/link/x", "", "/", "app//docs", "b.txt"
            ]
            let filler = (0..<padding).map { "absent/\($0)" }
            let selection = MemberSelection(candidates + filler)
            let unmatched = Set(selection.unmatched(in: Self.paths, order: candidates))
            for name in candidates {
                let alone = MemberSelection([name])
                let selectsSomething = Self.paths.contains { alone.selects($0) }
                #expect(unmatched.contains(name) == !selectsSomething, "\(name)")
            }
        }
    }
}
