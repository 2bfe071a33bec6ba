/// A request without extension-specific options: what a ``ResourcesExporting`` extension receives.
public typealias MigrationRequest = MigrationRequestWithOptions<MigrationDefaultSupportedOptions>
