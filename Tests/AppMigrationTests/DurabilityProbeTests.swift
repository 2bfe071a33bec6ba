import Foundation
import Testing

@testable import AppMigration

@Suite struct DurabilityProbeTests {
    @Test func aWriteReportsEachChangeBeforeMakingIt() throws {
        try TransferScratch.with { scratch in
            let path = scratch.path("file")
            let recorder = PowerCut()
            try DurableFile.write(Data("x".utf8), to: path, probe: recorder.probe)
            #expect(
                recorder.points == [
                    .createTemporary(path: path), .writeTemporary(path: path), .syncTemporary(path: path),
                    .rename(path: path), .syncDirectory(path: DurableFile.parent(of: path))
                ])
            #expect(DurableFile.parent(of: path) == scratch.directory.path)
            #expect(!recorder.tripped)
        }
    }

    @Test func aThrowingProbeStopsBeforeTheChange() throws {
        try TransferScratch.with { scratch in
            let path = scratch.path("file")
            let cut = PowerCut(after: 3)  // create, write, sync allowed; the rename refused
            #expect(throws: PowerCut.Cut.self) { try DurableFile.write(Data("x".utf8), to: path, probe: cut.probe) }
            #expect(cut.tripped)
            let found1 = try DurableFile.read(path)
            #expect(found1 == nil)
            #expect(cut.points.last == .rename(path: path))
        }
    }

    @Test func pointsDescribeThemselves() {
        #expect(DurabilityPoint.rename(path: "/a/b").description == "rename over /a/b")
        #expect(DurabilityPoint.syncDirectory(path: "/a").description == "fsync directory /a")
    }
}
