import HearthHub
import HearthJSON
import HearthModel
import HearthWeb
import Logging

/// The web page's own readers (`docs/web-api.md`): the `Cookie` header, the sign-in form, JSON bodies and request
/// paths, the page's language from `Accept-Language` (NIO reads the request line and headers), and the
/// administration's configuration body and log query. Input: a first line naming the reader (`cookie`, `login`,
/// `body`, `path`, `accept-language`, `admin-config`, `logs-query`, `matter-window`, `fabric-index`), then its bytes.
///
/// Promises: any bytes give a value or a `HomeError` with a message, never a crash; a cookie's value is one of the
/// header's pairs, without a `;`; a sign-in form read is a JSON object of at most `user` and `password`, strings within
/// their limits, and written back it reads the same; a body read has only the members asked for; a path's segments,
/// percent-encoded again and joined, read back as the same segments (when that is within the path limit); a
/// configuration body read is within the size limit and, written back as `{"text": …}`, reads the same; a log query
/// read, written back whole, reads the same; a Matter window's time is within 180…900 seconds and, written back as
/// `{"seconds": N}`, reads the same; a fabric index is 1…254 and its decimal reads back as itself.
enum WebTarget {
    static func run(_ bytes: [UInt8]) throws(FuzzFailure) {
        guard let newline = bytes.firstIndex(of: UInt8(ascii: "\n")) else { return }
        let kind = String(decoding: bytes[..<newline], as: UTF8.self)
        let input = Array(bytes[(newline + 1)...])
        switch kind {
        case "cookie":
            let header = String(decoding: input, as: UTF8.self)
            for name in ["hearth_session", "a", ""] {
                if let value = CookieHeader.value(named: name, in: header) {
                    try require(
                        !value.contains(";"), "cookie '\(name)' read as '\(shown(value))' from '\(shown(header))'")
                    // A pair's name is what precedes its first `=`, blanks around it removed (RFC 6265, 5.2): however
                    // many there are.
                    let named = header.split(separator: ";").contains { pair in
                        guard let eq = pair.firstIndex(of: "=") else { return false }
                        let words = pair[..<eq].split(whereSeparator: { $0 == " " || $0 == "\t" })
                        return words.map(String.init) == (name.isEmpty ? [] : [name])
                    }
                    try require(named, "cookie '\(name)' read from '\(shown(header))', which names no such cookie")
                }
            }
        case "login":
            switch Result(catching: { () throws(HomeError) -> LoginForm in try LoginForm(input) }) {
            case .success(let form):
                try require(form.password.count <= LoginForm.maximumPasswordLength && form.user.count <= 64,
                            "a sign-in form beyond its limits was read: \(shown(input))")
                let again = JSON.object([("user", .string(form.user)), ("password", .string(form.password))]).bytes
                try require((try? LoginForm(again)) == form, "the form \(shown(input)) written back reads differently")
            case .failure(let error):
                try require(!error.message.isEmpty, "a refused form without a message")
            }
        case "body":
            let read = Result(catching: { () throws(HomeError) -> [String: JSON] in
                try JSONBody.object(input, fields: ["code": .string(maxLength: 64), "args": .object, "x": .any],
                                    required: ["code"])
            })
            switch read {
            case .success(let m):
                try require(Set(m.keys).isSubset(of: ["code", "args", "x"]) && m["code"] != nil,
                            "a body with other members was read: \(shown(input))")
                try require((try? JSON.parse(input)) != nil, "a body that is not JSON was read: \(shown(input))")
            case .failure(let error):
                try require(!error.message.isEmpty, "a refused body without a message")
            }
        case "path":
            let path = String(decoding: input, as: UTF8.self)
            if let segments = PathReader.segments(path) {
                let encoded = "/" + segments.map(percentEncoded).joined(separator: "/")
                // Encoded again a path may grow threefold: past the reader's limit it is refused, as sent so it would
                // be.
                try require(PathReader.segments(encoded) == segments || encoded.utf8.count > PathReader.maximumLength,
                            "'\(shown(path))' read as \(segments), which encoded again reads differently")
                try require(!segments.contains(""), "'\(shown(path))' gave an empty segment")
            }
        case "accept-language":
            // The page's language: English unless the header names German with a q above every other listed
            // language's; the header with German's entries removed is English.
            let header = String(decoding: input, as: UTF8.self)
            let chosen = PageLanguage.chosen(by: header)
            if chosen == .german {
                try require(
                    header.lowercased().contains("de"), "German chosen by '\(shown(header))', which names it not")
            }
            let withoutGerman = header.split(separator: ",").filter {
                !($0.split(separator: ";").first.map { $0.lowercased().contains("de") } ?? false)
            }.joined(separator: ",")
            try require(PageLanguage.chosen(by: withoutGerman) == .english,
                        "'\(shown(withoutGerman))', which names no German, chose German")
        case "admin-config":
            switch Result(catching: { () throws(HomeError) -> [UInt8] in try AdminInput.configurationText(input) }) {
            case .success(let text):
                try require(text.count <= ConfigurationFile.maximumSize, "a configuration beyond its limit was read")
                let again = JSON.object([("text", .string(String(decoding: text, as: UTF8.self)))]).bytes
                try require((try? AdminInput.configurationText(again)) == text,
                            "the body \(shown(input)) written back reads differently")
            case .failure(let error):
                try require(!error.message.isEmpty, "a refused configuration body without a message")
            }
        case "logs-query":
            let query = String(decoding: input, as: UTF8.self)
            switch Result(catching: { () throws(HomeError) -> AdminInput.LogQuery in try AdminInput.logQuery(query) }) {
            case .success(let q):
                try require(q.after >= 0 && q.limit >= 1 && q.limit <= LogRing.defaultCapacity,
                            "a log query beyond its limits was read from '\(shown(query))'")
                let again = "after=\(q.after)&level=\(q.level.rawValue)&limit=\(q.limit)"
                try require((try? AdminInput.logQuery(again)) == q, "'\(shown(query))' written back reads differently")
            case .failure(let error):
                try require(!error.message.isEmpty, "a refused log query without a message")
            }
        case "matter-window":
            switch Result(catching: { () throws(HomeError) -> Int in try MatterInput.windowSeconds(input) }) {
            case .success(let seconds):
                try require((180...900).contains(seconds), "a window of \(seconds) s was read from \(shown(input))")
                let again = JSON.object([("seconds", .int(seconds))]).bytes
                try require((try? MatterInput.windowSeconds(again)) == seconds,
                            "the body \(shown(input)) written back reads differently")
            case .failure(let error):
                try require(!error.message.isEmpty, "a refused window body without a message")
            }
        case "fabric-index":
            let text = String(decoding: input, as: UTF8.self)
            switch Result(catching: { () throws(HomeError) -> UInt8 in try MatterInput.fabricIndex(text) }) {
            case .success(let index):
                try require((1...254).contains(index), "fabric index \(index) was read from '\(shown(text))'")
                try require(
                    (try? MatterInput.fabricIndex(String(index))) == index, "'\(shown(text))' reads differently")
            case .failure(let error):
                try require(!error.message.isEmpty, "a refused fabric index without a message")
            }
        default:
            return
        }
    }

    static func percentEncoded(_ s: String) -> String {
        var out = ""
        for b in s.utf8 {
            if (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2D
                || b == 0x2E || b == 0x5F
            {
                out.unicodeScalars.append(Unicode.Scalar(b))
            } else {
                let digits = Array("0123456789ABCDEF")
                out += "%" + String(digits[Int(b >> 4)]) + String(digits[Int(b & 15)])
            }
        }
        return out
    }
}
