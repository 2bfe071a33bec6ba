import Foundation
import FuzzSupport

/// libFuzzer's entry point: one input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTarTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    FuzzTar.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

/// Built by `Fuzz/run` (`-sanitize=fuzzer -DAMK_FUZZ`) this is libFuzzer, taking its flags and
/// corpus directories. A plain build replays files instead:
/// `swift run --package-path Fuzz fuzz-tar [file or directory ...]` (default: `Fuzz/Corpus/tar`).
@main
enum FuzzTarMain {
    static func main() {
        #if AMK_FUZZ
        exit(LibFuzzer.run(fuzzTarTestOneInput))
        #else
        let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Corpus/tar").standardizedFileURL
        CorpusReplay.main(target: "fuzz-tar", defaultCorpus: corpus, arguments: Array(CommandLine.arguments.dropFirst())) {
            FuzzTar.run($0)
        }
        #endif
    }
}
