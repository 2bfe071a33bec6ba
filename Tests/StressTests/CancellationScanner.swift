import Foundation

/// Finds code that can swallow a `CancellationError`: `try? await`, `try? Task.sleep`, and `catch`
/// blocks that neither throw (rethrow, or throw a mapped error), nor forward the error (a
/// `.failure(error)`, an enum case carrying it returned or assigned, a `resume(throwing: error)`), nor look at cancellation (`CancellationError`,
/// `isCancelled`, `checkCancellation`), nor end the process (`exit`, `fatalError`). A `catch` of a specific type (`catch let e as XZError`,
/// `catch is TarError`) cannot catch a `CancellationError` and passes.
///
/// A heuristic: it reads the code with comments and string literals blanked, and does not follow
/// calls. A site that is safe for a reason it cannot see is exempted by a comment on the line
/// before (or at the end of its line): `// cancellation: <why this is safe>`.
///
/// Every `\b` in its patterns is a simple word boundary: Unicode's, the default, sees none in
/// `Foundation.exit`.
struct CancellationScanner {
    struct Finding: Equatable, CustomStringConvertible {
        var file: String
        var line: Int
        var what: String
        var text: String

        var description: String { "\(file):\(line): \(what): \(text)" }
    }

    /// Scans every `.swift` file under `directory`; paths in findings are relative to `relativeTo`.
    static func scan(directory: URL, relativeTo root: URL) throws -> [Finding] {
        guard let enumerator = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil) else { return [] }
        var findings: [Finding] = []
        var files: [URL] = []
        while let url = enumerator.nextObject() as? URL {
            if url.pathExtension == "swift" { files.append(url) }
        }
        for url in files.sorted(by: { $0.path < $1.path }) {
            let source = try String(contentsOf: url, encoding: .utf8)
            var relative = url.path
            if relative.hasPrefix(root.path + "/") { relative.removeFirst(root.path.count + 1) }
            findings += scan(source: source, file: relative)
        }
        return findings
    }

    static func scan(source: String, file: String) -> [Finding] {
        let original = source.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let code = Array(blankCommentsAndStrings(source).utf8)
        var lineStarts = [0]
        for (offset, byte) in code.enumerated() where byte == UInt8(ascii: "\n") { lineStarts.append(offset + 1) }
        func line(of offset: Int) -> Int {
            var low = 0
            var high = lineStarts.count - 1
            while low < high {
                let mid = (low + high + 1) / 2
                if lineStarts[mid] <= offset { low = mid } else { high = mid - 1 }
            }
            return low + 1
        }
        func exempt(_ line: Int) -> Bool {
            let marker = #/\/\/\s*cancellation:\s*\S/#
            let here = original[line - 1]
            let before = line >= 2 ? original[line - 2] : ""
            return here.contains(marker) || before.contains(marker)
        }
        var findings: [Finding] = []
        func report(_ offset: Int, _ what: String) {
            let number = line(of: offset)
            guard !exempt(number) else { return }
            findings.append(
                Finding(
                    file: file, line: number, what: what,
                    text: original[number - 1].trimmingCharacters(in: .whitespaces)))
        }

        let text = String(decoding: code, as: UTF8.self)
        for match in text.matches(of: #/try\?\s*(?:await\b|Task\s*\.\s*sleep\b)/#.wordBoundaryKind(.simple)) {
            let offset = text.utf8.distance(from: text.utf8.startIndex, to: match.range.lowerBound)
            report(offset, "`try?` swallows CancellationError")
        }
        for match in text.matches(of: #/\bcatch\b/#.wordBoundaryKind(.simple)) {
            let offset = text.utf8.distance(from: text.utf8.startIndex, to: match.range.upperBound)
            guard let (pattern, body) = catchClause(code, from: offset) else { continue }
            if handlesCancellation(pattern: pattern, body: body) { continue }
            report(offset - 1, "catch drops CancellationError (it neither throws, forwards the error, nor checks for cancellation)")
        }
        return findings.sorted { $0.line < $1.line }
    }

    /// The pattern between `catch` and its `{`, and the body up to the matching `}`.
    static func catchClause(_ code: [UInt8], from start: Int) -> (pattern: String, body: String)? {
        var index = start
        var depth = 0
        while index < code.count {
            let byte = code[index]
            if byte == UInt8(ascii: "(") || byte == UInt8(ascii: "[") { depth += 1 }
            if byte == UInt8(ascii: ")") || byte == UInt8(ascii: "]") { depth -= 1 }
            if byte == UInt8(ascii: "{") && depth == 0 { break }
            index += 1
        }
        guard index < code.count else { return nil }
        let pattern = String(decoding: code[start..<index], as: UTF8.self)
        let bodyStart = index + 1
        var braces = 1
        index = bodyStart
        while index < code.count && braces > 0 {
            if code[index] == UInt8(ascii: "{") { braces += 1 }
            if code[index] == UInt8(ascii: "}") { braces -= 1 }
            index += 1
        }
        let body = String(decoding: code[bodyStart..<max(bodyStart, index - 1)], as: UTF8.self)
        return (pattern, body)
    }

    static func handlesCancellation(pattern: String, body: String) -> Bool {
        let trimmed = pattern.trimmingCharacters(in: .whitespacesAndNewlines)
        // A specific error type cannot match a CancellationError (or it is CancellationError itself).
        if let typed = trimmed.firstMatch(of: #/\b(?:as|is)\s+(?:any\s+)?([A-Za-z_][\w.]*)/#.wordBoundaryKind(.simple)) {
            let type = String(typed.1)
            if type != "Error" && type != "Swift.Error" { return true }
        } else if let first = trimmed.first, first.isUppercase || first == "." {
            return true  // an enum case pattern such as `catch XZError.truncated`
        }
        var name = "error"
        if let bound = trimmed.firstMatch(of: #/\b(?:let|var)\s+([A-Za-z_]\w*)/#.wordBoundaryKind(.simple)) { name = String(bound.1) }
        if body.contains(#/\bthrow\b/#.wordBoundaryKind(.simple)) { return true }
        if body.contains("CancellationError") || body.contains("isCancelled") || body.contains("checkCancellation") { return true }
        // Ending the process is not carrying on (a command-line tool's top level maps every error,
        // cancellation included, to an exit status).
        if body.contains(#/\b(?:exit|fatalError|preconditionFailure)\s*\(/#.wordBoundaryKind(.simple)) { return true }
        let escaped = NSRegularExpression.escapedPattern(for: name)
        // Forwarded: wrapped in a value handed on (`result = .failure(error)`, `return .gaveUp(error)`),
        // or resumed into a continuation.
        let forwarded = [
            #"\.failure\(\s*"# + escaped + #"\s*\)"#,
            #"(?:return|=)\s*\.\w+\(\s*"# + escaped + #"\s*\)"#,
            #"throwing:\s*"# + escaped + #"\b"#
        ]
        return forwarded.contains { body.range(of: $0, options: .regularExpression) != nil }
    }

    /// The source with the contents of comments and string literals replaced by spaces, newlines
    /// kept, so offsets and line numbers stay the same; the code inside interpolations is kept.
    static func blankCommentsAndStrings(_ source: String) -> String {
        enum Context {
            /// Code; inside an interpolation, the parentheses open since it began.
            case code(parens: Int?)
            case string(multiline: Bool, hashes: Int)
        }
        let bytes = Array(source.utf8)
        var out = bytes
        var stack: [Context] = [.code(parens: nil)]
        let space = UInt8(ascii: " ")
        let newline = UInt8(ascii: "\n")
        let quote = UInt8(ascii: "\"")
        let hash = UInt8(ascii: "#")
        let backslash = UInt8(ascii: "\\")
        func at(_ index: Int) -> UInt8 { index < bytes.count ? bytes[index] : 0 }
        func blank(_ index: Int) { if index < out.count && out[index] != newline { out[index] = space } }
        func starts(_ text: String, _ index: Int) -> Bool {
            var i = index
            for byte in text.utf8 {
                if at(i) != byte { return false }
                i += 1
            }
            return true
        }
        var i = 0
        while i < bytes.count {
            switch stack[stack.count - 1] {
            case .code(let parens):
                if starts("//", i) {
                    while i < bytes.count && bytes[i] != newline {
                        blank(i)
                        i += 1
                    }
                } else if starts("/*", i) {
                    var depth = 0
                    repeat {
                        if starts("/*", i) {
                            depth += 1
                            blank(i)
                            blank(i + 1)
                            i += 2
                        } else if starts("*/", i) {
                            depth -= 1
                            blank(i)
                            blank(i + 1)
                            i += 2
                        } else {
                            blank(i)
                            i += 1
                        }
                    } while depth > 0 && i < bytes.count
                } else if bytes[i] == quote
                    || (bytes[i] == hash
                        && {
                            var j = i
                            while at(j) == hash { j += 1 }
                            return at(j) == quote
                        }())
                {
                    var hashes = 0
                    while at(i) == hash {
                        hashes += 1
                        i += 1
                    }
                    let multiline = starts("\"\"\"", i)
                    i += multiline ? 3 : 1
                    stack.append(.string(multiline: multiline, hashes: hashes))
                } else {
                    if let parens {
                        if bytes[i] == UInt8(ascii: "(") { stack[stack.count - 1] = .code(parens: parens + 1) }
                        if bytes[i] == UInt8(ascii: ")") {
                            if parens == 0 { stack.removeLast() } else { stack[stack.count - 1] = .code(parens: parens - 1) }
                        }
                    }
                    i += 1
                }
            case .string(let multiline, let hashes):
                if bytes[i] == backslash {
                    var j = i + 1
                    var seen = 0
                    while seen < hashes && at(j) == hash {
                        seen += 1
                        j += 1
                    }
                    if seen == hashes {
                        if at(j) == UInt8(ascii: "(") {
                            i = j + 1
                            stack.append(.code(parens: 0))
                            continue
                        }
                        // An escape: blank it and the character escaped.
                        while i <= j {
                            blank(i)
                            i += 1
                        }
                        continue
                    }
                    blank(i)
                    i += 1
                } else if (multiline ? starts("\"\"\"", i) : bytes[i] == quote)
                    && {
                        let end = i + (multiline ? 3 : 1)
                        for k in 0..<hashes where at(end + k) != hash { return false }
                        return true
                    }()
                {
                    i += (multiline ? 3 : 1) + hashes
                    stack.removeLast()
                } else {
                    blank(i)
                    i += 1
                }
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
