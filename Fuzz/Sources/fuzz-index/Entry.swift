import Foundation
import FuzzSupport

/// libFuzzer's entry point: one input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzIndexTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    FuzzIndex.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

/// Built by `Fuzz/run` (`-sanitize=fuzzer -DAMK_FUZZ`) this is libFuzzer, taking its flags and
/// corpus directories. A plain build replays files instead:
/// `swift run --package-path Fuzz fuzz-index [file or directory ...]` (default: `Fuzz/Corpus/index`);
/// `fuzz-index --write-seeds DIR` writes the true index of the fixed tar stream it wraps.
@main
enum FuzzIndexMain {
    static func main() {
        #if AMK_FUZZ
        exit(LibFuzzer.run(fuzzIndexTestOneInput))
        #else
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "--write-seeds", arguments.count == 2 {
            for (name, bytes) in FuzzIndex.seeds {
                guard FileManager.default.createFile(atPath: arguments[1] + "/" + name, contents: Data(bytes)) else {
                    fatalError("cannot write \(arguments[1])/\(name)")
                }
            }
            return
        }
        let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Corpus/index").standardizedFileURL
        CorpusReplay.main(target: "fuzz-index", defaultCorpus: corpus, arguments: arguments) {
            FuzzIndex.run($0)
        }
        try? FileManager.default.removeItem(atPath: FuzzIndex.scratch)
        #endif
    }
}
