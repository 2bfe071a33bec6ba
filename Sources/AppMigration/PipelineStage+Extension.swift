public import IndexedArchive

extension PipelineStage {
    /// An extension's own code, between its calls into the archiver: the host's stage, named
    /// `extension` in stall reports. The engine's stages watch the work an `appendItem` starts.
    public static let extensionCode = PipelineStage(rawValue: "extension")
}
