import HearthJSON

/// HearthJSON's promises (its source and `Package.swift`): strict RFC 8259 JSON; invalid UTF-8, duplicate keys and
/// nesting deeper than `JSON.maximumDepth` refused; what it accepts, its writer writes back to the same value.
///
/// Checked against `ReferenceJSON`, a second reading of the grammar written here from RFC 8259, deliberately
/// simple (it builds nothing clever, it only follows the grammar): the parser and it must agree on every input,
/// value for value.
enum JSONTarget {
    static func run(_ bytes: [UInt8]) throws(FuzzFailure) {
        let parsed: Result<JSON, JSONParseError>
        do throws(JSONParseError) { parsed = .success(try JSON.parse(bytes)) } catch { parsed = .failure(error) }
        let reference = ReferenceJSON.parse(bytes)

        switch (parsed, reference) {
        case (.failure(let error), .failure):
            try require(error.offset >= 0 && error.offset <= bytes.count,
                        "error offset \(error.offset) outside the \(bytes.count) input bytes")
            try require(!error.message.isEmpty, "an error without a message")
        case (.failure(let error), .success):
            throw FuzzFailure("refused valid JSON (\(error)): \(shown(bytes))")
        case (.success(let value), .failure(let why)):
            throw FuzzFailure(
                "accepted what is not JSON for Hearth (\(why.reason)): \(shown(bytes)) → \(shown(value.bytes))")
        case (.success(let value), .success(let expected)):
            try require(value == expected, "read \(shown(value.bytes)), the grammar reads \(shown(expected.bytes))")
            try require(String(validating: bytes, as: UTF8.self) != nil, "accepted invalid UTF-8: \(shown(bytes))")
            try require(depth(value) <= JSON.maximumDepth, "accepted nesting \(depth(value)) deep: \(shown(bytes))")
            try checkNoDuplicateKeys(value)
            // The writer: what was read is written back to the same value, and writing is stable.
            let written = value.bytes
            let reread: JSON
            do throws(JSONParseError) { reread = try JSON.parse(written) } catch {
                throw FuzzFailure("the writer wrote what the parser refuses (\(error)): \(shown(written))")
            }
            try require(reread == value, "round trip changed the value: \(shown(bytes)) → \(shown(written))")
            try require(reread.bytes == written, "writing is not stable: \(shown(written)) → \(shown(reread.bytes))")
            if let text = String(validating: bytes, as: UTF8.self) {
                let fromText: JSON?
                do throws(JSONParseError) { fromText = try JSON.parse(text) } catch { fromText = nil }
                try require(fromText == value, "parse(String) and parse(bytes) differ on \(shown(bytes))")
            }
        }
    }

    static func depth(_ value: JSON) -> Int {
        switch value {
        case .array(let a): 1 + (a.map(depth).max() ?? 0)
        case .object(let o): 1 + (o.map { depth($0.value) }.max() ?? 0)
        default: 0
        }
    }

    static func checkNoDuplicateKeys(_ value: JSON) throws(FuzzFailure) {
        switch value {
        case .array(let a): for v in a { try checkNoDuplicateKeys(v) }
        case .object(let o):
            for (i, m) in o.enumerated() {
                for other in o[..<i] where Array(other.key.utf8) == Array(m.key.utf8) {
                    throw FuzzFailure("accepted the key '\(shown(m.key))' twice")
                }
                try checkNoDuplicateKeys(m.value)
            }
        default: break
        }
    }
}

/// RFC 8259's grammar, read byte by byte, with Hearth's rules on top: the text is UTF-8 (§8.1), a `\u` escape of
/// a surrogate must be half of a pair, keys of an object are distinct, arrays and objects nest at most
/// `JSON.maximumDepth` deep, and a number must be representable (an integer that fits `Int`, else a finite
/// `Double`). Keys are compared as Swift strings compare (canonical equivalence), the comparison every later
/// `json["key"]` lookup makes, so two keys that lookups cannot tell apart count as the same key.
enum ReferenceJSON {
    struct Refusal: Error { var reason: String }

    static func parse(_ bytes: [UInt8]) -> Result<JSON, Refusal> {
        guard String(validating: bytes, as: UTF8.self) != nil else { return .failure(Refusal(reason: "not UTF-8")) }
        var reader = Reader(bytes: bytes)
        do throws(Refusal) {
            reader.whitespace()
            let value = try reader.value(depth: 0)
            reader.whitespace()
            guard reader.at == bytes.count else { throw Refusal(reason: "text after the value") }
            return .success(value)
        } catch {
            return .failure(error)
        }
    }

    struct Reader {
        let bytes: [UInt8]
        var at = 0

        var peek: UInt8? { at < bytes.count ? bytes[at] : nil }

        mutating func whitespace() {
            while let b = peek, b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D { at += 1 }
        }

        mutating func expect(_ c: Character) throws(Refusal) {
            guard peek == c.asciiValue else { throw Refusal(reason: "expected \(c) at \(at)") }
            at += 1
        }

        mutating func value(depth: Int) throws(Refusal) -> JSON {
            switch peek {
            case UInt8(ascii: "{")?:
                guard depth < JSON.maximumDepth else { throw Refusal(reason: "too deep") }
                at += 1
                var members: [(key: String, value: JSON)] = []
                whitespace()
                if peek == UInt8(ascii: "}") { at += 1; return .object(members) }
                while true {
                    whitespace()
                    let key = try string()
                    guard !members.contains(where: { $0.key == key }) else { throw Refusal(reason: "duplicate key") }
                    whitespace()
                    try expect(":")
                    whitespace()
                    members.append((key, try value(depth: depth + 1)))
                    whitespace()
                    if peek == UInt8(ascii: ",") { at += 1; continue }
                    try expect("}")
                    return .object(members)
                }
            case UInt8(ascii: "[")?:
                guard depth < JSON.maximumDepth else { throw Refusal(reason: "too deep") }
                at += 1
                var elements: [JSON] = []
                whitespace()
                if peek == UInt8(ascii: "]") { at += 1; return .array(elements) }
                while true {
                    whitespace()
                    elements.append(try value(depth: depth + 1))
                    whitespace()
                    if peek == UInt8(ascii: ",") { at += 1; continue }
                    try expect("]")
                    return .array(elements)
                }
            case UInt8(ascii: "\"")?: return .string(try string())
            case UInt8(ascii: "t")?: try word("true"); return .bool(true)
            case UInt8(ascii: "f")?: try word("false"); return .bool(false)
            case UInt8(ascii: "n")?: try word("null"); return .null
            default: return try number()
            }
        }

        mutating func word(_ w: String) throws(Refusal) {
            for c in w { try expect(c) }
        }

        func isDigit(_ b: UInt8?) -> Bool { b.map { $0 >= 0x30 && $0 <= 0x39 } ?? false }

        mutating func number() throws(Refusal) -> JSON {
            let start = at
            if peek == UInt8(ascii: "-") { at += 1 }
            guard isDigit(peek) else { throw Refusal(reason: "not a value at \(at)") }
            if peek == UInt8(ascii: "0") { at += 1 } else { while isDigit(peek) { at += 1 } }
            var integral = true
            if peek == UInt8(ascii: ".") {
                integral = false
                at += 1
                guard isDigit(peek) else { throw Refusal(reason: "no digit after '.'") }
                while isDigit(peek) { at += 1 }
            }
            if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
                integral = false
                at += 1
                if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { at += 1 }
                guard isDigit(peek) else { throw Refusal(reason: "no digit in the exponent") }
                while isDigit(peek) { at += 1 }
            }
            let text = String(decoding: bytes[start..<at], as: UTF8.self)
            if integral, let i = Int(text) { return .int(i) }
            guard let d = Double(text), d.isFinite else { throw Refusal(reason: "number out of range") }
            return .double(d)
        }

        mutating func hex4() throws(Refusal) -> UInt32 {
            var v: UInt32 = 0
            for _ in 0..<4 {
                guard let b = peek, let d = Character(Unicode.Scalar(b)).hexDigitValue else {
                    throw Refusal(reason: "bad \\u escape")
                }
                v = v * 16 + UInt32(d)
                at += 1
            }
            return v
        }

        mutating func string() throws(Refusal) -> String {
            try expect("\"")
            var scalars = String.UnicodeScalarView()
            var raw: [UInt8] = []  // unescaped bytes not yet decoded (the text is valid UTF-8, checked up front)
            func flush() {
                scalars.append(contentsOf: String(decoding: raw, as: UTF8.self).unicodeScalars)
                raw.removeAll()
            }
            while true {
                guard let b = peek else { throw Refusal(reason: "unterminated string") }
                at += 1
                switch b {
                case UInt8(ascii: "\""):
                    flush()
                    return String(scalars)
                case 0..<0x20:
                    throw Refusal(reason: "control character in a string")
                case UInt8(ascii: "\\"):
                    flush()
                    guard let e = peek else { throw Refusal(reason: "unterminated escape") }
                    at += 1
                    let simple: [UInt8: Unicode.Scalar] = [
                        UInt8(ascii: "\""): "\"", UInt8(ascii: "\\"): "\\", UInt8(ascii: "/"): "/",
                        UInt8(ascii: "b"): "\u{8}", UInt8(ascii: "f"): "\u{C}", UInt8(ascii: "n"): "\n",
                        UInt8(ascii: "r"): "\r", UInt8(ascii: "t"): "\t",
                    ]
                    if let s = simple[e] { scalars.append(s); continue }
                    guard e == UInt8(ascii: "u") else { throw Refusal(reason: "bad escape") }
                    let high = try hex4()
                    if (0xDC00...0xDFFF).contains(high) { throw Refusal(reason: "lone low surrogate") }
                    guard (0xD800...0xDBFF).contains(high) else { scalars.append(Unicode.Scalar(high)!); continue }
                    try expect("\\")
                    try expect("u")
                    let low = try hex4()
                    guard (0xDC00...0xDFFF).contains(low) else { throw Refusal(reason: "lone high surrogate") }
                    scalars.append(Unicode.Scalar(0x10000 + (high - 0xD800) * 0x400 + (low - 0xDC00))!)
                default:
                    raw.append(b)
                }
            }
        }
    }
}
