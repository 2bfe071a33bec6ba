#ifndef AMK_CLZMA_SHIM_H
#define AMK_CLZMA_SHIM_H

#include <lzma.h>

// Swift does not import function-like or composite macros; these re-export the ones we use.

/// LZMA_VLI_UNKNOWN: "size not known", the terminator of a filter chain.
static const lzma_vli amk_lzma_vli_unknown = LZMA_VLI_UNKNOWN;
/// LZMA_VLI_MAX: the largest value a variable-length integer may hold.
static const lzma_vli amk_lzma_vli_max = LZMA_VLI_MAX;
/// LZMA_STREAM_HEADER_SIZE: both the stream header and the footer are this long.
static const uint32_t amk_lzma_stream_header_size = LZMA_STREAM_HEADER_SIZE;
/// LZMA_BLOCK_HEADER_SIZE_MAX.
static const uint32_t amk_lzma_block_header_size_max = LZMA_BLOCK_HEADER_SIZE_MAX;
/// LZMA_PRESET_EXTREME flag bit.
static const uint32_t amk_lzma_preset_extreme = LZMA_PRESET_EXTREME;
/// LZMA_CONCATENATED decoder flag.
static const uint32_t amk_lzma_concatenated = LZMA_CONCATENATED;
/// LZMA_FILTER_LZMA2 filter id.
static const lzma_vli amk_lzma_filter_lzma2 = LZMA_FILTER_LZMA2;
/// LZMA_FILTER_X86 filter id: the x86 branch/call/jump converter (`xz --x86`).
static const lzma_vli amk_lzma_filter_x86 = LZMA_FILTER_X86;
/// LZMA_DICT_SIZE_MIN.
static const uint32_t amk_lzma_dict_size_min = LZMA_DICT_SIZE_MIN;

/// lzma_block_header_size_decode(b): the real header size from its first byte.
static inline uint32_t amk_lzma_block_header_size_decode(uint8_t first_byte) {
    return lzma_block_header_size_decode(first_byte);
}

/// A zero-initialised stream, as LZMA_STREAM_INIT gives in C.
static inline lzma_stream amk_lzma_stream_init(void) {
    lzma_stream s = LZMA_STREAM_INIT;
    return s;
}

#endif
