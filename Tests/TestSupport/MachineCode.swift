/// Bytes shaped like x86-64 machine code, for tests of the branch filter: short instructions
/// from a small vocabulary, and every few instructions a `call rel32` to one of a few dozen
/// functions. As in real code, each call site encodes the same target as a different relative
/// displacement, which is what the x86 filter turns back into repeats.
package enum MachineCode {
    /// `count` bytes of synthetic x86-64 code, the same for the same seed.
    package static func x86(_ count: Int, seed: UInt64) -> [UInt8] {
        var generator = SeededGenerator(seed: seed)
        let vocabulary: [[UInt8]] = [
            [0x55], [0x48, 0x89, 0xE5], [0x48, 0x83, 0xEC, 0x10], [0x48, 0x8B, 0x45, 0xF8], [0x89, 0xC7],
            [0x31, 0xC0], [0x48, 0x85, 0xC0], [0x74, 0x05], [0x5D], [0xC3], [0x0F, 0x1F, 0x44, 0x00, 0x00]
        ]
        let functions = (0..<40).map { _ in UInt32(truncatingIfNeeded: generator.next() % 0x40_0000) }
        var code: [UInt8] = []
        code.reserveCapacity(count + 8)
        while code.count < count {
            for _ in 0..<Int(generator.next() % 4) { code += vocabulary[Int(generator.next() % UInt64(vocabulary.count))] }
            let target = functions[Int(generator.next() % UInt64(functions.count))]
            let displacement = target &- UInt32(truncatingIfNeeded: code.count + 5)
            code.append(0xE8)
            withUnsafeBytes(of: displacement.littleEndian) { code += $0 }
        }
        return Array(code.prefix(count))
    }

    /// A file that starts as an x86-64 ELF executable does (the 64-byte ELF header's identifying
    /// fields, `e_machine` 0x3E), followed by `codeSize` bytes of ``x86(_:seed:)``.
    package static func elfExecutable(codeSize: Int, seed: UInt64) -> [UInt8] {
        var header = [UInt8](repeating: 0, count: 64)
        header.replaceSubrange(0..<7, with: [0x7F, 0x45, 0x4C, 0x46, 2, 1, 1])  // ELF, 64-bit, little-endian, v1
        header[16] = 3  // e_type: shared object
        header[18] = 0x3E  // e_machine: x86-64
        header[20] = 1  // e_version
        return header + x86(codeSize, seed: seed)
    }
}
