import AppMigration
import Foundation

/// Generates the demo container and compares two containers.
enum DemoContainer {
    struct Made {
        var files = 0
        var links = 0
        var folders = 0
        var bytes = 0
        var kinds: [(name: String, bytes: Int)] = []
    }

    /// A fast, deterministic generator (SplitMix64): the same container every run.
    struct Random {
        var state: UInt64

        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }

        mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }

        /// `count` bytes that do not compress.
        mutating func noise(_ count: Int) -> [UInt8] {
            [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
                var index = 0
                while index < count {
                    var word = next()
                    for _ in 0..<min(8, count - index) {
                        buffer[index] = UInt8(truncatingIfNeeded: word)
                        word >>= 8
                        index += 1
                    }
                }
                initialized = count
            }
        }
    }

    static let words =
        ("meeting notes project draft budget review travel recipe garden photo family weekend "
        + "invoice reminder birthday grocery list ideas book chapter summary call plan design sketch "
        + "holiday school report update friday monday lunch coffee deadline team launch release").split(separator: " ").map(String.init)
    static let wordBytes = words.map { Array($0.utf8) }
    static let names = ["Ada", "Grace", "Linus", "Margaret", "Alan", "Barbara", "Dennis", "Ken", "Radia", "Frances"]
    static let nameBytes = names.map { Array($0.utf8) }
    static let emailBytes = names.map { Array("\($0.lowercased())@example.com".utf8) }

    /// Appends `count` words separated by spaces; bytes, not strings, because the demo writes tens
    /// of MiB of text and should spend its seconds migrating, not generating.
    static func appendSentence(_ random: inout Random, words count: Int, to out: inout [UInt8]) {
        for index in 0..<count {
            if index > 0 { out.append(0x20) }
            out += wordBytes[random.below(wordBytes.count)]
        }
    }

    static func appendNumber(_ value: Int, to out: inout [UInt8]) {
        out += Array(String(value).utf8)
    }

    static func sentence(_ random: inout Random, words count: Int) -> String {
        var out: [UInt8] = []
        appendSentence(&random, words: count, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Writes `bytes` at `relative` under `folder`, with `mode`.
    static func write(_ bytes: [UInt8], _ relative: String, in folder: URL, mode: Int = 0o644, made: inout Made) throws {
        let url = folder.appending(path: relative, directoryHint: .notDirectory)
        let parent = url.deletingLastPathComponent()
        if !FileManager.default.fileExists(atPath: parent.path(percentEncoded: false)) {
            try FileManager.default.createDirectory(at: parent, withIntermediateDirectories: true)
        }
        try Data(bytes).write(to: url)
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: url.path(percentEncoded: false))
        made.files += 1
        made.bytes += bytes.count
    }

    /// An SQLite-like database: a 100-byte header, then 4 KiB pages of binary page headers and
    /// cell pointers around rows of text, which is how real databases compress (3-5x).
    static func database(_ random: inout Random, bytes: Int, table: String) -> [UInt8] {
        let pageSize = 4096
        let pages = max(2, bytes / pageSize)
        var out: [UInt8] = []
        out.reserveCapacity(pages * pageSize)
        var header = Array("SQLite format 3\0".utf8)
        header += [0x10, 0x00, 0x01, 0x01, 0x00, 0x40, 0x20, 0x20]
        header += random.noise(100 - header.count)
        out += header
        out += [UInt8](repeating: 0, count: pageSize - header.count)
        var rowID = 1
        for _ in 1..<pages {
            var page: [UInt8] = [0x0D, 0, 0]
            page += random.noise(9)
            var cells: [UInt8] = []
            var rows: [UInt8] = []
            let tableBytes = Array(table.utf8)
            var row: [UInt8] = []
            while rows.count < pageSize - 400 {
                cells += [UInt8(truncatingIfNeeded: rows.count >> 8), UInt8(truncatingIfNeeded: rows.count)]
                let person = random.below(names.count)
                row.removeAll(keepingCapacity: true)
                appendNumber(rowID, to: &row)
                row.append(0x7C)
                row += tableBytes
                row.append(0x7C)
                row += nameBytes[person]
                row.append(0x7C)
                row += emailBytes[person]
                row.append(0x7C)
                appendSentence(&random, words: 6 + random.below(18), to: &row)
                row.append(0x7C)
                appendNumber(1_700_000_000 + random.below(50_000_000), to: &row)
                row.append(0x0A)
                rows.append(UInt8(truncatingIfNeeded: row.count))
                rows += random.noise(3)
                rows += row
                rowID += 1
            }
            page += cells
            let free = pageSize - page.count - rows.count
            page += [UInt8](repeating: 0, count: max(0, free))
            page += rows
            out += page.prefix(pageSize)
        }
        return out
    }

    static func json(_ random: inout Random, id: Int) -> [UInt8] {
        let tags = (0..<(1 + random.below(4))).map { _ in "\"\(words[random.below(words.count)])\"" }.joined(separator: ", ")
        var paragraphBytes: [UInt8] = []
        for index in 0..<(4 + random.below(16)) {
            if index > 0 { paragraphBytes += Array(",\n    ".utf8) }
            paragraphBytes.append(0x22)
            appendSentence(&random, words: 20 + random.below(60), to: &paragraphBytes)
            paragraphBytes.append(0x22)
        }
        let paragraphs = String(decoding: paragraphBytes, as: UTF8.self)
        let text = """
            {
              "id": \(id),
              "title": "\(sentence(&random, words: 3 + random.below(4)))",
              "author": "\(names[random.below(names.count)])",
              "created": "2025-\(String(format: "%02d", 1 + random.below(12)))-\(String(format: "%02d", 1 + random.below(28)))T10:\(String(format: "%02d", random.below(60))):00Z",
              "tags": [\(tags)],
              "pinned": \(random.below(5) == 0),
              "paragraphs": [
                \(paragraphs)
              ]
            }

            """
        return Array(text.utf8)
    }

    /// Photos and videos: a format header, then noise (compressed media does not compress again).
    static func media(_ random: inout Random, bytes: Int, header: [UInt8]) -> [UInt8] {
        header + random.noise(max(0, bytes - header.count))
    }

    static func generate(in container: MigrationDataContainer, targetBytes: Int) throws -> Made {
        var made = Made()
        var random = Random(state: 2026)
        let docs = container.documentsDirectory
        let support = container.applicationSupportDirectory

        // Databases: 40%, in three files of different sizes.
        let databaseBytes = targetBytes * 40 / 100
        for (name, share) in [("notes.sqlite", 60), ("search-index.sqlite", 30), ("sync-journal.sqlite", 10)] {
            try write(
                database(&random, bytes: databaseBytes * share / 100, table: name), "Databases/\(name)", in: support, mode: 0o600,
                made: &made)
        }
        let afterDatabases = made.bytes
        made.kinds.append(("databases", afterDatabases))

        // JSON documents: 15%, 1-12 KiB each, by year and month.
        var id = 1
        while made.bytes - afterDatabases < targetBytes * 15 / 100 {
            let path = "Notes/\(2021 + id % 5)/\(String(format: "%02d", 1 + id % 12))/note-\(id).json"
            try write(json(&random, id: id), path, in: docs, made: &made)
            id += 1
        }
        let afterDocuments = made.bytes
        made.kinds.append(("documents", afterDocuments - afterDatabases))

        // Media: 40%, photos of 0.5-3 MiB in albums and one video.
        let mediaBytes = targetBytes * 40 / 100
        let jpeg: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE1] + Array("Exif\0\0".utf8)
        let mp4: [UInt8] = [0, 0, 0, 0x20] + Array("ftypisom".utf8)
        try write(media(&random, bytes: mediaBytes / 4, header: mp4), "Media/Videos/first-steps.mp4", in: docs, made: &made)
        var photo = 1
        while made.bytes - afterDocuments < mediaBytes {
            let size = min((512 << 10) + random.below(5 << 19), max(1024, mediaBytes - (made.bytes - afterDocuments)))
            let album = ["Camera Roll", "Holidays/2024", "Holidays/2025", "Family"][photo % 4]
            try write(
                media(&random, bytes: size, header: jpeg), "Media/\(album)/IMG_\(String(format: "%04d", photo)).jpg",
                in: docs, made: &made)
            photo += 1
        }
        let afterMedia = made.bytes
        made.kinds.append(("media", afterMedia - afterDocuments))

        // The rest: logs, settings, an executable hook, an empty folder and a link.
        var log: [UInt8] = []
        let logTarget = max(4096, targetBytes - afterMedia - 8192)
        log.reserveCapacity(logTarget + 256)
        while log.count < logTarget {
            log += Array("2025-06-".utf8)
            appendNumber(10 + random.below(19), to: &log)
            log += Array(" INFO sync: ".utf8)
            appendSentence(&random, words: 8, to: &log)
            log.append(0x0A)
        }
        try write(log, "Logs/sync.log", in: support, made: &made)
        try write(Array(#"{"theme":"dark","fontSize":15,"sync":true}"#.utf8), "settings.json", in: support, made: &made)
        try write(Array("#!/bin/sh\necho migrated\n".utf8), "Hooks/after-import.sh", in: support, mode: 0o755, made: &made)
        try FileManager.default.createDirectory(at: docs.appending(path: "Drafts"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(
            atPath: docs.appending(path: "latest-note.json").path(percentEncoded: false),
            withDestinationPath: "Notes/2021/01/note-5.json")
        made.links = 1
        made.kinds.append(("other", made.bytes - afterMedia))
        made.folders = try walk(container).folders
        return made
    }

    // MARK: - Comparing

    struct Walk {
        var files: [String: (mode: Int, size: Int)] = [:]
        var links: [String: String] = [:]
        var folderPaths: Set<String> = []
        var folders: Int { folderPaths.count }
    }

    /// Documents and Application Support of `container`, by path relative to the container root.
    static func walk(_ container: MigrationDataContainer) throws -> Walk {
        var result = Walk()
        let root = container.containerRootDirectory.path(percentEncoded: false)
        for folder in ["Documents", "Library/Application Support"] {
            let base = root + "/" + folder
            guard let enumerator = FileManager.default.enumerator(atPath: base) else { continue }
            while let relative = enumerator.nextObject() as? String {
                let path = folder + "/" + relative
                let attributes = try FileManager.default.attributesOfItem(atPath: root + "/" + path)
                switch attributes[.type] as? FileAttributeType {
                case .typeRegular?:
                    result.files[path] = ((attributes[.posixPermissions] as? Int) ?? 0, (attributes[.size] as? Int) ?? 0)
                case .typeSymbolicLink?:
                    result.links[path] = try FileManager.default.destinationOfSymbolicLink(atPath: root + "/" + path)
                case .typeDirectory?:
                    result.folderPaths.insert(path)
                default:
                    continue
                }
            }
        }
        return result
    }

    struct DemoMismatch: Error, CustomStringConvertible {
        var description: String
    }

    /// Checks that `destination` holds exactly `source`'s files (bytes and modes), links and folders.
    static func compare(_ source: MigrationDataContainer, _ destination: MigrationDataContainer) async throws
        -> (files: Int, links: Int, folders: Int)
    {
        let before = try walk(source)
        let after = try walk(destination)
        guard Set(before.files.keys) == Set(after.files.keys) else {
            let missing = Set(before.files.keys).symmetricDifference(after.files.keys).sorted().prefix(5)
            throw DemoMismatch(description: "the containers hold different files: \(missing.joined(separator: ", "))")
        }
        guard before.links == after.links else { throw DemoMismatch(description: "the links differ") }
        guard before.folderPaths == after.folderPaths else {
            let differing = before.folderPaths.symmetricDifference(after.folderPaths).sorted().prefix(5)
            throw DemoMismatch(description: "the folders differ: \(differing.joined(separator: ", "))")
        }
        let sourceRoot = source.containerRootDirectory.path(percentEncoded: false)
        let destinationRoot = destination.containerRootDirectory.path(percentEncoded: false)
        for (path, expected) in before.files.sorted(by: { $0.key < $1.key }) {
            try Task.checkCancellation()
            let found = after.files[path]!
            guard found.mode == expected.mode else {
                throw DemoMismatch(
                    description: "\(path): mode \(String(found.mode, radix: 8)), expected \(String(expected.mode, radix: 8))")
            }
            guard found.size == expected.size, try sameBytes(sourceRoot + "/" + path, destinationRoot + "/" + path) else {
                throw DemoMismatch(description: "\(path): the bytes differ")
            }
        }
        return (before.files.count, before.links.count, before.folders)
    }

    static func sameBytes(_ first: String, _ second: String) throws -> Bool {
        guard let a = FileHandle(forReadingAtPath: first), let b = FileHandle(forReadingAtPath: second) else {
            throw DemoMismatch(description: "cannot open \(first) or \(second)")
        }
        defer {
            try? a.close()
            try? b.close()
        }
        while true {
            let left = try a.read(upToCount: 1 << 20) ?? Data()
            let right = try b.read(upToCount: 1 << 20) ?? Data()
            guard left == right else { return false }
            if left.isEmpty { return true }
        }
    }
}
