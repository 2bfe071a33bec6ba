import Foundation

/// Decoded tar bytes handed on without a copy: `bytes[range]`, which start at `offset` in the
/// tar stream. Sendable, so a piece can go to the thread that writes it as it is.
struct DecodedPiece: Sendable {
    let bytes: [UInt8]
    let range: Range<Int>
    let offset: UInt64
    /// Tar offset before which the bytes handed over so far have passed their integrity
    /// checks, when that falls short of this piece's end: a piece of a block too large to hold,
    /// handed on before its check is reached. Nil when the whole piece has passed.
    var verifiedThrough: UInt64? = nil

    /// Where the bytes that have passed their checks end, this piece's included.
    var verifiedEnd: UInt64 { verifiedThrough ?? offset + UInt64(count) }

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
            offset: offsets.lowerBound, verifiedThrough: verifiedThrough)
    }
}
