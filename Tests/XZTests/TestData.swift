import TestSupport

/// Deterministic test data, so a failure reproduces.
struct TestData {
    /// The shared seeded generator: fast, and good enough that LZMA cannot compress its output.
    private var generator: SeededGenerator

    init(seed: UInt64) { generator = SeededGenerator(seed: seed) }

    mutating func next() -> UInt64 { generator.next() }

    /// Incompressible bytes.
    static func random(_ count: Int, seed: UInt64 = 1) -> [UInt8] {
        fill(count, seed: seed) { $0 }
    }

    /// Bytes with 4 bits of entropy each: LZMA gets them to about half, never to nothing.
    static func mild(_ count: Int, seed: UInt64 = 2) -> [UInt8] {
        fill(count, seed: seed) { ($0 & 0x0F0F_0F0F_0F0F_0F0F) | 0x4040_4040_4040_4040 }
    }

    /// Long repeats of a 4 KiB unit with 64 fresh random bytes per unit: compresses to a few
    /// percent and quickly, for tests that need big inputs without spending seconds per MiB.
    static func repetitive(_ count: Int, seed: UInt64 = 3) -> [UInt8] {
        let unitSize = 4096
        let unit = random(unitSize, seed: seed)
        var generator = TestData(seed: seed &+ 1)
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            let raw = UnsafeMutableRawBufferPointer(buffer)
            var position = 0
            var index = 0
            while position < count {
                let length = min(unitSize, count - position)
                unit.withUnsafeBytes { raw.baseAddress!.advanced(by: position).copyMemory(from: $0.baseAddress!, byteCount: length) }
                let noise = (index * 712) % (unitSize - 64)
                for word in 0..<8 where noise + word * 8 + 8 <= length {
                    raw.storeBytes(of: generator.next(), toByteOffset: position + noise + word * 8, as: UInt64.self)
                }
                position += length
                index += 1
            }
            initialized = count
        }
    }

    private static func fill(_ count: Int, seed: UInt64, _ transform: (UInt64) -> UInt64) -> [UInt8] {
        var generator = TestData(seed: seed)
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            let raw = UnsafeMutableRawBufferPointer(buffer)
            var position = 0
            while position < count {
                let word = transform(generator.next()).littleEndian
                let length = min(8, count - position)
                withUnsafeBytes(of: word) { raw.baseAddress!.advanced(by: position).copyMemory(from: $0.baseAddress!, byteCount: length) }
                position += length
            }
            initialized = count
        }
    }
}
