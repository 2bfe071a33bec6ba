import Foundation
import FuzzSupport

/// libFuzzer's entry point: one input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzArchiveTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    FuzzArchive.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

/// Built by `Fuzz/run` (`-sanitize=fuzzer -DAMK_FUZZ`) this is libFuzzer, taking its flags and
/// corpus directories. A plain build replays files instead:
/// `swift run --package-path Fuzz fuzz-archive [file or directory ...]` (default: `Fuzz/Corpus/archive`).
@main
enum FuzzArchiveMain {
    static func main() {
        #if AMK_FUZZ
        exit(LibFuzzer.run(fuzzArchiveTestOneInput))
        #else
        let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Corpus/archive").standardizedFileURL
        CorpusReplay.main(target: "fuzz-archive", defaultCorpus: corpus, arguments: Array(CommandLine.arguments.dropFirst())) {
            FuzzArchive.run($0)
        }
        try? FileManager.default.removeItem(atPath: FuzzArchive.scratch)
        #endif
    }
}
