import Foundation
import Testing

@testable import AppMigration

@Suite struct VersionedStoreTests {
    @Test func writeThenRead() throws {
        try TransferScratch.with { scratch in
            let store = try VersionedStore(directory: scratch.url("store/deep"))
            let found9 = try store.read("m")
            #expect(found9 == nil)
            try store.write(Data("abc".utf8), version: 4, for: "m")
            #expect(try store.read("m") == VersionedStore.Record(data: Data("abc".utf8), version: 4))
            #expect(try scratch.names(in: scratch.path("store/deep")) == ["m.data", "m.version"])
        }
    }

    @Test func dataWithoutAVersionFileIsAtTheUnversionedVersion() throws {
        try TransferScratch.with { scratch in
            let store = try VersionedStore(directory: scratch.root, unversionedVersion: 1)
            try Data("old".utf8).write(to: scratch.url("m.data"))
            #expect(try store.read("m")?.version == 1)
        }
    }

    @Test func aGarbledVersionFileIsATypedError() throws {
        try TransferScratch.with { scratch in
            let store = try VersionedStore(directory: scratch.root)
            try Data("x".utf8).write(to: scratch.url("m.data"))
            try Data("three".utf8).write(to: scratch.url("m.version"))
            #expect(throws: SchemaMigrationError.self) { try store.read("m") }
        }
    }

    /// A crash between the data write and the version write: the backup is put back.
    @Test func recoverPutsTheBackupBackWhenTheVersionIsOld() throws {
        try TransferScratch.with { scratch in
            let store = try VersionedStore(directory: scratch.root)
            try store.write(Data("v1".utf8), version: 1, for: "m")
            try store.writeBackup(.init(data: Data("v1".utf8), version: 1), for: "m")
            try DurableFile.write(Data("v3 data".utf8), to: store.path("m", "data"))
            #expect(try store.recover("m"))
            #expect(try store.read("m") == .init(data: Data("v1".utf8), version: 1))
            #expect(try scratch.names() == ["m.data", "m.version"])
        }
    }

    /// A crash after the version write: the migration had finished, the backup just goes.
    @Test func recoverKeepsTheNewDataWhenTheVersionIsNew() throws {
        try TransferScratch.with { scratch in
            let store = try VersionedStore(directory: scratch.root)
            try store.writeBackup(.init(data: Data("v1".utf8), version: 1), for: "m")
            try store.write(Data("v3".utf8), version: 3, for: "m")
            #expect(try store.recover("m"))
            #expect(try store.read("m") == .init(data: Data("v3".utf8), version: 3))
            #expect(try !store.recover("m"))
            #expect(try scratch.names() == ["m.data", "m.version"])
        }
    }

    @Test func recoverRemovesStrayTemporaries() throws {
        try TransferScratch.with { scratch in
            let store = try VersionedStore(directory: scratch.root)
            try store.write(Data("v1".utf8), version: 1, for: "m")
            try Data("half".utf8).write(to: scratch.url(".m.data.amk-tmp-abcd"))
            #expect(try !store.recover("m"))
            #expect(try scratch.names() == ["m.data", "m.version"])
        }
    }
}
