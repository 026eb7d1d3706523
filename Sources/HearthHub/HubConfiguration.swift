public import HearthConfig
public import HearthEngine
import HearthModel
public import HearthMQTT
#if canImport(Glibc)
import Glibc
#endif

/// The hub configuration (`hearth.yaml`), read with every problem listed before anything is touched.
public struct HubConfiguration {
    /// One configured device, and the `binding:` section of each of its device types.
    public struct Device {
        public var configuration: DeviceConfiguration
        /// By index into `configuration.types`.
        public var bindings: [(type: Int, config: ConfigValue)]
        public var line: Int
    }

    public var file: String
    public var hubID: String
    public var boardFile: String
    public var stateDirectory: String
    public var logLevel: String
    public var stepsPerSecond: Int
    public var prefix: String
    public var mqtt: MQTTConnectOptions
    public var devices: [Device]
    public var peers: [PeerConfiguration] = []
    public var mirrors: [MirrorRoute] = []
    public var bindings: [PeerBinding] = []
    /// `homeAssistant: {discovery: true, prefix: homeassistant}`: announce the devices to Home Assistant.
    public var homeAssistantDiscovery = true
    public var homeAssistantPrefix = "homeassistant"

    public static let logLevels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]

    /// Reads `file`; returns nil after recording problems in `diagnostics`.
    public static func load(file: String, diagnostics: ConfigDiagnostics) -> HubConfiguration? {
        guard let root = ConfigValue.load(file: file, diagnostics: diagnostics) else { return nil }
        return read(root, diagnostics: diagnostics)
    }

    public static func read(_ root: ConfigValue, diagnostics: ConfigDiagnostics) -> HubConfiguration? {
        let before = diagnostics.problems.count
        let directory = Self.directory(of: root.file)
        guard let top = root.mapping(allowed: ["hub", "mqtt", "devices", "peers", "bindings", "homeAssistant"]) else { return nil }

        var config = HubConfiguration(
            file: root.file, hubID: hostName(), boardFile: "", stateDirectory: "/var/lib/hearth", logLevel: "info",
            stepsPerSecond: 50, prefix: "hearth", mqtt: MQTTConnectOptions(), devices: [])

        if let hub = top.required("hub", "the hub's id and board")?.mapping(
            allowed: ["id", "board", "stateDirectory", "logLevel", "stepsPerSecond"]) {
            if let id = hub["id"], let s = id.string {
                if let problem = TopicScheme.problem(withLevel: s) { id.problem("the hub id cannot be used: \(problem)") }
                config.hubID = s
            }
            if let board = hub.required("board", "a board name such as sim or rpi4, or a path to a board file"),
               let name = board.string {
                if let path = resolveBoard(name, near: directory) {
                    config.boardFile = path
                } else {
                    board.problem("no board file '\(name)'; looked for \(boardCandidates(name, near: directory).joined(separator: ", "))")
                }
            }
            if let dir = hub["stateDirectory"]?.string { config.stateDirectory = absolute(dir, near: directory) }
            if let level = hub["logLevel"]?.oneOf(logLevels) { config.logLevel = level }
            if let steps = hub["stepsPerSecond"]?.int(in: 1...200, unit: " steps per second") { config.stepsPerSecond = steps }
        }
        if let mqtt = top["mqtt"] { readMQTT(mqtt, directory: directory, into: &config) }
        if let ha = top["homeAssistant"]?.mapping(allowed: ["discovery", "prefix"]) {
            if let d = ha["discovery"] {
                if let b = d.bool { config.homeAssistantDiscovery = b } else { d.problem("discovery is true or false") }
            }
            if let p = ha["prefix"] {
                if let s = p.string, !s.isEmpty, !s.contains(where: { $0 == "+" || $0 == "#" }) {
                    config.homeAssistantPrefix = s
                } else {
                    p.problem("prefix is Home Assistant's discovery prefix, a topic without '+' or '#' (default homeassistant)")
                }
            }
        }
        config.mqtt.clientID = config.mqtt.clientID ?? "hearth-\(config.hubID)"

        for peer in top["peers"]?.list ?? [] {
            guard let m = peer.mapping(allowed: ["hub", "route"]), let hub = m.required("hub", "the peer hub's id")?.string else { continue }
            let route = m["route"]?.oneOf(["local", "remote"]).flatMap(PeerRoute.init(rawValue:)) ?? .local
            config.peers.append(PeerConfiguration(hub: hub, route: route))
        }
        var seen: [String: Int] = [:]
        for device in top.required("devices", "the devices of this hub")?.list ?? [] {
            guard let d = readDevice(device, mirrors: &config.mirrors) else { continue }
            if let first = seen[d.configuration.id] {
                device.problem("the device id '\(d.configuration.id)' is already used on line \(first); ids must be unique")
                continue
            }
            seen[d.configuration.id] = device.line
            config.devices.append(d)
        }
        for binding in top["bindings"]?.list ?? [] {
            if let b = readBinding(binding, hub: config.hubID, devices: config.devices) { config.bindings.append(b) }
        }
        return diagnostics.problems.count == before ? config : nil
    }

    /// `{from: hall-switch, event: press, to: {hub: garage, device: lamp, trait: onOff, command: toggle, args: {…}}}`
    static func readBinding(_ value: ConfigValue, hub: String, devices: [Device]) -> PeerBinding? {
        guard let m = value.mapping(allowed: ["from", "event", "to"]),
              let fromValue = m.required("from", "a local GenericSwitch device"), let from = fromValue.string,
              let to = m.required("to", "the command to send: {hub, device, trait, command}")?.mapping(
                  allowed: ["hub", "device", "type", "trait", "command", "args"]) else { return nil }
        if let d = devices.first(where: { $0.configuration.id == from }) {
            if !d.configuration.types.contains(where: { $0.type == .genericSwitch }) {
                fromValue.problem("'\(from)' is not a GenericSwitch; a binding starts at a switch")
            }
        } else {
            fromValue.problem("no local device '\(from)'; a binding starts at one of this hub's switches")
        }
        let events: Set<String>
        switch m["event"]?.oneOf(["press", "release", "latch", "any"]) {
        case "press"?: events = ["initialPress"]
        case "release"?: events = ["shortRelease"]
        case "latch"?: events = ["switchLatched"]
        case "any"?: events = ["initialPress", "shortRelease", "switchLatched"]
        default: events = ["initialPress", "switchLatched"]
        }
        guard let device = to.required("device", "the target device's id")?.string,
              let trait = to.required("trait", "e.g. onOff")?.string,
              let command = to.required("command", "e.g. toggle")?.string else { return nil }
        var arguments: [(key: String, value: JSON)] = []
        if let args = to["args"]?.anyMapping {
            for (k, v) in args.values {
                guard let text = v.string else { continue }
                if let i = Int(text) { arguments.append((k, .int(i))) }
                else if text == "true" || text == "false" { arguments.append((k, .bool(text == "true"))) }
                else if text == "null" { arguments.append((k, .null)) }
                else { arguments.append((k, .string(text))) }
            }
        }
        return PeerBinding(from: from, events: events, hub: to["hub"]?.string ?? hub, device: device,
                           type: to["type"]?.string, trait: trait, command: command, arguments: .object(arguments))
    }

    /// What only the engine can check (features that conflict, values that depend on each other), once
    /// the bindings have added their traits and features.
    static func checkWithEngine(_ devices: [(configuration: DeviceConfiguration, line: Int)], file: String,
                                registry: TraitRegistry, diagnostics: ConfigDiagnostics) {
        for (configuration, line) in devices {
            do throws(HomeError) {
                _ = try Home(devices: [configuration], clock: ManualClock(), registry: registry)
            } catch {
                diagnostics.add(ConfigProblem(file: file, line: line, path: "devices(\(configuration.id))",
                                              message: error.message))
            }
        }
    }

    static func readMQTT(_ value: ConfigValue, directory: String, into config: inout HubConfiguration) {
        guard let m = value.mapping(allowed: ["host", "port", "prefix", "clientId", "keepAlive", "username", "password",
                                              "passwordFile", "tls", "protocol"]) else { return }
        if let host = m["host"]?.string { config.mqtt.host = host }
        if let port = m["port"]?.int(in: 1...65535) { config.mqtt.port = port }
        if let p = m["prefix"], let prefix = p.string {
            if prefix.isEmpty || prefix.contains(where: { $0 == "+" || $0 == "#" }) {
                p.problem("the prefix cannot be empty or contain '+' or '#'")
            }
            config.prefix = prefix
        }
        if let id = m["clientId"]?.string { config.mqtt.clientID = id }
        if let k = m["keepAlive"]?.duration(in: .seconds(5) ... .seconds(65535), defaultUnit: "s") {
            config.mqtt.keepAlive = Int(k.components.seconds)
        }
        config.mqtt.username = m["username"]?.string
        config.mqtt.password = m["password"]?.string
        if let f = m["passwordFile"], let path = f.string {
            if m["password"] != nil { f.problem("give password or passwordFile, not both") }
            let d = ConfigDiagnostics()
            if let secret = ConfigValue.load(file: absolute(path, near: directory), diagnostics: d), case .scalar(let s, _) = secret.node.value {
                config.mqtt.password = s
            } else {
                f.problem("cannot read the password file \(path)")
            }
        }
        if let t = m["tls"]?.mapping(allowed: ["caFile", "certFile", "keyFile", "verify"]) {
            var tls = MQTTConnectOptions.TLS(caFile: t["caFile"]?.string.map { absolute($0, near: directory) })
            tls.certificateFile = t["certFile"]?.string.map { absolute($0, near: directory) }
            tls.keyFile = t["keyFile"]?.string.map { absolute($0, near: directory) }
            if let verify = t["verify"]?.bool { tls.verifyPeer = verify }
            if tls.caFile == nil && tls.verifyPeer { t.owner.problem("missing 'caFile' (the CA that signed the broker's certificate), or verify: false") }
            if (tls.certificateFile == nil) != (tls.keyFile == nil) { t.owner.problem("certFile and keyFile go together") }
            config.mqtt.tls = tls
        }
        if let p = m["protocol"]?.oneOf(["5", "3.1.1"]) {
            config.mqtt.protocolVersion = p == "5" ? .v5 : .v311
            config.mqtt.allowsProtocolFallback = p == "5"
        }
    }

    static let deviceKeys = ["id", "name", "room", "structure", "matter", "info", "type", "types", "traits", "binding"]
    static let typeKeys = ["type", "primary", "traits", "binding", "mirror"]

    static func readDevice(_ value: ConfigValue, mirrors: inout [MirrorRoute]) -> Device? {
        guard let m = value.mapping(allowed: deviceKeys) else { return nil }
        guard let idValue = m.required("id", "a stable id, used in MQTT topics"), let id = idValue.string else { return nil }
        if let problem = TopicScheme.problem(withLevel: id) { idValue.problem("the device id cannot be used: \(problem)") }
        var device = DeviceConfiguration(id: id, name: m["name"]?.string ?? id, types: [])
        device.roomID = m["room"]?.string
        device.structureID = m["structure"]?.string
        device.isMatterDevice = m["matter"]?.bool ?? false
        var bindings: [(Int, ConfigValue)] = []

        var typeValues: [ConfigMap] = []
        if let types = m["types"] {
            for key in ["type", "traits", "binding"] where m[key] != nil {
                m[key]!.problem("'\(key)' goes inside each entry of 'types' when 'types' is given")
            }
            for t in types.list ?? [] { if let tm = t.mapping(allowed: typeKeys) { typeValues.append(tm) } }
        } else if m["type"] != nil {
            typeValues.append(m)  // the one-type shorthand: type, traits and binding on the device itself
        } else {
            value.problem("missing 'type' (e.g. OnOffLight) or 'types' (a list)")
        }
        for tm in typeValues {
            guard let typeValue = tm.required("type", "a device type"), let name = typeValue.string else { continue }
            guard let type = DeviceTypeDescriptor.named(name) else {
                typeValue.problem("unknown device type '\(name)'; known: \(DeviceTypeDescriptor.catalogue.map(\.name).joined(separator: ", "))")
                continue
            }
            var typeConfig = DeviceTypeConfiguration(type, isPrimary: tm["primary"]?.bool)
            if let mirror = tm["mirror"]?.mapping(allowed: ["hub", "device", "type"]) {
                if tm["binding"] != nil { mirror.owner.problem("a mirrored type has no binding here: its hardware is on hub \(mirror["hub"]?.string ?? "?")") }
                if let hub = mirror.required("hub", "the hub that owns it")?.string,
                   let peerDevice = mirror.required("device", "the device's id on that hub")?.string {
                    typeConfig.isMirrored = true
                    mirrors.append(MirrorRoute(localDevice: id, localType: name, peerHub: hub, peerDevice: peerDevice,
                                               peerType: mirror["type"]?.string ?? name))
                }
            }
            if let traits = tm["traits"]?.anyMapping {
                for (traitName, traitValue) in traits.values {
                    if let t = readTrait(traitName, traitValue, type: type) { typeConfig.traits.append(t) }
                }
            }
            if let b = tm["binding"] { bindings.append((device.types.count, b)) }
            device.types.append(typeConfig)
        }
        if let info = m["info"]?.anyMapping, !device.types.isEmpty {
            let primary = device.types.firstIndex { $0.isPrimary == true } ?? 0
            if let t = readTrait("basicInformation", info.owner, type: device.types[primary].type) {
                device.types[primary].traits.removeAll { $0.id == .basicInformation }
                device.types[primary].traits.append(t)
            }
        }
        return Device(configuration: device, bindings: bindings, line: value.line)
    }

    /// A trait's section: attribute values by name (enums by name, bitmaps as lists of flags) and `features`.
    static func readTrait(_ name: String, _ value: ConfigValue, type: DeviceTypeDescriptor) -> TraitConfiguration? {
        let id = TraitID(qualifiedName: name)
        guard type.allows(id) else {
            value.problem("\(type.name) cannot have trait '\(name)'; it may have "
                          + (type.requiredTraits + type.optionalTraits).map(\.qualifiedName).joined(separator: ", "))
            return nil
        }
        guard let descriptor = TraitRegistry.standard.server(for: id)?.descriptor else {
            return TraitConfiguration(id)  // a manufacturer's trait: the engine checks it is registered
        }
        guard let m = value.mapping(allowed: ["features"] + descriptor.attributes.map(\.name)) else { return nil }
        var trait = TraitConfiguration(id)
        if let features = m["features"] {
            for f in features.listOrSingle { if let s = f.string { trait.features.insert(s) } }
        }
        for (key, v) in m.values where key != "features" {
            guard let attribute = descriptor.attribute(named: key) else { continue }
            if let value = attributeValue(v, attribute) { trait.attributes[key] = value }
        }
        return trait
    }

    static func attributeValue(_ v: ConfigValue, _ attribute: AttributeDescriptor) -> Value? {
        if v.isNull {
            guard attribute.isNullable else { v.problem("\(attribute.name) cannot be null"); return nil }
            return .null
        }
        switch attribute.type {
        case .bool: return v.bool.map(Value.bool)
        case .string(let max):
            guard let s = v.string else { return nil }
            guard s.utf8.count <= max else { v.problem("at most \(max) bytes are allowed, this is \(s.utf8.count)"); return nil }
            return .string(s)
        case .enumeration(let e):
            guard let s = v.oneOf(e.cases.map(\.name) + (attribute.isNullable ? ["null"] : [])) else { return nil }
            return e.value(named: s).map(Value.int) ?? .null
        case .bitmap(let b):
            var bits = 0
            for flag in v.isNull ? [] : v.listOrSingle {
                guard let name = flag.oneOf(b.bits.map(\.name)), let bit = b.bits.first(where: { $0.name == name })?.bit else { return nil }
                bits |= 1 << bit
            }
            return .int(bits)
        default:
            let range = attribute.constraint ?? attribute.type.integerRange ?? 0...0
            return v.int(in: range).map(Value.int)
        }
    }

    // MARK: Paths

    /// The absolute directory of `file`, so paths in it stay right whatever the working directory.
    static func directory(of file: String) -> String {
        var path = file
        if !path.hasPrefix("/") {
            var buffer = [CChar](repeating: 0, count: 4096)
            if getcwd(&buffer, buffer.count) != nil {
                path = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) + "/" + path
            }
        }
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    static func absolute(_ path: String, near directory: String) -> String {
        path.hasPrefix("/") ? path : "\(directory)/\(path)"
    }

    static func boardCandidates(_ name: String, near directory: String) -> [String] {
        if name.contains("/") || name.hasSuffix(".yaml") { return [absolute(name, near: directory)] }
        return ["\(directory)/boards/\(name).yaml", "\(directory)/../boards/\(name).yaml",
                "/etc/hearth/boards/\(name).yaml", "/usr/share/hearth/boards/\(name).yaml"]
    }

    static func resolveBoard(_ name: String, near directory: String) -> String? {
        boardCandidates(name, near: directory).first { access($0, R_OK) == 0 }
    }

    static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return "hearth" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return TopicScheme.problem(withLevel: name) == nil ? name : "hearth"
    }
}
