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

    @Test func theDictionaryIsThreeQuartersOfTheChunkAtPresets5And6Only() {
        for preset in 0...9 {
            let expected: Int? = preset == 5 || preset == 6 ? 6 << 20 : nil
            #expect(PackOptions.defaultDictionarySize(preset: preset, extreme: false, chunkSize: 8 << 20) == expected, "preset \(preset)")
            #expect(PackOptions.defaultDictionarySize(preset: preset, extreme: true, chunkSize: 8 << 20) == nil, "preset \(preset) extreme")
        }
        #expect(PackOptions.defaultDictionarySize(preset: 6, extreme: false, chunkSize: 1 << 20) == 768 << 10)
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

    /// Metadata past what a reader keeps (256 keys, 64 KiB) made an archive that packed and then
    /// could not be read: it is refused before anything is written, naming the largest value.
    @Test(arguments: [1, 300])
    func metadataAReaderWouldRefuseIsRefused(_ keys: Int) async throws {
        var options = PackOptions()
        options.metadata = ["version": String(repeating: "v", count: keys == 1 ? 70_000 : 1)]
        for index in 1..<keys { options.metadata["key\(index)"] = "x" }
        let error = await #expect(throws: ArchiveError.self) {
            try await ArchivePacker.pack(
                [PackSource(path: "/nonexistent-amk-source")], to: .file("/nonexistent-amk-dir/a.tar.xz"), options: options)
        }
        #expect(error?.code == .invalidOptions)
        let expected =
            keys == 1
            ? "the largest, 'version', has 70000 bytes" : "metadata of \(keys + 1) keys"
        #expect(error?.message.contains(expected) == true, "\(String(describing: error))")
        #expect(error?.message.contains("256 keys and 65536 bytes") == true, "\(String(describing: error))")
    }
}
