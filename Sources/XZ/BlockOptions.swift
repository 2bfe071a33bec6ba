import CLZMA

/// An `lzma_block` and its filter chain at stable heap addresses.
///
/// liblzma's block encoder and decoder keep a pointer to the `lzma_block` while they run (they
/// write the final sizes and the check into it), so it cannot live on the Swift stack.
final class BlockOptions {
    /// Room for `LZMA_FILTERS_MAX` filters plus the terminator, as `lzma_block_header_decode` needs.
    static let filterSlots = Int(LZMA_FILTERS_MAX) + 1

    let block: UnsafeMutablePointer<lzma_block>
    let filters: UnsafeMutablePointer<lzma_filter>
    /// True while `filters` holds options that `lzma_block_header_decode` allocated.
    private var ownsFilterOptions = false

    init() {
        block = .allocate(capacity: 1)
        block.initialize(to: lzma_block())
        filters = .allocate(capacity: Self.filterSlots)
        filters.initialize(repeating: lzma_filter(id: amk_lzma_vli_unknown, options: nil), count: Self.filterSlots)
    }

    deinit {
        releaseDecodedFilters()
        filters.deinitialize(count: Self.filterSlots)
        filters.deallocate()
        block.deinitialize(count: 1)
        block.deallocate()
    }

    /// Frees the filter options of a previously decoded header.
    func releaseDecodedFilters() {
        if ownsFilterOptions {
            lzma_filters_free(filters, nil)
            ownsFilterOptions = false
        }
    }

    /// Resets `block` for encoding or decoding with `check`, keeping the filter array attached.
    func reset(check: XZCheck) {
        block.pointee = lzma_block()
        block.pointee.version = 1
        block.pointee.check = lzma_check(UInt32(check.rawValue))
        block.pointee.filters = filters
        block.pointee.compressed_size = amk_lzma_vli_unknown
        block.pointee.uncompressed_size = amk_lzma_vli_unknown
    }

    /// Decodes the Block Header at the start of `bytes` into `block` and `filters`.
    ///
    /// - Throws: `XZError` naming `fileOffset` when the header is missing, short, the index
    ///   indicator, or corrupt.
    func decodeHeader(_ bytes: UnsafeRawBufferPointer, check: XZCheck, fileOffset: UInt64) throws {
        releaseDecodedFilters()
        guard let base = bytes.baseAddress, !bytes.isEmpty else {
            throw XZError(code: .truncated, message: "block header missing: no bytes at the block's start", offset: fileOffset)
        }
        let first = bytes[0]
        guard first != 0 else {
            throw XZError(code: .data, message: "found the xz Index indicator (0x00) where a Block Header was expected", offset: fileOffset)
        }
        let headerSize = Int(amk_lzma_block_header_size_decode(first))
        guard bytes.count >= headerSize else {
            throw XZError(
                code: .truncated, message: "block header needs \(headerSize) bytes, only \(bytes.count) available", offset: fileOffset)
        }
        reset(check: check)
        block.pointee.header_size = UInt32(headerSize)
        let ret = lzma_block_header_decode(block, nil, base.assumingMemoryBound(to: UInt8.self))
        guard ret == LZMA_OK else {
            // On failure liblzma has already freed whatever it allocated and reset the array.
            switch ret {
            case LZMA_DATA_ERROR:
                throw XZError(code: .data, message: "corrupt block header (CRC32 mismatch or invalid field)", offset: fileOffset)
            case LZMA_OPTIONS_ERROR:
                throw XZError(code: .options, message: "block header names unsupported filters or options", offset: fileOffset)
            default:
                throw XZError(ret, "decoding block header", offset: fileOffset)
            }
        }
        ownsFilterOptions = true
    }
}
