import HearthModel
import Testing

@Suite struct NameTests {
    @Test func shortNamesAreKept() {
        #expect(HomeDevice.truncatedName("Kitchen lamp") == "Kitchen lamp")
        #expect(HomeDevice.truncatedName("") == "")
        let sixty = String(repeating: "a", count: 60)
        #expect(HomeDevice.truncatedName(sixty) == sixty)
    }

    @Test func longNamesAreCutAtSixtyCodePoints() {
        let name = String(repeating: "b", count: 61)
        #expect(HomeDevice.truncatedName(name).unicodeScalars.count == 60)
    }

    @Test func emojiCountAsCodePointsNotBytes() {
        // 🏠 is one code point and four UTF-8 bytes: 60 of them fit.
        let houses = String(repeating: "🏠", count: 70)
        let cut = HomeDevice.truncatedName(houses)
        #expect(cut == String(repeating: "🏠", count: 60))
        #expect(cut.utf8.count == 240)
    }

    @Test func multiScalarEmojiAreCutByScalarNotByCharacter() {
        // 👩‍👩‍👧 is one Character of five scalars (three people joined by two ZWJ).
        let family = "👩‍👩‍👧"
        #expect(family.unicodeScalars.count == 5)
        let name = String(repeating: family, count: 13)  // 65 scalars, 13 characters
        let cut = HomeDevice.truncatedName(name)
        #expect(cut.unicodeScalars.count == 60)
        #expect(Array(cut.unicodeScalars) == Array(name.unicodeScalars.prefix(60)))
    }

    @Test func combiningMarksCountSeparately() {
        // "é" written as e + U+0301 is two code points.
        let decomposed = String(repeating: "e\u{301}", count: 31)  // 62 scalars, 31 characters
        let cut = HomeDevice.truncatedName(decomposed)
        #expect(cut.unicodeScalars.count == 60)
        #expect(cut.count == 30)
        let precomposed = String(repeating: "\u{E9}", count: 61)
        #expect(HomeDevice.truncatedName(precomposed).count == 60)
    }
}
