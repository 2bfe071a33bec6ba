import CLZMA

/// Typed error for every `lzma_ret` and every framing problem.
///
/// Errors name what was wrong and, when known, where in the compressed file it was found, so a
/// reader of an untrusted archive can report a damaged file precisely.
public struct XZError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of failure.
    public enum Code: Sendable, Equatable {
        /// liblzma could not allocate memory (`LZMA_MEM_ERROR`).
        case memory
        /// Decoding would need more memory than the configured limit (`LZMA_MEMLIMIT_ERROR`).
        case memoryLimit
        /// The input is not in the .xz format (`LZMA_FORMAT_ERROR`, bad magic bytes).
        case format
        /// Unsupported or invalid options, such as a bad preset (`LZMA_OPTIONS_ERROR`).
        case options
        /// Corrupt data, a check mismatch or a bad CRC (`LZMA_DATA_ERROR`).
        case data
        /// The input ends too early (`LZMA_BUF_ERROR` while decoding, a short file).
        case truncated
        /// The integrity check type is not supported (`LZMA_UNSUPPORTED_CHECK`).
        case unsupportedCheck
        /// liblzma was called incorrectly (`LZMA_PROG_ERROR`); a bug, not bad input.
        case program
        /// The xz Index or the Stream Footer is inconsistent with the file.
        case corruptIndex
        /// Any other `lzma_ret` value.
        case other(Int32)
    }

    /// The kind of failure.
    public var code: Code
    /// What was wrong, for example "block check mismatch".
    public var message: String
    /// Byte offset in the compressed file where the problem was detected, when known.
    public var offset: UInt64?

    /// Creates an error.
    public init(code: Code, message: String, offset: UInt64? = nil) {
        self.code = code
        self.message = message
        self.offset = offset
    }

    /// A one-line description, such as "xz data error at offset 12345: block check mismatch".
    public var description: String {
        let kind: String
        switch code {
        case .memory: kind = "xz memory error"
        case .memoryLimit: kind = "xz memory limit error"
        case .format: kind = "xz format error"
        case .options: kind = "xz options error"
        case .data: kind = "xz data error"
        case .truncated: kind = "xz truncation error"
        case .unsupportedCheck: kind = "xz unsupported check error"
        case .program: kind = "xz program error"
        case .corruptIndex: kind = "xz corrupt index error"
        case .other(let value): kind = "xz error \(value)"
        }
        if let offset {
            return "\(kind) at offset \(offset): \(message)"
        }
        return "\(kind): \(message)"
    }
}

extension XZError.Code {
    /// Maps a liblzma return value. `LZMA_BUF_ERROR` means "no progress possible", which for the
    /// decoders we drive with all the input we have can only mean the input ended too early.
    init(_ ret: lzma_ret) {
        switch ret {
        case LZMA_MEM_ERROR: self = .memory
        case LZMA_MEMLIMIT_ERROR: self = .memoryLimit
        case LZMA_FORMAT_ERROR: self = .format
        case LZMA_OPTIONS_ERROR: self = .options
        case LZMA_DATA_ERROR: self = .data
        case LZMA_BUF_ERROR: self = .truncated
        case LZMA_UNSUPPORTED_CHECK: self = .unsupportedCheck
        case LZMA_PROG_ERROR: self = .program
        default: self = .other(Int32(bitPattern: ret.rawValue))
        }
    }
}

extension XZError {
    /// An error for a failed liblzma call; `context` says what we were doing.
    init(_ ret: lzma_ret, _ context: String, offset: UInt64? = nil) {
        let reason: String
        switch ret {
        case LZMA_MEM_ERROR: reason = "out of memory"
        case LZMA_MEMLIMIT_ERROR: reason = "memory limit reached"
        case LZMA_FORMAT_ERROR: reason = "not in the .xz format"
        case LZMA_OPTIONS_ERROR: reason = "unsupported options"
        case LZMA_DATA_ERROR: reason = "corrupt data"
        case LZMA_BUF_ERROR: reason = "unexpected end of input"
        case LZMA_UNSUPPORTED_CHECK: reason = "unsupported integrity check"
        case LZMA_PROG_ERROR: reason = "invalid arguments to liblzma"
        default: reason = "liblzma returned \(ret.rawValue)"
        }
        self.init(code: Code(ret), message: "\(context): \(reason)", offset: offset)
    }
}
