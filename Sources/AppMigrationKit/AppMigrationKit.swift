// The module code written for Apple's AppMigrationKit imports: `import AppMigrationKit` then
// compiles against this package's AppMigration, whose declarations follow Apple's (see the
// README's "Where we differ from AppMigrationKit" for what cannot be the same).
//
// Apple ships AppMigrationKit on iOS, iPadOS and Mac Catalyst; there the system framework is the
// one to use and this module adds nothing. Everywhere else (Linux, macOS) it re-exports
// AppMigration.
#if !(os(iOS) || targetEnvironment(macCatalyst))
    @_exported public import AppMigration
    // Apple's declarations are written in Foundation's types (`URL`, `Progress`), and its
    // snippets import AppMigrationKit alone: as the system framework's module does, this one
    // brings Foundation with it.
    @_exported public import Foundation
#endif
