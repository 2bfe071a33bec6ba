import Foundation

/// Decoded tar bytes handed on without a copy: `bytes[range]`, which start at `offset` in the
/// tar stream. Sendable, so a piece can go to the thread that writes it as it is.
struct DecodedPiece: Sendable {
    let bytes: [UInt8]
    let range: Range<Int>
    let offset: UInt64

    var count: Int { range.count }

    func withBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        // `Array.withUnsafeBytes` rethrows untyped; carry the typed error out in a Result.
        let result = bytes.withUnsafeBytes { raw in
            Result { () throws(E) -> R in try body(UnsafeRawBufferPointer(rebasing: raw[range])) }
        }
        return try result.get()
    }

    /// The part of the piece between tar offsets `offsets`, which must lie within it; the same
    /// buffer, not a copy.
    func slice(_ offsets: Range<UInt64>) -> DecodedPiece {
        let lower = range.lowerBound + Int(offsets.lowerBound - offset)
        return DecodedPiece(
            bytes: bytes, range: lower..<(lower + Int(offsets.upperBound - offsets.lowerBound)),
            offset: offsets.lowerBound)
    }
}
