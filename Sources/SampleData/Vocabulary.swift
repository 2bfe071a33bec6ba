import Foundation

/// The words the corpora's text is made of.
///
/// Real app data compresses the way it does because it is made of a few thousand words used with
/// a skewed frequency, plus names, numbers and keys. Random letters would not compress at all and
/// a repeated sentence would compress to nothing; both would make every ratio meaningless. So the
/// vocabulary is a list of common English words (the most frequent ranks) followed by a fixed set
/// of made-up words built from syllables (the long tail), drawn with a Zipf-like law.
struct Vocabulary: Sendable {
    /// Every word as UTF-8 bytes, most frequent first.
    let words: [[UInt8]]
    /// Given names, for people in messages and contacts.
    let names: [[UInt8]]
    /// Identifier-like words for JSON and plist keys.
    let keys: [[UInt8]]

    /// The one vocabulary every corpus uses: built from a fixed seed, so it never changes.
    static let shared = Vocabulary(tailWords: 6_000, seed: 0x5eed_0f_a11_f00d)

    init(tailWords: Int, seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        var list = Vocabulary.common.split(separator: " ").map { Array($0.utf8) }
        var seen = Set(list)
        let onsets = [
            "b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w",
            "br", "cl", "cr", "dr", "fl", "gr", "pl", "pr", "sh", "st", "str", "th", "tr", ""
        ]
        let vowels = ["a", "e", "i", "o", "u", "ai", "ea", "ee", "ie", "ou", "oo", "y"]
        let codas = ["", "", "", "n", "r", "s", "t", "l", "m", "nd", "nt", "st", "ck", "ng", "rt", "ss"]
        while list.count < Vocabulary.commonCount + tailWords {
            var word = ""
            for _ in 0..<rng.int(in: 1...3) {
                word += onsets[rng.below(onsets.count)] + vowels[rng.below(vowels.count)]
                word += codas[rng.below(codas.count)]
            }
            if rng.chance(0.3) { word += ["ing", "ed", "er", "ly", "tion", "ment", "s", "able"][rng.below(8)] }
            let bytes = Array(word.utf8)
            if bytes.count >= 2, seen.insert(bytes).inserted { list.append(bytes) }
        }
        words = list
        names = Vocabulary.givenNames.split(separator: " ").map { Array($0.utf8) }
        keys = Vocabulary.keyWords.split(separator: " ").map { Array($0.utf8) }
    }

    /// A word drawn with a frequency roughly proportional to 1/rank (Zipf's law with s = 1, which
    /// is what a log-uniform rank gives).
    func word(_ rng: inout SplitMix64) -> [UInt8] {
        let rank = Int(exp(log(Double(words.count)) * rng.unit()))
        return words[min(words.count - 1, max(0, rank - 1))]
    }

    private static var commonCount: Int { common.split(separator: " ").count }

    private static let common = """
        the of and to a in is it you that he was for on are with as his they be at one have this \
        from or had by not word but what some we can out other were all there when up use your how \
        said an each she which do their time if will way about many then them write would like so \
        these her long make thing see him two has look more day could go come did number sound no \
        most people my over know water than call first who may down side been now find any new \
        work part take get place made live where after back little only round man year came show \
        every good me give our under name very through just form sentence great think say help low \
        line differ turn cause much mean before move right boy old too same tell does set three \
        want air well also play small end put home read hand port large spell add even land here \
        must big high such follow act why ask men change went light kind off need house picture try \
        us again animal point mother world near build self earth father head stand own page should \
        country found answer school grow study still learn plant cover food sun four between state \
        keep eye never last let thought city tree cross farm hard start might story saw far sea draw \
        left late run while press close night real life few north open seem together next white \
        children begin got walk example ease paper group always music those both mark often letter \
        until mile river car feet care second book carry took science eat room friend began idea \
        fish mountain stop once base hear horse cut sure watch color face wood main enough plain \
        girl usual young ready above ever red list though feel talk bird soon body dog family direct \
        message photo account update sync share download settings profile photo video album note \
        reminder event calendar contact email phone address status online offline pending sent \
        received draft archive folder favorite tag comment like reply thread channel group member \
        invite link attachment document file image preview thumbnail cache session token user
        """

    private static let givenNames = """
        Emma Liam Olivia Noah Ava Elijah Sophia Lucas Isabella Mason Mia Ethan Amelia Logan Harper \
        James Evelyn Aiden Abigail Jackson Emily Sebastian Ella Mateo Elizabeth Jack Camila Owen Luna \
        Theodore Sofia Henry Avery Leo Mila Wyatt Aria Daniel Scarlett Michael Penelope Carter Layla \
        Chloe Grayson Victoria Julian Madison Gabriel Eleanor Levi Grace Isaac Nora Lincoln Riley \
        Anthony Zoey Hudson Hannah Dylan Hazel Ezra Lily Thomas Ellie Charles Violet Christopher \
        Lillian Jaxon Zoe Maverick Stella Josiah Aurora Isaiah Natalie Andrew Emilia Elias Everly \
        Joshua Leah Nathan Aubrey Caleb Willow Ryan Addison Adrian Lucy Miles Audrey Eli Bella
        """

    private static let keyWords = """
        id uuid identifier name title subtitle body text summary description kind type status state \
        createdAt updatedAt modifiedAt deletedAt timestamp date duration count total limit offset \
        page pageSize cursor next previous items results data meta version revision etag hash url \
        uri path filename mimeType size width height length color theme locale language region \
        timezone currency amount price quantity enabled visible hidden pinned muted archived \
        favorite starred unread read owner author creator user userId accountId sessionId deviceId \
        token refreshToken expiresAt scope permissions role tags labels categories attachments \
        thumbnail preview avatar email phone address street city country postalCode latitude \
        longitude accuracy source target origin destination parent children sortOrder priority \
        score rating reactions comments likes shares views followers following options settings \
        preferences flags features experiments analytics lastOpened launchCount onboardingComplete
        """
}
