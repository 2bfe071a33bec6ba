import Tar
import Testing

struct TarTimestampTests {
    @Test func ordersBySecondsThenNanoseconds() {
        let times = [
            TarTimestamp(seconds: -5, nanoseconds: 999_999_999),
            TarTimestamp(seconds: 0),
            TarTimestamp(seconds: 0, nanoseconds: 1),
            TarTimestamp(seconds: 1, nanoseconds: 0),
            TarTimestamp(seconds: 1, nanoseconds: 500)
        ]
        for (index, time) in times.enumerated() {
            for (other, later) in times.enumerated() {
                #expect((time < later) == (index < other), "\(time) vs \(later)")
            }
        }
        #expect(TarTimestamp(seconds: 3, nanoseconds: 7) == TarTimestamp(seconds: 3, nanoseconds: 7))
    }

    @Test func excessNanosecondsCarryIntoSeconds() {
        let time = TarTimestamp(seconds: 10, nanoseconds: 2_500_000_000)
        #expect(time.seconds == 12)
        #expect(time.nanoseconds == 500_000_000)
        let saturated = TarTimestamp(seconds: .max, nanoseconds: 1_000_000_001)
        #expect(saturated.seconds == .max)
        #expect(saturated.nanoseconds == 1)
    }

    /// The pax `mtime` value is the signed decimal time, so a negative time with a fraction
    /// must be written as `-(|s| - 1).(1e9 - ns)`, and read back to the same value.
    @Test(arguments: [
        (TarTimestamp(seconds: 1_700_000_000, nanoseconds: 1), "1700000000.000000001"),
        (TarTimestamp(seconds: 0, nanoseconds: 999_999_999), "0.999999999"),
        (TarTimestamp(seconds: -2, nanoseconds: 500_000_000), "-1.500000000"),
        (TarTimestamp(seconds: -1, nanoseconds: 1), "-0.999999999"),
        (TarTimestamp(seconds: -86_400), "-86400"),
        (TarTimestamp(seconds: 0o100000000000), "8589934592")
    ])
    func paxTimeFormatRoundTrips(time: TarTimestamp, text: String) throws {
        let encoded = try TarEncoder.encode(TarHeader(path: "t", kind: .regular, mtime: time))
        let records = try #require(paxRecords(encoded))
        #expect(records.map(\.key) == ["mtime"])
        #expect(records.first?.value == text)
        let decoded = try #require(members(try parse(encoded + TarEncoder.endOfArchive)).first)
        #expect(decoded.header.mtime == time)
    }

    @Test(arguments: [
        ("1.1234567899", TarTimestamp(seconds: 1, nanoseconds: 123_456_789)),
        ("12.5", TarTimestamp(seconds: 12, nanoseconds: 500_000_000)),
        ("-0.25", TarTimestamp(seconds: -1, nanoseconds: 750_000_000)),
        ("42", TarTimestamp(seconds: 42))
    ])
    func foreignPaxTimesAreRead(text: String, expected: TarTimestamp) throws {
        let records = paxRecord("mtime", text)
        let bytes =
            RawBlock(name: "PaxHeaders/t", typeflag: UInt8(ascii: "x"), size: UInt64(records.count)).bytes
            + padded(records) + RawBlock(name: "t").bytes + TarEncoder.endOfArchive
        let member = try #require(members(try parse(bytes)).first)
        #expect(member.header.mtime == expected)
    }
}
