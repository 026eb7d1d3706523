#if canImport(Glibc)
import Glibc
#endif

/// One problem in a configuration file: where it is and what to do about it.
public struct ConfigProblem: Sendable, Hashable, CustomStringConvertible {
    public var file: String
    public var line: Int
    /// Where in the document, e.g. `devices[2].traits.onOff.binding.line`.
    public var path: String
    public var message: String

    public init(file: String, line: Int, path: String, message: String) {
        self.file = file
        self.line = line
        self.path = path
        self.message = message
    }

    public var description: String { "\(file):\(line): \(path.isEmpty ? "" : "\(path): ")\(message)" }
}

/// Every problem found in a configuration; nothing is started while there is one.
public struct ConfigError: Error, Sendable, Hashable, CustomStringConvertible {
    public var problems: [ConfigProblem]

    public init(_ problems: [ConfigProblem]) { self.problems = problems }

    public var description: String { problems.map(\.description).joined(separator: "\n") }
}

/// Collects problems while a document is read, so all of them are reported at once.
public final class ConfigDiagnostics {
    public private(set) var problems: [ConfigProblem] = []
    public init() {}
    public func add(_ problem: ConfigProblem) { problems.append(problem) }

    /// Throws every problem collected, if any.
    public func check() throws(ConfigError) {
        if !problems.isEmpty { throw ConfigError(problems) }
    }
}

/// A value in a configuration document, with where it is, for reading with precise complaints.
///
/// Readers return `nil` after recording a problem, so a decoder goes on and finds every mistake in one
/// pass: a user fixes a file once, not once per error.
public struct ConfigValue {
    public let node: YAMLNode
    public let path: String
    public let file: String
    public let diagnostics: ConfigDiagnostics

    public init(node: YAMLNode, path: String, file: String, diagnostics: ConfigDiagnostics) {
        self.node = node
        self.path = path
        self.file = file
        self.diagnostics = diagnostics
    }

    /// Reads and parses a file; a file that cannot be read or parsed is recorded as a problem.
    public static func load(file: String, diagnostics: ConfigDiagnostics) -> ConfigValue? {
        guard let text = readFile(file) else {
            diagnostics.add(ConfigProblem(file: file, line: 0, path: "",
                                          message: "cannot read the file: \(String(cString: strerror(errno)))"))
            return nil
        }
        return parse(text, file: file, diagnostics: diagnostics)
    }

    public static func parse(_ text: String, file: String, diagnostics: ConfigDiagnostics) -> ConfigValue? {
        do throws(YAMLError) {
            return ConfigValue(node: try YAML.parse(text), path: "", file: file, diagnostics: diagnostics)
        } catch {
            diagnostics.add(ConfigProblem(file: file, line: error.line, path: "", message: error.message))
            return nil
        }
    }

    static func readFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 { if errno == EINTR { continue }; return nil }
            if n == 0 { break }
            bytes += chunk[..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    public var line: Int { node.line }

    /// Records a problem at this value.
    public func problem(_ message: String) {
        diagnostics.add(ConfigProblem(file: file, line: node.line, path: path, message: message))
    }

    public var isNull: Bool { node.value == .null }

    func child(_ node: YAMLNode, _ component: String) -> ConfigValue {
        ConfigValue(node: node, path: path.isEmpty ? component : "\(path).\(component)", file: file, diagnostics: diagnostics)
    }

    /// This value as a mapping whose keys must be among `allowed`.
    public func mapping(allowed: [String]) -> ConfigMap? {
        guard case .mapping(let entries) = node.value else {
            problem("expected a mapping of \(allowed.joined(separator: ", ")), found \(kind)")
            return nil
        }
        for entry in entries where !allowed.contains(entry.key) {
            let near = allowed.first { $0.lowercased() == entry.key.lowercased() }
            diagnostics.add(ConfigProblem(file: file, line: entry.keyLine, path: path.isEmpty ? entry.key : "\(path).\(entry.key)",
                                          message: "unknown key '\(entry.key)'" + (near.map { "; did you mean '\($0)'?" }
                                              ?? "; allowed: \(allowed.joined(separator: ", "))")))
        }
        return ConfigMap(owner: self, entries: entries.filter { allowed.contains($0.key) })
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
            ConfigValue(node: item, path: "\(path)[\(i)]", file: file, diagnostics: diagnostics)
        }
    }

    /// A list, or a single value taken as a list of one.
    public var listOrSingle: [ConfigValue] {
        if case .sequence = node.value { return list ?? [] }
        return [self]
    }

    var scalarText: String? {
        if case .scalar(let s, _) = node.value { return s }
        return nil
    }

    var kind: String {
        switch node.value {
        case .null: "nothing"
        case .scalar(let s, _): "'\(s)'"
        case .sequence: "a list"
        case .mapping: "a mapping"
        }
    }

    public var string: String? {
        guard let s = scalarText else {
            problem("expected text, found \(kind)")
            return nil
        }
        return s
    }

    public var bool: Bool? {
        switch scalarText {
        case "true"?, "yes"?, "on"?: return true
        case "false"?, "no"?, "off"?: return false
        default:
            problem("expected true or false, found \(kind)")
            return nil
        }
    }

    public func int(in range: ClosedRange<Int>, unit: String = "") -> Int? {
        guard let s = scalarText else {
            problem("expected a whole number (\(range.lowerBound)…\(range.upperBound)\(unit)), found \(kind)")
            return nil
        }
        let parsed = s.hasPrefix("0x") ? Int(s.dropFirst(2), radix: 16) : Int(s)
        guard let v = parsed else {
            problem("expected a whole number (\(range.lowerBound)…\(range.upperBound)\(unit)), found '\(s)'")
            return nil
        }
        guard range.contains(v) else {
            problem("\(v) is out of range; allowed: \(range.lowerBound)…\(range.upperBound)\(unit)")
            return nil
        }
        return v
    }

    public func double(in range: ClosedRange<Double>, unit: String = "") -> Double? {
        guard let s = scalarText, let v = Double(s), v.isFinite else {
            problem("expected a number (\(range.lowerBound)…\(range.upperBound)\(unit)), found \(kind)")
            return nil
        }
        guard range.contains(v) else {
            problem("\(s) is out of range; allowed: \(range.lowerBound)…\(range.upperBound)\(unit)")
            return nil
        }
        return v
    }

    /// A duration written as `20ms`, `2s`, `1.5s`, `5m` or a bare number of `defaultUnit`.
    public func duration(in range: ClosedRange<Duration>, defaultUnit: String = "ms") -> Duration? {
        guard let s = scalarText else {
            problem("expected a duration such as 20ms, 2s or 5m, found \(kind)")
            return nil
        }
        let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600)]
        var number = Substring(s), scale = units.first { $0.0 == defaultUnit }?.1 ?? 0.001
        for (suffix, factor) in units where s.hasSuffix(suffix) && Double(s.dropLast(suffix.count)) != nil {
            number = s.dropLast(suffix.count)
            scale = factor
            break
        }
        guard let v = Double(number), v.isFinite, v >= 0 else {
            problem("expected a duration such as 20ms, 2s or 5m, found '\(s)'")
            return nil
        }
        let d = Duration.milliseconds(Int64((v * scale * 1000).rounded()))
        guard range.contains(d) else {
            problem("\(s) is out of range; allowed: \(range.lowerBound) … \(range.upperBound)")
            return nil
        }
        return d
    }

    /// One of `choices`, e.g. `pull-up`.
    public func oneOf(_ choices: [String]) -> String? {
        guard let s = scalarText, choices.contains(s) else {
            problem("expected one of \(choices.joined(separator: ", ")), found \(kind)")
            return nil
        }
        return s
    }
}

/// A mapping in a configuration document.
public struct ConfigMap {
    public let owner: ConfigValue
    public let entries: [YAMLEntry]

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

    public var keys: [String] { entries.map(\.key) }

    public var values: [(key: String, value: ConfigValue)] { entries.map { ($0.key, owner.child($0.value, $0.key)) } }
}
