import Tar
import Testing

struct TarErrorTests {
    @Test func descriptionNamesTheOffset() {
        let error = TarError(code: .badChecksum, message: "checksum mismatch (stored 01234, computed 01235)", offset: 1536)
        #expect(error.description == "tar header at offset 1536: checksum mismatch (stored 01234, computed 01235)")
        #expect("\(error)" == error.description)
    }

    @Test func descriptionWithoutOffset() {
        let error = TarError(code: .invalidValue, message: "empty path")
        #expect(error.offset == nil)
        #expect(error.description == "tar: empty path")
    }

    @Test func equalityCoversAllFields() {
        let base = TarError(code: .truncated, message: "m", offset: 1)
        #expect(base == TarError(code: .truncated, message: "m", offset: 1))
        #expect(base != TarError(code: .badField, message: "m", offset: 1))
        #expect(base != TarError(code: .truncated, message: "n", offset: 1))
        #expect(base != TarError(code: .truncated, message: "m", offset: 2))
    }

    /// The parser's checksum error reads like the documented example, with the stored and the
    /// independently computed sums in six-digit octal.
    @Test func checksumErrorFromParserHasDocumentedShape() throws {
        var third = RawBlock(name: "c.txt")
        let good = independentChecksum(third.bytes)
        third.set(148, "000001")
        let bytes =
            RawBlock(name: "a.txt").bytes + RawBlock(name: "b.txt").bytes
            + RawBlock(name: "d.txt").bytes + third.bytes + TarEncoder.endOfArchive
        let error = try #require(tarError { _ = try parse(bytes) })
        let computed = String(good, radix: 8)
        #expect(
            error.description
                == "tar header at offset 1536: checksum mismatch (stored 000001, computed \(String(repeating: "0", count: 6 - computed.count) + computed))"
        )
    }
}
