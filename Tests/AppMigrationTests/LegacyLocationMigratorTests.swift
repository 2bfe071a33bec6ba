import Foundation
import Testing

@testable import AppMigration

@Suite struct LegacyLocationMigratorTests {
    static let old = Data(#"{"theme":"dark"}"#.utf8)

    /// "settings" now lives in Library/Application Support; it used to be Documents/prefs.json, and
    /// before that Documents/settings.plist.
    static func migrator(in scratch: TransferScratch) -> LegacyLocationMigrator {
        var migrator = LegacyLocationMigrator()
        migrator.register(
            "settings", at: scratch.url("Library/Application Support/settings.json"),
            legacy: [
                LegacyLocation(scratch.url("Documents/prefs.json")),
                LegacyLocation(scratch.url("Documents/settings.plist"))
            ])
        migrator.register(
            "token", at: scratch.url("Library/token"),
            legacy: [
                LegacyLocation(scratch.url("Documents/token.b64")) { data in
                    guard let decoded = Data(base64Encoded: data) else { throw CocoaError(.fileReadCorruptFile) }
                    return decoded
                }
            ])
        return migrator
    }

    static func plant(_ data: Data, at path: String, in scratch: TransferScratch) throws {
        try DurableFile.createDirectory(DurableFile.parent(of: scratch.path(path)))
        try data.write(to: scratch.url(path))
    }

    @Test func readingFindsTheLegacyCopyMovesItAndDeletesTheOld() throws {
        try TransferScratch.with { scratch in
            try Self.plant(Self.old, at: "Documents/prefs.json", in: scratch)
            let migrator = Self.migrator(in: scratch)
            #expect(try migrator.read("settings") == Self.old)
            #expect(try Data(contentsOf: scratch.url("Library/Application Support/settings.json")) == Self.old)
            #expect(!FileManager.default.fileExists(atPath: scratch.path("Documents/prefs.json")))
            let found5 = try migrator.migrate("settings")
            #expect(found5 == .current)
        }
    }

    @Test func theNewPlaceWinsAndLeftoversAreRemoved() throws {
        try TransferScratch.with { scratch in
            try Self.plant(Data("new".utf8), at: "Library/Application Support/settings.json", in: scratch)
            try Self.plant(Self.old, at: "Documents/settings.plist", in: scratch)
            let migrator = Self.migrator(in: scratch)
            #expect(try migrator.migrate("settings") == .removedLeftovers([scratch.path("Documents/settings.plist")]))
            #expect(try migrator.read("settings") == Data("new".utf8))
            #expect(!FileManager.default.fileExists(atPath: scratch.path("Documents/settings.plist")))
        }
    }

    @Test func legacyPlacesAreSearchedInOrder() throws {
        try TransferScratch.with { scratch in
            try Self.plant(Data("older".utf8), at: "Documents/settings.plist", in: scratch)
            try Self.plant(Self.old, at: "Documents/prefs.json", in: scratch)
            let migrator = Self.migrator(in: scratch)
            #expect(try migrator.migrate("settings") == .migrated(from: scratch.path("Documents/prefs.json")))
            #expect(try migrator.read("settings") == Self.old)
            // Both legacy copies are gone: the older one must not come back either.
            #expect(try scratch.names(in: scratch.path("Documents")) == [])
        }
    }

    @Test func sweepMovesEveryKeyAndTransforms() throws {
        try TransferScratch.with { scratch in
            try Self.plant(Self.old, at: "Documents/prefs.json", in: scratch)
            try Self.plant(Data("secret".utf8).base64EncodedData(), at: "Documents/token.b64", in: scratch)
            let outcomes = try Self.migrator(in: scratch).sweep()
            #expect(
                outcomes == [
                    "settings": .migrated(from: scratch.path("Documents/prefs.json")),
                    "token": .migrated(from: scratch.path("Documents/token.b64"))
                ])
            #expect(try Data(contentsOf: scratch.url("Library/token")) == Data("secret".utf8))
            #expect(try scratch.names(in: scratch.path("Documents")) == [])
            #expect(try Self.migrator(in: scratch).sweep() == ["settings": .current, "token": .current])
        }
    }

    @Test func aFailingTransformLeavesTheLegacyCopy() throws {
        try TransferScratch.with { scratch in
            try Self.plant(Data("not base64!".utf8), at: "Documents/token.b64", in: scratch)
            let migrator = Self.migrator(in: scratch)
            #expect(throws: CocoaError.self) { try migrator.read("token") }
            #expect(try Data(contentsOf: scratch.url("Documents/token.b64")) == Data("not base64!".utf8))
            #expect(!FileManager.default.fileExists(atPath: scratch.path("Library/token")))
        }
    }

    @Test func absentEverywhere() throws {
        try TransferScratch.with { scratch in
            let migrator = Self.migrator(in: scratch)
            let found6 = try migrator.read("settings")
            #expect(found6 == nil)
            let found7 = try migrator.migrate("token")
            #expect(found7 == .absent)
        }
    }

    @Test func writingDeletesLegacyCopies() throws {
        try TransferScratch.with { scratch in
            try Self.plant(Self.old, at: "Documents/prefs.json", in: scratch)
            let migrator = Self.migrator(in: scratch)
            try migrator.write(Data("fresh".utf8), for: "settings")
            #expect(!FileManager.default.fileExists(atPath: scratch.path("Documents/prefs.json")))
            #expect(try migrator.read("settings") == Data("fresh".utf8))
        }
    }

    /// A power cut before each change a sweep makes. Right after the cut the data is whole in the
    /// old place or the new one (never neither, never a part); after a "reboot" sweep it is in
    /// the new place only.
    @Test func aPowerCutAtEveryPointLosesNothing() throws {
        let secret = Data("secret".utf8)
        let counter = PowerCut()
        try TransferScratch.with { scratch in
            try Self.plant(Self.old, at: "Documents/prefs.json", in: scratch)
            try Self.plant(secret.base64EncodedData(), at: "Documents/token.b64", in: scratch)
            var migrator = Self.migrator(in: scratch)
            migrator.probe = counter.probe
            try migrator.sweep()
        }
        let points = counter.points.count
        #expect(points >= 2 * 7)  // per key: mkdir + fsync, 5 for the write, unlink + fsync
        for allowed in 0..<points {
            try TransferScratch.with { scratch in
                try Self.plant(Self.old, at: "Documents/prefs.json", in: scratch)
                try Self.plant(secret.base64EncodedData(), at: "Documents/token.b64", in: scratch)
                var migrator = Self.migrator(in: scratch)
                let cut = PowerCut(after: allowed)
                migrator.probe = cut.probe
                #expect(throws: PowerCut.Cut.self) { try migrator.sweep() }
                let checks: [(old: String, new: String, oldBytes: Data, newBytes: Data)] = [
                    ("Documents/prefs.json", "Library/Application Support/settings.json", Self.old, Self.old),
                    ("Documents/token.b64", "Library/token", secret.base64EncodedData(), secret)
                ]
                for check in checks {
                    let oldCopy = try DurableFile.read(scratch.path(check.old))
                    let newCopy = try DurableFile.read(scratch.path(check.new))
                    #expect(oldCopy == check.oldBytes || newCopy == check.newBytes, "cut after \(allowed): \(check.new) lost")
                    #expect(oldCopy == nil || oldCopy == check.oldBytes)
                    #expect(newCopy == nil || newCopy == check.newBytes)
                }
                // Reboot.
                migrator.probe = nil
                try migrator.sweep()
                for check in checks {
                    #expect(try DurableFile.read(scratch.path(check.new)) == check.newBytes)
                    let found8 = try DurableFile.read(scratch.path(check.old))
                    #expect(found8 == nil)
                }
                #expect(try scratch.names(in: scratch.path("Library")) == ["Application Support", "token"])
                #expect(try scratch.names(in: scratch.path("Library/Application Support")) == ["settings.json"])
            }
        }
    }
}
