import HearthConfig
import Testing

/// The YAML people write (ESPHome, Home Assistant, Zigbee2MQTT habits), read through libyaml.
@Suite struct YAMLTests {
    func parse(_ text: String) throws -> YAMLNode { try YAML.parse(text) }
    func errors(_ text: String) -> [YAMLError] { YAML.parse(Array(text.utf8)).errors }
    func fails(_ text: String) -> YAMLError? { errors(text).first }
    func scalar(_ node: YAMLNode?) -> String? {
        if case .scalar(let s, _)? = node?.value { s } else { nil }
    }
    func entry(_ node: YAMLNode?, _ key: String) -> YAMLNode? {
        if case .mapping(let e)? = node?.value { e.first { $0.key == key }?.value } else { nil }
    }
    func keys(_ node: YAMLNode?) -> [String] {
        if case .mapping(let e)? = node?.value { e.map(\.key) } else { [] }
    }
    func items(_ node: YAMLNode?) -> [YAMLNode] {
        if case .sequence(let i)? = node?.value { i } else { [] }
    }
    func path(_ node: YAMLNode, _ keys: String...) -> YAMLNode? {
        keys.reduce(Optional(node)) { entry($0, $1) }
    }

    @Test func mappingsSequencesAndScalarsWithLinesAndColumns() throws {
        let doc = try parse("""
        # a hub
        hub: attic   # trailing comment
        devices:
          - id: lamp
            name: "Kitchen # lamp"
            types: [DimmableLight, HumiditySensor]
          - id: 'it''s'
            traits:
              onOff: {startUpOnOff: toggle, debounce: 20}
        empty:
        list:
        - a
        - b
        """)
        #expect(scalar(entry(doc, "hub")) == "attic")
        let devices = items(entry(doc, "devices"))
        #expect(devices.count == 2)
        #expect((devices[0].line, devices[0].column) == (4, 5))
        #expect(scalar(entry(devices[0], "name")) == "Kitchen # lamp")
        #expect(items(entry(devices[0], "types")).map { scalar($0) } == ["DimmableLight", "HumiditySensor"])
        #expect(scalar(entry(devices[1], "id")) == "it's")
        let onOff = try #require(path(devices[1], "traits", "onOff"))
        #expect(scalar(entry(onOff, "startUpOnOff")) == "toggle")
        #expect((onOff.line, onOff.column) == (9, 14))
        #expect((entry(onOff, "debounce")?.line, entry(onOff, "debounce")?.column) == (9, 47))
        #expect(entry(doc, "empty")?.value == .null)
        #expect(entry(doc, "empty")?.line == 10)
        #expect(items(entry(doc, "list")).map { scalar($0) } == ["a", "b"])
        guard case .mapping(let top) = doc.value else { Issue.record("not a mapping"); return }
        #expect(
            top.map { "\($0.key)@\($0.keyLine):\($0.keyColumn)" } == [
                "hub@2:1", "devices@3:1", "empty@10:1", "list@11:1"
            ])
    }

    @Test func blockScalarsKeepOrFoldTheirLines() throws {
        let doc = try parse("""
        literal: |
          line one
            indented
          line three
        folded: >
          one
          two

          three
        stripped: |-
          no newline at the end
        kept: |+
          two newlines

        after: 1
        """)
        #expect(scalar(entry(doc, "literal")) == "line one\n  indented\nline three\n")
        #expect(scalar(entry(doc, "folded")) == "one two\nthree\n")
        #expect(scalar(entry(doc, "stripped")) == "no newline at the end")
        #expect(scalar(entry(doc, "kept")) == "two newlines\n\n")
        #expect(entry(doc, "literal")?.typed == .string("line one\n  indented\nline three\n"))
        #expect(scalar(entry(doc, "after")) == "1")
    }

    @Test func anchorsAliasesAndMergeKeysRepeatABinding() throws {
        let doc = try parse("""
        defaults: &relay {kind: relay, activeLow: true, safeState: off}
        devices:
          - id: porch
            binding:
              <<: *relay
              pin: relay-1
          - id: fan
            binding:
              <<: *relay
              pin: relay-2
              activeLow: false
          - id: both
            binding:
              <<: [{kind: wallSwitch, debounce: 20ms}, *relay]
          - id: same
            binding: *relay
        """)
        let devices = items(entry(doc, "devices"))
        let porch = try #require(entry(devices[0], "binding"))
        #expect(keys(porch) == ["kind", "activeLow", "safeState", "pin"])
        #expect(scalar(entry(porch, "kind")) == "relay")
        #expect(entry(porch, "kind")?.line == 1)  // a merged value points at the text it came from
        let fan = try #require(entry(devices[1], "binding"))
        #expect(scalar(entry(fan, "activeLow")) == "false")  // an explicit key wins over a merged one
        #expect(scalar(entry(fan, "pin")) == "relay-2")
        let both = try #require(entry(devices[2], "binding"))
        #expect(scalar(entry(both, "kind")) == "wallSwitch")  // the first mapping of a merge list wins
        #expect(keys(both) == ["kind", "debounce", "activeLow", "safeState"])
        #expect(entry(devices[3], "binding") == entry(doc, "defaults"))
    }

    /// Duplicates are found by a scan in small mappings and through an index past 16 keys: the same problems either
    /// way; a merge keeps its place among the explicit keys, which win over it.
    @Test func duplicateKeysInMappingsOfAnySizeAndMergesInPlace() throws {
        let many = (0..<20).map { "k\($0): \($0)" }.joined(separator: "\n") + "\nk3: again\nk19: again\nk20: new\n"
        let found = errors(many)
        #expect(found.map(\.line) == [21, 22])
        #expect(found.first?.message.contains("first on line 4") == true)
        #expect(found.last?.message.contains("first on line 20") == true)
        #expect(errors("{a: 1, b: 2, a: 3}").map(\.message).first?.contains("first on line 1") == true)
        let doc = try parse("m: {a: 1, <<: {b: 2, a: 9, d: 4}, c: 3, d: 5}")
        #expect(keys(entry(doc, "m")) == ["a", "b", "c", "d"])
        #expect(scalar(path(doc, "m", "a")) == "1")
        #expect(scalar(path(doc, "m", "d")) == "5")
    }

    @Test func flowCollectionsAndScalarsOverSeveralLines() throws {
        let doc = try parse("""
        features: [lighting,
                   onOff]
        info: {vendorName: Acme,
          productName: Lamp 2}
        plain: a plain scalar
          over two lines
        quoted: "a quoted scalar
          over two lines"
        single: 'single
          quoted'
        trailing: [a, b,]
        """)
        #expect(items(entry(doc, "features")).map { scalar($0) } == ["lighting", "onOff"])
        #expect(scalar(entry(entry(doc, "info"), "productName")) == "Lamp 2")
        #expect(scalar(entry(doc, "plain")) == "a plain scalar over two lines")
        #expect(scalar(entry(doc, "quoted")) == "a quoted scalar over two lines")
        #expect(scalar(entry(doc, "single")) == "single quoted")
        #expect(items(entry(doc, "trailing")).map { scalar($0) } == ["a", "b"])  // no extra null
    }

    @Test func documentMarkersAreAcceptedAndASecondDocumentIsRefused() throws {
        let doc = try parse("%YAML 1.2\n---\nhub: attic\n...\n")
        #expect(scalar(entry(doc, "hub")) == "attic")
        #expect(scalar(entry(try parse("---\nhub: attic\n"), "hub")) == "attic")
        #expect(fails("a: 1\n---\nb: 2\n") == YAMLError(line: 2, column: 1, message:
            "a second YAML document starts here; a Hearth file is one document: remove this '---' and what follows, "
            + "or move it into its own file"))
        let old = YAML.parse(Array("%YAML 1.1\n---\na: yes\n".utf8))
        #expect(old.errors.isEmpty)
        #expect(
            old.warnings.map(\.description) == [
                "1:1: this file says %YAML 1.1, but Hearth reads YAML 1.2: yes, no, "
                    + "on and off are text and 010 is ten; remove the directive or write %YAML 1.2"
            ])
        #expect(fails("%YAML 2.0\n---\na: 1\n")?.message.contains("Hearth reads YAML 1.2") == true)
    }

    @Test func escapesIncludingSurrogatePairs() throws {
        let doc = try parse(#"""
        cr: "a\rb"
        hex: "\x41"
        long: "\U0001F4A1"
        pair: "\uD83D\uDCA1 on"
        two: "\uD83D\uDCA1\uD83D\uDD25"
        """#)
        #expect(scalar(entry(doc, "cr")) == "a\rb")
        #expect(scalar(entry(doc, "hex")) == "A")
        #expect(scalar(entry(doc, "long")) == "💡")
        #expect(scalar(entry(doc, "pair")) == "💡 on")
        #expect(scalar(entry(doc, "two")) == "💡🔥")
        // Columns after a rewritten pair still point at what the user wrote.
        let columns = try parse(#"a: ["\uD83D\uDCA1", "\uD83D\uDCA1", x]"#)
        #expect(items(entry(columns, "a")).map(\.column) == [5, 21, 37])
        #expect(fails(#"a: ["\uD83D\uDCA1", "\uD83D x"]"#) == YAMLError(line: 1, column: 22, message:
            #"\uD83D is half of a UTF-16 surrogate pair: follow it with the other half (\uDC00…\uDFFF), or write "#
            + #"the character itself or as one \U escape such as \U0001F4A1"#))
        #expect(fails(#"a: "\q""#)?.column == 5)
    }

    @Test func aByteOrderMarkIsNotPartOfTheFirstKey() throws {
        let doc = try #require(YAML.parse([0xEF, 0xBB, 0xBF] + Array("hub: attic\n".utf8)).root)
        #expect(keys(doc) == ["hub"])
        #expect(entry(doc, "hub")?.column == 6)
    }

    @Test func commentsEndAtTheRightPlace() throws {
        let doc = try parse("""
        a: 'it''s # one'
        name: the "best # one
        url: http://host/#anchor
        tag: a#b
        """)
        #expect(scalar(entry(doc, "a")) == "it's # one")
        #expect(scalar(entry(doc, "name")) == "the \"best")
        #expect(scalar(entry(doc, "url")) == "http://host/#anchor")
        #expect(scalar(entry(doc, "tag")) == "a#b")
    }

    @Test func quotedScalarsAreTextAndPlainOnesFollowTheCoreSchema() throws {
        let doc = try parse("""
        args: {level: "42", count: 42, single: '42', flag: !!str true}
        """)
        #expect(entry(entry(doc, "args"), "level")?.typed == .string("42"))
        #expect(entry(entry(doc, "args"), "count")?.typed == .int(42))
        #expect(entry(entry(doc, "args"), "single")?.typed == .string("42"))
        #expect(entry(entry(doc, "args"), "flag")?.typed == .string("true"))
        let block = try parse("v: |-\n  42\n")
        #expect(entry(block, "v")?.typed == .string("42"))

        let table: [(String, YAMLScalar)] = [
            ("~", .null), ("null", .null), ("Null", .null), ("NULL", .null), ("", .null),
            ("true", .bool(true)), ("True", .bool(true)), ("FALSE", .bool(false)),
            ("yes", .string("yes")), ("no", .string("no")), ("on", .string("on")), ("off", .string("off")),
            ("y", .string("y")), ("tRue", .string("tRue")),
            ("0", .int(0)), ("-17", .int(-17)), ("+5", .int(5)), ("010", .int(10)), ("0o17", .int(15)),
            ("0x1F", .int(31)), ("0x", .string("0x")), ("1_000", .string("1_000")), ("1:30", .string("1:30")),
            ("1.5", .float(1.5)), (".5", .float(0.5)), ("1e3", .float(1000)), ("-2.5E-1", .float(-0.25)),
            ("1.", .float(1)), (".", .string(".")), ("-.inf", .float(-.infinity)), (".Inf", .float(.infinity)),
            ("1.2.3", .string("1.2.3")), ("3.1.1", .string("3.1.1")),
            ("99999999999999999999", .string("99999999999999999999")),
            ("nulls", .string("nulls")), ("truest", .string("truest")), ("False!", .string("False!")),
            ("+.inf", .float(.infinity)),
            ("-", .string("-")), ("Light 1", .string("Light 1")), ("n", .string("n")), ("~~", .string("~~")),
        ]
        for (text, expected) in table {
            #expect(YAMLScalar.resolve(plain: text) == expected, "\(text)")
        }
        if case .float(let nan) = YAMLScalar.resolve(plain: ".nan") { #expect(nan.isNaN) } else { Issue.record(".nan") }
        #expect(YAMLScalar.yaml11Reading(plain: "yes") == "true")
        #expect(YAMLScalar.yaml11Reading(plain: "Off") == "false")
        #expect(YAMLScalar.yaml11Reading(plain: "010") == "octal 8")
        #expect(YAMLScalar.yaml11Reading(plain: "019") == nil)
        #expect(YAMLScalar.yaml11Reading(plain: "10") == nil)
        #expect(YAMLScalar.yaml11Reading(plain: "true") == nil)
        #expect(YAMLScalar.yaml11Reading(plain: "NO") == "false")
        #expect(YAMLScalar.yaml11Reading(plain: "Y") == "true")
        #expect(YAMLScalar.yaml11Reading(plain: "-010") == "octal -8")
        #expect(YAMLScalar.yaml11Reading(plain: "none") == nil)
        #expect(YAMLScalar.yaml11Reading(plain: "only") == nil)
    }

    @Test func standardTagsAreHonouredAndUnknownOnesRefused() throws {
        let doc = try parse("a: !!int 42\nb: !!float 1\nc: !!null ~\nd: !!bool true\ne: ! 12\n")
        #expect(entry(doc, "a")?.typed == .int(42))
        #expect(entry(doc, "b")?.typed == .int(1))
        #expect(entry(doc, "c")?.typed == .null)
        #expect(entry(doc, "d")?.typed == .bool(true))
        #expect(entry(doc, "e")?.typed == .string("12"))
        #expect(errors("a: !!int x\nb: !foo 1\nc: !!map [1]\n").map(\.description) == [
            "1:4: a: 'x' is not what its tag !!int says",
            "2:4: b: unknown tag !foo; Hearth knows !secret NAME and the standard !!str, !!int, !!float, !!bool and "
                + "!!null",
            "3:4: c: the tag !!map does not fit a list",
        ])
    }

    @Test func aTabIsASeparatorAfterAColonButNeverIndentation() throws {
        let doc = try parse("port:\t1883\n")
        #expect(entry(doc, "port")?.typed == .int(1883))
        #expect(fails("mqtt:\n\tport: 1883\n") == YAMLError(line: 2, column: 1, message:
            "a tab indents this line; YAML indents with spaces only: replace the tab with spaces"))
        #expect(fails("mqtt:\n  host: a\n  \tport: 1883\n") == YAMLError(line: 3, column: 3, message:
            "a tab indents this line; YAML indents with spaces only: replace the tab with spaces"))
        // Inside a block scalar a tab after the indentation is text.
        #expect(scalar(entry(try parse("a: |\n  x\n  \ty\n"), "a")) == "x\n\ty\n")
    }

    @Test func everyStructuralProblemIsListedAtOnce() {
        let problems = errors("""
        a: 1
        b: *nowhere
        a: 2
        c:
          d: 1
          d: 2
          <<: 5
        """)
        #expect(problems.map(\.description) == [
            "2:4: b: no anchor '&nowhere' before this alias; an anchor (&nowhere) must come before the *nowhere that "
                + "repeats it",
            "3:1: a: the key 'a' appears twice in this mapping (first on line 1); keep one",
            "6:3: c.d: the key 'd' appears twice in this mapping (first on line 5); keep one",
            "7:3: c: '<<' merges mappings in: write <<: *defaults, or <<: [*a, *b]",
        ])
    }

    @Test func brokenSyntaxIsExplainedWhereItStarts() {
        #expect(
            fails("a: \"open\nb: 2\n")
                == YAMLError(line: 1, column: 4, message: "this quoted text is not closed: add the closing quote"))
        #expect(
            fails("a: [1, 2\nb: 3\n")
                == YAMLError(
                    line: 2, column: 2,
                    message:
                        "the list '[' at line 1, column 4 is not closed: expected ',' or ']' here"))
        #expect(
            fails("a: 1\n  b: 2\n")?.description
                == "2:4: a ':' here cannot start a key: the keys of one mapping line up "
                + "under each other, and a value with ': ' in it is quoted (name: \"a: b\")")
        #expect(fails("list:\n  - x\n  y: 2\n") == YAMLError(line: 3, column: 3, message:
            "expected another '- ' item here, lined up with the items of the list that starts at line 2, column 3; "
            + "check this line's indentation"))
        #expect(fails("a: @home\n")?.message == "'@' and '`' cannot start a plain value; quote it (\"@home\")")
        #expect(
            fails("a: x\u{1}\n")?.description
                == "1:5: a control character (byte 0x01) cannot be in a YAML file; remove it")
        #expect(
            YAML.parse(Array("a: ".utf8) + [0xFF]).errors.first?.description.hasPrefix("1:4: this is not UTF-8 text")
                == true)
    }

    @Test func aliasBombsAndDeepNestingAreRefused() {
        var bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
        for (i, name) in ["b", "c", "d", "e", "f", "g"].enumerated() {
            let previous = i == 0 ? "a" : ["b", "c", "d", "e", "f", "g"][i - 1]
            bomb += "\(name): &\(name) [" + Array(repeating: "*\(previous)", count: 10).joined(separator: ", ") + "]\n"
        }
        #expect(fails(bomb)?.message.contains("more than 100000 values") == true)
        let deep = String(repeating: "[", count: 200) + String(repeating: "]", count: 200)
        #expect(fails(deep)?.message == "nested more than 64 levels deep")
    }

    @Test func anEmptyDocumentIsNull() throws {
        #expect(try parse("# nothing\n\n").value == .null)
        #expect(try parse("").value == .null)
    }
}
