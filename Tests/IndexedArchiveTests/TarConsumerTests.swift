import Foundation
import Tar
import TestSupport
import Testing

@testable import IndexedArchive

extension EngineSuites {
    /// TarConsumer is internal: its handling of pax global headers is tested through
    /// `ArchiveReader`, on archives without an index so the metadata comes from the tar stream.
    @Suite struct TarConsumerTests {
        /// A tar stream of `globals` global headers, then one file.
        static func stream(_ globals: [[(key: String, value: String)]]) throws -> [UInt8] {
            var tar: [UInt8] = []
            for records in globals { tar += try TarEncoder.encodeGlobalHeader(records) }
            return tar + (try tarStream([tarFile("a.txt", "a")]))
        }

        static func reader(_ tar: [UInt8], in directory: TemporaryDirectory) async throws -> ArchiveReader {
            try await hostileArchive(tar, mode: .sequential, at: directory.path + "/g.tar.xz")
        }

        /// Issue #10: a small archive made of global headers, each adding new keys, made listing
        /// keep gigabytes. Past 256 keys the reader stops, naming the header's offset.
        @Test(.enabled(if: toolExists("xz")))
        func metadataKeysAreCapped() async throws {
            let directory = try TemporaryDirectory()
            // Each header is 1024 bytes; the 257th distinct key is in header 256.
            let globals = (0..<300).map { [(key: "AMK.key\($0)", value: "v"), (key: "comment", value: "not kept")] }
            let reader = try await Self.reader(try Self.stream(globals), in: directory)
            for call in ["metadata", "entries"] {
                let error = await expectArchiveError(call) {
                    call == "metadata" ? try await reader.metadata().count : try await reader.entries().count
                }
                #expect(error?.code == .limitExceeded, "\(call): \(String(describing: error))")
                #expect(
                    error?.message.contains("256 keys") == true && error?.message.hasSuffix("at tar offset \(256 * 1024)") == true,
                    "\(call): \(String(describing: error))")
            }
        }

        @Test(.enabled(if: toolExists("xz")))
        func metadataBytesAreCapped() async throws {
            let directory = try TemporaryDirectory()
            let globals = [[(key: "AMK.small", value: "1")], [(key: "AMK.big", value: String(repeating: "b", count: 70_000))]]
            let reader = try await Self.reader(try Self.stream(globals), in: directory)
            let error = await expectArchiveError("metadata") { try await reader.metadata() }
            #expect(error?.code == .limitExceeded)
            #expect(
                error?.message.contains("65536 bytes") == true && error?.message.hasSuffix("at tar offset 1024") == true,
                "\(String(describing: error))")
        }

        /// Keys are judged on their bytes: "caf\u{E9}" and "cafe\u{301}" are one `String` key,
        /// so an archive setting both is refused, naming both, rather than shown as one key with
        /// one of the two values. Setting the same bytes again still replaces the value.
        @Test(.enabled(if: toolExists("xz")))
        func keysThatDifferInBytesButReadAsOneAreRefused() async throws {
            let directory = try TemporaryDirectory()
            let globals = [[(key: "AMK.caf\u{E9}", value: "1")], [(key: "AMK.cafe\u{301}", value: "2")]]
            let reader = try await Self.reader(try Self.stream(globals), in: directory)
            let error = await expectArchiveError("metadata") { try await reader.metadata() }
            #expect(error?.code == .corrupt, "\(String(describing: error))")
            #expect(
                error?.message.contains("read as one key") == true && error?.message.hasSuffix("at tar offset 1024") == true,
                "\(String(describing: error))")

            let again = [[(key: "AMK.caf\u{E9}", value: "1")], [(key: "AMK.caf\u{E9}", value: "2")]]
            let metadata = try await Self.reader(try Self.stream(again), in: directory).metadata()
            #expect(metadata.count == 1 && metadata["caf\u{E9}"] == "2")
        }

        /// What is kept counts, not what was seen: up to the limit of keys, and a key set again
        /// and again (its value replaced each time) costs nothing more.
        @Test(.enabled(if: toolExists("xz")))
        func replacedValuesDoNotCountTwice() async throws {
            let directory = try TemporaryDirectory()
            var globals = [(0..<256).map { (key: "AMK.key\($0)", value: "first") }]
            for round in 0..<2000 {
                globals.append([(key: "AMK.key0", value: "round \(round) " + String(repeating: "r", count: 200))])
            }
            let reader = try await Self.reader(try Self.stream(globals), in: directory)
            let metadata = try await reader.metadata()
            #expect(metadata.count == 256)
            #expect(metadata["key0"] == "round 1999 " + String(repeating: "r", count: 200))
            #expect(metadata["key255"] == "first")
            #expect(try await reader.entries().map(\.path) == ["a.txt"])
        }

        /// A key is what follows the bytes `AMK.`, even when it starts with a combining mark (one
        /// `Character` with the dot, which a character-wise `hasPrefix` did not match: the key was
        /// dropped). Keys equal as Swift `String`s are one dictionary key; the later value wins.
        @Test(.enabled(if: toolExists("xz")))
        func keysAreCutAfterThePrefixsBytes() async throws {
            let directory = try TemporaryDirectory()
            let globals = [[(key: "AMK.\u{301}mark", value: "1"), (key: "AMK.plain", value: "2"), (key: "AMKX.no", value: "3")]]
            let reader = try await Self.reader(try Self.stream(globals), in: directory)
            let metadata = try await reader.metadata()
            #expect(
                metadata.keys.map { Array($0.utf8) }.sorted { $0.lexicographicallyPrecedes($1) } == [
                    Array("plain".utf8), Array("\u{301}mark".utf8)
                ])
            #expect(metadata["\u{301}mark"] == "1")
        }

        /// (path, members asked for, selected?): a member, with or without a directory's slash,
        /// selects itself and everything under it, and nothing that merely starts with its name.
        static let selections: [(String, [String], Bool)] = [
            ("a/b/c.txt", ["a/b"], true), ("a/b/c.txt", ["a/b/"], true), ("a/b/c.txt", ["a"], true),
            ("a/b/c.txt", ["a/b/c.txt"], true), ("a/b/c.txt", ["a/b/c.txt/"], true),
            ("a/b/c.txt", ["a/bc"], false), ("a/b/c.txt", ["a/b/c"], false), ("ab/c", ["a"], false),
            ("a/b/c.txt", ["b/c.txt"], false), ("d/", ["d"], true), ("d/", ["d/"], true), ("d/", ["d/e"], false),
            ("x", ["x", "y"], true), ("x", ["y", "z"], false), ("/abs/x", [""], true), ("x", [""], false),
            ("ünï/名前", ["ünï"], true), ("ünï/名前", ["ün"], false)
        ]

        @Test func aSelectionIsAMemberAndWhatLiesUnderIt() {
            for (path, members, expected) in Self.selections {
                #expect(TarConsumer.selected(path, by: MemberFilter(members)) == expected, "\(path) by \(members)")
                // More than 16 members take the set lookups: the same answers.
                let many = Set(members + (0..<20).map { "unrelated-\($0)" })
                #expect(TarConsumer.selected(path, by: MemberFilter(many)) == expected, "\(path) by \(members) among 20 others")
            }
            #expect(TarConsumer.selected("anything", by: nil))
        }
    }
}
