/// A node of a YAML document, with the line it starts on.
///
/// Hearth reads a subset of YAML — block mappings and sequences, flow `[…]` and `{…}`, plain and quoted
/// scalars, comments — with its own parser rather than a YAML library: the daemon stays free of
/// Foundation (a Pi has little memory), and every node keeps its line so a configuration error can say
/// exactly where it is. Anchors, aliases, tags, block scalars (`|`, `>`) and multiple documents are
/// refused with a message saying so.
public struct YAMLNode: Sendable, Hashable {
    public enum Value: Sendable, Hashable {
        case scalar(String, quoted: Bool)
        case sequence([YAMLNode])
        case mapping([YAMLEntry])
        /// An empty value (`key:` with nothing after it, `~`, `null`).
        case null
    }

    public var value: Value
    /// 1-based.
    public var line: Int

    public init(_ value: Value, line: Int) {
        self.value = value
        self.line = line
    }
}

public struct YAMLEntry: Sendable, Hashable {
    public var key: String
    public var keyLine: Int
    public var value: YAMLNode
}

/// A YAML syntax error: where and what.
public struct YAMLError: Error, Sendable, Hashable, CustomStringConvertible {
    public var line: Int
    public var message: String
    public var description: String { "line \(line): \(message)" }
}

public enum YAML {
    public static func parse(_ text: String) throws(YAMLError) -> YAMLNode {
        var lines: [Line] = []
        for (i, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let number = i + 1
            var s = Substring(raw)
            if s.hasSuffix("\r") { s = s.dropLast() }
            let content = try stripComment(s, line: number)
            let trimmed = content.drop { $0 == " " }
            if trimmed.allSatisfy({ $0 == " " || $0 == "\t" }) { continue }
            if trimmed.first == "\t" { throw YAMLError(line: number, message: "tabs cannot indent YAML; use spaces") }
            let indent = content.count - trimmed.count
            var body = String(trimmed)
            while body.last == " " || body.last == "\t" { body.removeLast() }
            if body == "---" && lines.isEmpty { continue }
            if body == "---" || body == "..." {
                throw YAMLError(line: number, message: "only one YAML document per file is supported")
            }
            lines.append(Line(indent: indent, text: body, number: number))
        }
        var parser = BlockParser(lines: lines)
        guard !lines.isEmpty else { return YAMLNode(.null, line: 1) }
        let node = try parser.block(indent: lines[0].indent)
        if parser.index < parser.lines.count {
            let l = parser.lines[parser.index]
            throw YAMLError(line: l.number, message: "this line is indented differently from the lines before it")
        }
        return node
    }

    /// Removes a `#` comment that is not inside quotes.
    static func stripComment(_ s: Substring, line: Int) throws(YAMLError) -> Substring {
        var quote: Character?
        var previous: Character = " "
        var index = s.startIndex
        while index < s.endIndex {
            let c = s[index]
            if let q = quote {
                if c == q { quote = nil }
                else if c == "\\" && q == "\"" { index = s.index(after: index) }
            } else if c == "\"" || c == "'" {
                if previous == " " || previous == "[" || previous == "{" || previous == "," || previous == ":" || previous == "-" {
                    quote = c
                }
            } else if c == "#" && (previous == " " || previous == "\t" || index == s.startIndex) {
                return s[..<index]
            }
            if index < s.endIndex { previous = s[index] }
            index = index < s.endIndex ? s.index(after: index) : index
        }
        return s
    }
}

struct Line {
    var indent: Int
    var text: String
    var number: Int
}

struct BlockParser {
    var lines: [Line]
    var index = 0

    mutating func block(indent: Int) throws(YAMLError) -> YAMLNode {
        let line = lines[index]
        if line.text == "-" || line.text.hasPrefix("- ") { return try sequence(indent: indent) }
        if try mappingKey(line.text, line: line.number) != nil { return try mapping(indent: indent) }
        index += 1
        let node = try FlowParser.value(line.text, line: line.number)
        if index < lines.count, lines[index].indent > indent {
            throw YAMLError(line: lines[index].number, message: "unexpected indentation (a value cannot continue on the next line)")
        }
        return node
    }

    mutating func mapping(indent: Int) throws(YAMLError) -> YAMLNode {
        let first = lines[index].number
        var entries: [YAMLEntry] = []
        while index < lines.count, lines[index].indent == indent {
            let line = lines[index]
            guard let (key, rest) = try mappingKey(line.text, line: line.number) else {
                throw YAMLError(line: line.number, message: "expected 'key: value' here")
            }
            if entries.contains(where: { $0.key == key }) {
                throw YAMLError(line: line.number, message: "the key '\(key)' appears twice")
            }
            index += 1
            let value: YAMLNode
            if !rest.isEmpty {
                value = try FlowParser.value(rest, line: line.number)
                if index < lines.count, lines[index].indent > indent {
                    throw YAMLError(line: lines[index].number,
                                    message: "unexpected indentation after '\(key)', which already has a value on its line")
                }
            } else if index < lines.count, lines[index].indent > indent {
                value = try block(indent: lines[index].indent)
            } else if index < lines.count, lines[index].indent == indent,
                      lines[index].text == "-" || lines[index].text.hasPrefix("- ") {
                value = try sequence(indent: indent)
            } else {
                value = YAMLNode(.null, line: line.number)
            }
            entries.append(YAMLEntry(key: key, keyLine: line.number, value: value))
        }
        return YAMLNode(.mapping(entries), line: first)
    }

    mutating func sequence(indent: Int) throws(YAMLError) -> YAMLNode {
        let first = lines[index].number
        var items: [YAMLNode] = []
        while index < lines.count, lines[index].indent == indent,
              lines[index].text == "-" || lines[index].text.hasPrefix("- ") {
            let line = lines[index]
            let rest = String(line.text.dropFirst(1).drop { $0 == " " })
            if rest.isEmpty {
                index += 1
                if index < lines.count, lines[index].indent > indent {
                    items.append(try block(indent: lines[index].indent))
                } else {
                    items.append(YAMLNode(.null, line: line.number))
                }
            } else {
                // "- key: value" starts a mapping whose keys line up with "key"; "- - x" a nested sequence.
                let column = indent + (line.text.count - rest.count)
                lines[index] = Line(indent: column, text: rest, number: line.number)
                items.append(try block(indent: column))
            }
        }
        return YAMLNode(.sequence(items), line: first)
    }

    /// `key: rest` when the line is a mapping entry.
    func mappingKey(_ text: String, line: Int) throws(YAMLError) -> (String, String)? {
        guard let first = text.first, first != "[", first != "{" else { return nil }
        if first == "\"" || first == "'" {
            var scanner = FlowParser(text: Array(text), line: line)
            guard case .scalar(let key, _) = try scanner.quoted().value else { return nil }
            scanner.skipSpaces()
            guard scanner.peek == ":" else { return nil }
            scanner.position += 1
            guard scanner.atEnd || scanner.peek == " " else { return nil }
            return (key, String(scanner.text[scanner.position...]).trimmingSpaces)
        }
        var previous: Character = " "
        for (i, c) in text.enumerated() {
            if c == ":" {
                let next = text.index(text.startIndex, offsetBy: i + 1)
                if next == text.endIndex || text[next] == " " {
                    let key = String(text.prefix(i)).trimmingSpaces
                    return (key, String(text[next...]).trimmingSpaces)
                }
            }
            if c == "#" && previous == " " { return nil }
            previous = c
        }
        return nil
    }
}

extension String {
    var trimmingSpaces: String {
        var s = Substring(self)
        while s.first == " " { s = s.dropFirst() }
        while s.last == " " { s = s.dropLast() }
        return String(s)
    }
}

/// Flow values and scalars on one line: `[a, b]`, `{k: v}`, `"quoted"`, `plain`.
struct FlowParser {
    let text: [Character]
    let line: Int
    var position = 0

    init(text: [Character], line: Int) {
        self.text = text
        self.line = line
    }

    static func value(_ s: String, line: Int) throws(YAMLError) -> YAMLNode {
        switch s.first {
        case "&", "*", "!":
            throw YAMLError(line: line, message: "anchors, aliases and tags are not supported")
        case "|", ">":
            throw YAMLError(line: line, message: "block scalars (| and >) are not supported; write the value on one line")
        default: break
        }
        var p = FlowParser(text: Array(s), line: line)
        let node = try p.node(inFlow: false)
        p.skipSpaces()
        guard p.atEnd else { throw YAMLError(line: line, message: "unexpected '\(String(p.text[p.position...]))' after a value") }
        return node
    }

    var atEnd: Bool { position >= text.count }
    var peek: Character? { atEnd ? nil : text[position] }
    mutating func skipSpaces() { while peek == " " { position += 1 } }

    mutating func node(inFlow: Bool) throws(YAMLError) -> YAMLNode {
        skipSpaces()
        switch peek {
        case "["?:
            position += 1
            var items: [YAMLNode] = []
            skipSpaces()
            if peek == "]" { position += 1; return YAMLNode(.sequence(items), line: line) }
            while true {
                items.append(try node(inFlow: true))
                skipSpaces()
                if peek == "," { position += 1; continue }
                if peek == "]" { position += 1; return YAMLNode(.sequence(items), line: line) }
                throw YAMLError(line: line, message: "expected ',' or ']' in a [list]")
            }
        case "{"?:
            position += 1
            var entries: [YAMLEntry] = []
            skipSpaces()
            if peek == "}" { position += 1; return YAMLNode(.mapping(entries), line: line) }
            while true {
                skipSpaces()
                guard case .scalar(let key, _) = try scalar(inFlow: true, isKey: true).value else {
                    throw YAMLError(line: line, message: "expected a key in a {mapping}")
                }
                skipSpaces()
                guard peek == ":" else { throw YAMLError(line: line, message: "expected ':' after '\(key)' in a {mapping}") }
                position += 1
                if entries.contains(where: { $0.key == key }) {
                    throw YAMLError(line: line, message: "the key '\(key)' appears twice")
                }
                entries.append(YAMLEntry(key: key, keyLine: line, value: try node(inFlow: true)))
                skipSpaces()
                if peek == "," { position += 1; continue }
                if peek == "}" { position += 1; return YAMLNode(.mapping(entries), line: line) }
                throw YAMLError(line: line, message: "expected ',' or '}' in a {mapping}")
            }
        case "\""?, "'"?:
            return try quoted()
        default:
            return try scalar(inFlow: inFlow, isKey: false)
        }
    }

    mutating func quoted() throws(YAMLError) -> YAMLNode {
        let q = text[position]
        position += 1
        var out = ""
        while true {
            guard let c = peek else { throw YAMLError(line: line, message: "a quoted string is not closed") }
            position += 1
            if c == q {
                if q == "'" && peek == "'" { out.append("'"); position += 1; continue }
                return YAMLNode(.scalar(out, quoted: true), line: line)
            }
            if c == "\\" && q == "\"" {
                guard let e = peek else { throw YAMLError(line: line, message: "a quoted string is not closed") }
                position += 1
                switch e {
                case "n": out.append("\n")
                case "t": out.append("\t")
                case "\\": out.append("\\")
                case "\"": out.append("\"")
                case "/": out.append("/")
                case "u":
                    guard position + 4 <= text.count, let v = UInt32(String(text[position..<(position + 4)]), radix: 16),
                          let scalar = Unicode.Scalar(v) else {
                        throw YAMLError(line: line, message: "invalid \\u escape")
                    }
                    out.unicodeScalars.append(scalar)
                    position += 4
                default: throw YAMLError(line: line, message: "unknown escape '\\\(e)'")
                }
                continue
            }
            out.append(c)
        }
    }

    mutating func scalar(inFlow: Bool, isKey: Bool) throws(YAMLError) -> YAMLNode {
        if peek == "\"" || peek == "'" { return try quoted() }
        let start = position
        while let c = peek {
            if inFlow && (c == "," || c == "]" || c == "}") { break }
            if c == ":" && (isKey || inFlow) && (position + 1 >= text.count || text[position + 1] == " " || isKey) { break }
            position += 1
        }
        let s = String(text[start..<position]).trimmingSpaces
        if s.isEmpty || s == "~" || s == "null" { return YAMLNode(.null, line: line) }
        return YAMLNode(.scalar(s, quoted: false), line: line)
    }
}
