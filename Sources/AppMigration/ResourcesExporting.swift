/// An extension that exports the app's data and takes no options.
public protocol ResourcesExporting: ResourcesExportingWithOptions
where OptionsType == MigrationDefaultSupportedOptions {}
