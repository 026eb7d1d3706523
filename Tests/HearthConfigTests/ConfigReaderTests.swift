import HearthConfig
import Testing

@Suite struct ConfigReaderTests {
    func read(_ text: String, _ body: (ConfigValue) -> Void) -> [String] {
        let d = ConfigDiagnostics()
        if let v = ConfigValue.parse(text, file: "hearth.yaml", diagnostics: d) { body(v) }
        return (d.problems + d.warnings).map(\.description)
    }

    @Test func everyProblemIsListedWithFileLineColumnAndPath() {
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
            "hearth.yaml:4:3: mqtt.keepalive: unknown key 'keepalive'; did you mean 'keepAlive'?",
            "hearth.yaml:3:9: mqtt.port: 99999 is out of range; allowed: 1…65535",
            "hearth.yaml:3:3: mqtt: missing 'host' (the broker's address)",
            "hearth.yaml:7:5: devices[0].colour: unknown key 'colour'; allowed: id, name",
            "hearth.yaml:6:5: devices[0]: missing 'name' (what users see)",
        ])
    }

    /// An id's pattern is matched by a scan of bytes, other patterns by `Regex`: both accept exactly what the
    /// pattern does, code point by code point.
    @Test func patternsAcceptWhatTheirRegexMatches() throws {
        let patterns = ["^[^/+#]+$", "^[^$/+#][^/+#]*(/[^/+#]+)*$", "^[^a-c]+$", "^[0-9a-f]{2}-[0-9a-f]{12}$"]
        let texts = ["lamp", "kitchen/lamp", "a+b", "#", "", "lampé", "🛋️ sofa", "a b", "$SYS", "abc", "x-y", "é+",
                     "28-0316a2791aff", "ünï/cödé"]
        for pattern in patterns {
            let regex = try Regex(pattern).matchingSemantics(.unicodeScalar)
            for text in texts {
                var accepted = false
                let problems = read("v: '\(text)'") { root in
                    accepted = root.anyMapping?["v"]?.read(.textMatching(pattern, hint: "no")) != nil
                }
                let expected = (try? regex.firstMatch(in: text)) != nil
                #expect(accepted == expected, "\(pattern) on \(text)")
                #expect(problems.isEmpty == expected, "\(pattern) on \(text): \(problems)")
            }
        }
    }

    @Test func scalarsDurationsAndChoices() {
        var values: [String] = []
        let problems = read(
            "a: 20ms\nb: 1.5s\nc: 30\nd: pull-up\ne: true\nf: 0x40\ng: sideways\nh: [1, 2]\ni: \"2s\"\nj: 5"
        ) { root in
            guard let m = root.anyMapping else { return }
            values.append("\(m["a"]!.duration(in: .zero ... .seconds(1))!)")
            values.append("\(m["b"]!.duration(in: .zero ... .seconds(10))!)")
            values.append("\(m["c"]!.duration(in: .zero ... .seconds(1))!)")
            values.append(m["d"]!.oneOf(["pull-up", "pull-down"])!)
            values.append("\(m["e"]!.bool!)")
            values.append("\(m["f"]!.int(in: 0...127)!)")
            _ = m["g"]!.oneOf(["up", "down"])
            _ = m["h"]!.string
            values.append("\(m["i"]!.duration(in: .zero ... .seconds(10))!)")
            values.append(m["j"]!.oneOf(["5", "3.1.1"])!)
        }
        #expect(values == ["0.02 seconds", "1.5 seconds", "0.03 seconds", "pull-up", "true", "64", "2.0 seconds", "5"])
        #expect(problems == [
            "hearth.yaml:7:4: g: expected one of up, down, found 'sideways'",
            "hearth.yaml:8:4: h: expected text, found a list",
        ])
    }

    @Test func aQuotedScalarIsTextWhateverItLooksLike() {
        var texts: [String] = []
        let problems = read("""
        port: "1883"
        ratio: '0.5'
        flag: "true"
        name: "42"
        wait: "30"
        """) { root in
            guard let m = root.anyMapping else { return }
            _ = m["port"]!.int(in: 1...65535)
            _ = m["ratio"]!.double(in: 0...1)
            _ = m["flag"]!.bool
            texts.append(m["name"]!.string!)
            _ = m["wait"]!.duration(in: .zero ... .seconds(60), defaultUnit: "s")
        }
        #expect(texts == ["42"])
        #expect(problems == [
            #"hearth.yaml:1:7: port: expected a whole number (1…65535), found "1883", which is quoted, so text; write "#
                + #"1883 without quotes"#,
            #"hearth.yaml:2:8: ratio: expected a number (0.0…1.0), found "0.5", which is quoted, so text; write 0.5 "#
                + #"without quotes"#,
            #"hearth.yaml:3:7: flag: expected true or false, found "true", which is quoted, so text; write true "#
                + #"without quotes"#,
            #"hearth.yaml:5:7: wait: expected a duration such as 20ms, 2s or 5m, found "30""#,
        ])
    }

    /// YAML 1.2 reads yes/no/on/off as text; where YAML 1.1 (Home Assistant, PyYAML) would read them
    /// otherwise, the reader says so: a problem where a boolean is expected, a warning where text is.
    @Test func yaml11BooleansAreTextWithAWarningOrAProblem() {
        var read: [String] = []
        let problems = self.read("""
        activeLow: yes
        safeState: off
        room: no
        quoted: "no"
        level: 010
        serial: 0042
        """) { root in
            guard let m = root.anyMapping else { return }
            _ = m["activeLow"]!.bool
            read.append(m["safeState"]!.oneOf(["off", "on"])!)
            read.append(m["room"]!.string!)
            read.append(m["quoted"]!.string!)
            read.append("\(m["level"]!.int(in: 0...254)!)")
            read.append(m["serial"]!.string!)
        }
        #expect(read == ["off", "no", "no", "10", "0042"])
        #expect(problems == [
            "hearth.yaml:1:12: activeLow: expected true or false, found 'yes', which YAML 1.2 reads as text (YAML 1.1 "
                + "tools such as Home Assistant read true); write true",
            "hearth.yaml:3:7: room: warning: 'no' is read as the text \"no\" (YAML 1.2), but YAML 1.1 tools such as "
                + "Home Assistant read false; write \"no\" in quotes to make it plain that it is text",
            "hearth.yaml:5:8: level: warning: 010 is read as 10 (YAML 1.2), but YAML 1.1 tools read octal 8; write 10",
        ])
    }

    @Test func sectionsGiveTheShapesOfTheirKeys() {
        let section = ConfigSection([
            ConfigKey("port", .int(1...65535, unit: ""), "the broker's port (default 1883)"),
            ConfigKey("host", .text, required: true, "the broker's address"),
            ConfigKey("keepAlive", .duration(.seconds(5) ... .seconds(600), defaultUnit: "s"), "keep-alive"),
            ConfigKey("protocol", .choice(["5", "3.1.1"]), "MQTT version"),
            ConfigKey("level", .nullable(.int(0...254, unit: "")), "a level or null"),
        ], extraKeys: ConfigExtraKeys(pattern: "\\.", shape: .any) { $0.contains(".") })
        var read: [String] = []
        let problems = self.read("port: 8883\nkeepAlive: 30\nprotocol: 3.1.1\nlevel: null\ncom.example.x: 1\nextra: 2")
        { root in
            guard let m = root.mapping(section) else { return }
            read.append("\(m.int("port")!)")
            read.append("\(m.duration("keepAlive")!)")
            read.append(m.text("protocol")!)
            read.append("\(m.read("level")!)")
            read.append(m.keys.joined(separator: ","))
            _ = m.required("host")
        }
        #expect(read == ["8883", "30.0 seconds", "3.1.1", "null", "port,keepAlive,protocol,level,com.example.x"])
        #expect(problems == [
            "hearth.yaml:6:1: extra: unknown key 'extra'; allowed: port, host, keepAlive, protocol, level",
            "hearth.yaml:1:1: missing 'host' (the broker's address)",
        ])
    }

    @Test func unreadableAndBrokenFilesAreProblemsToo() {
        let d = ConfigDiagnostics()
        #expect(ConfigValue.load(file: "/nonexistent/hearth.yaml", diagnostics: d) == nil)
        #expect(
            d.problems.first?.description == "/nonexistent/hearth.yaml: cannot read the file: No such file or directory"
        )
        #expect(
            read("a: [1") { _ in } == [
                "hearth.yaml:2:1: the list '[' at line 1, column 4 is not closed: expected ',' or ']' here"
            ])
    }
}
