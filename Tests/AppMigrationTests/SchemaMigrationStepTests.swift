import AppMigration
import Foundation
import Testing

@Suite struct SchemaMigrationStepTests {
    @Test func jsonStepEditsTheObjectAndSortsKeys() throws {
        let step = SchemaMigrationStep.json(model: "user_profile", from: 1) { object in
            object["preferences"] = ["theme": "system"]
            object["b"] = 2
        }
        #expect(step.model == "user_profile")
        #expect(step.fromVersion == 1)
        #expect(step.toVersion == 2)
        let out = try step.transform(Data(#"{"userId":"usr_1","a":1}"#.utf8))
        #expect(String(decoding: out, as: UTF8.self) == #"{"a":1,"b":2,"preferences":{"theme":"system"},"userId":"usr_1"}"#)
    }

    @Test func jsonStepRefusesANonObject() {
        let step = SchemaMigrationStep.json(model: "m", from: 4) { _ in }
        do {
            _ = try step.transform(Data("[1,2]".utf8))
            Issue.record("an array was accepted")
        } catch let error as SchemaMigrationError {
            guard case .notAJSONObject(let model, let version) = error else {
                Issue.record("wrong error \(error)")
                return
            }
            #expect(model == "m" && version == 4)
        } catch {
            Issue.record("untyped error \(error)")
        }
    }

    @Test func rawStepSeesTheBytes() throws {
        let step = SchemaMigrationStep(model: "m", from: 7) { data in data + Data("!".utf8) }
        #expect(try step.transform(Data("hi".utf8)) == Data("hi!".utf8))
        #expect(step.toVersion == 8)
    }
}
