// A thin safe wrapper over libyaml's event parser: the only file that touches the C API.
//
// libyaml (the C library under PyYAML, Ruby's Psych and Yams) does the hard part of YAML — indentation,
// flow collections, block scalars, quoting and escapes, anchors, directives, encodings — and reports
// every event with its line and column. Resolving scalars (YAML 1.2 core schema), anchors, merge keys
// and tags is ours (YAMLComposer), so what a value means is decided in one place we control.
internal import CYAML

/// A position in a file: 1-based line and column, the column counted in characters as editors count them.
struct YAMLMark: Sendable, Hashable {
    var line: Int
    var column: Int
}

/// One libyaml event, copied out of libyaml's memory.
struct YAMLEvent {
    enum Kind {
        case streamStart
        case streamEnd
        case documentStart(version: (major: Int, minor: Int)?)
        case documentEnd
        case alias(anchor: String)
        case scalar(String, plain: Bool, tag: String?, anchor: String?)
        case sequenceStart(tag: String?, anchor: String?)
        case sequenceEnd
        case mappingStart(tag: String?, anchor: String?)
        case mappingEnd
    }

    var kind: Kind
    var start: YAMLMark
}

/// What libyaml could not parse, as it said it, before we explain it (`YAMLSyntax.explain`).
struct LibYAMLFailure: Error {
    enum Stage { case reader, scanner, parser, memory }
    var stage: Stage
    var problem: String
    /// Where the problem is; for a reader problem (bad UTF-8, control characters) only `byteOffset` is known.
    var mark: YAMLMark
    /// `mark` in the bytes libyaml read, before any rewrite was undone.
    var raw: YAMLMark
    var byteOffset: Int?
    /// What libyaml was reading, and where that started (e.g. the quoted scalar that is not closed).
    var context: String?
    var contextMark: YAMLMark?
}

/// Owns one `yaml_parser_t` and the bytes it reads; `next()` hands out events one at a time.
///
/// Columns in the bytes may have been shifted by `YAMLSyntax.rewriteSurrogatePair`; `columnShift`
/// maps them back to the user's file, so every mark we hand out points at what the user wrote.
final class LibYAMLParser {
    private let parser: UnsafeMutablePointer<yaml_parser_t>
    /// libyaml keeps a pointer into the input: it lives exactly as long as the parser.
    private let input: UnsafeMutableBufferPointer<UInt8>
    private let columnShift: (YAMLMark) -> YAMLMark
    private var finished = false

    init(bytes: [UInt8], columnShift: @escaping (YAMLMark) -> YAMLMark = { $0 }) throws(LibYAMLFailure) {
        parser = .allocate(capacity: 1)
        input = .allocate(capacity: max(bytes.count, 1))
        _ = input.initialize(from: bytes)
        self.columnShift = columnShift
        guard yaml_parser_initialize(parser) != 0 else {
            parser.deallocate()
            input.deallocate()
            throw LibYAMLFailure(stage: .memory, problem: "libyaml could not allocate its parser",
                                 mark: YAMLMark(line: 1, column: 1), raw: YAMLMark(line: 1, column: 1))
        }
        yaml_parser_set_input_string(parser, input.baseAddress, bytes.count)
    }

    deinit {
        yaml_parser_delete(parser)
        parser.deallocate()
        input.deallocate()
    }

    func next() throws(LibYAMLFailure) -> YAMLEvent {
        if finished { return YAMLEvent(kind: .streamEnd, start: YAMLMark(line: 1, column: 1)) }
        var event = yaml_event_t()
        guard yaml_parser_parse(parser, &event) != 0 else { throw failure() }
        defer { yaml_event_delete(&event) }
        let start = mark(event.start_mark)
        switch event.type {
        case YAML_STREAM_START_EVENT:
            return YAMLEvent(kind: .streamStart, start: start)
        case YAML_STREAM_END_EVENT:
            finished = true
            return YAMLEvent(kind: .streamEnd, start: start)
        case YAML_DOCUMENT_START_EVENT:
            let version = event.data.document_start.version_directive.map {
                (major: Int($0.pointee.major), minor: Int($0.pointee.minor))
            }
            return YAMLEvent(kind: .documentStart(version: version), start: start)
        case YAML_DOCUMENT_END_EVENT:
            return YAMLEvent(kind: .documentEnd, start: start)
        case YAML_ALIAS_EVENT:
            return YAMLEvent(kind: .alias(anchor: Self.string(event.data.alias.anchor) ?? ""), start: start)
        case YAML_SCALAR_EVENT:
            let s = event.data.scalar
            let value = s.value.map {
                String(decoding: UnsafeBufferPointer(start: $0, count: s.length), as: UTF8.self)
            } ?? ""
            return YAMLEvent(kind: .scalar(value, plain: s.style == YAML_PLAIN_SCALAR_STYLE,
                                           tag: Self.string(s.tag), anchor: Self.string(s.anchor)), start: start)
        case YAML_SEQUENCE_START_EVENT:
            let s = event.data.sequence_start
            return YAMLEvent(kind: .sequenceStart(tag: Self.string(s.tag), anchor: Self.string(s.anchor)), start: start)
        case YAML_SEQUENCE_END_EVENT:
            return YAMLEvent(kind: .sequenceEnd, start: start)
        case YAML_MAPPING_START_EVENT:
            let m = event.data.mapping_start
            return YAMLEvent(kind: .mappingStart(tag: Self.string(m.tag), anchor: Self.string(m.anchor)), start: start)
        case YAML_MAPPING_END_EVENT:
            return YAMLEvent(kind: .mappingEnd, start: start)
        default:
            throw LibYAMLFailure(stage: .parser, problem: "libyaml returned an event it does not document",
                                 mark: start, raw: start)
        }
    }

    private func mark(_ m: yaml_mark_t) -> YAMLMark { columnShift(Self.raw(m)) }

    private static func raw(_ m: yaml_mark_t) -> YAMLMark { YAMLMark(line: Int(m.line) + 1, column: Int(m.column) + 1) }

    private func failure() -> LibYAMLFailure {
        let p = parser.pointee
        let stage: LibYAMLFailure.Stage = switch p.error {
        case YAML_READER_ERROR: .reader
        case YAML_SCANNER_ERROR: .scanner
        case YAML_MEMORY_ERROR: .memory
        default: .parser
        }
        let problem = p.problem.map { String(cString: $0) } ?? "libyaml could not parse the file"
        let context = p.context.map { String(cString: $0) }
        return LibYAMLFailure(stage: stage, problem: problem, mark: mark(p.problem_mark), raw: Self.raw(p.problem_mark),
                              byteOffset: stage == .reader ? Int(p.problem_offset) : nil,
                              context: context, contextMark: context == nil ? nil : mark(p.context_mark))
    }

    private static func string(_ p: UnsafeMutablePointer<yaml_char_t>?) -> String? {
        p.map { String(cString: UnsafePointer($0)) }
    }
}
