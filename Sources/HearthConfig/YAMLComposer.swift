/// A problem in a YAML document: where it is and what to do about it.
public struct YAMLError: Error, Sendable, Hashable, CustomStringConvertible {
    /// 1-based; 0 when the problem is not at a place in the file.
    public var line: Int
    /// 1-based, in characters.
    public var column: Int
    /// Where in the document, e.g. `devices[2].name`; empty at the top or when not known (syntax errors).
    public var path: String
    public var message: String

    public init(line: Int, column: Int, path: String = "", message: String) {
        self.line = line
        self.column = column
        self.path = path
        self.message = message
    }

    public var description: String { "\(line):\(column): \(path.isEmpty ? "" : "\(path): ")\(message)" }
}

/// What `YAML.parse` found: the document (unless the syntax was broken) and every problem and warning.
public struct YAMLParse: Sendable {
    public var root: YAMLNode?
    public var errors: [YAMLError]
    public var warnings: [YAMLError]
}

/// What a `!secret NAME` turned out to be.
public enum SecretLookup: Sendable {
    case value(String)
    /// Not found; the message says where Hearth looked and which names there are.
    case missing(String)
    /// The secrets file itself cannot be used; that was already reported once.
    case unavailable
}

public enum YAML {
    /// More nodes than this, counting what aliases repeat, is refused (a "billion laughs" file).
    public static let maximumNodes = 100_000
    /// Deeper nesting than this is refused before it can exhaust the stack.
    public static let maximumDepth = 64

    /// Parses one YAML document (YAML 1.2, core schema) with libyaml.
    ///
    /// `secrets` resolves `!secret NAME`; without it a `!secret` is a problem.
    public static func parse(_ bytes: [UInt8], secrets: ((String) -> SecretLookup)? = nil) -> YAMLParse {
        var text = bytes
        var shifts: [YAMLSyntax.ColumnShift] = []
        // A surrogate pair (`"\uD83D\uDCA1"`, which JSON writes) is rewritten as one `\U` escape and parsed
        // again; there are at most a handful in a file.
        for _ in 0...1000 {
            let recorded = shifts
            let composer: YAMLComposer
            do throws(LibYAMLFailure) {
                composer = YAMLComposer(try LibYAMLParser(bytes: text) { YAMLSyntax.shift($0, by: recorded) },
                                        secrets: secrets)
            } catch {
                return YAMLParse(root: nil, errors: [YAMLSyntax.explain(error, in: text)], warnings: [])
            }
            do throws(YAMLComposer.Failure) {
                let root = try composer.document()
                return YAMLParse(root: root, errors: composer.errors, warnings: composer.warnings)
            } catch {
                switch error {
                case .fatal(let e):
                    return YAMLParse(root: nil, errors: composer.errors + [e], warnings: composer.warnings)
                case .libyaml(let failure):
                    if failure.problem == "found invalid Unicode character escape code" {
                        switch YAMLSyntax.rewriteSurrogatePair(&text, at: failure.raw, shifts: recorded) {
                        case .rewritten(let shift):
                            shifts.append(shift)
                            continue
                        case .problem(let e):
                            return YAMLParse(root: nil, errors: [e], warnings: composer.warnings)
                        }
                    }
                    return YAMLParse(root: nil, errors: composer.errors + [YAMLSyntax.explain(failure, in: text)],
                                     warnings: composer.warnings)
                }
            }
        }
        return YAMLParse(root: nil, errors: [YAMLError(line: 1, column: 1, message: "too many escapes to rewrite")],
                         warnings: [])
    }

    /// Parses `text`; throws the first problem. For tests and tools; readers use `ConfigValue.parse`.
    public static func parse(_ text: String) throws(YAMLError) -> YAMLNode {
        let result = parse(Array(text.utf8))
        if let first = result.errors.first { throw first }
        return result.root ?? YAMLNode(.null, line: 1)
    }
}

/// Builds nodes from libyaml's events: expands aliases, merges `<<` keys, resolves tags and secrets,
/// and refuses duplicate keys — collecting every such problem, since none of them stops the parse.
final class YAMLComposer {
    enum Failure: Error {
        /// libyaml stopped: the syntax is broken here.
        case libyaml(LibYAMLFailure)
        /// We stopped: a second document, a file too deep or too large.
        case fatal(YAMLError)
    }

    private let parser: LibYAMLParser
    private let secrets: ((String) -> SecretLookup)?
    private var anchors: [String: (node: YAMLNode, size: Int)] = [:]
    private var nodes = 0
    private(set) var errors: [YAMLError] = []
    private(set) var warnings: [YAMLError] = []

    init(_ parser: LibYAMLParser, secrets: ((String) -> SecretLookup)?) {
        self.parser = parser
        self.secrets = secrets
    }

    private func next() throws(Failure) -> YAMLEvent {
        do throws(LibYAMLFailure) { return try parser.next() } catch { throw .libyaml(error) }
    }

    func document() throws(Failure) -> YAMLNode {
        _ = try next()  // stream start
        let first = try next()
        guard case .documentStart(let version) = first.kind else {
            return YAMLNode(.null, line: 1)  // an empty file, or only comments
        }
        if let version, version.minor == 1 {
            warnings.append(YAMLError(line: first.start.line, column: first.start.column, message:
                "this file says %YAML 1.1, but Hearth reads YAML 1.2: yes, no, on and off are text and 010 is ten; "
                + "remove the directive or write %YAML 1.2"))
        }
        let root = try node(try next(), path: { "" }, depth: 0).node
        _ = try next()  // document end
        let after = try next()
        if case .documentStart = after.kind {
            throw .fatal(YAMLError(line: after.start.line, column: after.start.column, message:
                "a second YAML document starts here; a Hearth file is one document: remove this '---' and "
                + "what follows, or move it into its own file"))
        }
        return root
    }

    private func problem(_ mark: YAMLMark, _ path: () -> String, _ message: String) {
        errors.append(YAMLError(line: mark.line, column: mark.column, path: path(), message: message))
    }

    private func count(_ n: Int, at mark: YAMLMark) throws(Failure) {
        nodes += n
        if nodes > YAML.maximumNodes {
            throw .fatal(YAMLError(line: mark.line, column: mark.column, message:
                "the aliases here repeat so much that the document would have more than \(YAML.maximumNodes) values; "
                + "a configuration never needs that many"))
        }
    }

    private static let core = "tag:yaml.org,2002:"

    // swiftlint:disable:next cyclomatic_complexity
    private func node(_ event: YAMLEvent, path: () -> String, depth: Int) throws(Failure) -> (node: YAMLNode, size: Int)
    {
        let mark = event.start
        if depth > YAML.maximumDepth {
            throw .fatal(YAMLError(line: mark.line, column: mark.column, path: path(),
                                   message: "nested more than \(YAML.maximumDepth) levels deep"))
        }
        switch event.kind {
        case .alias(let name):
            guard let anchored = anchors[name] else {
                problem(mark, path, "no anchor '&\(name)' before this alias; an anchor (&\(name)) must come before "
                        + "the *\(name) that repeats it" + Self.suggestion(name, among: Array(anchors.keys)))
                try count(1, at: mark)
                return (YAMLNode(.null, line: mark.line, column: mark.column), 1)
            }
            try count(anchored.size, at: mark)
            return anchored

        case .scalar(let text, let plain, let tag, let anchor):
            try count(1, at: mark)
            let node = scalar(text, plain: plain, tag: tag, at: mark, path: path)
            if let anchor { anchors[anchor] = (node, 1) }
            return (node, 1)

        case .sequenceStart(let tag, let anchor):
            if let tag, tag != Self.core + "seq" {
                problem(mark, path, "the tag \(Self.shown(tag)) does not fit a list")
            }
            try count(1, at: mark)
            var items: [YAMLNode] = []
            var size = 1
            while true {
                let e = try next()
                if case .sequenceEnd = e.kind { break }
                let index = items.count
                let (item, s) = try node(e, path: { "\(path())[\(index)]" }, depth: depth + 1)
                items.append(item)
                size += s
            }
            let node = YAMLNode(.sequence(items), line: mark.line, column: mark.column)
            if let anchor { anchors[anchor] = (node, size) }
            return (node, size)

        case .mappingStart(let tag, let anchor):
            if let tag, tag != Self.core + "map" {
                problem(mark, path, "the tag \(Self.shown(tag)) does not fit a mapping")
            }
            try count(1, at: mark)
            let (node, size) = try mapping(at: mark, path: path, depth: depth)
            if let anchor { anchors[anchor] = (node, size) }
            return (node, size)

        default:
            throw .fatal(YAMLError(line: mark.line, column: mark.column, path: path(),
                                   message: "libyaml sent an event out of order"))
        }
    }

    private func mapping(at mark: YAMLMark, path: () -> String, depth: Int) throws(Failure) -> (
        node: YAMLNode, size: Int
    ) {
        // The explicit entries in document order, and the mappings `<<` merges in, each after the explicit entries
        // before it. A mapping of a configuration has a handful of keys: a duplicate is looked for by a scan, and
        // through an index only in a mapping of many (every device is a mapping; hashing its keys twice to find
        // no duplicate was a tenth of composing a 1,000-device file).
        var explicit: [YAMLEntry] = []
        var merges: [(after: Int, entries: [YAMLEntry])] = []
        var index: [String: Int]?
        func first(_ key: String) -> YAMLEntry? {
            if let index { return index[key].map { explicit[$0] } }
            return explicit.first { $0.key == key }
        }
        var size = 1
        while true {
            let keyEvent = try next()
            if case .mappingEnd = keyEvent.kind { break }
            let keyMark = keyEvent.start
            var key: String?
            var isMerge = false
            switch keyEvent.kind {
            case .scalar(let text, let plain, let tag, _):
                if plain && tag == nil && text == "<<" {
                    isMerge = true
                } else if tag == nil || tag == Self.core + "str" || tag == "!" {
                    key = text
                } else {
                    problem(keyMark, path, "a key cannot carry a tag (\(Self.shown(tag ?? "")))")
                }
            case .alias(let name):
                if let anchored = anchors[name], case .scalar(let text, _) = anchored.node.value {
                    key = text
                } else {
                    problem(keyMark, path, "a key must be text; *\(name) is not")
                }
            case .sequenceStart, .mappingStart:
                _ = try node(keyEvent, path: path, depth: depth + 1)
                problem(keyMark, path, "a key must be text; lists and mappings as keys ('? [a, b]') are not supported")
            default:
                throw .fatal(YAMLError(line: keyMark.line, column: keyMark.column, path: path(),
                                       message: "libyaml sent an event out of order"))
            }
            // Paths are written out only for a problem: most documents have none.
            func childPath() -> String {
                guard let key, !isMerge else { return path() }
                let p = path()
                return p.isEmpty ? key : "\(p).\(key)"
            }
            let (value, s) = try node(try next(), path: childPath, depth: depth + 1)
            size += s
            if isMerge {
                merges.append((explicit.count, merged(value, at: keyMark, path: path)))
                continue
            }
            guard let key else { continue }
            if let earlier = first(key) {
                problem(
                    keyMark, childPath,
                    "the key '\(key)' appears twice in this mapping (first on line \(earlier.keyLine)); "
                        + "keep one")
                continue
            }
            index?[key] = explicit.count
            explicit.append(YAMLEntry(key: key, keyLine: keyMark.line, keyColumn: keyMark.column, value: value))
            if index == nil && explicit.count > 16 {
                index = Dictionary(explicit.enumerated().map { ($1.key, $0) }, uniquingKeysWith: { a, _ in a })
            }
        }
        guard !merges.isEmpty else {
            return (YAMLNode(.mapping(explicit), line: mark.line, column: mark.column), size)
        }
        // An explicit key wins over a merged one; of merged ones, the first merged in.
        var entries: [YAMLEntry] = []
        var seen: Set<String> = []
        var m = 0
        func mergeIn(before position: Int) {
            while m < merges.count && merges[m].after <= position {
                for e in merges[m].entries where first(e.key) == nil && !seen.contains(e.key) {
                    entries.append(e)
                    seen.insert(e.key)
                }
                m += 1
            }
        }
        for (i, e) in explicit.enumerated() {
            mergeIn(before: i)
            entries.append(e)
            seen.insert(e.key)
        }
        mergeIn(before: explicit.count)
        return (YAMLNode(.mapping(entries), line: mark.line, column: mark.column), size)
    }

    /// The entries `<<: value` merges: a mapping, or a list of mappings where earlier ones win.
    private func merged(_ value: YAMLNode, at mark: YAMLMark, path: () -> String) -> [YAMLEntry] {
        let explain = "'<<' merges mappings in: write <<: *defaults, or <<: [*a, *b]"
        switch value.value {
        case .mapping(let entries):
            return entries
        case .sequence(let items):
            var out: [YAMLEntry] = []
            for item in items {
                guard case .mapping(let entries) = item.value else {
                    problem(YAMLMark(line: item.line, column: item.column), path, explain)
                    continue
                }
                for e in entries where !out.contains(where: { $0.key == e.key }) { out.append(e) }
            }
            return out
        default:
            problem(mark, path, explain)
            return []
        }
    }

    private func scalar(_ text: String, plain: Bool, tag: String?, at mark: YAMLMark, path: () -> String) -> YAMLNode {
        func node(_ v: YAMLNode.Value) -> YAMLNode { YAMLNode(v, line: mark.line, column: mark.column) }
        guard let tag else {
            if plain, YAMLScalar.resolve(plain: text) == .null { return node(.null) }
            return node(.scalar(text, quoted: !plain))
        }
        let resolved = YAMLScalar.resolve(plain: text)
        switch tag {
        case "!", Self.core + "str":
            return node(.scalar(text, quoted: true))
        case Self.core + "null":
            if resolved == .null { return node(.null) }
        case Self.core + "bool":
            if case .bool = resolved { return node(.scalar(text, quoted: false)) }
        case Self.core + "int":
            if case .int = resolved { return node(.scalar(text, quoted: false)) }
        case Self.core + "float":
            switch resolved {
            case .int, .float: return node(.scalar(text, quoted: false))
            default: break
            }
        case "!secret":
            var n = node(.scalar("", quoted: true))
            n.secret = text
            guard !text.isEmpty else {
                problem(
                    mark, path,
                    "!secret needs the name of a secret in secrets.yaml, e.g. password: !secret mqtt_password")
                return n
            }
            switch secrets?(text) {
            case .value(let v)?: n.value = .scalar(v, quoted: true)
            case .missing(let message)?: problem(mark, path, message)
            case .unavailable?: break
            case nil: problem(mark, path, "!secret cannot be used in this file")
            }
            return n
        default:
            problem(mark, path, "unknown tag \(Self.shown(tag)); Hearth knows !secret NAME and the standard !!str, "
                    + "!!int, !!float, !!bool and !!null")
            return node(.scalar(text, quoted: !plain))
        }
        problem(mark, path, "'\(text)' is not what its tag \(Self.shown(tag)) says")
        return node(.scalar(text, quoted: !plain))
    }

    /// `!!str` for the standard tags, as they are written.
    static func shown(_ tag: String) -> String {
        tag.hasPrefix(core) ? "!!" + tag.dropFirst(core.count) : tag
    }

    static func suggestion(_ name: String, among names: [String]) -> String {
        guard !names.isEmpty else { return "" }
        if let near = names.first(where: { $0.lowercased() == name.lowercased() }) { return "; did you mean *\(near)?" }
        return "; anchors so far: " + names.sorted().map { "&" + $0 }.joined(separator: ", ")
    }
}
