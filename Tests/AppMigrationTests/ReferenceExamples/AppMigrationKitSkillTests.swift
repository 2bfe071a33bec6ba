import AppMigration
// Ported from reference/appmigrationkit-skill.txt ("Testing"): verbatim except the import line
// (AppMigrationKit -> AppMigration) and the `@Test` line, which registers the extension under test.
import Testing

@Test(.appMigrationExtension(MyMigrationExtension())) func testExportImportRoundTrip() async throws {
    let tester = try await AppMigrationTester(platform: .android)
    // Export
    let result = try await tester.exportController.exportResources(
        request: nil, progress: nil
    )
    #expect(result.exportProperties.uncompressedBytes > 0)
    // Import the exported data
    try await tester.importController.importResources(
        from: result.extractedResourcesURL,
        importRequest: nil, progress: nil
    )
    try await tester.importController.registerImportCompletion(with: .success)
}
