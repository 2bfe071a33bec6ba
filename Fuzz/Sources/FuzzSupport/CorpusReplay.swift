import Foundation

/// Runs a fuzz entry point over files, without libFuzzer: the regression mode of a plain build.
///
/// Every input the fuzzer ever found interesting (the checked-in corpus, and any crash saved
/// under `Fuzz/Crashes/` once fixed) can be replayed by a normal build, so a fix stays fixed
/// even where the libFuzzer runtime is not available.
public enum CorpusReplay {
    /// Replays every file named in `arguments` (files, or directories read recursively), or
    /// every file of `defaultCorpus` when there are none, in name order; exits with status 1
    /// when no input is found, so a wrong path cannot pass as a clean run.
    public static func main(target: String, defaultCorpus: URL, arguments: [String], body: (UnsafeRawBufferPointer) -> Void) {
        let roots = arguments.isEmpty ? [defaultCorpus.path] : arguments
        var files: [String] = []
        for root in roots {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: root, isDirectory: &isDirectory) else {
                FileHandle.standardError.write(Data("\(target): no such file or directory: \(root)\n".utf8))
                exit(1)
            }
            if isDirectory.boolValue {
                let enumerator = FileManager.default.enumerator(atPath: root)
                while let relative = enumerator?.nextObject() as? String {
                    let full = root + "/" + relative
                    if FileManager.default.fileExists(atPath: full, isDirectory: &isDirectory), !isDirectory.boolValue {
                        files.append(full)
                    }
                }
            } else {
                files.append(root)
            }
        }
        guard !files.isEmpty else {
            FileHandle.standardError.write(Data("\(target): no inputs in \(roots.joined(separator: " "))\n".utf8))
            exit(1)
        }
        let start = Date()
        for file in files.sorted() {
            guard let data = FileManager.default.contents(atPath: file) else {
                FileHandle.standardError.write(Data("\(target): cannot read \(file)\n".utf8))
                exit(1)
            }
            // Named before it runs, so a crash log says which input did it.
            FileHandle.standardError.write(Data("\(target): \(file)\n".utf8))
            Array(data).withUnsafeBytes { body($0) }
        }
        let seconds = String(format: "%.2f", Date().timeIntervalSince(start))
        print("\(target): replayed \(files.count) inputs in \(seconds) s, no crash")
    }
}
