import AppMigration
import Foundation
import Testing

@Suite struct SchemaMigrationErrorTests {
    struct Boom: Error, CustomStringConvertible { var description: String { "boom" } }

    @Test func messagesNameTheModelAndTheVersions() {
        let cases: [(SchemaMigrationError, [String])] = [
            (.missingStep(model: "user_profile", from: 2, to: 3), ["user_profile", "from version 2 to 3"]),
            (.stepFailed(model: "m", from: 1, to: 2, underlying: Boom()), ["m:", "from version 1 to 2", "rolled back", "boom"]),
            (.validationFailed(model: "m", version: 3, underlying: Boom()), ["version 3", "validation", "boom"]),
            (.storedVersionNewer(model: "m", stored: 5, current: 3), ["version 5", "version 3"]),
            (.unreadableVersion(model: "m", path: "/x/m.version"), ["/x/m.version"]),
            (.notAJSONObject(model: "m", version: 2), ["version 2", "JSON object"]),
            (.unparsableVersion(model: "m", version: "beta"), ["'beta'"]),
            (.rollbackFailed(model: "m", underlying: Boom(), rollback: Boom()), ["backup is kept"])
        ]
        for (error, fragments) in cases {
            for fragment in fragments {
                #expect(error.description.contains(fragment), "\(error.description) lacks \(fragment)")
            }
            #expect(error.localizedDescription == error.description)
        }
    }
}
