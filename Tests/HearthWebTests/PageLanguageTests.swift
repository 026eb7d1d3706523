import HearthWeb
import Testing

/// The page's language from `Accept-Language`: q-values honoured, English the fallback.
struct PageLanguageTests {
    @Test(arguments: [
        ("de-DE,de;q=0.9,en;q=0.8", PageLanguage.german),
        ("en-GB,en;q=0.9,de;q=0.8", .english),
        ("fr-FR, de;q=0.5, en;q=0.4", .german),
        ("en;q=0.4, DE-at;q=0.5", .german),
        ("de;q=0, en;q=0.1", .english),
        ("de;q=0.000", .english),
        ("de;q=1.5", .english),
        ("de;q=abc", .english),
        ("de, en", .german),
        ("en, de", .english),
        ("*, de;q=0.5", .english),
        ("fr", .english),
        ("", .english),
        (";;,,", .english),
    ])
    func theLanguageIsTheHighestQualityTheBrowserAccepts(_ header: String, _ expected: PageLanguage) {
        #expect(PageLanguage.chosen(by: header) == expected, "\(header)")
    }

    @Test func noHeaderOrAnOverlongOneIsEnglish() {
        #expect(PageLanguage.chosen(by: nil) == .english)
        #expect(PageLanguage.chosen(by: "de," + String(repeating: "x", count: 2000)) == .english)
    }
}
