import CLZMA
import TestSupport
import Testing

@testable import XZ

@Suite(.background) struct XZErrorTests {
    @Test func descriptionWithOffset() {
        let error = XZError(code: .data, message: "block check mismatch", offset: 12345)
        #expect(error.description == "xz data error at offset 12345: block check mismatch")
    }

    @Test func descriptionWithoutOffset() {
        let error = XZError(code: .corruptIndex, message: "xz Index CRC32 mismatch")
        #expect(error.offset == nil)
        #expect(error.description == "xz corrupt index error: xz Index CRC32 mismatch")
        #expect(XZError(code: .other(42), message: "odd").description == "xz error 42: odd")
    }

    @Test func lzmaReturnCodesMapToCodes() {
        let cases: [(lzma_ret, XZError.Code)] = [
            (LZMA_MEM_ERROR, .memory), (LZMA_MEMLIMIT_ERROR, .memoryLimit), (LZMA_FORMAT_ERROR, .format),
            (LZMA_OPTIONS_ERROR, .options), (LZMA_DATA_ERROR, .data), (LZMA_BUF_ERROR, .truncated),
            (LZMA_UNSUPPORTED_CHECK, .unsupportedCheck), (LZMA_PROG_ERROR, .program),
            (LZMA_NO_CHECK, .other(2))
        ]
        for (ret, code) in cases {
            let error = XZError(ret, "testing", offset: 7)
            #expect(error.code == code)
            #expect(error.offset == 7)
            #expect(error.message.hasPrefix("testing: "))
            #expect(error.message.count > "testing: ".count)
        }
    }

    @Test func equality() {
        #expect(XZError(code: .data, message: "a", offset: 1) == XZError(code: .data, message: "a", offset: 1))
        #expect(XZError(code: .data, message: "a", offset: 1) != XZError(code: .data, message: "a", offset: 2))
        #expect(XZError.Code.other(1) != XZError.Code.other(2))
    }
}
