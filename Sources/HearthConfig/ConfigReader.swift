#if canImport(Glibc)
import Glibc
import HearthSync
#endif

/// One problem in a configuration file: where it is and what to do about it.
public struct ConfigProblem: Sendable, Hashable, CustomStringConvertible {
    public var file: String
    /// 1-based; 0 when the problem is the file as a whole (it cannot be read).
    public var line: Int
    /// 1-based, in characters as an editor counts them; 0 when not known.
    public var column: Int
    /// Where in the document, e.g. `devices[2].traits.onOff.binding.line`.
    public var path: String
    public var message: String
    /// A warning is printed but does not stop the hub (e.g. a value YAML 1.1 would read differently).
    public var isWarning: Bool

    public init(file: String, line: Int, column: Int = 0, path: String, message: String, isWarning: Bool = false) {
        self.file = file
        self.line = line
        self.column = column
        self.path = path
        self.message = message
        self.isWarning = isWarning
    }

    /// `file:line:column: key.path: message` (`warning: message` for a warning).
    public var description: String {
        let place = line == 0 ? file : column == 0 ? "\(file):\(line)" : "\(file):\(line):\(column)"
        return "\(place): \(path.isEmpty ? "" : "\(path): ")\(isWarning ? "warning: " : "")\(message)"
    }
}

/// Every problem found in a configuration; nothing is started while there is one.
public struct ConfigError: Error, Sendable, Hashable, CustomStringConvertible {
    public var problems: [ConfigProblem]

    public init(_ problems: [ConfigProblem]) { self.problems = problems }

    public var description: String { problems.map(\.description).joined(separator: "\n") }
}

/// Collects problems while a document is read, so all of them are reported at once.
public final class ConfigDiagnostics {
    /// Problems that stop the hub.
    public private(set) var problems: [ConfigProblem] = []
    /// Warnings: printed by check-config and logged by the hub, which starts anyway.
    public private(set) var warnings: [ConfigProblem] = []

    public init() {}

    public func add(_ problem: ConfigProblem) {
        if problem.isWarning { warnings.append(problem) } else { problems.append(problem) }
    }

    /// Throws every problem collected, if any.
    public func check() throws(ConfigError) {
        if !problems.isEmpty { throw ConfigError(problems) }
    }
}

/// A value in a configuration document, with where it is, for reading with precise complaints.
///
/// Readers return `nil` after recording a problem, so a decoder goes on and finds every mistake in one
/// pass: a user fixes a file once, not once per error.
///
/// What a scalar is follows YAML 1.2's core schema: a quoted scalar is text, always (`"42"` is not a
/// number); a plain one is null, a boolean (`true`, `false`), a number or text. Where text is expected a
/// plain number is taken as written (`serialNumber: 0042`). `yes`, `no`, `on` and `off` are text, as
/// YAML 1.2 says; where a YAML 1.1 reader such as Home Assistant's would read them differently, a
/// warning says so (or, where a boolean is expected, the problem does).
public struct ConfigValue {
    public let node: YAMLNode
    public let file: String
    public let diagnostics: ConfigDiagnostics
    private let place: Place

    /// Where the value is in its document, e.g. `devices[2].binding`, for messages; empty at the top.
    public var path: String { place.path }

    public init(node: YAMLNode, path: String, file: String, diagnostics: ConfigDiagnostics) {
        self.init(node: node, place: .path(path), file: file, diagnostics: diagnostics)
    }

    private init(node: YAMLNode, place: Place, file: String, diagnostics: ConfigDiagnostics) {
        self.node = node
        self.place = place
        self.file = file
        self.diagnostics = diagnostics
    }

    /// A value's place as a link to its parent's, made into text only for a message. Why: most values are read
    /// without a problem, and writing out each one's path as it was read was about a third of reading a
    /// 1,000-device configuration (callgrind).
    private final class Place: Sendable {
        let parent: Place?
        /// The whole path when there is no parent; else the key, or "" for an item of a list.
        let name: String
        let index: Int

        private init(parent: Place?, name: String, index: Int) {
            self.parent = parent
            self.name = name
            self.index = index
        }

        static func path(_ path: String) -> Place { Place(parent: nil, name: path, index: 0) }
        static func key(_ parent: Place, _ key: String) -> Place { Place(parent: parent, name: key, index: 0) }
        static func index(_ parent: Place, _ index: Int) -> Place { Place(parent: parent, name: "", index: index) }

        var path: String {
            guard let parent else { return name }
            let p = parent.path
            if name.isEmpty { return "\(p)[\(index)]" }
            return p.isEmpty ? name : "\(p).\(name)"
        }
    }

    /// Reads and parses a file; a file that cannot be read or parsed is recorded as a problem.
    /// `!secret NAME` reads `secrets.yaml` beside it.
    public static func load(file: String, diagnostics: ConfigDiagnostics) -> ConfigValue? {
        guard let bytes = readFile(file) else {
            diagnostics.add(ConfigProblem(file: file, line: 0, path: "",
                                          message: "cannot read the file: \(String(cString: strerror(errno)))"))
            return nil
        }
        return parse(bytes, file: file, diagnostics: diagnostics)
    }

    public static func parse(_ text: String, file: String, diagnostics: ConfigDiagnostics,
                             secrets: SecretStore? = nil) -> ConfigValue? {
        parse(Array(text.utf8), file: file, diagnostics: diagnostics, secrets: secrets)
    }

    public static func parse(_ bytes: [UInt8], file: String, diagnostics: ConfigDiagnostics,
                             secrets: SecretStore? = nil) -> ConfigValue? {
        let store = secrets ?? SecretStore(besides: file, diagnostics: diagnostics)
        let result = YAML.parse(bytes, secrets: store.lookup)
        for w in result.warnings {
            diagnostics.add(ConfigProblem(file: file, line: w.line, column: w.column, path: w.path, message: w.message,
                                          isWarning: true))
        }
        for e in result.errors {
            diagnostics.add(ConfigProblem(file: file, line: e.line, column: e.column, path: e.path, message: e.message))
        }
        guard let root = result.root else { return nil }
        return ConfigValue(node: root, path: "", file: file, diagnostics: diagnostics)
    }

    static func readFile(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 { if errno == EINTR { continue }; return nil }
            if n == 0 { break }
            bytes += chunk[..<n]
        }
        return bytes
    }

    public var line: Int { node.line }
    public var column: Int { node.column }

    /// Records a problem at this value.
    public func problem(_ message: String) {
        diagnostics.add(ConfigProblem(file: file, line: node.line, column: node.column, path: path, message: message))
    }

    /// Records a warning at this value: the hub still starts.
    public func warning(_ message: String) {
        diagnostics.add(ConfigProblem(file: file, line: node.line, column: node.column, path: path, message: message,
                                      isWarning: true))
    }

    public var isNull: Bool { node.value == .null && node.secret == nil }

    /// `node`, the value of this mapping's `key`.
    public func child(_ node: YAMLNode, _ key: String) -> ConfigValue {
        ConfigValue(node: node, place: .key(place, key), file: file, diagnostics: diagnostics)
    }

    /// This value as a mapping whose keys must be among `allowed`.
    public func mapping(allowed: [String]) -> ConfigMap? {
        mapping(names: allowed) { allowed.contains($0) }
    }

    /// This value as a mapping of `section`'s keys (and of keys its `extraKeys` pattern admits).
    public func mapping(_ section: ConfigSection) -> ConfigMap? {
        guard var map = mapping(names: section.names, admits: {
            !section.isClosed || section[$0] != nil || section.admitsExtra($0)
        }) else { return nil }
        map.section = section
        let present = map.keys
        for rule in section.rules where !rule.readerChecks {
            if let complaint = rule.complaint(present: present) { problem(complaint) }
        }
        return map
    }

    /// `names` are for messages only: made when there is a problem.
    private func mapping(names: @autoclosure () -> [String], admits: (String) -> Bool) -> ConfigMap? {
        guard case .mapping(let entries) = node.value else {
            problem("expected a mapping of \(names().joined(separator: ", ")), found \(kind)")
            return nil
        }
        var refused = false
        for entry in entries where !admits(entry.key) {
            refused = true
            let names = names()
            let near = names.first { $0.lowercased() == entry.key.lowercased() }
            diagnostics.add(
                ConfigProblem(
                    file: file, line: entry.keyLine, column: entry.keyColumn,
                    path: path.isEmpty ? entry.key : "\(path).\(entry.key)",
                    message: "unknown key '\(entry.key)'"
                        + (near.map { "; did you mean '\($0)'?" }
                            ?? "; allowed: \(names.joined(separator: ", "))")))
        }
        return ConfigMap(owner: self, entries: refused ? entries.filter { admits($0.key) } : entries)
    }

    /// This value as a mapping with any keys (e.g. traits by name).
    public var anyMapping: ConfigMap? {
        guard case .mapping(let entries) = node.value else {
            problem("expected a mapping, found \(kind)")
            return nil
        }
        return ConfigMap(owner: self, entries: entries)
    }

    public var list: [ConfigValue]? {
        guard case .sequence(let items) = node.value else {
            problem("expected a list, found \(kind)")
            return nil
        }
        return items.enumerated().map { i, item in
            ConfigValue(node: item, place: .index(place, i), file: file, diagnostics: diagnostics)
        }
    }

    /// A list, or a single value taken as a list of one.
    public var listOrSingle: [ConfigValue] {
        if case .sequence = node.value { return list ?? [] }
        return [self]
    }

    var scalarText: String? {
        if node.secret == nil, case .scalar(let s, _) = node.value { return s }
        return nil
    }

    /// How a value is shown in a message; a secret's value never is.
    var kind: String {
        if let secret = node.secret { return "the secret '\(secret)'" }
        switch node.value {
        case .null: return "nothing"
        case .scalar(let s, let quoted): return quoted ? "\"\(s)\"" : "'\(s)'"
        case .sequence: return "a list"
        case .mapping: return "a mapping"
        }
    }

    private func refuseSecret() -> Bool {
        guard let secret = node.secret else { return false }
        problem("!secret \(secret) cannot be used here: secrets.yaml is for credentials (such as mqtt.password); "
                + "write this value in the configuration")
        return true
    }

    /// Text. A plain number is taken as written; a plain `yes`, `no`, `on` or `off` is text (YAML 1.2), with
    /// a warning, since YAML 1.1 tools read a boolean there.
    public var string: String? {
        if refuseSecret() { return nil }
        switch node.typed {
        case .string(let s)?:
            if case .scalar(_, quoted: false) = node.value, let other = YAMLScalar.yaml11Reading(plain: s) {
                warning("'\(s)' is read as the text \"\(s)\" (YAML 1.2), but YAML 1.1 tools such as Home Assistant "
                        + "read \(other); write \"\(s)\" in quotes to make it plain that it is text")
            }
            return s
        case .int?, .float?:
            return scalarText
        case .bool?:
            problem(
                "expected text, found \(kind), which is a boolean; write \"\(scalarText ?? "")\" in quotes if it is "
                    + "text")
            return nil
        default:
            problem("expected text, found \(kind)")
            return nil
        }
    }

    /// A credential: text written here, or `!secret NAME` from secrets.yaml.
    public var secretString: String? {
        if node.secret != nil {
            if case .scalar(let s, _) = node.value { return s }
            return nil
        }
        return string
    }

    public var bool: Bool? {
        if refuseSecret() { return nil }
        if case .bool(let b)? = node.typed { return b }
        if case .scalar(let s, let quoted) = node.value {
            if !quoted, let other = YAMLScalar.yaml11Reading(plain: s), other == "true" || other == "false" {
                problem("expected true or false, found '\(s)', which YAML 1.2 reads as text (YAML 1.1 tools such as "
                        + "Home Assistant read \(other)); write \(other)")
                return nil
            }
            if quoted, s == "true" || s == "false" {
                problem("expected true or false, found \(kind), which is quoted, so text; write \(s) without quotes")
                return nil
            }
        }
        problem("expected true or false, found \(kind)")
        return nil
    }

    public func int(in range: ClosedRange<Int>, unit: String = "") -> Int? {
        if refuseSecret() { return nil }
        // For a message only.
        func expected() -> String { "expected a whole number (\(range.lowerBound)…\(range.upperBound)\(unit))" }
        switch node.typed {
        case .int(let v)?:
            guard range.contains(v) else {
                problem("\(v) is out of range; allowed: \(range.lowerBound)…\(range.upperBound)\(unit)")
                return nil
            }
            if let text = scalarText, let other = YAMLScalar.yaml11Reading(plain: text) {
                warning("\(text) is read as \(v) (YAML 1.2), but YAML 1.1 tools read \(other); write \(v)")
            }
            return v
        case .string(let s)? where node.value == .scalar(s, quoted: true) && YAMLScalar.resolve(plain: s).isNumber:
            problem("\(expected()), found \(kind), which is quoted, so text; write \(s) without quotes")
        default:
            problem("\(expected()), found \(kind)")
        }
        return nil
    }

    public func double(in range: ClosedRange<Double>, unit: String = "") -> Double? {
        if refuseSecret() { return nil }
        // For a message only.
        func expected() -> String { "expected a number (\(range.lowerBound)…\(range.upperBound)\(unit))" }
        let v: Double
        switch node.typed {
        case .int(let i)?: v = Double(i)
        case .float(let d)? where d.isFinite: v = d
        case .string(let s)? where node.value == .scalar(s, quoted: true) && YAMLScalar.resolve(plain: s).isNumber:
            problem("\(expected()), found \(kind), which is quoted, so text; write \(s) without quotes")
            return nil
        default:
            problem("\(expected()), found \(kind)")
            return nil
        }
        guard range.contains(v) else {
            problem(
                "\(scalarText ?? "\(v)") is out of range; allowed: \(range.lowerBound)…\(range.upperBound)\(unit)")
            return nil
        }
        return v
    }

    /// The units a duration may be written in, and what they are in seconds.
    public static let durationUnits: [(suffix: String, seconds: Double)] = [
        ("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600)
    ]

    /// A duration written as `20ms`, `2s`, `1.5s`, `5m` or a bare number of `defaultUnit`.
    public func duration(in range: ClosedRange<Duration>, defaultUnit: String = "ms") -> Duration? {
        if refuseSecret() { return nil }
        let expected = "expected a duration such as 20ms, 2s or 5m"
        var number: Double
        var scale = Self.durationUnits.first { $0.suffix == defaultUnit }?.seconds ?? 0.001
        switch node.typed {
        case .int(let i)?: number = Double(i)
        case .float(let d)?: number = d
        case .string(let s)?:
            guard
                let unit = Self.durationUnits.first(where: {
                    s.hasSuffix($0.suffix) && Self.isDecimal(s.dropLast($0.suffix.count))
                }),
                let v = Double(s.dropLast(unit.suffix.count))
            else {
                problem("\(expected), found \(kind)")
                return nil
            }
            number = v
            scale = unit.seconds
        default:
            problem("\(expected), found \(kind)")
            return nil
        }
        guard number.isFinite, number >= 0 else {
            problem("\(expected), found \(kind)")
            return nil
        }
        let d = Duration.milliseconds(Int64((number * scale * 1000).rounded()))
        guard range.contains(d) else {
            problem("\(scalarText ?? "") is out of range; allowed: \(range.lowerBound) … \(range.upperBound)")
            return nil
        }
        return d
    }

    /// `12`, `1.5`, `.5`: what may stand before a duration's unit.
    static func isDecimal(_ s: Substring) -> Bool {
        var digits = 0, dots = 0
        for c in s.utf8 {
            if c == UInt8(ascii: ".") {
                dots += 1
            } else if c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") {
                digits += 1
            } else {
                return false
            }
        }
        return digits > 0 && dots <= 1
    }

    /// One of `choices`, e.g. `pull-up`; matched on the text as written (`protocol: 5` is "5").
    public func oneOf(_ choices: [String]) -> String? {
        if refuseSecret() { return nil }
        guard let s = scalarText, choices.contains(s) else {
            problem("expected one of \(choices.joined(separator: ", ")), found \(kind)")
            return nil
        }
        return s
    }

    /// A value read by its shape (`ConfigShape`): the one place a key's table entry decides what is accepted.
    public func read(_ shape: ConfigShape) -> ConfigRead? {
        switch shape {
        case .text: return string.map(ConfigRead.text)
        case .textMatching(let pattern, let hint):
            guard let s = string else { return nil }
            // Code point by code point, as JSON Schema validators match the same pattern: by characters, "[^+]"
            // would match a '+' with a combining mark after it.
            if !CompiledPatterns.matches(pattern, s) {
                problem("'\(s)' cannot be used: \(hint)")
                return nil
            }
            return .text(s)
        case .label:
            if refuseSecret() { return nil }
            if case .string(let s)? = node.typed { return .text(s) }
            problem("expected a name, found \(kind)")
            return nil
        case .textUpTo(let max):
            guard let s = string else { return nil }
            guard s.utf8.count <= max else {
                problem("at most \(max) bytes are allowed, this is \(s.utf8.count)")
                return nil
            }
            return .text(s)
        case .secret: return secretString.map(ConfigRead.text)
        case .bool: return bool.map(ConfigRead.bool)
        case .int(let range, let unit): return int(in: range, unit: unit).map(ConfigRead.int)
        case .number(let range, let unit): return double(in: range, unit: unit).map(ConfigRead.number)
        case .duration(let range, let unit): return duration(in: range, defaultUnit: unit).map(ConfigRead.duration)
        case .choice(let choices): return oneOf(choices).map(ConfigRead.text)
        case .nullable(let inner): return isNull ? .null : read(inner)
        case .named(_, let inner): return read(inner)
        case .scalar:
            if refuseSecret() { return nil }
            switch node.typed {
            case .null?: return .null
            case .bool(let b)?: return .bool(b)
            case .int(let i)?: return .int(i)
            case .float(let d)? where d.isFinite: return .number(d)
            case .string(let s)?:
                if case .scalar(_, quoted: false) = node.value, let other = YAMLScalar.yaml11Reading(plain: s) {
                    warning("'\(s)' is sent as the text \"\(s)\" (YAML 1.2), but YAML 1.1 tools such as Home Assistant "
                            + "read \(other); write \"\(s)\" in quotes to make it plain that it is text"
                            + (other == "true" || other == "false" ? ", or \(other) for a boolean" : ""))
                }
                return .text(s)
            default:
                problem("expected a single value (text, a number, true, false or null), found \(kind)")
                return nil
            }
        case .list, .listOrOne, .section, .dictionary, .anyOf, .any:
            return nil
        }
    }
}

/// A scalar read by its shape.
public enum ConfigRead: Sendable, Hashable {
    case null
    case text(String)
    case bool(Bool)
    case int(Int)
    case number(Double)
    case duration(Duration)
}

extension YAMLScalar {
    var isNumber: Bool {
        switch self {
        case .int: true
        case .float(let d): d.isFinite
        default: false
        }
    }
}

/// A mapping in a configuration document.
public struct ConfigMap {
    public let owner: ConfigValue
    public let entries: [YAMLEntry]
    /// The table it was read with (`ConfigValue.mapping(_:)`): typed reads by key name take their shape from it.
    public internal(set) var section: ConfigSection?

    init(owner: ConfigValue, entries: [YAMLEntry], section: ConfigSection? = nil) {
        self.owner = owner
        self.entries = entries
        self.section = section
    }

    public subscript(_ key: String) -> ConfigValue? {
        entries.first { $0.key == key }.map { owner.child($0.value, key) }
    }

    /// The value at `key`, recording a problem when it is missing.
    public func required(_ key: String, _ what: String) -> ConfigValue? {
        guard let v = self[key], !v.isNull else {
            owner.problem("missing '\(key)' (\(what))")
            return nil
        }
        return v
    }

    /// The value at `key`, recording a problem (with the key's help from the section) when it is missing.
    public func required(_ key: String) -> ConfigValue? {
        required(key, section?[key]?.help ?? key)
    }

    public var keys: [String] { entries.map(\.key) }

    public var values: [(key: String, value: ConfigValue)] { entries.map { ($0.key, owner.child($0.value, $0.key)) } }

    /// The value at `key` read by the shape the section gives it; nil when absent or after a problem.
    /// A `required` key that is absent (or null) is a problem: "missing 'key' (its help)".
    public func read(_ key: String, required isRequired: Bool = false) -> ConfigRead? {
        if isRequired && required(key) == nil { return nil }
        guard let value = self[key] else { return nil }
        guard let shape = section?[key]?.shape else {
            assertionFailure("no shape for '\(key)' in the section this mapping was read with")
            return nil
        }
        return value.read(shape)
    }

    public func text(_ key: String, required: Bool = false) -> String? {
        if case .text(let s)? = read(key, required: required) { return s }
        return nil
    }

    public func bool(_ key: String, required: Bool = false) -> Bool? {
        if case .bool(let b)? = read(key, required: required) { return b }
        return nil
    }

    public func int(_ key: String, required: Bool = false) -> Int? {
        if case .int(let i)? = read(key, required: required) { return i }
        return nil
    }

    public func double(_ key: String, required: Bool = false) -> Double? {
        switch read(key, required: required) {
        case .number(let d)?: d
        case .int(let i)?: Double(i)
        default: nil
        }
    }

    public func duration(_ key: String, required: Bool = false) -> Duration? {
        if case .duration(let d)? = read(key, required: required) { return d }
        return nil
    }
}

/// Each `textMatching` pattern compiled once per process. Why: compiling a `Regex` from its text is about a
/// quarter of a million instructions, and every device's id and name are matched: compiled per value, it was a
/// tenth of a 1,000-device hub's start-up (callgrind). An id's pattern (`^[^/+#]+$`: one or more of
/// anything but a few ASCII characters) is matched by a scan of the bytes instead, which says the same for every
/// text (a byte of a multi-byte character is never ASCII) at a fiftieth of a compiled `Regex`'s cost.
enum CompiledPatterns {
    private enum Matcher {
        /// `^[^…]+$` with only plain ASCII characters in the brackets: these bytes.
        case excluding([UInt8])
        /// Any other pattern; nil when it does not compile.
        case regex(Regex<AnyRegexOutput>?)
    }

    /// A compiled `Regex` is not `Sendable`, so it never leaves the lock: it is compiled and matched under it
    /// (configuration files are read one at a time; the lock is never contended in practice).
    private static let compiled = Locked<[String: Matcher]>([:])

    /// Whether `text` has a match of `pattern`, code point by code point; a pattern that does not compile refuses
    /// nothing.
    static func matches(_ pattern: String, _ text: String) -> Bool {
        compiled.withLock { cache in
            let matcher: Matcher
            if let known = cache[pattern] {
                matcher = known
            } else {
                matcher = excluded(pattern).map(Matcher.excluding)
                    ?? .regex((try? Regex(pattern))?.matchingSemantics(.unicodeScalar))
                cache[pattern] = matcher
            }
            switch matcher {
            case .excluding(let bytes):
                return !text.utf8.isEmpty && !text.utf8.contains(where: bytes.contains)
            case .regex(let regex):
                guard let regex else { return true }
                return (try? regex.firstMatch(in: text)) != nil
            }
        }
    }

    /// The characters of a pattern `^[^…]+$` whose brackets hold only ASCII that stands for itself; nil otherwise.
    static func excluded(_ pattern: String) -> [UInt8]? {
        let b = Array(pattern.utf8)
        guard b.count > 6, b.starts(with: Array("^[^".utf8)), b.suffix(3).elementsEqual("]+$".utf8) else { return nil }
        let inside = b[3..<(b.count - 3)]
        let special = Array("\\]^-[".utf8)
        guard inside.allSatisfy({ $0 > 0x20 && $0 < 0x7F && !special.contains($0) }) else { return nil }
        return Array(inside)
    }
}
