/// The keys the host records in an export's archive metadata (the pax global header and the
/// index), read back on import.
enum ArchiveMetadataKey {
    static let resourcesVersion = "resourcesVersion"
    static let sizeEstimate = "sizeEstimate"
    static let compressible = "resourcesCompressible"
    static let sourceBundleIdentifier = "sourceBundleIdentifier"
    static let sourcePlatform = "sourcePlatform"
    static let sourceStoreIdentifier = "sourceStoreIdentifier"
    static let destinationPlatform = "destinationPlatform"
    static let extensionName = "extension"
}
