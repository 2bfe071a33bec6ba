#if AMK_FUZZ
import CFuzzer

/// Hands control to libFuzzer, which then calls `testOneInput` with each input it tries.
///
/// SwiftPM links an executable's `main` to its Swift entry point, so libFuzzer's own `main`
/// never runs; the Swift `main` calls this instead, with the process's arguments (libFuzzer's
/// flags and corpus directories).
public enum LibFuzzer {
    public typealias TestOneInput = @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt

    /// Runs libFuzzer's driver and returns its exit status.
    public static func run(_ testOneInput: TestOneInput) -> CInt {
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        return LLVMFuzzerRunDriver(&argc, &argv, testOneInput)
    }
}
#endif
