import CLZMA

/// The integrity check stored after each block of an .xz stream; the raw values are the check IDs
/// of the xz file format.
public enum XZCheck: UInt8, Sendable {
    /// No check.
    case none = 0
    /// CRC32 (4 bytes).
    case crc32 = 1
    /// CRC64 (8 bytes); what this package writes.
    case crc64 = 4
    /// SHA-256 (32 bytes).
    case sha256 = 10

    /// Size in bytes of the Check field after each block: 0, 4, 8 or 32.
    public var size: Int {
        switch self {
        case .none: 0
        case .crc32: 4
        case .crc64: 8
        case .sha256: 32
        }
    }
}

extension XZCheck {
    /// The check named by decoded stream flags, refusing IDs outside the four defined ones.
    init(decoded check: lzma_check, what: String, fileOffset: UInt64) throws {
        guard let known = XZCheck(rawValue: UInt8(truncatingIfNeeded: check.rawValue)) else {
            throw XZError(code: .unsupportedCheck, message: "\(what) names unsupported check type \(check.rawValue)", offset: fileOffset)
        }
        self = known
    }
}
