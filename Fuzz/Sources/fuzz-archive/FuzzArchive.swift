import Foundation
import FuzzSupport
import IndexedArchive

/// The archive reader's fuzz body: the input is a whole `.tar.xz` file. It is written to a
/// scratch file and opened with ``ArchiveReader``, then listed (`entries`), described (`info`),
/// verified (`verify`), and its first regular member read (`contents(of:)`), so the xz layer, the
/// rich and pixz indexes, random access and the sequential path all see hostile bytes. Errors are
/// the expected outcome and are ignored; only a crash (or a sanitizer report) counts.
enum FuzzArchive {
    /// One scratch file per process, rewritten for each input.
    static let scratch = NSTemporaryDirectory() + "amk-fuzz-archive-\(getpid()).bin"

    static func run(_ input: UnsafeRawBufferPointer) {
        guard FileManager.default.createFile(atPath: scratch, contents: Data(input)) else {
            fatalError("cannot write \(scratch)")
        }
        let path = scratch
        Blocking.run {
            guard let reader = try? ArchiveReader(path: path) else { return }
            let entries = try? await reader.entries()
            _ = try? await reader.info()
            _ = try? await reader.verify()
            if let first = entries?.first(where: { $0.kind == .regular }) {
                _ = try? await reader.contents(of: first.path, maxBytes: 1 << 20)
            }
        }
    }
}
