import TestSupport
import Testing

@testable import SampleData

/// The words all text is made of: fixed, distinct, and drawn with a skew, because that skew is
/// what makes the text compress like real text rather than like noise or like a repeated line.
@Suite(.background) struct VocabularyTests {
    @Test func sharedVocabularyIsTheSameEveryTime() {
        let again = Vocabulary(tailWords: 6_000, seed: 0x5eed_0f_a11_f00d)
        #expect(again.words == Vocabulary.shared.words)
        #expect(again.names == Vocabulary.shared.names)
        #expect(again.keys == Vocabulary.shared.keys)
    }

    /// The made-up tail never repeats a word or a common one. (The common list itself names
    /// "like", "group" and "photo" twice; that only gives those words two ranks, and removing the
    /// repeats would change every corpus.)
    @Test func wordsAreDistinctLowercaseAndCommonFirst() {
        let words = Vocabulary.shared.words
        #expect(Set(words).count == words.count - 3)
        #expect(Set(words.suffix(6_000)).count == 6_000)
        #expect(words.count == 367 + 6_000)
        #expect(words.first == Array("the".utf8))
        #expect(words.allSatisfy { $0.allSatisfy { (0x61...0x7a).contains($0) } })
    }

    /// Zipf's law with s = 1 over some 6,300 ranks gives the first word about 8% of draws, and the
    /// commonest hundred about half; a uniform draw would give "the" 0.02%.
    @Test func drawsFollowZipf() {
        var rng = SplitMix64(seed: 9)
        let vocabulary = Vocabulary.shared
        let top = Set(vocabulary.words.prefix(100))
        var the = 0
        var common = 0
        let draws = 20_000
        for _ in 0..<draws {
            let word = vocabulary.word(&rng)
            if word == vocabulary.words[0] { the += 1 }
            if top.contains(word) { common += 1 }
        }
        #expect((draws * 6 / 100...draws * 10 / 100).contains(the), "\(the)")
        #expect((draws * 40 / 100...draws * 65 / 100).contains(common), "\(common)")
    }
}
