import Foundation
import TestSupport
import Testing

@testable import IndexedArchive

extension EngineSuites {
    /// A reader opened for a few members (`amk extract ARCHIVE MEMBER`) makes only their entries,
    /// and answers everything else as a reader of the whole index does.
    @Suite struct ArchiveReaderSelectionTests {
        /// The selections tried: one file, a directory (with its trailing slash and without), a
        /// name beyond ASCII, a member named twice (the long path and its hard link), one that
        /// is not in the archive.
        static let selections: [Set<String>] = [
            ["src/docs/notes.txt"], ["src/docs/"], ["src/docs"], ["src/ünïcödé-名前.txt", "src/emoji-🎉"],
            ["src/\(CompatTree.over255)", "src/zz-hardlink-to-long-path"], ["src/no-such-member"]
        ]

        @Test(arguments: selections)
        func theSelectionsEntriesAreTheOnesAFullReaderSelects(selection: Set<String>) async throws {
            let packed = try await PackedTree.make()
            let whole = try await ArchiveReader.open(path: packed.archive)
            let reader = try await ArchiveReader.open(path: packed.archive, selecting: MemberFilter(selection))
            #expect(reader.selection == MemberFilter(selection))
            let expected = try await whole.entries().filter { TarConsumer.selected($0.path, by: MemberFilter(selection)) }
            #expect(try await reader.entries() == expected)
            // What the whole index says of the archive is unchanged.
            let (info, wholeInfo) = (try await reader.info(), try await whole.info())
            #expect(info.indexedEntries == wholeInfo.indexedEntries && info.indexedEntries == packed.summary.entries)
            #expect(info.tarSize == wholeInfo.tarSize && info.dataBlocks == wholeInfo.dataBlocks)
            #expect(try await reader.metadata() == whole.metadata())
        }

        /// The names that selected nothing come back in the summary, in the order given, once
        /// each, whether the archive is read by random access (a few members, or all of it) or as
        /// a stream: a caller could not tell `["nope"]` from a selection that matched.
        @Test func namesThatSelectNothingAreReportedByEveryWayOfExtracting() async throws {
            let packed = try await PackedTree.make()
            let names = ["src/nope", "src/docs/", "src/also-missing/", "src/docs/notes.txt", "src/nope"]
            var options = ExtractOptions()
            options.selection = MemberSelection(names)
            let expected = ["src/nope", "src/also-missing/"]
            let few = try await ArchiveReader.open(path: packed.archive, selecting: options.selection!.filter)
            #expect(try await few.extract(to: packed.dir.path + "/few", options: options).unmatchedMembers == expected)
            let whole = try await ArchiveReader.open(path: packed.archive)
            let summary = try await whole.extract(to: packed.dir.path + "/whole", options: options)
            #expect(summary.unmatchedMembers == expected)
            #expect(summary.entries > 0)
            let fd = open(packed.archive, O_RDONLY)
            defer { close(fd) }
            let streamed = try await ArchiveStreamReader.extract(from: fd, to: packed.dir.path + "/stream", options: options)
            #expect(streamed.unmatchedMembers == expected)
            // Everything matched, or no selection: nothing to report.
            options.selection = MemberSelection(["src/docs"])
            #expect(try await whole.extract(to: packed.dir.path + "/docs", options: options).unmatchedMembers.isEmpty)
            #expect(try await whole.extract(to: packed.dir.path + "/all").unmatchedMembers.isEmpty)
            options.selection = MemberSelection(["only/nope"])
            let none = try await whole.extract(to: packed.dir.path + "/none", options: options)
            #expect(none.unmatchedMembers == ["only/nope"] && none.entries == 0)
        }

        @Test(arguments: selections.dropLast())
        func extractingTheSelectionWritesWhatAFullReaderWrites(selection: Set<String>) async throws {
            let packed = try await PackedTree.make()
            var options = ExtractOptions()
            options.members = selection
            let reader = try await ArchiveReader.open(path: packed.archive, selecting: MemberFilter(selection))
            let ours = try await reader.extract(to: packed.dir.path + "/selected", options: options)
            let theirs = try await ArchiveReader.open(path: packed.archive).extract(to: packed.dir.path + "/whole", options: options)
            #expect(ours.entries == theirs.entries && ours.entries > 0)
            #expect(ours.bytes == theirs.bytes)
            // Directories made on the way to a member are new: their times are the extraction's.
            let (selected, whole) = try await offPool {
                (
                    try TreeSnapshot(packed.dir.path + "/selected", timesOfDirectories: false),
                    try TreeSnapshot(packed.dir.path + "/whole", timesOfDirectories: false)
                )
            }
            #expect(selected == whole)
        }

        /// A member not chosen, another selection, `verify`: the reader opens the whole index.
        @Test func everythingElseIsAnsweredFromTheWholeIndex() async throws {
            let packed = try await PackedTree.make()
            let reader = try await ArchiveReader.open(path: packed.archive, selecting: MemberFilter(["src/docs/notes.txt"]))
            let whole = try await ArchiveReader.open(path: packed.archive)
            #expect(try await reader.contents(of: "src/run.sh") == Array("#!/bin/sh\necho hi\n".utf8))
            #expect(try await reader.entry(named: "src/media/noise.bin") == whole.entry(named: "src/media/noise.bin"))
            #expect(try await reader.entry(named: "src/absent") == nil)
            #expect(try await reader.verify() == whole.verify())
            var options = ExtractOptions()
            options.members = ["src/media"]
            let summary = try await reader.extract(to: packed.dir.path + "/media", options: options)
            #expect(summary.entries == 2)
            #expect(try await readBytes(packed.dir.path + "/media/src/media/noise.bin") == Samples.noise1Point2M)
            // No selection: the whole tree.
            let all = try await reader.extract(to: packed.dir.path + "/all")
            #expect(all.entries == packed.summary.entries)
        }

        /// A selection too large for random access streams the archive, held to the whole index.
        @Test func aLargeSelectionStreamsTheArchive() async throws {
            let packed = try await PackedTree.make()
            var options = ExtractOptions()
            options.members = ["src"]
            let reader = try await ArchiveReader.open(path: packed.archive, selecting: MemberFilter(["src"]))
            #expect(try await reader.entries().count == packed.summary.entries)
            let summary = try await reader.extract(to: packed.dir.path + "/out", options: options)
            #expect(summary.entries == packed.summary.entries)
            let theirs = try await ArchiveReader.open(path: packed.archive).extract(to: packed.dir.path + "/whole", options: options)
            #expect(summary.bytes == theirs.bytes)
            #expect(try await TreeSnapshot.of(packed.dir.path + "/out") == TreeSnapshot.of(packed.dir.path + "/whole"))
        }

        /// More members than are matched byte by byte: the whole index, as `open(path:)` reads it.
        @Test func manyMembersOpenTheWholeIndex() async throws {
            let packed = try await PackedTree.make()
            let many = Set((0...TarConsumer.fewMembers).map { "src/absent-\($0)" } + ["src/run.sh"])
            let reader = try await ArchiveReader.open(path: packed.archive, selecting: MemberFilter(many))
            #expect(reader.selection == nil)
            #expect(try await reader.entries().count == packed.summary.entries)
        }
    }
}
