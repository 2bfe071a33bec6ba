import Foundation

/// Quoting for the commands handed to `/bin/sh -c`.
enum Shell {
    /// `text` as one shell word: single-quoted, with embedded quotes escaped.
    static func quote(_ text: String) -> String {
        let safe = text.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "/._-+=:,@".contains($0)) }
        if safe && !text.isEmpty { return text }
        return "'" + text.replacingOccurrences(of: "'", with: #"'\''"#) + "'"
    }
}
