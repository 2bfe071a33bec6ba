/// What an export produced, as the system reports it to the sending device.
public struct DeviceToDeviceExportProperties: Sendable, Hashable {
    /// Bytes of the uncompressed archive stream: the exported files' contents plus the tar
    /// headers that carry their names, modes and times.
    public var uncompressedBytes: Int
    /// Bytes of the compressed archive, or `nil` when the extension declared its resources
    /// incompressible and they were stored as they are.
    public var compressedBytes: Int?
    /// The extension's ``ResourcesExportingWithOptions/resourcesSizeEstimate``.
    public var sizeEstimate: Int
    /// The extension's ``ResourcesExportingWithOptions/resourcesVersion``.
    public var version: String

    /// Properties as the host measured them.
    public init(uncompressedBytes: Int, compressedBytes: Int?, sizeEstimate: Int, version: String) {
        self.uncompressedBytes = uncompressedBytes
        self.compressedBytes = compressedBytes
        self.sizeEstimate = sizeEstimate
        self.version = version
    }
}
