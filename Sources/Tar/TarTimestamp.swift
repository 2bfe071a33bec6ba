/// A point in time as tar stores it: whole seconds since the Unix epoch plus a nanosecond part.
///
/// The ustar header only holds whole non-negative seconds; anything finer or outside its range
/// travels in a pax `mtime` record, which is why nanoseconds are kept separately rather than as
/// a floating-point value that could not round-trip exactly.
public struct TarTimestamp: Sendable, Equatable, Hashable, Comparable {
    /// Seconds since 1970-01-01T00:00:00Z; negative for earlier times.
    public var seconds: Int64
    /// The fraction of a second, always in `0..<1_000_000_000` after `init`.
    public var nanoseconds: UInt32

    /// Creates a timestamp.
    ///
    /// A `nanoseconds` value of one second or more is carried into `seconds` (saturating at
    /// `Int64.max`), so the stored value is always normalised and comparison stays meaningful.
    public init(seconds: Int64, nanoseconds: UInt32 = 0) {
        let carry = Int64(nanoseconds / 1_000_000_000)
        let (sum, overflow) = seconds.addingReportingOverflow(carry)
        self.seconds = overflow ? Int64.max : sum
        self.nanoseconds = nanoseconds % 1_000_000_000
    }

    /// Orders by seconds, then nanoseconds: chronological order.
    public static func < (lhs: TarTimestamp, rhs: TarTimestamp) -> Bool {
        (lhs.seconds, lhs.nanoseconds) < (rhs.seconds, rhs.nanoseconds)
    }
}
