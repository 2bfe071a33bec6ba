import Foundation
import Synchronization

/// A one-line progress bar with rate and ETA, redrawn in place on standard error.
///
/// Progress arrives from the engine's callbacks on arbitrary threads, often thousands of times a
/// second, so the state lives behind a `Mutex` and the line is redrawn at most every
/// ``minimumInterval``: drawing is a syscall, and a terminal flooded with redraws slows the pack
/// it reports on. Create one only when standard error is a terminal; see ``StandardError/isTerminal``.
final class ProgressBar: Sendable {
    private struct State {
        var completed: UInt64 = 0
        var lastDraw: ContinuousClock.Instant?
        var visible = false
        var finished = false
    }

    /// Characters between the brackets.
    static let barWidth = 24

    /// Shortest time between two redraws: ten a second looks smooth and costs nothing.
    static let minimumInterval: Duration = .milliseconds(100)

    /// What the counts are.
    enum Unit: Sendable {
        /// Bytes: the line shows them, the rate and the ETA.
        case bytes
        /// Parts of a whole (a Foundation `Progress` in its own units): the line shows the
        /// percentage and the ETA only.
        case fraction
    }

    private let label: String
    private let total: UInt64
    private let unit: Unit
    private let start = ContinuousClock.now
    private let state = Mutex(State())

    /// - Parameters:
    ///   - label: a word shown before the bar (`packing`).
    ///   - total: the byte count that means 100%; 0 when unknown (then no bar or ETA, only bytes and rate).
    ///   - unit: what the counts are; bytes unless said.
    init(label: String, total: UInt64, unit: Unit = .bytes) {
        self.label = label
        self.total = total
        self.unit = unit
    }

    /// Sets the count of bytes done and redraws if the last redraw is old enough. Updates computed on different threads can arrive out of
    /// order, so the count never goes back.
    func update(completed: UInt64) {
        state.withLock { state in
            guard !state.finished else { return }
            state.completed = max(state.completed, completed)
            redraw(&state)
        }
    }

    /// Called with the lock held, so that two threads never interleave their lines.
    private func redraw(_ state: inout State) {
        let now = ContinuousClock.now
        if let last = state.lastDraw, now - last < Self.minimumInterval { return }
        state.lastDraw = now
        state.visible = true
        StandardError.write("\r" + render(completed: state.completed, now: now, columns: StandardError.columns) + "\u{1B}[K")
    }

    /// Erases the line, so that what is printed next starts on a clean line. Later updates are ignored.
    func finish() {
        state.withLock { state in
            guard !state.finished else { return }
            state.finished = true
            if state.visible { StandardError.write("\r\u{1B}[K") }
        }
    }

    /// The text of the line: `packing [#####.....]  45%  12.0 MiB/26.7 MiB  10.8 MiB/s  ETA 0:02`.
    func render(completed: UInt64, now: ContinuousClock.Instant, columns: Int) -> String {
        let elapsed = (now - start).secondsValue
        let rate = elapsed > 0 ? Double(completed) / elapsed : 0
        var figures = ByteSize.format(completed)
        if total > 0 { figures += "/" + ByteSize.format(total) }
        figures += "  " + ByteSize.formatRate(rate)
        if unit == .fraction { figures = "" }
        guard total > 0 else { return "\(label)  \(figures)" }
        let fraction = min(1, Double(completed) / Double(total))
        let percent = String(format: "%3d%%", Int(fraction * 100))
        let eta: String
        if rate > 0, completed < total {
            eta = "ETA " + Self.formatClock(Double(total - completed) / rate)
        } else {
            eta = completed >= total ? "ETA 0:00" : "ETA --:--"
        }
        let text = figures.isEmpty ? "  \(percent)  \(eta)" : "  \(percent)  \(figures)  \(eta)"
        // A fixed width, so the bar does not jump as the figures change length; dropped on a
        // terminal too narrow for it.
        let width = Self.barWidth
        guard label.count + text.count + width + 3 <= columns else { return "\(label)\(text)" }
        let filled = Int(fraction * Double(width))
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        return "\(label) [\(bar)]\(text)"
    }

    /// `m:ss`, or `h:mm:ss` past an hour.
    static func formatClock(_ seconds: Double) -> String {
        guard seconds.isFinite else { return "--:--" }
        let whole = Int(seconds.rounded(.up))
        let (hours, minutes, secs) = (whole / 3600, (whole / 60) % 60, whole % 60)
        return hours > 0
            ? String(format: "%d:%02d:%02d", hours, minutes, secs)
            : String(format: "%d:%02d", minutes, secs)
    }
}

extension Duration {
    /// The duration in seconds, as a Double.
    var secondsValue: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
