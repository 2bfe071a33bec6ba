import Foundation
import Testing

@testable import SampleData

/// The documents are valid in their formats, as a real container's are: a compressor sees the
/// same structure, and a tool that parses them (a test, a future extension) does not choke.
struct TextSynthTests {
    private func synth(_ index: Int) -> TextSynth {
        TextSynth(rng: SplitMix64(seed: 11, stream: "test", index: index))
    }

    @Test(arguments: 0..<20)
    func jsonDocumentsParseAndReachTheirSize(index: Int) throws {
        var text = synth(index)
        let size = text.rng.logUniform(1_024, 51_200)
        let document = text.jsonDocument(bytes: size)
        #expect(document.count >= size - 16)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(document)) as? [String: Any])
        let items = try #require(object["items"] as? [[String: Any]])
        #expect(!items.isEmpty)
        // Each item may add a few keys from the vocabulary's key list, which can repeat one of its
        // own ("text", "id"): valid JSON, where the last value wins, so most but not all items keep
        // their text.
        let withText = items.filter { $0["author"] is [String: Any] && $0["text"] is String }
        #expect(withText.count * 10 >= items.count * 8, "\(withText.count) of \(items.count)")
    }

    @Test(arguments: 0..<10)
    func plistsParse(index: Int) throws {
        var text = synth(index)
        let document = text.plist(bytes: 20_000)
        #expect(document.count >= 20_000 - 20)
        var format = PropertyListSerialization.PropertyListFormat.binary
        let object = try PropertyListSerialization.propertyList(from: Data(document), options: [], format: &format)
        #expect(format == .xml)
        #expect(((object as? [String: Any])?.count ?? 0) > 10)
    }

    @Test func csvRowsHaveTheHeadersColumns() {
        var text = synth(1)
        let lines = String(decoding: text.csv(bytes: 8_000), as: UTF8.self).split(separator: "\n")
        #expect(lines.first == "id,name,email,created,amount,note")
        #expect(lines.count > 20)
        #expect(lines.allSatisfy { $0.split(separator: ",", omittingEmptySubsequences: false).count == 6 })
    }

    @Test func identifiersHaveTheirShapes() {
        var text = synth(2)
        var uuid: [UInt8] = []
        text.uuid(into: &uuid)
        #expect(UUID(uuidString: String(decoding: uuid, as: UTF8.self)) != nil)
        var date: [UInt8] = []
        text.isoDate(into: &date)
        #expect(String(decoding: date, as: UTF8.self).wholeMatch(of: /202[345]-[01]\d-[0-2]\dT[0-2]\d:[0-5]\d:[0-5]\dZ/) != nil)
        var email: [UInt8] = []
        text.email(into: &email)
        #expect(String(decoding: email, as: UTF8.self).wholeMatch(of: /[a-z]+\.[a-z]+\d*@[a-z.]+/) != nil)
    }

    /// Sentences start with a capital and end with a full stop or a question mark.
    @Test func sentencesLookLikeSentences() {
        var text = synth(3)
        for _ in 0..<200 {
            var sentence: [UInt8] = []
            text.sentence(into: &sentence)
            #expect([0x2e, 0x3f].contains(sentence.last))
            #expect(sentence.first.map { !(0x61...0x7a).contains($0) } == true)
        }
    }

    @Test func sameGeneratorSameText() {
        var first = synth(4)
        var second = synth(4)
        var third = synth(5)
        let a = first.code(bytes: 4_000) + first.log(bytes: 4_000)
        #expect(a == second.code(bytes: 4_000) + second.log(bytes: 4_000))
        #expect(a != third.code(bytes: 4_000) + third.log(bytes: 4_000))
    }
}
