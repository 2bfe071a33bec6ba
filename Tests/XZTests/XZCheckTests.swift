import TestSupport
import Testing
import XZ

@Suite(.background) struct XZCheckTests {
    @Test func rawValuesAreFormatIDs() {
        #expect(XZCheck.none.rawValue == 0)
        #expect(XZCheck.crc32.rawValue == 1)
        #expect(XZCheck.crc64.rawValue == 4)
        #expect(XZCheck.sha256.rawValue == 10)
        #expect(XZCheck(rawValue: 2) == nil)
    }

    @Test func sizes() {
        #expect(XZCheck.none.size == 0)
        #expect(XZCheck.crc32.size == 4)
        #expect(XZCheck.crc64.size == 8)
        #expect(XZCheck.sha256.size == 32)
    }
}
