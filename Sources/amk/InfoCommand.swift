import ArgumentParser
import Foundation
import IndexedArchive

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `amk info A`: the archive's structure (streams, blocks, sizes, ratio, index, metadata) as a
/// small two-column table. Reads only the end of an indexed archive.
///
/// Metadata comes from whoever wrote the archive: keys and values are escaped (``TerminalSafe``).
struct InfoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info",
        abstract: "Show an archive's structure: streams, blocks, sizes, ratio, index and metadata.",
        discussion: """
            Reads only the end of a file. From a pipe (`-`), the archive is first copied to a \
            temporary file, since its structure is described at its end.

            Examples:
              amk info app.tar.xz
              amk info --json app.tar.xz | jq .metadata
            """
    )

    @Argument(help: ArgumentHelp("The archive to describe; - reads standard input.", valueName: "archive"), completion: .file())
    var archive: String

    @Flag(help: "Print a JSON object (see README, \"JSON output\").")
    var json = false

    func run() async throws {
        let argument = archive
        let info = try await SignalCancellation.run {
            switch try await ArchiveInput.resolve(argument) {
            case .file(let path):
                return try await ListCommand.opened(path).info()
            case .stream(let fd, _):
                let copy = try await ArchiveInput.spool(fd)
                defer { close(copy.fd) }
                do {
                    return try await ArchiveReader.open(path: copy.path).info()
                } catch var error as ArchiveError where error.path == copy.path {
                    // The copy's name (`/dev/fd/9`) is nothing the user gave: the input is `-`.
                    error.path = "-"
                    throw error
                }
            }
        }
        if json {
            try JSONOutput.print(InfoReport(info, archive: argument))
        } else {
            for line in Self.table(Self.rows(archive: argument, info: info)) { print(line) }
        }
    }

    static func rows(archive: String, info: ArchiveInfo) -> [(String, String)] {
        // A damaged file never gets here: `info()` throws when the xz Index cannot be read.
        var rows: [(String, String)] = [
            ("archive", TerminalSafe.name(archive)),
            ("file size", sizeWithBytes(info.fileSize)),
            ("uncompressed", sizeWithBytes(info.uncompressedSize)),
            ("ratio", String(format: "%.1f%%", ratio(info) * 100)),
            ("streams", "\(info.streams)"),
            ("blocks", "\(info.blocks) (\(info.dataBlocks) data, \(info.blocks - info.dataBlocks) index)")
        ]
        if let tarSize = info.tarSize { rows.append(("tar size", sizeWithBytes(tarSize))) }
        if let chunkSize = info.chunkSize { rows.append(("chunk size", ByteSize.format(chunkSize))) }
        var index: String
        if info.isIndexed {
            let count = info.indexedEntries ?? 0
            index = "amk index, \(count) \(count == 1 ? "member" : "members") (random access)"
        } else {
            index = "none (read sequentially)"
        }
        if info.hasPixzIndex { index += "; pixz index" }
        rows.append(("index", index))
        if info.metadata.isEmpty {
            rows.append(("metadata", "none"))
        } else {
            for (position, key) in info.metadata.keys.sorted().enumerated() {
                rows.append((position == 0 ? "metadata" : "", "\(TerminalSafe.name(key)): \(TerminalSafe.name(info.metadata[key]!))"))
            }
        }
        return rows
    }

    /// File size over tar size, as `amk pack` reports it; over all decompressed bytes when the
    /// archive has no index to give the tar size (then the index blocks are not there to count).
    static func ratio(_ info: ArchiveInfo) -> Double {
        guard let tarSize = info.tarSize, tarSize > 0 else { return info.ratio }
        return Double(info.fileSize) / Double(tarSize)
    }

    /// Left column padded to its widest label.
    static func table(_ rows: [(String, String)]) -> [String] {
        let width = rows.map(\.0.count).max() ?? 0
        return rows.map { label, value in
            label.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + value
        }
    }

    /// `1.2 MiB (1234567 bytes)`, or just `512 B` when the two would say the same.
    static func sizeWithBytes(_ bytes: UInt64) -> String {
        bytes < 1024 ? ByteSize.format(bytes) : "\(ByteSize.format(bytes)) (\(bytes) bytes)"
    }
}
