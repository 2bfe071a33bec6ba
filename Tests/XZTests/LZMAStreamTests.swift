import CLZMA
import TestSupport
import Testing

@testable import XZ

@Suite(.background) struct LZMAStreamTests {
    @Test func streamCanBeReinitialisedForAnotherCoder() {
        let stream = LZMAStream()
        let input = TestData.mild(10_000, seed: 80)
        var output = [UInt8](repeating: 0, count: 20_000)
        for _ in 0..<2 {
            #expect(lzma_easy_encoder(stream.pointer, 1, LZMA_CHECK_CRC64) == LZMA_OK)
            let produced = input.withUnsafeBytes { inBytes in
                output.withUnsafeMutableBytes { outBytes in
                    stream.setInput(inBytes)
                    stream.setOutput(outBytes)
                    #expect(lzma_code(stream.pointer, LZMA_FINISH) == LZMA_STREAM_END)
                    return outBytes.count - stream.pointer.pointee.avail_out
                }
            }
            #expect(produced > 12)
            #expect(stream.pointer.pointee.total_in == 10_000)
            #expect(Array(output[..<6]) == [0xFD, 0x37, 0x7A, 0x58, 0x5A, 0x00])
        }
    }
}
