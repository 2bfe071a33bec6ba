import Foundation
import TestSupport
import Testing

extension AMKTests {
    /// A damaged archive fails `verify` with an offset; a truncated one salvages its early members.
    @Suite @MainActor struct Damage {
        let tree: TestTree
        let archive: String

        /// Ten 512 KiB files of noise in 1 MiB blocks: noise does not compress, so every block is
        /// stored and about 1 MiB long, which puts a cut or a flipped byte at a known place.
        init() throws {
            tree = try TestTree()
            for index in 0..<10 {
                try tree.write("src/data/file\(index).bin", TestTree.noise(count: 512 * 1024, seed: UInt64(index + 1)))
            }
            archive = tree.path("data.tar.xz")
            let pack = try AMKProcess.run(["pack", tree.path("src/data"), "-o", archive, "--chunk-size", "1M"])
            #expect(pack.status == 0, "\(pack.stderr)")
        }

        /// Flips 16 bytes in the middle of the archive: inside one of its blocks of noise.
        func damageTheMiddle() throws {
            var bytes = try Data(contentsOf: URL(fileURLWithPath: archive))
            let middle = bytes.count / 2
            for offset in middle..<middle + 16 { bytes[offset] ^= 0x5A }
            try bytes.write(to: URL(fileURLWithPath: archive))
        }

        /// Through a pipe, a block's bytes come out before its check is read, and a byte changed
        /// in stored noise decodes without complaint: the members they made are removed once the
        /// check fails, each named, and every file left is whole (one with the changed bytes was
        /// kept, named by nothing but the offset of the damage).
        @Test func aPipeRemovesAndNamesWhatTheDamagedBlockMade() throws {
            try damageTheMiddle()
            let out = tree.path("out")
            let (result, _) = try AMKProcess.runMeasured(["extract", "-", "-C", out], piping: archive)
            #expect(result.status == 1)
            let removed = result.stderr.split(separator: "\n").compactMap { line in
                line.contains("': removed: ") ? line.split(separator: "'")[1] : nil
            }
            #expect(!removed.isEmpty, "\(result.stderr)")
            for name in removed {
                #expect(!FileManager.default.fileExists(atPath: out + "/" + name), "\(name) was named removed")
            }
            let left = try FileManager.default.contentsOfDirectory(atPath: out + "/data")
            #expect(!left.isEmpty, "the blocks before the damage are sound")
            for name in left {
                #expect(
                    try Data(contentsOf: URL(fileURLWithPath: out + "/data/" + name))
                        == Data(contentsOf: URL(fileURLWithPath: tree.path("src/data/" + name))), "\(name) is not whole")
            }
        }

        /// `extract --json` on damage: a script that asked for JSON got nothing on standard
        /// output. It gets the report, with the error (as standard error gives it) and no counts.
        @Test func extractJSONReportsTheDamage() throws {
            try damageTheMiddle()
            let result = try AMKProcess.run(["extract", "--json", archive, "-C", tree.path("out")])
            #expect(result.status == 1)
            let report = try #require(
                try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stdout)")
            let error = try #require(report["error"] as? String, "\(result.stdout)")
            #expect(result.stderr.contains(error), "the error line on standard error: \(result.stderr)")
            #expect(report["entries"] is NSNull && report["bytes"] is NSNull)
            #expect(report["archive"] as? String == archive)
            // And a whole extraction says it has no error.
            try FileManager.default.removeItem(atPath: archive)
            let pack = try AMKProcess.run(["pack", tree.path("src/data"), "-o", archive, "--chunk-size", "1M"])
            #expect(pack.status == 0)
            let whole = try AMKProcess.run(["extract", "--json", archive, "-C", tree.path("out2")])
            #expect(whole.status == 0, "\(whole.stderr)")
            let good = try #require(try JSONSerialization.jsonObject(with: Data(whole.stdout.utf8)) as? [String: Any])
            #expect(good["error"] is NSNull && good["entries"] as? Int == 11)
        }

        @Test func corruptedArchiveFailsVerifyNamingAnOffset() throws {
            try damageTheMiddle()

            let result = try AMKProcess.run(["verify", archive])
            #expect(result.status == 1)
            #expect(result.stdout.isEmpty)
            #expect(result.stderr.hasPrefix("amk: "), "\(result.stderr)")
            #expect(result.stderr.contains(/offset \d+/), "\(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        }

        /// Bytes appended to a good archive: every command says so, at the offset where they
        /// start, rather than calling the archive truncated or corrupt.
        @Test(arguments: [Array("garbage\n".utf8), Array(repeating: 0x41, count: 4096)])
        func appendedGarbageIsNamedAsSuch(garbage: [UInt8]) throws {
            let size = try Data(contentsOf: URL(fileURLWithPath: archive)).count
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: archive))
            try handle.seekToEnd()
            try handle.write(contentsOf: Data(garbage))
            try handle.close()
            for command in [["list"], ["verify"], ["extract", "-C", tree.path("out")]] {
                let result = try AMKProcess.run([command[0], archive] + command.dropFirst())
                #expect(result.status == 1, "\(command)")
                let lines = result.stderr.split(separator: "\n").map(String.init)
                #expect(
                    lines.first
                        == "amk: \(archive), offset \(size): data after the end of the xz stream is neither padding nor another stream",
                    "\(command)")
                // The extraction goes on to say what recovers the members (all of them, here).
                #expect(lines.count == (command[0] == "extract" ? 2 : 1), "\(command): \(result.stderr)")
                if command[0] == "extract" { #expect(lines.last?.hasPrefix("amk: the archive is damaged: 'amk salvage ") == true) }
            }
        }

        @Test func truncatedArchiveSalvagesEarlyMembers() throws {
            let handle = try FileHandle(forUpdating: URL(fileURLWithPath: archive))
            let size = try handle.seekToEnd()
            try handle.truncate(atOffset: size / 2)
            try handle.close()

            #expect(try AMKProcess.run(["verify", archive]).status == 1)
            let info = try AMKProcess.run(["info", archive])
            #expect(info.status == 1)
            #expect(info.stderr.contains("the xz index at the end of the file cannot be read"), "\(info.stderr)")
            #expect(info.stdout.isEmpty, "no zero counts for a damaged file: \(info.stdout)")

            let result = try AMKProcess.run(["salvage", archive, "-C", tree.path("rescued")])
            #expect(result.status == 1, "damage found exits 1: \(result.stderr)")
            let lines = result.stdout.split(separator: "\n").map(String.init)
            let recovered = try #require(lines.first?.firstMatch(of: /recovered (\d+) members/)).output.1
            #expect(Int(recovered)! >= 3, "\(result.stdout)")
            #expect(lines.contains { $0.wholeMatch(of: /damage at offset \d+: .+/) != nil }, "\(result.stdout)")
            // Without the index (cut off with the end) only the member cut by the damage is known lost.
            #expect(lines.contains { $0.hasPrefix("lost at least 1 member (no readable index lists") }, "\(result.stdout)")
            #expect(lines.contains("  data/file3.bin"), "the member cut by the damage is named: \(result.stdout)")
            // Early members come back whole; the late ones are not there at all.
            for index in 0..<3 {
                #expect(try tree.read("rescued/data/file\(index).bin") == tree.read("src/data/file\(index).bin"))
            }
            #expect(!tree.exists("rescued/data/file9.bin"))
        }

        /// Every block verifies, but a hard link's target is not in the archive before it: salvage
        /// names the link lost and exits 1 (it said "no damage found" and exited 0).
        @Test(.enabled(if: ChildProcess.lookUp("python3") != nil && ChildProcess.lookUp("xz") != nil, "needs python3 and xz"))
        func aHardLinkWithoutItsTargetIsNamedLost() throws {
            let made = try ShellPipeline.run(
                """
                python3 -c "
                import tarfile, io
                with tarfile.open('fwd.tar', 'w', format=tarfile.USTAR_FORMAT) as t:
                    h = tarfile.TarInfo('h'); h.type = tarfile.LNKTYPE; h.linkname = 'f'; t.addfile(h)
                    f = tarfile.TarInfo('f'); f.size = 4; t.addfile(f, io.BytesIO(b'data'))
                " && xz fwd.tar
                """, in: tree.root)
            #expect(made.status == 0, "\(made.stderr)")
            let result = try AMKProcess.run(["salvage", tree.path("fwd.tar.xz"), "-C", tree.path("rescued")])
            #expect(result.status == 1, "\(result.stderr)")
            let lines = result.stdout.split(separator: "\n").map(String.init)
            #expect(!lines.contains("no damage found"), "\(result.stdout)")
            #expect(lines.contains("lost 1 member:") && lines.contains("  h"), "\(result.stdout)")
            #expect(try tree.read("rescued/f") == Array("data".utf8))
        }

        /// A whole archive salvages everything, reports no damage and exits 0.
        @Test func wholeArchiveSalvagesWithStatusZero() throws {
            let result = try AMKProcess.run(["salvage", archive, "-C", tree.path("rescued")])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.split(separator: "\n").contains("no damage found"), "\(result.stdout)")
            for index in 0..<10 {
                #expect(try tree.read("rescued/data/file\(index).bin") == tree.read("src/data/file\(index).bin"))
            }
        }

        /// An archive without an integrity check (`xz --check=none`): a changed byte of content
        /// cannot be found, and `verify` said "OK: verified", `salvage` "no damage found", as of
        /// any archive. They now say that only the headers were checked, from a file and a pipe.
        @Test(.enabled(if: ChildProcess.lookUp("xz") != nil && ChildProcess.lookUp("tar") != nil, "needs xz and tar"))
        func anArchiveWithoutAnIntegrityCheckIsNotCalledVerified() throws {
            try tree.write("plain/note.txt", "hello\n")
            let made = try ShellPipeline.run(
                "tar -cf - plain | xz --check=none > none.tar.xz && tar -cf - plain | xz > crc.tar.xz", in: tree.root)
            try #require(made.status == 0, "\(made.stderr)")
            let warning = "the xz stream carries no integrity check (check type None)"
            for command in ["\"$AMK\" verify none.tar.xz", "cat none.tar.xz | \"$AMK\" verify -"] {
                let result = try ShellPipeline.run(command, in: tree.root)
                #expect(result.status == 0, "\(command): \(result.stderr)")
                #expect(result.stdout == "OK: 2 members verified (headers only: the archive carries no integrity check)\n", "\(command)")
                #expect(result.stderr.contains(warning), "\(command): \(result.stderr)")
            }
            let json = try AMKProcess.run(["verify", "--json", "none.tar.xz"], in: tree.root)
            let report = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
            #expect(report["contentChecked"] as? Bool == false, "\(json.stdout)")
            let salvaged = try AMKProcess.run(["salvage", "none.tar.xz", "-C", "out"], in: tree.root)
            #expect(salvaged.status == 0 && salvaged.stderr.contains(warning), "\(salvaged.stderr)")
            // With a check, nothing of the kind.
            let checked = try AMKProcess.run(["verify", "--json", "crc.tar.xz"], in: tree.root)
            #expect(checked.status == 0 && checked.stderr.isEmpty, "\(checked.stderr)")
            let checkedReport = try #require(try JSONSerialization.jsonObject(with: Data(checked.stdout.utf8)) as? [String: Any])
            #expect(checkedReport["contentChecked"] as? Bool == true, "\(checked.stdout)")
        }

        /// Cut inside the xz Index: every block is intact, so every member comes back, but the
        /// cut is damage, reported where the file ends, and the status says so.
        @Test func truncatedInsideTheIndexIsDamage() throws {
            let handle = try FileHandle(forUpdating: URL(fileURLWithPath: archive))
            let size = try handle.seekToEnd()
            // The footer is 12 bytes and the xz Index of ten-odd blocks is longer than 8 more.
            try handle.truncate(atOffset: size - 20)
            try handle.close()

            let result = try AMKProcess.run(["salvage", archive, "-C", tree.path("rescued")])
            #expect(result.status == 1, "\(result.stderr)")
            let lines = result.stdout.split(separator: "\n").map(String.init)
            #expect(!lines.contains("no damage found"), "\(result.stdout)")
            #expect(lines.contains { $0.hasPrefix("damage at offset \(size - 20): ") }, "\(result.stdout)")
            for index in 0..<10 {
                #expect(try tree.read("rescued/data/file\(index).bin") == tree.read("src/data/file\(index).bin"))
            }
        }

        /// An extraction that damage stops says so, then what recovers the rest; a refusal that
        /// is not damage (a member not in the archive) gets no such advice.
        @Test func damageStoppingAnExtractionPointsToSalvage() throws {
            try damageTheMiddle()

            let result = try AMKProcess.run(["extract", archive, "-C", tree.path("out")])
            #expect(result.status == 1)
            let lines = result.stderr.split(separator: "\n").map(String.init)
            // The member the damage cut, named as removed; then the damage; then the advice.
            #expect(lines.count == 3, "\(result.stderr)")
            #expect(lines.first?.contains("removed: the extraction failed while it was being written") == true, "\(result.stderr)")
            let damage = lines.dropLast().last
            #expect(damage?.hasPrefix("amk: \(archive)") == true && damage?.contains(/offset \d+/) == true, "\(result.stderr)")
            #expect(lines.last?.hasPrefix("amk: the archive is damaged: 'amk salvage ARCHIVE -C DIR'") == true, "\(result.stderr)")
            // The advice holds: the members on either side of the damage come back.
            let salvage = try AMKProcess.run(["salvage", archive, "-C", tree.path("rescued")])
            #expect(salvage.status == 1, "\(salvage.stderr)")
            for index in [0, 9] {
                #expect(try tree.read("rescued/data/file\(index).bin") == tree.read("src/data/file\(index).bin"))
            }

            let missing = try AMKProcess.run(["extract", archive, "data/no-such-file", "-C", tree.path("out")])
            #expect(missing.status == 1)
            #expect(missing.stderr.split(separator: "\n").count == 1 && !missing.stderr.contains("salvage"), "\(missing.stderr)")
        }

        @Test func damagedMiddleSalvagesAndNamesEveryLostMember() throws {
            try damageTheMiddle()

            let result = try AMKProcess.run(["salvage", archive, "-C", tree.path("rescued")])
            #expect(result.status == 1, "damage found exits 1: \(result.stderr)")
            let lines = result.stdout.split(separator: "\n").map(String.init)
            // The index at the end is intact: salvage resumes after the damaged block, so only the
            // members that touch it are lost, and each is named; the last file comes back.
            let lost = try #require(lines.first { $0.hasPrefix("lost ") }?.firstMatch(of: /^lost (\d+) members?:$/)).output.1
            #expect((1...3).contains(Int(lost)!), "\(result.stdout)")
            #expect(try tree.read("rescued/data/file0.bin") == tree.read("src/data/file0.bin"))
            #expect(try tree.read("rescued/data/file9.bin") == tree.read("src/data/file9.bin"), "a member after the damage is recovered")
            let lostNames = lines.filter { $0.hasPrefix("  data/") }.map { String($0.dropFirst(2)) }
            #expect(lostNames.count == Int(lost)!)
            for name in lostNames { #expect(!tree.exists("rescued/" + name), "\(name) was reported lost but written") }
        }
    }
}
