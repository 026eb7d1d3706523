import HearthConfig
import Testing

@Suite struct ConfigReaderTests {
    func read(_ text: String, _ body: (ConfigValue) -> Void) -> [String] {
        let d = ConfigDiagnostics()
        if let v = ConfigValue.parse(text, file: "hearth.yaml", diagnostics: d) { body(v) }
        return d.problems.map(\.description)
    }

    @Test func everyProblemIsListedWithFileLineAndPath() {
        let problems = read("""
        hub: attic
        mqtt:
          port: 99999
          keepalive: soon
        devices:
          - id: lamp
            colour: red
        """) { root in
            guard let top = root.mapping(allowed: ["hub", "mqtt", "devices"]) else { return }
            if let mqtt = top["mqtt"]?.mapping(allowed: ["host", "port", "keepAlive"]) {
                _ = mqtt["port"]?.int(in: 1...65535)
                _ = mqtt.required("host", "the broker's address")
            }
            for device in top["devices"]?.list ?? [] {
                if let d = device.mapping(allowed: ["id", "name"]) { _ = d.required("name", "what users see") }
            }
        }
        #expect(problems == [
            "hearth.yaml:4: mqtt.keepalive: unknown key 'keepalive'; did you mean 'keepAlive'?",
            "hearth.yaml:3: mqtt.port: 99999 is out of range; allowed: 1…65535",
            "hearth.yaml:3: mqtt: missing 'host' (the broker's address)",
            "hearth.yaml:7: devices[0].colour: unknown key 'colour'; allowed: id, name",
            "hearth.yaml:6: devices[0]: missing 'name' (what users see)",
        ])
    }

    @Test func scalarsDurationsAndChoices() {
        var values: [String] = []
        let problems = read("a: 20ms\nb: 1.5s\nc: 30\nd: pull-up\ne: yes\nf: 0x40\ng: sideways\nh: [1, 2]") { root in
            guard let m = root.anyMapping else { return }
            values.append("\(m["a"]!.duration(in: .zero ... .seconds(1))!)")
            values.append("\(m["b"]!.duration(in: .zero ... .seconds(10))!)")
            values.append("\(m["c"]!.duration(in: .zero ... .seconds(1))!)")
            values.append(m["d"]!.oneOf(["pull-up", "pull-down"])!)
            values.append("\(m["e"]!.bool!)")
            values.append("\(m["f"]!.int(in: 0...127)!)")
            _ = m["g"]!.oneOf(["up", "down"])
            _ = m["h"]!.string
        }
        #expect(values == ["0.02 seconds", "1.5 seconds", "0.03 seconds", "pull-up", "true", "64"])
        #expect(problems == [
            "hearth.yaml:7: g: expected one of up, down, found 'sideways'",
            "hearth.yaml:8: h: expected text, found a list",
        ])
    }

    @Test func unreadableAndBrokenFilesAreProblemsToo() {
        let d = ConfigDiagnostics()
        #expect(ConfigValue.load(file: "/nonexistent/hearth.yaml", diagnostics: d) == nil)
        #expect(d.problems.first?.description == "/nonexistent/hearth.yaml:0: cannot read the file: No such file or directory")
        #expect(read("a: [1") { _ in } == ["hearth.yaml:1: expected ',' or ']' in a [list]"])
    }
}
