import ArgumentParser

/// The commands' timeouts (`--stall-timeout`, `--idle-timeout`, `--accept-timeout`,
/// `--status-timeout`): seconds, fractions allowed, checked and converted by one rule, so that
/// the flags of one tool agree and a test or an impatient user can ask for half a second.
enum TransferTimeout {
    /// The longest timeout accepted: about 31 years, far beyond any use, and small enough that
    /// the conversion to a `Duration` in nanoseconds cannot overflow.
    static let maximumSeconds = 1e9
    /// The shortest: a millisecond, so that no timeout rounds to nothing (1e-12 once gave up at
    /// once and said "within 0 s").
    static let minimumSeconds = 0.001

    /// Checks that `seconds` is positive, finite and at most ``maximumSeconds`` (`nan`, `inf` and
    /// `0` parse as numbers).
    static func validate(_ seconds: Double, flag: String) throws {
        guard seconds > 0, seconds.isFinite else {
            throw ValidationError("\(flag) must be a positive number of seconds, not \(seconds).")
        }
        guard seconds >= minimumSeconds else {
            throw ValidationError("\(flag) must be at least \(minimumSeconds) seconds (a millisecond), not \(seconds).")
        }
        guard seconds <= maximumSeconds else {
            throw ValidationError("\(flag) must be at most \(Int(maximumSeconds)) seconds (about 31 years), not \(seconds).")
        }
    }

    static func duration(_ seconds: Double) -> Duration {
        .nanoseconds(Int64((seconds * 1e9).rounded()))
    }
}
