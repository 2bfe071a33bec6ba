import TestSupport
import Testing

@testable import XZ

@Suite(.background) struct VLITests {
    /// nil when the reader ran out of bytes, .some(nil) for an invalid encoding.
    private func decode(_ bytes: [UInt8]) -> UInt64?? {
        var position = 0
        struct Exhausted: Error {}
        do {
            let value = try VLI.decode {
                guard position < bytes.count else { throw Exhausted() }
                defer { position += 1 }
                return bytes[position]
            }
            return .some(value)
        } catch {
            return nil
        }
    }

    @Test func knownEncodings() {
        var out: [UInt8] = []
        VLI.append(0, to: &out)
        VLI.append(127, to: &out)
        VLI.append(128, to: &out)
        VLI.append(300, to: &out)
        #expect(out == [0x00, 0x7F, 0x80, 0x01, 0xAC, 0x02])
    }

    @Test func roundTrip() {
        for value: UInt64 in [0, 1, 127, 128, 16_383, 16_384, 1 << 35, VLI.max] {
            var out: [UInt8] = []
            VLI.append(value, to: &out)
            #expect(out.count <= VLI.maxBytes)
            #expect(decode(out) == .some(value))
        }
    }

    @Test func rejectsInvalidEncodings() {
        // A trailing zero byte makes the encoding non-minimal.
        #expect(decode([0x80, 0x00]) == .some(nil))
        // Ten bytes is more than the format allows.
        #expect(decode(Array(repeating: 0xFF, count: 9) + [0x01]) == .some(nil))
        // Running out of input is the reader's error, not a value.
        #expect(decode([0x80]) == nil)
    }
}
