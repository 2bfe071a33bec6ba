import FuzzSupport
import Tar

/// The tar parser's fuzz body: the input is a tar stream, fed to ``TarParser`` whole and again in
/// slices of sizes derived from the input, every event consumed, then `finish`.
///
/// Beyond "no crash", it checks what the parser promises, so that a broken promise stops the
/// fuzzer like a crash: both feeds give the same events and the same error; every failure is a
/// `TarError` naming an offset inside the input; no name holds a NUL; member offsets increase
/// and sit on block boundaries; content arrives contiguously and adds up to the member's size.
enum FuzzTar {
    /// One event, with content runs merged (their slicing depends on the feed).
    enum Summary: Equatable {
        case global(records: Int, offset: UInt64)
        case member(TarMember)
        case data(offset: UInt64, count: Int, hash: UInt64)
        case hole(length: UInt64)
        case memberEnd
        case end(offset: UInt64)
    }

    struct Outcome: Equatable {
        var events: [Summary] = []
        var error: TarError?
    }

    static func run(_ input: UnsafeRawBufferPointer) {
        var random = InputRandom(input)
        let requireEndMarker = random.next() & 1 == 0
        let whole = parse(input, requireEndMarker: requireEndMarker) { Int.max }
        let sliced = parse(input, requireEndMarker: requireEndMarker) {
            switch random.next() % 3 {
            case 0: Int.random(in: 1...16, using: &random)
            case 1: Int.random(in: 1...700, using: &random)
            default: Int.random(in: 1...8192, using: &random)
            }
        }
        precondition(whole == sliced, "slicing changed the outcome: whole \(whole.error.map { "\($0)" } ?? "ok") with \(whole.events.count) events, sliced \(sliced.error.map { "\($0)" } ?? "ok") with \(sliced.events.count) events")
    }

    static func parse(_ input: UnsafeRawBufferPointer, requireEndMarker: Bool, nextSlice: () -> Int) -> Outcome {
        var parser = TarParser()
        var outcome = Outcome()
        var member: TarMember?
        var expectedData: UInt64 = 0
        var received: UInt64 = 0
        var lastHeader: UInt64?
        func handle(_ event: TarParser.Event) {
            switch event {
            case .globalHeader(let records, let offset):
                precondition(offset % 512 == 0 && offset < UInt64(input.count), "global header offset \(offset)")
                for record in records { _ = record.key.utf8.count + record.value.utf8.count }
                outcome.events.append(.global(records: records.count, offset: offset))
            case .member(let found):
                precondition(member == nil, "member before the previous one ended")
                let header = found.header
                precondition(!header.path.utf8.contains(0), "path holds a NUL")
                precondition(header.linkTarget?.utf8.contains(0) != true, "link target holds a NUL")
                precondition(header.userName?.utf8.contains(0) != true && header.groupName?.utf8.contains(0) != true, "owner holds a NUL")
                precondition(header.path.utf8.count <= TarParser.Limits().maxPathLength, "path over the limit")
                precondition(header.kind != .directory || header.path.hasSuffix("/"), "directory without a slash")
                precondition(found.headerOffset % 512 == 0 && found.dataOffset % 512 == 0, "offsets off block boundaries")
                precondition(found.headerOffset < found.dataOffset && found.dataOffset <= UInt64(input.count), "offsets out of order")
                precondition(lastHeader.map { $0 < found.headerOffset } ?? true, "members out of order")
                lastHeader = found.headerOffset
                member = found
                expectedData = found.dataOffset
                received = 0
                outcome.events.append(.member(found))
            case .data(let bytes, let offset):
                guard let current = member else { preconditionFailure("data outside a member") }
                precondition(offset == expectedData && !bytes.isEmpty, "data not contiguous")
                expectedData += UInt64(bytes.count)
                received += UInt64(bytes.count)
                precondition(received <= current.header.size, "more content than the size")
                // FNV-1a over the run, continued across slices so it does not depend on them.
                func hashed(_ seed: UInt64) -> UInt64 {
                    var hash = seed
                    for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
                    return hash
                }
                if case .data(let start, let count, let previous)? = outcome.events.last {
                    outcome.events[outcome.events.count - 1] = .data(offset: start, count: count + bytes.count, hash: hashed(previous))
                } else {
                    outcome.events.append(.data(offset: offset, count: bytes.count, hash: hashed(0xcbf2_9ce4_8422_2325)))
                }
            case .hole(let length):
                guard let current = member else { preconditionFailure("hole outside a member") }
                precondition(current.isSparse && length > 0, "a hole of \(length) bytes in a member that is not sparse")
                let (total, overflow) = received.addingReportingOverflow(length)
                precondition(!overflow && total <= current.header.size, "holes past the size")
                received = total
                outcome.events.append(.hole(length: length))
            case .memberEnd:
                guard let current = member else { preconditionFailure("memberEnd outside a member") }
                precondition(received == current.header.size, "content \(received) of \(current.header.size)")
                member = nil
                outcome.events.append(.memberEnd)
            case .end(let offset):
                precondition(member == nil && offset % 512 == 0, "end inside a member")
                outcome.events.append(.end(offset: offset))
            }
        }
        do {
            var index = 0
            while index < input.count {
                let size = max(1, min(nextSlice(), input.count - index))
                try parser.consume(UnsafeRawBufferPointer(rebasing: input[index..<(index + size)]), handler: handle)
                index += size
            }
            try parser.finish(requireEndMarker: requireEndMarker)
            precondition(parser.offset == UInt64(input.count), "offset \(parser.offset) after \(input.count) bytes")
            precondition(member == nil, "finished inside a member")
        } catch let error as TarError {
            precondition(error.offset.map { $0 <= UInt64(input.count) } ?? true, "error offset \(String(describing: error.offset)) past the input")
            outcome.error = error
        } catch {
            preconditionFailure("not a TarError: \(error)")
        }
        return outcome
    }
}
