/// What a value in a configuration may be. Readers take a key's shape from its table (`ConfigSection`)
/// and `ConfigSchema` writes the same tables out as JSON Schema, so an editor checks what the hub checks.
public indirect enum ConfigShape: Sendable {
    /// Text; a plain number is taken as written.
    case text
    /// Text matching a regular expression (kept to what ECMA 262, as JSON Schema has it, and Swift's Regex
    /// read alike), e.g. an id without '/'; `hint` says what the form is.
    case textMatching(String, hint: String)
    /// Text of at most this many bytes of UTF-8.
    case textUpTo(Int)
    /// A name that is not a number (a GPIO line's name, `GPIO17`, beside its offset, `17`).
    case label
    /// A credential: text, or `!secret NAME` from secrets.yaml.
    case secret
    case bool
    case int(ClosedRange<Int>, unit: String)
    case number(ClosedRange<Double>, unit: String)
    /// `20ms`, `2s`, `5m`, `1h`, or a bare number of `defaultUnit`.
    case duration(ClosedRange<Duration>, defaultUnit: String)
    /// One of these words (matched on the text as written: `protocol: 5` is "5").
    case choice([String])
    case list(ConfigShape)
    /// A list, or a single value taken as a list of one.
    case listOrOne(ConfigShape)
    case section(ConfigSection)
    /// A mapping with any keys, each value of this shape.
    case dictionary(ConfigShape)
    case nullable(ConfigShape)
    case anyOf([ConfigShape])
    /// Any single value (text, number, boolean or null), sent on as it is typed.
    case scalar
    case any
    /// The same shape, written once in the schema's definitions and referred to by name.
    case named(String, ConfigShape)
}

/// One key of a section: its name, what its value may be and what it is for.
public struct ConfigKey: Sendable {
    public var name: String
    public var shape: ConfigShape
    public var isRequired: Bool
    /// What the key is for (and its default): in "missing 'x' (…)" and in the schema's description.
    public var help: String

    public init(_ name: String, _ shape: ConfigShape, required: Bool = false, _ help: String) {
        self.name = name
        self.shape = shape
        self.isRequired = required
        self.help = help
    }
}

/// Keys a section admits beyond its table (manufacturer traits such as `com.example.spinner`).
public struct ConfigExtraKeys: Sendable {
    /// For the schema: which names (a regular expression).
    public var pattern: String
    /// For the reader: the same rule.
    public var admits: @Sendable (String) -> Bool
    public var shape: ConfigShape

    public init(pattern: String, shape: ConfigShape, admits: @escaping @Sendable (String) -> Bool) {
        self.pattern = pattern
        self.shape = shape
        self.admits = admits
    }
}

/// A refinement when a key has a value: e.g. a device's `traits` and `binding` when `type` is DimmableLight.
public struct ConfigCase: Sendable {
    public var key: String
    public var value: String
    public var then: ConfigShape

    public init(when key: String, is value: String, then: ConfigShape) {
        self.key = key
        self.value = value
        self.then = then
    }
}

/// A rule between the keys of a section: at most one of them, all or none, at least one.
public struct ConfigRule: Sendable {
    public enum Kind: Sendable { case atMostOne, allOrNone, atLeastOne }
    public var kind: Kind
    public var keys: [String]
    /// What the reader says when the rule is broken; nil for the generic message. A rule with
    /// `readerChecks` is left to the section's reader, which knows more (e.g. the board's pin names).
    public var message: String?
    public var readerChecks: Bool

    public static func atMostOne(_ keys: String..., message: String? = nil) -> ConfigRule {
        ConfigRule(kind: .atMostOne, keys: keys, message: message, readerChecks: false)
    }
    public static func allOrNone(_ keys: String..., message: String? = nil) -> ConfigRule {
        ConfigRule(kind: .allOrNone, keys: keys, message: message, readerChecks: false)
    }
    /// Always checked by the reader, whose "missing" message names what would fit.
    public static func atLeastOne(_ keys: String...) -> ConfigRule {
        ConfigRule(kind: .atLeastOne, keys: keys, message: nil, readerChecks: true)
    }

    /// The generic complaint when `present` breaks the rule; nil when it holds.
    func complaint(present: [String]) -> String? {
        // Counted first: the rule holds for almost every mapping read, and then no list of keys is made.
        var count = 0
        for key in keys where present.contains(key) { count += 1 }
        switch kind {
        case .atMostOne:
            guard count > 1 else { return nil }
            return message
                ?? "give only one of \(ConfigRule.list(keys)) (found \(ConfigRule.list(keys.filter(present.contains))))"
        case .allOrNone:
            guard count > 0, count < keys.count else { return nil }
            return message
                ?? "\(ConfigRule.list(keys)) go together: add \(ConfigRule.list(keys.filter { !present.contains($0) }))"
        case .atLeastOne:
            guard count == 0 else { return nil }
            return message ?? "give \(keys.count == 2 ? "either" : "one of") \(ConfigRule.list(keys, or: true))"
        }
    }

    static func list(_ keys: [String], or: Bool = false) -> String {
        keys.count <= 1 ? keys.joined() : keys.dropLast().joined(separator: ", ") + (or ? " or " : " and ") + keys.last!
    }
}

/// A mapping's table of keys.
public struct ConfigSection: Sendable {
    public var keys: [ConfigKey]
    public var help: String?
    /// Only these keys (and `extraKeys`); false for a partial section that refines another.
    public var isClosed: Bool
    public var extraKeys: ConfigExtraKeys?
    public var rules: [ConfigRule]
    public var cases: [ConfigCase]

    public init(_ keys: [ConfigKey], help: String? = nil, closed: Bool = true, extraKeys: ConfigExtraKeys? = nil,
                rules: [ConfigRule] = [], cases: [ConfigCase] = []) {
        self.keys = keys
        self.help = help
        self.isClosed = closed
        self.extraKeys = extraKeys
        self.rules = rules
        self.cases = cases
    }

    public var names: [String] { keys.map(\.name) }

    public subscript(_ name: String) -> ConfigKey? { keys.first { $0.name == name } }

    public func admitsExtra(_ name: String) -> Bool { extraKeys?.admits(name) ?? false }
}

/// A JSON value, enough to write a schema without Foundation; objects keep their keys in order so the
/// generated file is the same every time.
public indirect enum SchemaJSON: Sendable, Hashable {
    case object([(String, SchemaJSON)])
    case array([SchemaJSON])
    case string(String)
    case int(Int)
    case number(Double)
    case bool(Bool)
    case null

    public static func == (a: SchemaJSON, b: SchemaJSON) -> Bool { a.rendered() == b.rendered() }
    public func hash(into hasher: inout Hasher) { hasher.combine(rendered()) }

    /// Pretty-printed with two spaces; short arrays of plain values stay on one line.
    public func rendered(indent: String = "") -> String {
        let inner = indent + "  "
        switch self {
        case .object(let members):
            if members.isEmpty { return "{}" }
            return "{\n" + members.map { "\(inner)\(Self.quoted($0.0)): \($0.1.rendered(indent: inner))" }
                .joined(separator: ",\n") + "\n\(indent)}"
        case .array(let items):
            if items.isEmpty { return "[]" }
            let flat = items.allSatisfy {
                if case .object = $0 { false } else if case .array = $0 { false } else { true }
            }
            let line = "[" + items.map { $0.rendered() }.joined(separator: ", ") + "]"
            if flat && line.count + indent.count <= 110 { return line }
            return "[\n" + items.map { inner + $0.rendered(indent: inner) }.joined(separator: ",\n") + "\n\(indent)]"
        case .string(let s): return Self.quoted(s)
        case .int(let i): return String(i)
        case .number(let d):
            if d == d.rounded(), abs(d) < 1e15 { return String(Int(d)) }
            return "\(d)"
        case .bool(let b): return b ? "true" : "false"
        case .null: return "null"
        }
    }

    static func quoted(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case "\r": out += "\\r"
            default:
                if u.value < 0x20 {
                    let h = String(u.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - h.count) + h
                } else {
                    out.unicodeScalars.append(u)
                }
            }
        }
        return out + "\""
    }
}

/// Writes shapes out as JSON Schema (draft-07, which every editor's YAML language server understands).
public struct ConfigSchema {
    private var definitions: [(String, SchemaJSON)] = []
    private var defined: Set<String> = []

    /// A complete schema document for a file whose top level is `root`.
    public static func document(title: String, root: ConfigSection) -> SchemaJSON {
        var builder = ConfigSchema()
        guard case .object(let body) = builder.schema(.section(root)) else { return .null }
        var members: [(String, SchemaJSON)] = [
            ("$schema", .string("http://json-schema.org/draft-07/schema#")),
            ("title", .string(title)),
        ]
        members += body
        if !builder.definitions.isEmpty { members.append(("definitions", .object(builder.definitions))) }
        return .object(members)
    }

    /// `^(digits)(ms|s|m|h)$`: a duration written with its unit.
    public static var durationPattern: String {
        "^([0-9]+(\\.[0-9]*)?|\\.[0-9]+)(" + ConfigValue.durationUnits.map(\.suffix).joined(separator: "|") + ")$"
    }

    /// What a value written as text is as a JSON value when YAML 1.2 reads it plain (`5` is the number 5).
    static func plainForms(_ text: String) -> [SchemaJSON] {
        switch YAMLScalar.resolve(plain: text) {
        case .int(let i): [.string(text), .int(i)]
        case .float(let d) where d.isFinite: [.string(text), .number(d)]
        case .bool(let b): [.string(text), .bool(b)]
        case .null: [.string(text), .null]
        default: [.string(text)]
        }
    }

    mutating func schema(_ shape: ConfigShape) -> SchemaJSON {
        let textTypes = SchemaJSON.array([.string("string"), .string("number")])
        switch shape {
        case .text, .secret:
            return .object([("type", textTypes)])
        case .textMatching(let pattern, _):
            return .object([("type", textTypes), ("pattern", .string(pattern))])
        case .textUpTo(let bytes):
            return .object([("type", textTypes), ("maxLength", .int(bytes))])
        case .label:
            return .object([("type", .string("string"))])
        case .bool:
            return .object([("type", .string("boolean"))])
        case .int(let range, _):
            var o: [(String, SchemaJSON)] = [("type", .string("integer"))]
            if range.lowerBound != .min { o.append(("minimum", .int(range.lowerBound))) }
            if range.upperBound != .max { o.append(("maximum", .int(range.upperBound))) }
            return .object(o)
        case .number(let range, _):
            return .object([("type", .string("number")), ("minimum", .number(range.lowerBound)),
                            ("maximum", .number(range.upperBound))])
        case .duration(let range, let unit):
            let scale = ConfigValue.durationUnits.first { $0.suffix == unit }?.seconds ?? 0.001
            func inUnit(_ d: Duration) -> Double {
                let (s, a) = d.components
                return (Double(s) + Double(a) / 1e18) / scale
            }
            return .object([("anyOf", .array([
                .object([("type", .string("number")), ("minimum", .number(inUnit(range.lowerBound))),
                         ("maximum", .number(inUnit(range.upperBound)))]),
                .object([("type", .string("string")), ("pattern", .string(Self.durationPattern))]),
            ]))])
        case .choice(let choices):
            return .object([("enum", .array(choices.flatMap(Self.plainForms)))])
        case .list(let item):
            return .object([("type", .string("array")), ("items", schema(item))])
        case .listOrOne(let item):
            let one = schema(item)
            return .object([("anyOf", .array([one, .object([("type", .string("array")), ("items", one)])]))])
        case .section(let section):
            return schema(section)
        case .dictionary(let value):
            return .object([("type", .string("object")), ("additionalProperties", schema(value))])
        case .nullable(let inner):
            return .object([("anyOf", .array([.object([("type", .string("null"))]), schema(inner)]))])
        case .anyOf(let shapes):
            return .object([("anyOf", .array(shapes.map { schema($0) }))])
        case .scalar:
            return .object([
                ("type", .array([.string("string"), .string("number"), .string("boolean"), .string("null")]))
            ])
        case .any:
            return .object([])
        case .named(let name, let inner):
            if !defined.contains(name) {
                defined.insert(name)
                let index = definitions.count
                definitions.append((name, .null))
                definitions[index].1 = schema(inner)
            }
            return .object([("$ref", .string("#/definitions/\(name)"))])
        }
    }

    mutating func schema(_ section: ConfigSection) -> SchemaJSON {
        var o: [(String, SchemaJSON)] = []
        if section.isClosed { o.append(("type", .string("object"))) }
        if let help = section.help { o.append(("description", .string(help))) }
        var properties: [(String, SchemaJSON)] = []
        for key in section.keys {
            var s = schema(key.shape)
            if case .object(var members) = s {
                if members.contains(where: { $0.0 == "$ref" }) {
                    members = [("allOf", .array([s]))]  // draft-07 ignores a $ref's siblings
                }
                if !key.help.isEmpty { members.insert(("description", .string(key.help)), at: 0) }
                s = .object(members)
            }
            properties.append((key.name, s))
        }
        o.append(("properties", .object(properties)))
        if let extra = section.extraKeys {
            o.append(("patternProperties", .object([(extra.pattern, schema(extra.shape))])))
        }
        if section.isClosed { o.append(("additionalProperties", .bool(false))) }
        let required = section.keys.filter(\.isRequired).map { SchemaJSON.string($0.name) }
        if !required.isEmpty { o.append(("required", .array(required))) }
        var all: [SchemaJSON] = []
        var dependencies: [(String, SchemaJSON)] = []
        for rule in section.rules {
            switch rule.kind {
            case .atMostOne:
                for (i, a) in rule.keys.enumerated() {
                    for b in rule.keys[(i + 1)...] {
                        all.append(.object([("not", .object([("required", .array([.string(a), .string(b)]))]))]))
                    }
                }
            case .allOrNone:
                for key in rule.keys {
                    dependencies.append((key, .array(rule.keys.filter { $0 != key }.map(SchemaJSON.string))))
                }
            case .atLeastOne:
                all.append(
                    .object([("anyOf", .array(rule.keys.map { .object([("required", .array([.string($0)]))]) }))]))
            }
        }
        if !dependencies.isEmpty { o.append(("dependencies", .object(dependencies))) }
        for c in section.cases {
            all.append(.object([
                ("if", .object([("properties", .object([(c.key, .object([("const", .string(c.value))]))])),
                                ("required", .array([.string(c.key)]))])),
                ("then", schema(c.then)),
            ]))
        }
        if !all.isEmpty { o.append(("allOf", .array(all))) }
        return .object(o)
    }
}
