// The page's language, chosen from the browser's `Accept-Language` (RFC 9110, 12.5.4): the supported language with
// the highest q-value, English when none is acceptable. The page's catalogue in that language is app.js's S with
// de.js's translation laid over it; the hub says which in `<html lang>`.

/// A language the page is written in.
public enum PageLanguage: String, Sendable, CaseIterable {
    case english = "en"
    case german = "de"

    /// The longest header read; past it, English (a browser sends a few dozen bytes).
    public static let maximumHeaderLength = 1024

    /// The language for `header`: among the languages listed (primary subtag, any case) with a q above 0, the one
    /// with the highest q, the first of equals; `*` stands for English; English when the header names none.
    public static func chosen(by header: String?) -> PageLanguage {
        guard let header, header.utf8.count <= maximumHeaderLength else { return .english }
        var best: (language: PageLanguage, q: Int)?
        for item in header.split(separator: ",") {
            let parts = item.split(separator: ";", omittingEmptySubsequences: false)
            let tag = parts[0].trimmingSpaces.lowercased()
            let primary = tag.split(separator: "-", maxSplits: 1).first.map(String.init) ?? ""
            guard let language = primary == "*" ? .english : PageLanguage(rawValue: primary) else { continue }
            var q = 1000
            for parameter in parts.dropFirst() {
                let p = parameter.trimmingSpaces
                guard p.lowercased().hasPrefix("q=") else { continue }
                guard let value = quality(p.dropFirst(2)) else { q = -1; break }
                q = value
            }
            guard q > 0 else { continue }
            if best == nil || q > best!.q { best = (language, q) }
        }
        return best?.language ?? .english
    }

    /// A q-value (`0`, `0.5`, `1.000`) in thousandths; nil when it is not one.
    static func quality(_ text: Substring) -> Int? {
        let t = Array(text.utf8)
        guard let first = t.first, first == UInt8(ascii: "0") || first == UInt8(ascii: "1"), t.count <= 5 else {
            return nil
        }
        var value = Int(first - 0x30) * 1000
        guard t.count > 1 else { return value }
        guard t[1] == UInt8(ascii: ".") else { return nil }
        var scale = 100
        for d in t.dropFirst(2) {
            guard d >= 0x30 && d <= 0x39 else { return nil }
            value += Int(d - 0x30) * scale
            scale /= 10
        }
        return value <= 1000 ? value : nil
    }
}
