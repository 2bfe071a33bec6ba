import AppMigration
import Foundation
import Testing

@Suite struct LegacyLocationTests {
    @Test func aURLBecomesItsPath() {
        let location = LegacyLocation(URL(fileURLWithPath: "/data/Documents/prefs file.json"))
        #expect(location.path == "/data/Documents/prefs file.json")
        #expect(location.transform == nil)
    }

    @Test func theTransformIsKept() throws {
        let location = LegacyLocation(path: "/old") { Data($0.reversed()) }
        #expect(try location.transform?(Data([1, 2, 3])) == Data([3, 2, 1]))
    }
}
