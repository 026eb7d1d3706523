/// libyaml's syntax errors in the words of someone editing a file, with the fix; and the one thing
/// libyaml refuses that YAML 1.2 (a superset of JSON) allows: `"\uD83D\uDCA1"`, a UTF-16 surrogate pair.
enum YAMLSyntax {
    /// From `from` on, the characters of `line` in the bytes libyaml reads sit 2 columns left of where the
    /// user wrote them (a 12-character surrogate pair became a 10-character `\U` escape).
    struct ColumnShift: Sendable, Hashable {
        var line: Int
        var from: Int
    }

    static func shift(_ mark: YAMLMark, by shifts: [ColumnShift]) -> YAMLMark {
        guard !shifts.isEmpty else { return mark }
        let moved = shifts.filter { $0.line == mark.line && mark.column >= $0.from }.count
        return YAMLMark(line: mark.line, column: mark.column + 2 * moved)
    }

    enum Rewrite {
        case rewritten(ColumnShift)
        case problem(YAMLError)
    }

    /// libyaml stopped at the first hex digit of a `\u` or `\U` escape it finds invalid. A high surrogate
    /// followed by a low one becomes one `\U` escape; anything else is a problem, said plainly.
    static func rewriteSurrogatePair(_ bytes: inout [UInt8], at raw: YAMLMark, shifts: [ColumnShift]) -> Rewrite {
        let escape = shift(YAMLMark(line: raw.line, column: max(raw.column - 2, 1)), by: shifts)
        func problem(_ message: String) -> Rewrite {
            .problem(YAMLError(line: escape.line, column: escape.column, message: message))
        }
        guard let digits = offset(of: raw, in: bytes), digits >= 2,
              bytes[digits - 2] == UInt8(ascii: "\\") else {
            return problem("this escape is not a Unicode character")
        }
        func hex(_ at: Int, _ count: Int) -> UInt32? {
            guard at + count <= bytes.count else { return nil }
            return UInt32(String(decoding: bytes[at..<(at + count)], as: UTF8.self), radix: 16)
        }
        guard bytes[digits - 1] == UInt8(ascii: "u"), let high = hex(digits, 4) else {
            return problem("this escape is beyond the last Unicode character (\\U0010FFFF)")
        }
        let lowAt = digits + 6
        guard (0xD800...0xDBFF).contains(high), lowAt <= bytes.count,
              bytes[digits + 4] == UInt8(ascii: "\\"), bytes[digits + 5] == UInt8(ascii: "u"),
              let low = hex(lowAt, 4), (0xDC00...0xDFFF).contains(low) else {
            let shown = String(decoding: bytes[(digits - 2)..<min(digits + 4, bytes.count)], as: UTF8.self)
            return problem(
                "\(shown) is half of a UTF-16 surrogate pair: follow it with the other half (\\uDC00…\\uDFFF), "
                    + "or write the character itself or as one \\U escape such as \\U0001F4A1")
        }
        let scalar = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
        let hexDigits = String(scalar, radix: 16, uppercase: true)
        let replacement = Array(("\\U" + String(repeating: "0", count: 8 - hexDigits.count) + hexDigits).utf8)
        bytes.replaceSubrange((digits - 2)..<(lowAt + 4), with: replacement)
        return .rewritten(ColumnShift(line: raw.line, from: raw.column - 2 + replacement.count))
    }

    /// The byte offset of a line and column as libyaml counts them (lines end at LF, CRLF or CR; columns are
    /// characters; a byte order mark is not a column).
    static func offset(of mark: YAMLMark, in bytes: [UInt8]) -> Int? {
        var i = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        var line = 1
        while line < mark.line {
            guard i < bytes.count else { return nil }
            if bytes[i] == UInt8(ascii: "\n") {
                line += 1
            } else if bytes[i] == UInt8(ascii: "\r") {
                line += 1
                if i + 1 < bytes.count, bytes[i + 1] == UInt8(ascii: "\n") { i += 1 }
            }
            i += 1
        }
        var column = 1
        while column < mark.column {
            guard i < bytes.count else { return nil }
            i += 1
            while i < bytes.count, bytes[i] & 0xC0 == 0x80 { i += 1 }
            column += 1
        }
        return i
    }

    /// The line and column of a byte offset (for libyaml's reader errors, which only know the offset).
    static func mark(ofByte offset: Int, in bytes: [UInt8]) -> YAMLMark {
        var line = 1, column = 1
        var i = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        while i < min(offset, bytes.count) {
            let b = bytes[i]
            if b == UInt8(ascii: "\n")
                || (b == UInt8(ascii: "\r") && (i + 1 >= bytes.count || bytes[i + 1] != UInt8(ascii: "\n")))
            {
                line += 1
                column = 1
            } else if b & 0xC0 != 0x80 && b != UInt8(ascii: "\r") {
                column += 1
            }
            i += 1
        }
        return YAMLMark(line: line, column: column)
    }

    /// The first tab in the indentation of `line`, if any: YAML indents with spaces only.
    static func indentingTab(line: Int, in bytes: [UInt8]) -> YAMLMark? {
        guard var i = offset(of: YAMLMark(line: line, column: 1), in: bytes) else { return nil }
        var column = 1
        while i < bytes.count, bytes[i] == UInt8(ascii: " ") || bytes[i] == UInt8(ascii: "\t") {
            if bytes[i] == UInt8(ascii: "\t") { return YAMLMark(line: line, column: column) }
            i += 1
            column += 1
        }
        return nil
    }

    static func character(at mark: YAMLMark, in bytes: [UInt8]) -> UInt8? {
        guard let i = offset(of: mark, in: bytes), i < bytes.count else { return nil }
        return bytes[i]
    }

    /// libyaml's error, explained; its position mapped back to what the user wrote.
    static func explain(_ f: LibYAMLFailure, in bytes: [UInt8]) -> YAMLError {
        func at(_ m: YAMLMark, _ message: String) -> YAMLError {
            YAMLError(line: m.line, column: m.column, message: message)
        }
        let started = f.contextMark.map { "line \($0.line), column \($0.column)" } ?? "above"
        switch f.stage {
        case .memory:
            return at(f.mark, "libyaml ran out of memory reading this file")
        case .reader:
            let m = mark(ofByte: f.byteOffset ?? 0, in: bytes)
            if f.problem.contains("control characters") {
                var byte = ""
                if let offset = f.byteOffset, offset < bytes.count {
                    byte = " (byte 0x" + (bytes[offset] < 16 ? "0" : "") + String(bytes[offset], radix: 16) + ")"
                }
                return at(m, "a control character\(byte) cannot be in a YAML file; remove it")
            }
            if f.problem.contains("UTF-8") || f.problem.contains("Unicode") {
                return at(m, "this is not UTF-8 text (\(f.problem)); save the file as UTF-8")
            }
            return at(m, f.problem)
        case .scanner, .parser:
            break
        }
        // Tabs first: they cause most of the errors below, and the real fix is to replace them.
        if let tab = indentingTab(line: f.raw.line, in: bytes) {
            return at(tab, "a tab indents this line; YAML indents with spaces only: replace the tab with spaces")
        }
        if f.problem.contains("tab character") {
            return at(f.mark, "a tab is not allowed here; YAML indents with spaces only: replace the tab with spaces")
        }
        let context = f.contextMark ?? f.mark
        switch f.problem {
        case "mapping values are not allowed in this context":
            return at(
                f.mark,
                "a ':' here cannot start a key: the keys of one mapping line up under each other, and a value "
                    + "with ': ' in it is quoted (name: \"a: b\")")
        case "did not find expected key":
            return at(
                f.mark,
                "expected a key here, lined up with the other keys of the mapping that starts at \(started); "
                    + "check this line's indentation")
        case "did not find expected '-' indicator":
            return at(f.mark, "expected another '- ' item here, lined up with the items of the list that starts at "
                      + "\(started); check this line's indentation")
        case "did not find expected ',' or ']'":
            return at(f.mark, "the list '[' at \(started) is not closed: expected ',' or ']' here")
        case "did not find expected ',' or '}'":
            return at(f.mark, "the mapping '{' at \(started) is not closed: expected ',' or '}' here")
        case "found unexpected end of stream":
            if f.context?.contains("quoted scalar") == true {
                return at(context, "this quoted text is not closed: add the closing quote")
            }
            return at(f.mark, "the file ends in the middle of a value")
        case "found character that cannot start any token":
            switch character(at: f.raw, in: bytes) {
            case UInt8(ascii: "@")?, UInt8(ascii: "`")?:
                return at(f.mark, "'@' and '`' cannot start a plain value; quote it (\"@home\")")
            case UInt8(ascii: "%")?:
                return at(f.mark, "'%' starts a directive only at the top of a file; quote this value")
            default:
                return at(f.mark, "this character cannot start a value here; quote the value")
            }
        case "found unknown escape character":
            return at(f.mark, "unknown escape in double-quoted text: write \\\\ for a backslash, or use single quotes, "
                      + "which have no escapes")
        case "did not find expected hexdecimal number":
            return at(f.mark, "an escape \\x, \\u or \\U is followed by 2, 4 or 8 hexadecimal digits")
        case "could not find expected ':'":
            return at(context, "expected ':' after this key; a key and its ':' are on one line")
        case "found incompatible YAML document":
            return at(
                f.mark, "this %YAML version is not supported: Hearth reads YAML 1.2 (write %YAML 1.2, or nothing)")
        case "block sequence entries are not allowed in this context":
            return at(
                f.mark, "a '- ' list cannot start on this line: put its items on the next lines, indented under the key"
            )
        case "did not find expected node content":
            return at(f.mark, "expected a value here")
        case "did not find expected <document start>":
            return at(f.mark, "only '---' can follow the end of a document ('...'); remove what is here")
        case "found undefined tag handle":
            return at(
                f.mark, "unknown tag handle; Hearth knows !secret NAME and the standard !!str, !!int, !!float, !!bool")
        case "did not find expected alphabetic or numeric character":
            return at(f.mark, "an anchor or alias name (&name, *name) is letters, digits, '-' and '_'")
        default:
            if let context = f.context { return at(f.mark, "\(f.problem) (\(context) at \(started))") }
            return at(f.mark, f.problem)
        }
    }
}
