@testable import HearthConfig
import Testing

@Suite struct YAMLTests {
    func parse(_ text: String) throws -> YAMLNode { try YAML.parse(text) }
    func fails(_ text: String) -> YAMLError? {
        do { _ = try YAML.parse(text); return nil } catch { return error }
    }
    func scalar(_ node: YAMLNode?) -> String? {
        if case .scalar(let s, _)? = node?.value { s } else { nil }
    }
    func entry(_ node: YAMLNode, _ key: String) -> YAMLNode? {
        if case .mapping(let e) = node.value { e.first { $0.key == key }?.value } else { nil }
    }
    func items(_ node: YAMLNode?) -> [YAMLNode] {
        if case .sequence(let i)? = node?.value { i } else { [] }
    }

    @Test func mappingsSequencesAndScalarsWithLines() throws {
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
        #expect(devices[0].line == 4)
        #expect(scalar(entry(devices[0], "name")) == "Kitchen # lamp")
        #expect(items(entry(devices[0], "types")).map { scalar($0) } == ["DimmableLight", "HumiditySensor"])
        #expect(scalar(entry(devices[1], "id")) == "it's")
        let onOff = entry(entry(devices[1], "traits")!, "onOff")!
        #expect(scalar(entry(onOff, "startUpOnOff")) == "toggle")
        #expect(onOff.line == 9)
        #expect(entry(doc, "empty")?.value == .null)
        #expect(items(entry(doc, "list")).map { scalar($0) } == ["a", "b"])
    }

    @Test func nestedFlowAndQuotedKeys() throws {
        let doc = try parse(#"bindings: [{from: hall-switch, to: {hub: garage, device: lamp, trait: onOff, command: toggle}}]"# + "\n\"odd key\": 1")
        let b = items(entry(doc, "bindings"))
        #expect(scalar(entry(entry(b[0], "to")!, "hub")) == "garage")
        #expect(scalar(entry(doc, "odd key")) == "1")
    }

    @Test func errorsSayWhereAndWhat() {
        #expect(fails("a: 1\na: 2") == YAMLError(line: 2, message: "the key 'a' appears twice"))
        #expect(fails("a:\n\tb: 1")?.message == "tabs cannot indent YAML; use spaces")
        #expect(fails("a: |\n  text")?.message.contains("block scalars") == true)
        #expect(fails("a: &x 1")?.message.contains("anchors") == true)
        #expect(fails("a: [1, 2")?.line == 1)
        #expect(fails("a: \"open")?.message == "a quoted string is not closed")
        #expect(fails("a: 1\n  b: 2")?.line == 2)
        #expect(fails("a: 1\n---\nb: 2")?.message == "only one YAML document per file is supported")
    }

    @Test func anEmptyDocumentIsNull() throws {
        #expect(try parse("# nothing\n\n").value == .null)
    }
}
