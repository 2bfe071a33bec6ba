import Testing

@testable import IndexedArchive

extension EngineSuites {
    /// The paths of a plain listing as one run of bytes.
    @Suite struct MemberPathListTests {
        @Test func pathsComeBackAsTheyWentIn() {
            let paths = ["d/", "d/a.txt", "", "d/caf\u{E9}", "d/\u{65E5}/x"]
            let list = MemberPathList(paths)
            #expect(list.count == 5)
            #expect(list.strings == paths)
            for (index, path) in paths.enumerated() {
                #expect(Array(list[index]) == Array(path.utf8), "path \(index)")
            }
            #expect(list.bytes == Array(paths.joined().utf8), "one run, nothing between the paths")
            #expect(list.ends == [2, 9, 9, 16, 23], "é is 2 bytes, 日 is 3")
        }

        @Test func appendingMatchesMakingFromStrings() {
            var built = MemberPathList()
            built.reserve(paths: 2)
            built.append(Array("x/y".utf8))
            built.append("z".utf8)
            #expect(built == MemberPathList(["x/y", "z"]))
            #expect(MemberPathList().count == 0)
            #expect(MemberPathList().strings.isEmpty)
        }
    }
}
