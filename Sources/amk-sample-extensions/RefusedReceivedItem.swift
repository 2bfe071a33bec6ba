import AppMigration
import Foundation

/// A received item an extension refuses to merge: a symbolic link (or a file) where it expects a
/// folder. Following it would merge whatever it points to; moving it into place would put a link
/// where the app keeps a folder.
struct RefusedReceivedItem: Error, CustomStringConvertible {
    /// The item's path in the staging folder.
    var path: String
    /// The name the extension expected a folder under.
    var name: String
    var found: String

    var description: String {
        "\(path): the received '\(name)' is \(found), not a folder; refused (links from an archive are never followed)"
    }
}
