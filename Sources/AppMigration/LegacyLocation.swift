public import Foundation

/// A place where a release that shipped earlier kept a key's data.
///
/// Apps move data: from a flat file in Documents to Application Support, from one file name to
/// another, from an old encoding to a new one. A key lists the places its data used to live; the
/// ``LegacyLocationMigrator`` finds the data there when the key's own place is empty and moves it.
public struct LegacyLocation: Sendable {
    /// The legacy file's path.
    public let path: String
    /// Turns the legacy bytes into the bytes the new place stores (a changed encoding, an old
    /// wrapper to strip); nil stores them unchanged. Throwing leaves the legacy copy in place.
    public let transform: (@Sendable (Data) throws -> Data)?

    /// A legacy location at `path`, its data converted by `transform` on the way (as is without one).
    public init(path: String, transform: (@Sendable (Data) throws -> Data)? = nil) {
        self.path = path
        self.transform = transform
    }

    /// A legacy location at `url`, its data converted by `transform` on the way (as is without one).
    public init(_ url: URL, transform: (@Sendable (Data) throws -> Data)? = nil) {
        self.init(path: url.path(percentEncoded: false), transform: transform)
    }
}
