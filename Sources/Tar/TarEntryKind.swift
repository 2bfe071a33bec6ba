/// The kind of a tar member, as recorded in the header's one-byte typeflag.
///
/// Only the POSIX typeflags have names. Anything else (vendor extensions such as GNU's `'V'`
/// volume label) is carried as ``other(_:)`` so that a reader can report it rather than fail.
public enum TarEntryKind: Sendable, Equatable, Hashable {
    /// A regular file (`'0'`; also decoded from `'\0'` and `'7'`).
    case regular
    /// A hard link to an earlier member (`'1'`); the target is ``TarHeader/linkTarget``.
    case hardLink
    /// A symbolic link (`'2'`); the target is ``TarHeader/linkTarget``.
    case symbolicLink
    /// A character device (`'3'`).
    case characterDevice
    /// A block device (`'4'`).
    case blockDevice
    /// A directory (`'5'`; also decoded from GNU's `'D'`, the dumpdir of an incremental archive,
    /// whose content lists the folder's names for `tar --listed-incremental` and is read as any
    /// content: a plain extraction makes the folder, as GNU tar and bsdtar do).
    case directory
    /// A named pipe (`'6'`).
    case fifo
    /// Any other typeflag byte, kept verbatim.
    case other(UInt8)

    /// The typeflag byte written for this kind.
    public var typeflag: UInt8 {
        switch self {
        case .regular: UInt8(ascii: "0")
        case .hardLink: UInt8(ascii: "1")
        case .symbolicLink: UInt8(ascii: "2")
        case .characterDevice: UInt8(ascii: "3")
        case .blockDevice: UInt8(ascii: "4")
        case .directory: UInt8(ascii: "5")
        case .fifo: UInt8(ascii: "6")
        case .other(let byte): byte
        }
    }

    /// The kind a typeflag byte stands for.
    ///
    /// `'\0'` is the pre-POSIX spelling of a regular file and `'7'` (contiguous file) is
    /// extracted as a regular file by every common implementation, so both map to ``regular``.
    public init(typeflag: UInt8) {
        switch typeflag {
        case 0, UInt8(ascii: "0"), UInt8(ascii: "7"): self = .regular
        case UInt8(ascii: "1"): self = .hardLink
        case UInt8(ascii: "2"): self = .symbolicLink
        case UInt8(ascii: "3"): self = .characterDevice
        case UInt8(ascii: "4"): self = .blockDevice
        case UInt8(ascii: "5"), UInt8(ascii: "D"): self = .directory
        case UInt8(ascii: "6"): self = .fifo
        default: self = .other(typeflag)
        }
    }
}
