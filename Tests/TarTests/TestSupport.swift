// Helpers shared by the Tar tests. They deliberately re-implement the few format details they
// check (octal fields, checksums, pax records) instead of calling the module, so that a test
// compares the module's output with an independent reading of the format.

import Foundation
import Tar
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// MARK: - Reading encoded bytes independently of the module

/// A NUL-terminated string field of a block.
func field(_ bytes: [UInt8], _ start: Int, _ width: Int) -> String {
    let slice = bytes[start..<(start + width)]
    let end = slice.firstIndex(of: 0) ?? slice.endIndex
    return String(decoding: bytes[start..<end], as: UTF8.self)
}

/// The raw bytes of a field, as a string with NULs kept (to check exact widths).
func rawField(_ bytes: [UInt8], _ start: Int, _ width: Int) -> [UInt8] {
    Array(bytes[start..<(start + width)])
}

func octalValue(_ bytes: [UInt8], _ start: Int, _ width: Int) -> UInt64? {
    let text = field(bytes, start, width).trimmingCharacters(in: .whitespaces)
    return UInt64(text, radix: 8)
}

/// The pax records of the `x` header at the start of `encoded`, in order, parsed by a naive
/// independent reader; `nil` if the first block is not an `x` header. Also checks that every
/// record's declared length equals its actual length.
func paxRecords(_ encoded: [UInt8]) -> [(key: String, value: String)]? {
    guard encoded.count >= 512, encoded[156] == UInt8(ascii: "x") || encoded[156] == UInt8(ascii: "g") else { return nil }
    guard let size = octalValue(encoded, 124, 12) else { return nil }
    var data = encoded[512..<(512 + Int(size))]
    var records: [(key: String, value: String)] = []
    while !data.isEmpty {
        guard let space = data.firstIndex(of: UInt8(ascii: " ")),
            let length = Int(String(decoding: data[data.startIndex..<space], as: UTF8.self))
        else {
            Issue.record("malformed pax record length")
            return nil
        }
        let record = data.prefix(length)
        #expect(record.count == length, "pax record length \(length) but only \(record.count) bytes")
        #expect(record.last == UInt8(ascii: "\n"), "pax record does not end at its declared length")
        let body = record[(space + 1)..<(record.endIndex - 1)]
        guard let equals = body.firstIndex(of: UInt8(ascii: "=")) else {
            Issue.record("pax record without '='")
            return nil
        }
        records.append(
            (
                String(decoding: body[body.startIndex..<equals], as: UTF8.self),
                String(decoding: body[(equals + 1)...], as: UTF8.self)
            ))
        data = data.dropFirst(length)
    }
    return records
}

/// The ustar block of an encoded header (the last 512 bytes).
func ustarBlock(_ encoded: [UInt8]) -> [UInt8] {
    Array(encoded.suffix(512))
}

/// The checksum of a block computed from scratch (field counted as spaces).
func independentChecksum(_ block: [UInt8]) -> UInt64 {
    var sum: UInt64 = 0
    for (index, byte) in block.enumerated() {
        sum += (148..<156).contains(index) ? 32 : UInt64(byte)
    }
    return sum
}

// MARK: - Building raw blocks by hand (for foreign and hostile input)

/// A header block written field by field, with a valid checksum unless told otherwise.
struct RawBlock {
    var bytes = [UInt8](repeating: 0, count: 512)

    init(name: String, typeflag: UInt8 = UInt8(ascii: "0"), size: UInt64 = 0, magic: Magic = .ustar) {
        set(0, name)
        set(100, "0000644")
        set(108, "0001750")
        set(116, "0001750")
        let octalSize = String(size, radix: 8)
        // Up to 11 digits plus NUL; 12 digits fill the field without a terminator.
        set(124, String(repeating: "0", count: max(0, 11 - octalSize.count)) + octalSize)
        set(136, "14532413241")
        bytes[156] = typeflag
        switch magic {
        case .ustar:
            set(257, "ustar")
            set(263, "00")
        case .gnu:
            set(257, "ustar  ")
        case .v7:
            break
        }
        sealChecksum()
    }

    enum Magic { case ustar, gnu, v7 }

    mutating func set(_ offset: Int, _ text: String) {
        for (index, byte) in text.utf8.enumerated() { bytes[offset + index] = byte }
    }

    mutating func setBytes(_ offset: Int, _ values: [UInt8]) {
        for (index, byte) in values.enumerated() { bytes[offset + index] = byte }
    }

    mutating func sealChecksum() {
        let sum = independentChecksum(bytes)
        let text = String(sum, radix: 8)
        set(148, String(repeating: "0", count: 6 - text.count) + text)
        bytes[154] = 0
        bytes[155] = UInt8(ascii: " ")
    }
}

/// Content followed by zero padding to a block boundary.
func padded(_ content: [UInt8]) -> [UInt8] {
    content + [UInt8](repeating: 0, count: (512 - content.count % 512) % 512)
}

/// A pax record with a correct self-counting length, built independently.
func paxRecord(_ key: String, _ value: String) -> [UInt8] {
    let body = 3 + key.utf8.count + value.utf8.count
    var length = body + 1
    while String(length).utf8.count + body != length { length = String(length).utf8.count + body }
    return Array("\(length) \(key)=\(value)\n".utf8)
}

/// A pax record from raw bytes (a NUL or invalid UTF-8 anywhere), with a correct length.
func paxRecord(_ key: [UInt8], _ value: [UInt8]) -> [UInt8] {
    let body = 3 + key.count + value.count
    var length = body + 1
    while String(length).utf8.count + body != length { length = String(length).utf8.count + body }
    return Array("\(length) ".utf8) + key + [UInt8(ascii: "=")] + value + [UInt8(ascii: "\n")]
}

/// An extended header (pax `x` or `g`, GNU `L` or `K`) carrying `data` exactly as given, which
/// the encoder would refuse to write when it is hostile: its block (valid checksum) and the
/// padded data.
func extendedHeader(_ typeflag: Character, _ data: [UInt8]) -> [UInt8] {
    let gnu = typeflag == "L" || typeflag == "K"
    let name = gnu ? "././@LongLink" : typeflag == "g" ? "pax_global_header" : "PaxHeaders/member"
    return RawBlock(
        name: name, typeflag: UInt8(ascii: typeflag.unicodeScalars.first!), size: UInt64(data.count),
        magic: gnu ? .gnu : .ustar
    ).bytes + padded(data)
}

/// An archive from headers and contents, via the encoder.
func archive(_ members: [(TarHeader, [UInt8])], global: [(key: String, value: String)]? = nil) throws -> [UInt8] {
    var out: [UInt8] = []
    if let global { out += try TarEncoder.encodeGlobalHeader(global) }
    for (header, content) in members {
        out += try TarEncoder.encode(header)
        out += content
        out += [UInt8](repeating: 0, count: TarEncoder.padding(forContentSize: UInt64(content.count)))
    }
    return out + TarEncoder.endOfArchive
}

// MARK: - Recording parser events

/// A parser event with its bytes copied out, so events can be compared after the fact.
enum Recorded: Equatable, CustomStringConvertible {
    case global([String], offset: UInt64)
    case member(TarMember)
    case data([UInt8], offset: UInt64)
    case hole(UInt64)
    case memberEnd
    case end(offset: UInt64)

    var description: String {
        switch self {
        case .global(let records, let offset): "global(\(records), @\(offset))"
        case .member(let member): "member(\(member.header.path), size \(member.header.size), @\(member.headerOffset)/\(member.dataOffset))"
        case .data(let bytes, let offset): "data(\(bytes.count) bytes @\(offset))"
        case .hole(let length): "hole(\(length))"
        case .memberEnd: "memberEnd"
        case .end(let offset): "end(@\(offset))"
        }
    }
}

/// Collects events, merging consecutive data events (slicing differs with the feed pattern
/// but the bytes and their offsets must not) and checking that data offsets are contiguous.
struct EventRecorder {
    var events: [Recorded] = []

    mutating func record(_ event: TarParser.Event) {
        switch event {
        case .globalHeader(let records, let offset):
            events.append(.global(records.map { "\($0.key)=\($0.value)" }, offset: offset))
        case .member(let member):
            events.append(.member(member))
        case .data(let buffer, let offset):
            if case .data(let previous, let start)? = events.last {
                #expect(start + UInt64(previous.count) == offset, "data offsets are not contiguous")
                events[events.count - 1] = .data(previous + Array(buffer), offset: start)
            } else {
                events.append(.data(Array(buffer), offset: offset))
            }
        case .hole(let length):
            events.append(.hole(length))
        case .memberEnd:
            events.append(.memberEnd)
        case .end(let offset):
            events.append(.end(offset: offset))
        }
    }
}

/// Parses `bytes` fed in slices whose sizes come from `sliceSize`, then finishes.
func parse(
    _ bytes: [UInt8],
    limits: TarParser.Limits = .init(),
    requireEndMarker: Bool = true,
    sliceSize: (inout SeededGenerator) -> Int = { _ in Int.max },
    seed: UInt64 = 1
) throws -> [Recorded] {
    var parser = TarParser(limits: limits)
    var recorder = EventRecorder()
    var generator = SeededGenerator(seed: seed)
    try bytes.withUnsafeBytes { all in
        var index = 0
        while index < all.count {
            let size = max(1, min(sliceSize(&generator), all.count - index))
            try parser.consume(UnsafeRawBufferPointer(rebasing: all[index..<(index + size)])) { recorder.record($0) }
            index += size
        }
    }
    try parser.finish(requireEndMarker: requireEndMarker)
    #expect(parser.offset == UInt64(bytes.count))
    return recorder.events
}

/// The `TarError` thrown by `body`, or `nil` (recording an issue) if it threw nothing else.
func tarError(_ body: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) -> TarError? {
    do {
        try body()
        Issue.record("expected a TarError, nothing was thrown", sourceLocation: sourceLocation)
        return nil
    } catch let error as TarError {
        return error
    } catch {
        Issue.record("expected a TarError, got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

/// Members of a parse, for quick assertions.
func members(_ events: [Recorded]) -> [TarMember] {
    events.compactMap { if case .member(let member) = $0 { member } else { nil } }
}

/// Each member's content, keyed by path.
func contents(_ events: [Recorded]) -> [String: [UInt8]] {
    var result: [String: [UInt8]] = [:]
    var current: String?
    for event in events {
        switch event {
        case .member(let member):
            current = member.header.path
            result[member.header.path] = []
        case .data(let bytes, _):
            if let current { result[current, default: []] += bytes }
        case .hole(let length):
            if let current { result[current, default: []] += [UInt8](repeating: 0, count: Int(length)) }
        case .memberEnd:
            current = nil
        default:
            break
        }
    }
    return result
}
