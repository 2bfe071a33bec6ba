import IndexedArchive

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Writes to file descriptor 2 directly.
///
/// `FileHandle.standardError` would do, but the C `stderr` global is not concurrency-safe in Swift
/// 6, and the progress bar writes from whatever thread reports progress: one `write(2)` per
/// message keeps lines from different threads whole.
enum StandardError {
    /// Whether standard error is a terminal: progress bars only make sense there.
    static var isTerminal: Bool { isatty(STDERR_FILENO) != 0 }

    /// Writes `text` as is.
    static func write(_ text: String) {
        write(text, to: STDERR_FILENO)
    }

    /// Writes `text` to `fd` with `write(2)`, whole (`amk extract -v` lists members on standard
    /// output from the extracting thread).
    static func write(_ text: String, to fd: Int32) {
        write(Array(text.utf8), to: fd)
    }

    /// Writes `bytes` to `fd` with `write(2)`, whole; false when `fd` refused them (a closed pipe:
    /// `amk list A | head`), so that a listing written in pieces stops there.
    @discardableResult
    static func write(_ bytes: [UInt8], to fd: Int32) -> Bool {
        // Read in place: a mutable view would copy the listing first.
        bytes.withUnsafeBytes { raw in
            guard let base = raw.baseAddress else { return true }
            var offset = 0
            while offset < raw.count {
                let written = Platform.write(fd, base + offset, raw.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return false  // nowhere left to report a failing stderr
                }
                offset += written
            }
            return true
        }
    }

    /// Writes `line` and a newline.
    static func line(_ line: String) {
        write(line + "\n")
    }

    /// Columns of the terminal on standard error, 80 when it cannot be told.
    static var columns: Int {
        var size = winsize()
        let result = withUnsafeMutablePointer(to: &size) { ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), $0) }
        return result == 0 && size.ws_col > 0 ? Int(size.ws_col) : 80
    }
}
