import IndexedArchive
import Testing
import XZ

@Suite struct PackOptionsTests {
    @Test func niceLengthDefaultsTo16AtPresets5And6Only() {
        for preset in 0...9 {
            let expected: Int? = preset == 5 || preset == 6 ? 16 : nil
            #expect(PackOptions.defaultNiceLength(preset: preset, extreme: false) == expected, "preset \(preset)")
            #expect(PackOptions.defaultNiceLength(preset: preset, extreme: true) == nil, "preset \(preset) extreme")
        }
    }

    @Test(arguments: [0, 1, 274, -16])
    func niceLengthOutside2To273IsRefused(_ niceLength: Int) async throws {
        var options = PackOptions()
        options.niceLength = niceLength
        let error = await #expect(throws: ArchiveError.self) {
            try await ArchivePacker.pack(
                [PackSource(path: "/nonexistent-amk-source")], to: .file("/nonexistent-amk-dir/a.tar.xz"), options: options)
        }
        #expect(error?.code == .invalidOptions)
        #expect(error?.message.contains("nice length must be 2 to 273, not \(niceLength)") == true)
    }
}
