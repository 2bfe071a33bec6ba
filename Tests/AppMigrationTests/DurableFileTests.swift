import Foundation
import Testing

@testable import AppMigration

@Suite struct DurableFileTests {
    @Test func writeReadAndReplace() throws {
        try TransferScratch.with { scratch in
            let path = scratch.path("file")
            let found2 = try DurableFile.read(path)
            #expect(found2 == nil)
            try DurableFile.write(Data("first".utf8), to: path)
            #expect(try DurableFile.read(path) == Data("first".utf8))
            try DurableFile.write(Data("second".utf8), to: path)
            #expect(try DurableFile.read(path) == Data("second".utf8))
            #expect(try scratch.names() == ["file"])  // no temporary left behind
        }
    }

    @Test func largeContentRoundTrips() throws {
        try TransferScratch.with { scratch in
            let bytes = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
            try DurableFile.write(bytes, to: scratch.path("big"))
            #expect(try DurableFile.read(scratch.path("big")) == bytes)
        }
    }

    @Test func removeSaysWhetherThereWasAFile() throws {
        try TransferScratch.with { scratch in
            let path = scratch.path("file")
            #expect(try DurableFile.remove(path) == false)
            try DurableFile.write(Data("x".utf8), to: path)
            #expect(try DurableFile.remove(path) == true)
            let found3 = try DurableFile.read(path)
            #expect(found3 == nil)
        }
    }

    @Test func createDirectoryMakesParents() throws {
        try TransferScratch.with { scratch in
            let path = scratch.path("a/b/c")
            try DurableFile.createDirectory(path)
            try DurableFile.createDirectory(path)  // already there: fine
            var isDirectory: ObjCBool = false
            #expect(FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue)
            try DurableFile.write(Data("x".utf8), to: scratch.path("a/file"))
            #expect(throws: DurableFileError.self) { try DurableFile.createDirectory(scratch.path("a/file")) }
        }
    }

    @Test func failuresNameTheCallAndThePath() throws {
        try TransferScratch.with { scratch in
            let path = scratch.path("missing/file")
            do {
                try DurableFile.write(Data("x".utf8), to: path)
                Issue.record("writing into a missing folder succeeded")
            } catch let error as DurableFileError {
                #expect(error.operation == "create")
                #expect(error.errno == ENOENT)
                #expect(error.description.contains("missing/.file.amk-tmp-"))
                #expect(error.description.contains("No such file or directory"))
            }
        }
    }

    /// A path holding a NUL byte would reach the kernel cut at the NUL (`f\0.bak` is `f`): every
    /// call refuses it with EINVAL, and the file the name was cut to is untouched.
    @Test func pathsHoldingANULAreRefused() throws {
        try TransferScratch.with { scratch in
            let path = scratch.path("f")
            try DurableFile.write(Data("precious".utf8), to: path)
            let calls: [(String, () throws -> Void)] = [
                ("create", { try DurableFile.write(Data(), to: path + "\0.bak") }),
                ("open", { _ = try DurableFile.read(path + "\0.bak") }),
                ("remove", { _ = try DurableFile.remove(path + "\0.bak") }),
                ("mkdir", { try DurableFile.createDirectory(path + "\0/d") }),
                ("remove", { _ = try DurableFile.removeStaleTemporaries(for: path + "\0.bak") })
            ]
            for (operation, call) in calls {
                let error = #expect(throws: DurableFileError.self, "\(operation)") { try call() }
                #expect(error?.errno == EINVAL && error?.operation == operation, "\(String(describing: error))")
            }
            #expect(try DurableFile.read(path) == Data("precious".utf8))
            #expect(try scratch.names() == ["f"])
        }
    }

    /// A power cut before any of the write's changes leaves the old content or the new, whole.
    @Test func aCutAtEveryPointLeavesOldOrNew() throws {
        try TransferScratch.with { scratch in
            let old = Data("old content".utf8)
            let new = Data(repeating: 7, count: 100_000)
            let count = PowerCut()
            try DurableFile.write(new, to: scratch.path("probe"), probe: count.probe)
            let points = count.points.count
            #expect(points == 5)
            var sawOld = false
            var sawNew = false
            for allowed in 0...points {
                let path = scratch.path("file\(allowed)")
                try DurableFile.write(old, to: path)
                let cut = PowerCut(after: allowed)
                do {
                    try DurableFile.write(new, to: path, probe: cut.probe)
                } catch is PowerCut.Cut {
                    // expected for every point but the last
                }
                #expect(cut.tripped == (allowed < points))
                let content = try DurableFile.read(path)
                #expect(content == old || content == new, "cut after \(allowed) changes")
                sawOld = sawOld || content == old
                sawNew = sawNew || content == new
                // "Reboot": the stray temporary is found and removed.
                try DurableFile.removeStaleTemporaries(for: path)
                #expect(try scratch.names().filter { $0.hasPrefix(".file\(allowed).") }.isEmpty)
            }
            #expect(sawOld && sawNew)
        }
    }

    @Test func staleTemporariesOfOtherFilesStay() throws {
        try TransferScratch.with { scratch in
            try Data().write(to: scratch.url(".a.amk-tmp-1234"))
            try Data().write(to: scratch.url(".b.amk-tmp-1234"))
            #expect(try DurableFile.removeStaleTemporaries(for: scratch.path("a")) == 1)
            #expect(try scratch.names() == [".b.amk-tmp-1234"])
            #expect(try DurableFile.removeStaleTemporaries(for: scratch.path("nowhere/a")) == 0)
        }
    }

    @Test func staleTemporariesOfAnEquivalentNameStay() throws {
        try TransferScratch.with { scratch in
            for name in [".caf\u{E9}.amk-tmp-1", ".cafe\u{301}.amk-tmp-2"] {
                let fd = open(scratch.path(name), O_WRONLY | O_CREAT | O_EXCL, 0o600)
                #expect(fd >= 0)
                close(fd)
            }
            let removed = try DurableFile.removeStaleTemporaries(for: scratch.path("caf\u{E9}"))
            #expect(removed == 1)
            var info = stat()
            #expect(lstat(scratch.path(".cafe\u{301}.amk-tmp-2"), &info) == 0, "the decomposed name's temporary stays")
            #expect(lstat(scratch.path(".caf\u{E9}.amk-tmp-1"), &info) != 0)
        }
    }

    @Test func parentAndNameSplitAtTheByteSlash() {
        #expect(Array(DurableFile.parent(of: "a/\u{301}b").utf8) == Array("a".utf8))
        #expect(Array(DurableFile.name(of: "a/\u{301}b").utf8) == Array("\u{301}b".utf8))
        #expect(DurableFile.parent(of: "/x") == "/" && DurableFile.parent(of: "x") == "." && DurableFile.name(of: "x") == "x")
    }
}
