import Foundation
import TestSupport
import Testing

@testable import amk

extension AMKTests {
    /// Which command lines take the plain listing's direct path, and which ArgumentParser parses.
    @Suite struct ListCommandTests {
        @Test(
            arguments: [
                (["amk", "list", "a.tar.xz"], "a.tar.xz"), (["amk", "list", "-"], "-"),
                (["amk", "list", "dir/a b.tar.xz"], "dir/a b.tar.xz"),
                (["amk", "list", "-l"], nil), (["amk", "list", "--json"], nil), (["amk", "list", "--"], nil),
                (["amk", "list", "help"], nil),
                (["amk", "list", "a.tar.xz", "-l"], nil), (["amk", "list", "a.tar.xz", "b.tar.xz"], nil), (["amk", "list"], nil),
                (["amk", "info", "a.tar.xz"], nil), (["amk", "a.tar.xz", "list"], nil)
            ] as [([String], String?)])
        func onlyTheListCommandWithOneArchiveIsPlain(arguments: [String], archive: String?) {
            #expect(ListCommand.plainArchive(in: arguments) == archive)
        }

        /// Whatever the direct path takes, ArgumentParser would parse to the same plain listing.
        @Test(arguments: ["a.tar.xz", "-", "dir/a b.tar.xz", "üñí.tar.xz"])
        func theDirectPathTakesWhatParsingWould(archive: String) throws {
            let parsed = try #require(try AMK.parseAsRoot(["list", archive]) as? ListCommand)
            #expect(ListCommand.plainArchive(in: ["amk", "list", archive]) == parsed.archive)
            #expect(!parsed.long && !parsed.verbose && !parsed.json && parsed.members.isEmpty)
        }

        /// A long listing reaches its output whole and in order, in pieces of about
        /// `listingPiece` bytes rather than one buffer the size of the listing.
        @Test func aLongListingIsWrittenWholeInPieces() throws {
            let dir = try TemporaryDirectory()
            let path = dir.path + "/listing"
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            try #require(fd >= 0)
            var out = ListCommand.ListingOutput(fd: fd)
            var expected: [UInt8] = []
            for i in 0..<20_000 {
                let line = Array("folder/file-\(i).txt".utf8)
                out.bytes.append(contentsOf: line)
                let accepted = out.endLine()
                #expect(accepted)
                expected += line + [UInt8(ascii: "\n")]
            }
            out.flush()
            close(fd)
            #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: path))) == expected)
            let pieces = expected.count / ListCommand.listingPiece
            #expect(out.writes >= pieces && out.writes <= pieces + 1, "\(out.writes) writes of \(expected.count) bytes")
        }

        /// Once the output is gone (`amk list A | head`), the listing stops at the piece it refused.
        @Test func aClosedOutputStopsTheListing() throws {
            let ends = try pipeClosedOnExec()
            close(ends[0])
            defer { close(ends[1]) }
            // SIGPIPE is blocked while the listing writes, and the one it raises is taken before
            // the mask is restored (the test runs on one thread, synchronously).
            var pipeSignal = sigset_t()
            sigemptyset(&pipeSignal)
            sigaddset(&pipeSignal, SIGPIPE)
            var previous = sigset_t()
            pthread_sigmask(SIG_BLOCK, &pipeSignal, &previous)
            var out = ListCommand.ListingOutput(fd: ends[1])
            var lines = 0
            while lines < 100_000 {
                out.bytes.append(contentsOf: [UInt8](repeating: UInt8(ascii: "x"), count: 99))
                lines += 1
                guard out.endLine() else { break }
            }
            out.flush()
            let writes = out.writes
            var noWait = timespec(tv_sec: 0, tv_nsec: 0)
            #expect(sigtimedwait(&pipeSignal, nil, &noWait) == SIGPIPE)
            pthread_sigmask(SIG_SETMASK, &previous, nil)
            #expect(writes == 1)
            #expect(lines == ListCommand.listingPiece / 100 + 1)
        }
    }
}
