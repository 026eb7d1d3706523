import Foundation
import HearthConfig
import HearthHardware
@testable import HearthHub
import HearthModel
import HearthTestKit
import Testing

/// The JSON Schemas in docs/schema/ are the readers' own tables written out: up to date, valid for every
/// example and board file, and in agreement with `hearthd check-config` on broken files. Validation runs
/// Python's jsonschema (Debian's python3-jsonschema, installed by scripts/setup) on what Hearth's YAML 1.2
/// reader makes of each file, which is what an editor's YAML language server sees.
@Suite(.serialized) struct SchemaTests {
    static let root = Repository.root
    static let configSchema = "\(root)/docs/schema/hearth.schema.json"
    static let boardSchema = "\(root)/docs/schema/board.schema.json"

    struct SchemaError: Hashable, CustomStringConvertible {
        var file: String
        var path: String
        var message: String
        var description: String { "\(file): \(path): \(message)" }
    }

    /// A YAML document as JSON, typed the way YAML 1.2's core schema reads it.
    static func json(_ node: YAMLNode) -> String {
        switch node.value {
        case .mapping(let entries):
            return "{" + entries.map { quoted($0.key) + ": " + json($0.value) }.joined(separator: ", ") + "}"
        case .sequence(let items):
            return "[" + items.map(json).joined(separator: ", ") + "]"
        case .null, .scalar:
            switch node.typed {
            case .bool(let b)?: return b ? "true" : "false"
            case .int(let i)?: return String(i)
            case .float(let d)? where d.isFinite: return "\(d)"
            case .float(let d)?: return quoted("\(d)")
            case .string(let s)?: return quoted(s)
            default: return "null"
            }
        }
    }

    static func quoted(_ s: String) -> String {
        let data = try! JSONSerialization.data(withJSONObject: [s], options: [.fragmentsAllowed])
        let array = String(decoding: data, as: UTF8.self)
        return String(array.dropFirst().dropLast())
    }

    static let validator = """
        import json, sys, jsonschema
        schema = json.load(open(sys.argv[1]))
        jsonschema.Draft7Validator.check_schema(schema)
        validator = jsonschema.Draft7Validator(schema)
        for name in sys.argv[2:]:
            for e in validator.iter_errors(json.load(open(name))):
                path = ''.join('[%d]' % p if isinstance(p, int) else '.' + p for p in e.absolute_path).lstrip('.')
                print(json.dumps({'file': name, 'path': path, 'message': e.message}))
        """

    /// Validates YAML texts (by name) against a schema with Python's jsonschema.
    static func validate(_ documents: [(name: String, yaml: String)], schema: String) throws -> [SchemaError] {
        let directory = NSTemporaryDirectory() + "hearth-schema-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var files: [String] = []
        var names: [String: String] = [:]
        for (i, document) in documents.enumerated() {
            let node = try YAML.parse(document.yaml)
            let file = "\(directory)/\(i).json"
            try json(node).write(toFile: file, atomically: true, encoding: .utf8)
            files.append(file)
            names[file] = document.name
        }
        let python = FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") ? "/usr/bin/python3" : "python3"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python.hasPrefix("/") ? python : "/usr/bin/env")
        process.arguments = (python.hasPrefix("/") ? [] : [python]) + ["-c", validator, schema] + files
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw TestFailure("python3 jsonschema failed (run scripts/setup for python3-jsonschema): "
                              + String(decoding: err, as: UTF8.self))
        }
        return String(decoding: out, as: UTF8.self).split(separator: "\n").compactMap { line in
            guard let o = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String] else {
                return nil
            }
            return SchemaError(file: names[o["file"] ?? ""] ?? "?", path: o["path"] ?? "", message: o["message"] ?? "")
        }
    }

    struct TestFailure: Error, CustomStringConvertible {
        var description: String
        init(_ d: String) { description = d }
    }

    static func files(_ directory: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: "\(root)/\(directory)").filter { $0.hasSuffix(".yaml") }
            .sorted().map { "\(directory)/\($0)" }
    }

    static func read(_ file: String) throws -> String { try String(contentsOfFile: "\(root)/\(file)", encoding: .utf8) }

    @Test func theCommittedSchemasAreWhatTheTablesSay() throws {
        #expect(
            try String(contentsOfFile: Self.configSchema, encoding: .utf8) == ConfigurationSchema.config,
            Comment(
                rawValue: "docs/schema/hearth.schema.json is out of date: run .build/debug/hearthd schema config > "
                    + "docs/schema/hearth.schema.json")
        )
        #expect(
            try String(contentsOfFile: Self.boardSchema, encoding: .utf8) == ConfigurationSchema.board,
            Comment(
                rawValue: "docs/schema/board.schema.json is out of date: run .build/debug/hearthd schema board > "
                    + "docs/schema/board.schema.json")
        )
    }

    /// The schema takes the binding kinds from their registry: each device type's `binding:` offers exactly the
    /// registered kinds that fit it, each with its own definition, so an editor and the hub agree.
    @Test func eachDeviceTypesBindingListsExactlyTheRegisteredKindsThatFitIt() throws {
        let schema = try #require(
            try JSONSerialization.jsonObject(with: Data(ConfigurationSchema.config.utf8)) as? [String: Any])
        let definitions = try #require(schema["definitions"] as? [String: Any])
        var checked: [String: Int] = [:]
        func check(_ binding: [String: Any], type: String) {
            let expected = BindingKindRegistry.standard.kinds(fitting: type).map(\.name)
            let offered =
                ((binding["properties"] as? [String: Any])?["kind"] as? [String: Any])?["enum"] as? [String] ?? []
            let references = (binding["allOf"] as? [[String: Any]] ?? []).compactMap {
                ($0["then"] as? [String: Any])?["$ref"] as? String
            }
            #expect(offered == expected, "\(type)")
            #expect(references == expected.map { "#/definitions/binding.\($0)" }, "\(type)")
            for kind in expected { #expect(definitions["binding.\(kind)"] != nil, "binding.\(kind)") }
            checked[type, default: 0] += 1
        }
        // Every `if type is T then {binding: …}` in the schema, wherever the device's shape puts it.
        func visit(_ node: Any) {
            if let object = node as? [String: Any] {
                let condition =
                    ((object["if"] as? [String: Any])?["properties"] as? [String: Any])?["type"] as? [String: Any]
                if let type = condition?["const"] as? String,
                   let binding = ((object["then"] as? [String: Any])?["properties"] as? [String: Any])?["binding"]
                       as? [String: Any] {
                    check(binding, type: type)
                }
                object.values.forEach(visit)
            } else if let array = node as? [Any] {
                array.forEach(visit)
            }
        }
        visit(schema)
        #expect(Set(checked.keys) == Set(DeviceTypeDescriptor.catalogue.map(\.name)))
    }

    @Test(.timeLimit(.minutes(1))) func everyExampleAndBoardFileIsValidAndNamesItsSchema() throws {
        var configs: [(String, String)] = []
        for file in try Self.files("examples") {
            let text = try Self.read(file)
            #expect(text.hasPrefix("# yaml-language-server: $schema=../docs/schema/hearth.schema.json\n"), "\(file)")
            configs.append((file, text))
            #expect(
                HubDaemon.check(configFile: "\(Self.root)/\(file)", hardware: BoardHardware()).map(\.description) == [])
        }
        // The board image's configurations are templates: @HUB@ and @BOARD@ are filled in at first boot.
        for file in try Self.files("image/configs") {
            let text = try Self.read(file).replacingOccurrences(of: "@HUB@", with: "hub").replacingOccurrences(
                of: "@BOARD@", with: "rpi4")
            configs.append((file, text))
        }
        // Whole configurations shown in the documentation.
        for doc in ["docs/configuration.md", "docs/peer-routing.md"] {
            let blocks = try Self.read(doc).components(separatedBy: "```yaml\n").dropFirst()
                .map { $0.components(separatedBy: "```")[0] }
            for block in blocks where block.hasPrefix("hub:") || block.contains("\nhub:") {
                configs.append(("\(doc) block \(block.prefix(30))", block))
            }
        }
        #expect(configs.count >= 5)
        #expect(try Self.validate(configs, schema: Self.configSchema).map(\.description) == [])

        var boards: [(String, String)] = []
        for file in try Self.files("boards") {
            let text = try Self.read(file)
            #expect(text.hasPrefix("# yaml-language-server: $schema=../docs/schema/board.schema.json\n"), "\(file)")
            boards.append((file, text))
        }
        #expect(boards.count >= 5)
        #expect(try Self.validate(boards, schema: Self.boardSchema).map(\.description) == [])
    }

    /// Each broken configuration: one mistake, which the schema can see (a board's pin names it cannot).
    static let brokenConfigurations: [(name: String, devices: String, extra: String)] = [
        ("unknown top-level key", "", "colour: red"),
        ("port out of range", "", "mqtt: {port: 70000}"),
        ("quoted port", "", "mqtt: {port: \"1883\"}"),
        ("duration without a unit", "", "mqtt: {keepAlive: soon}"),
        ("password and passwordFile", "", "mqtt: {password: a, passwordFile: b}"),
        ("certFile without keyFile", "", "mqtt: {tls: {caFile: ca.pem, certFile: c.pem}}"),
        ("unknown protocol", "", "mqtt: {protocol: 4}"),
        ("prefix with a wildcard", "", "mqtt: {prefix: 'home/#'}"),
        ("unknown device type", "- {id: lamp, type: DimmableLamp}", ""),
        ("type and types", "- {id: lamp, type: OnOffLight, types: [{type: OnOffLight}]}", ""),
        ("neither type nor types", "- {id: lamp, name: Lamp}", ""),
        ("device id with a slash", "- {id: a/b, type: OnOffLight}", ""),
        ("a trait the type cannot have", "- {id: s, type: HumiditySensor, traits: {onOff: {}}}", ""),
        ("attribute out of range", "- {id: l, type: DimmableLight, traits: {levelControl: {onLevel: 300}}}", ""),
        ("unknown enum value", "- {id: l, type: OnOffLight, traits: {onOff: {startUpOnOff: sometimes}}}", ""),
        ("unknown bitmap flag", "- {id: l, type: DimmableLight, traits: {levelControl: {options: [fast]}}}", ""),
        ("unknown attribute", "- {id: l, type: OnOffLight, traits: {onOff: {colour: red}}}", ""),
        ("yes for a boolean", "- {id: l, type: OnOffLight, matter: yes}", ""),
        ("a binding that does not fit", "- {id: s, type: HumiditySensor, binding: {kind: relay, pin: relay-1}}", ""),
        ("unknown binding kind", "- {id: l, type: OnOffLight, binding: {kind: dimmer, pin: relay-1}}", ""),
        ("binding without kind", "- {id: l, type: OnOffLight, binding: {pin: relay-1}}", ""),
        ("unknown binding key", "- {id: l, type: OnOffLight, binding: {kind: relay, pin: relay-1, colour: red}}", ""),
        ("pin and chip", "- {id: l, type: OnOffLight, binding: {kind: relay, pin: relay-1, chip: x, line: 1}}", ""),
        ("chip without line", "- {id: l, type: OnOffLight, binding: {kind: relay, chip: x}}", ""),
        ("line out of range", "- {id: l, type: OnOffLight, binding: {kind: relay, chip: x, line: 5000}}", ""),
        ("line as a fraction", "- {id: l, type: OnOffLight, binding: {kind: relay, chip: x, line: 1.5}}", ""),
        ("relay without a pin", "- {id: l, type: OnOffLight, binding: {kind: relay, activeLow: true}}", ""),
        (
            "dimmer frequency",
            "- {id: l, type: DimmableLight, binding: {kind: pwmDimmer, pwm: dimmer-1, frequency: 5}}", ""
        ),
        (
            "debounce as a word",
            "- {id: s, type: GenericSwitch, binding: {kind: wallSwitch, pin: wall-switch-1, debounce: fast}}", ""
        ),
        (
            "sensor and iio",
            "- {id: h, type: HumiditySensor, binding: {kind: humiditySensor, sensor: humidity-1, iio: x}}", ""
        ),
        (
            "types entry with a mirror and a binding",
            "- {id: l, types: [{type: OnOffLight, mirror: {hub: b, device: l}, binding: {kind: relay, pin: relay-1}}]}",
            ""
        ),
        ("unknown peer route", "", "peers: [{hub: garage, route: sideways}]"),
        (
            "unknown switch event", "- {id: s, type: GenericSwitch}",
            "bindings: [{from: s, event: double, to: {device: x, trait: onOff, command: toggle}}]"
        ),
        (
            "a list as a command argument", "- {id: s, type: GenericSwitch}",
            "bindings: [{from: s, to: {hub: b, device: x, trait: onOff, command: toggle, args: {a: [1]}}}]"
        )
    ]

    static func configuration(devices: String, extra: String) -> String {
        """
        hub: {id: attic, board: sim}
        \(extra)
        devices:
          - {id: porch, type: OnOffLight, binding: {kind: relay, pin: relay-2}}
          \(devices)
        """
    }

    /// The key paths `hearthd check-config` printed (`file:line:column: path: message`).
    static func checkConfig(_ file: String) throws -> (status: Int32, paths: [String], output: String) {
        let run = try BuiltProduct.run("hearthd", ["check-config", file])
        let paths = run.output.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix(file + ":") else { return nil }
            let rest = line.dropFirst(file.count + 1).split(separator: " ", maxSplits: 1)
            guard rest.count == 2, rest[0].hasSuffix(":"), rest[1].contains(": ") else {
                return rest.count == 2 ? "" : nil
            }
            let path = rest[1].prefix { $0 != ":" }
            return path.contains(" ") ? "" : String(path)
        }
        return (run.status, paths, run.output)
    }

    /// The same broken files through `hearthd check-config` and through the schema: both refuse each, and at
    /// the same place (the schema's path is where, or above where, check-config reports it). A hearthd for each
    /// file: longer under a sanitizer, whose instrumented hearthd starts several times slower.
    @Test(.timeLimit(.minutes(Sanitizer.hangGuard(minutes: 1))))
    func checkConfigAndTheSchemaAgreeOnBrokenFiles() throws {
        let directory = NSTemporaryDirectory() + "hearth-broken-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: "\(directory)/boards", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.copyItem(atPath: "\(Self.root)/boards/sim.yaml", toPath: "\(directory)/boards/sim.yaml")

        let good = Self.configuration(
            devices: "- {id: hall, type: GenericSwitch, binding: {kind: wallSwitch, pin: wall-switch-1}}",
            extra: "mqtt: {port: 1883, keepAlive: 30s, protocol: 5}")
        try good.write(toFile: "\(directory)/good.yaml", atomically: true, encoding: .utf8)
        #expect(try Self.checkConfig("\(directory)/good.yaml").status == 0)

        var documents: [(String, String)] = [("good", good)]
        var hearth: [String: (status: Int32, paths: [String], output: String)] = [:]
        for broken in Self.brokenConfigurations {
            let text = Self.configuration(devices: broken.devices, extra: broken.extra)
            let file = "\(directory)/broken.yaml"
            try text.write(toFile: file, atomically: true, encoding: .utf8)
            hearth[broken.name] = try Self.checkConfig(file)
            documents.append((broken.name, text))
        }
        let schema = Dictionary(grouping: try Self.validate(documents, schema: Self.configSchema), by: \.file)
        #expect(schema["good"] == nil, "\(schema["good"] ?? [])")
        for broken in Self.brokenConfigurations {
            let check = hearth[broken.name]
            let errors = schema[broken.name] ?? []
            #expect(check?.status == 78 && check?.paths.isEmpty == false, "check-config accepts '\(broken.name)'")
            #expect(!errors.isEmpty, "the schema accepts '\(broken.name)'")
            let agree = errors.contains { e in check?.paths.contains { $0.hasPrefix(e.path) } == true }
            let both =
                "'\(broken.name)': check-config says \(check?.output ?? ""), the schema \(errors.map(\.description))"
            #expect(agree || errors.isEmpty, "\(both)")
        }
    }

    static let brokenBoards: [(name: String, yaml: String)] = [
        ("unknown key", "name: b\ncolour: red\n"),
        ("missing name", "description: no name\n"),
        (
            "bad direction",
            "name: b\ngpio: {chips: [{label: x, lines: 4, named: [{offset: 1, name: a, direction: sideways}]}]}\n"
        ),
        (
            "address out of range",
            "name: b\ni2c: {buses: [{bus: 1, devices: [{name: h, driver: si7020, address: 0x90}]}]}\n"
        ),
        ("unknown driver", "name: b\ni2c: {buses: [{bus: 1, devices: [{name: h, driver: dht99, address: 0x40}]}]}\n"),
        ("chip without lines", "name: b\ngpio: {chips: [{label: x}]}\n"),
        ("quoted channel", "name: b\npwm: {chips: [{chip: 0, channels: [{channel: \"0\", name: d}]}]}\n"),
        ("simulated as yes", "name: b\nsimulated: yes\n")
    ]

    @Test(.timeLimit(.minutes(1))) func boardReadersAndTheBoardSchemaAgree() throws {
        let directory = NSTemporaryDirectory() + "hearth-boards-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var hearth: [String: [ConfigProblem]] = [:]
        for broken in Self.brokenBoards {
            let file = "\(directory)/board.yaml"
            try broken.yaml.write(toFile: file, atomically: true, encoding: .utf8)
            let d = ConfigDiagnostics()
            _ = BoardHardware().loadBoard(file: file, diagnostics: d)
            hearth[broken.name] = d.problems
        }
        let schema = Dictionary(grouping: try Self.validate(Self.brokenBoards, schema: Self.boardSchema), by: \.file)
        for broken in Self.brokenBoards {
            let problems = hearth[broken.name] ?? [], errors = schema[broken.name] ?? []
            #expect(!problems.isEmpty, "the board reader accepts '\(broken.name)'")
            #expect(!errors.isEmpty, "the board schema accepts '\(broken.name)'")
            #expect(errors.contains { e in problems.contains { $0.path.hasPrefix(e.path) } } || errors.isEmpty,
                    "'\(broken.name)': \(problems.map(\.description)) vs \(errors.map(\.description))")
        }
    }
}
