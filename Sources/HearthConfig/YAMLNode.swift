/// A node of a YAML document, with where it starts.
///
/// Aliases are already expanded and merge keys (`<<: *defaults`) already merged, so readers see plain
/// mappings, lists and scalars; a merged or aliased node keeps the position of the text it came from.
public struct YAMLNode: Sendable, Hashable {
    public enum Value: Sendable, Hashable {
        /// A scalar's text (escapes decoded, block scalars folded). `quoted` is true when the scalar is text
        /// whatever it looks like: single- or double-quoted, a block scalar (`|`, `>`), or tagged `!!str`.
        /// A plain scalar (`quoted: false`) means what the YAML 1.2 core schema says (`typed`).
        case scalar(String, quoted: Bool)
        case sequence([YAMLNode])
        case mapping([YAMLEntry])
        /// An empty value (`key:` with nothing after it, `~`, `null`).
        case null
    }

    public var value: Value
    /// 1-based.
    public var line: Int
    /// 1-based, in characters.
    public var column: Int
    /// The name in `!secret NAME` when the value came from `secrets.yaml`: messages name it, never show it.
    public var secret: String?

    public init(_ value: Value, line: Int, column: Int = 1, secret: String? = nil) {
        self.value = value
        self.line = line
        self.column = column
        self.secret = secret
    }

    /// The scalar's meaning: quoted text is text; a plain scalar is resolved by the YAML 1.2 core schema.
    public var typed: YAMLScalar? {
        switch value {
        case .null: .null
        case .scalar(let text, let quoted): quoted ? .string(text) : YAMLScalar.resolve(plain: text)
        case .sequence, .mapping: nil
        }
    }
}

public struct YAMLEntry: Sendable, Hashable {
    public var key: String
    public var keyLine: Int
    public var keyColumn: Int
    public var value: YAMLNode

    public init(key: String, keyLine: Int, keyColumn: Int = 1, value: YAMLNode) {
        self.key = key
        self.keyLine = keyLine
        self.keyColumn = keyColumn
        self.value = value
    }
}

/// A scalar as the YAML 1.2 core schema reads it.
///
/// Hearth reads YAML 1.2, not 1.1: `yes`, `no`, `on`, `off`, `y` and `n` are text, `010` is ten and
/// `1:30` is text. Home Assistant and PyYAML read YAML 1.1, where the first six are booleans; readers
/// warn where that difference could surprise someone (`YAMLScalar.yaml11Reading`).
public enum YAMLScalar: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int)
    case float(Double)
    case string(String)

    /// The core schema's resolution of a plain scalar (YAML 1.2.2, 10.3.2).
    public static func resolve(plain text: String) -> YAMLScalar {
        // Most scalars of a configuration are names and ids: told apart by their first byte and length before any
        // comparison (every scalar of a 1,000-device file is resolved, some several times).
        guard let first = text.utf8.first else { return .null }
        switch first {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."):
            break
        case UInt8(ascii: "~"), UInt8(ascii: "n"), UInt8(ascii: "N"), UInt8(ascii: "t"), UInt8(ascii: "T"),
             UInt8(ascii: "f"), UInt8(ascii: "F"):
            if text.utf8.count > 5 { return .string(text) }
        default:
            return .string(text)
        }
        switch text {
        case "", "~", "null", "Null", "NULL": return .null
        case "true", "True", "TRUE": return .bool(true)
        case "false", "False", "FALSE": return .bool(false)
        case ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF": return .float(.infinity)
        case "-.inf", "-.Inf", "-.INF": return .float(-.infinity)
        case ".nan", ".NaN", ".NAN": return .float(.nan)
        default: break
        }
        let bytes = Array(text.utf8)
        if let i = integer(bytes) { return i.map(YAMLScalar.int) ?? .string(text) }
        if isFloat(bytes), let d = Double(text) { return .float(d) }
        return .string(text)
    }

    /// `[-+]?[0-9]+`, `0o[0-7]+`, `0x[0-9a-fA-F]+`; `.some(nil)` when it is one but does not fit an Int.
    static func integer(_ b: [UInt8]) -> Int?? {
        func digits(_ s: ArraySlice<UInt8>, radix: Int) -> Int?? {
            guard !s.isEmpty else { return nil }
            var value = 0
            var overflow = false
            for c in s {
                let d: Int
                switch c {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): d = Int(c - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): d = Int(c - UInt8(ascii: "a")) + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): d = Int(c - UInt8(ascii: "A")) + 10
                default: return nil
                }
                guard d < radix else { return nil }
                let (m, o1) = value.multipliedReportingOverflow(by: radix)
                let (a, o2) = m.addingReportingOverflow(d)
                overflow = overflow || o1 || o2
                value = a
            }
            return .some(overflow ? nil : value)
        }
        if b.count > 2 && b[0] == UInt8(ascii: "0") && b[1] == UInt8(ascii: "x") { return digits(b[2...], radix: 16) }
        if b.count > 2 && b[0] == UInt8(ascii: "0") && b[1] == UInt8(ascii: "o") { return digits(b[2...], radix: 8) }
        var body = b[...]
        var negative = false
        if let sign = body.first, sign == UInt8(ascii: "-") || sign == UInt8(ascii: "+") {
            negative = sign == UInt8(ascii: "-")
            body = body.dropFirst()
        }
        guard let parsed = digits(body, radix: 10) else { return nil }
        guard let v = parsed else { return .some(nil) }
        return .some(negative ? -v : v)
    }

    /// `[-+]? ( \. [0-9]+ | [0-9]+ ( \. [0-9]* )? ) ( [eE] [-+]? [0-9]+ )?`
    static func isFloat(_ b: [UInt8]) -> Bool {
        var i = 0
        func isDigit(_ c: UInt8) -> Bool { c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") }
        func runOfDigits() -> Int { let s = i; while i < b.count, isDigit(b[i]) { i += 1 }; return i - s }
        if i < b.count, b[i] == UInt8(ascii: "-") || b[i] == UInt8(ascii: "+") { i += 1 }
        let whole = runOfDigits()
        var fraction = 0
        if i < b.count, b[i] == UInt8(ascii: ".") {
            i += 1
            fraction = runOfDigits()
            if whole == 0 && fraction == 0 { return false }
        } else if whole == 0 {
            return false
        }
        if i < b.count, b[i] == UInt8(ascii: "e") || b[i] == UInt8(ascii: "E") {
            i += 1
            if i < b.count, b[i] == UInt8(ascii: "-") || b[i] == UInt8(ascii: "+") { i += 1 }
            if runOfDigits() == 0 { return false }
        }
        return i == b.count
    }

    /// What a YAML 1.1 reader (PyYAML, so Home Assistant) makes of a plain scalar when it differs from
    /// the 1.2 reading: `yes` → true, `off` → false, `010` → 8. `nil` when both read it alike.
    public static func yaml11Reading(plain text: String) -> String? {
        guard let first = text.utf8.first else { return nil }
        switch first {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "-"):
            break
        case UInt8(ascii: "y"), UInt8(ascii: "Y"), UInt8(ascii: "n"), UInt8(ascii: "N"), UInt8(ascii: "o"),
            UInt8(ascii: "O"):
            if text.utf8.count > 3 { return nil }
        default:
            return nil
        }
        switch text {
        case "y", "Y", "yes", "Yes", "YES", "on", "On", "ON": return "true"
        case "n", "N", "no", "No", "NO", "off", "Off", "OFF": return "false"
        default: break
        }
        let b = Array(text.utf8)
        var digits = b[...]
        if let s = digits.first, s == UInt8(ascii: "-") || s == UInt8(ascii: "+") { digits = digits.dropFirst() }
        if digits.count > 1, digits.first == UInt8(ascii: "0"),
           digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "7") }),
           let octal = Int(String(decoding: digits, as: UTF8.self), radix: 8) {
            return "octal \(b.first == UInt8(ascii: "-") ? -octal : octal)"
        }
        return nil
    }
}
