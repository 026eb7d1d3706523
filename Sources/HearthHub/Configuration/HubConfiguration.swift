public import HearthContract
import HearthJSON
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
        public var column: Int = 0
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
    /// `hub.heartbeat` as written, in seconds; nil when not written (`heartbeat` then decides).
    public var heartbeatInterval: Int?
    public var mirrors: [MirrorRoute] = []
    /// Cross-hub bindings, each with its `to:` section for the checks that need the trait registry.
    public var peerBindings: [(binding: PeerBinding, target: ConfigMap)] = []
    public var bindings: [PeerBinding] { peerBindings.map(\.binding) }
    /// `homeAssistant: {discovery: true, prefix: homeassistant}`: announce the devices to Home Assistant.
    public var homeAssistantDiscovery = true
    public var homeAssistantPrefix = "homeassistant"
    /// `web: {enabled: true, listen: 0.0.0.0, port: 8470}`: the hub's own web page.
    public var web = WebSettings()
    /// `matter:`: the hub as a Matter node (docs/matter.md).
    public var matter = MatterSettings()

    public static let logLevels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]

    /// The heartbeat this hub sends: `hub.heartbeat`, or `defaultHeartbeat` once any peer is across a bridge (it
    /// watches this hub by it); none for a hub whose peers all share its broker, where the will says enough.
    public var heartbeat: Heartbeat? {
        if let heartbeatInterval { return Heartbeat(interval: heartbeatInterval) }
        return peers.contains { $0.route == .remote } ? Self.defaultHeartbeat : nil
    }

    /// Every 10 s: a cut shows within 20 s, and an idle hub pays for one message out and one in per peer per period
    /// (`docs/benchmarks.md`, "Sites").
    public static let defaultHeartbeat = Heartbeat(interval: 10)

    /// Reads `file`; returns nil after recording problems in `diagnostics`.
    public static func load(file: String, diagnostics: ConfigDiagnostics) -> HubConfiguration? {
        guard let root = ConfigValue.load(file: file, diagnostics: diagnostics) else { return nil }
        return read(root, diagnostics: diagnostics)
    }

    public static func read(_ root: ConfigValue, diagnostics: ConfigDiagnostics) -> HubConfiguration? {
        let before = diagnostics.problems.count
        let config = readPartially(root, diagnostics: diagnostics)
        return diagnostics.problems.count == before ? config : nil
    }

    /// What could be read even when there are problems (nil only when the file is not a mapping), so the
    /// daemon can go on to check the board and bindings and list every problem in one pass.
    static func loadPartially(_ source: Source) -> HubConfiguration? {
        source.root.flatMap { readPartially($0, diagnostics: source.diagnostics) }
    }

    /// A configuration file read and parsed once, its problems so far in `diagnostics`. hearthd takes the log level
    /// from it before anything logs, and the daemon plans from the same tree: parsing and reading a 1,000-device file
    /// twice was a quarter of the hub's start-up (callgrind).
    public struct Source {
        public let file: String
        let root: ConfigValue?
        let diagnostics: ConfigDiagnostics

        public init(file: String, diagnostics: ConfigDiagnostics = ConfigDiagnostics()) {
            self.file = file
            self.diagnostics = diagnostics
            root = ConfigValue.load(file: file, diagnostics: diagnostics)
        }

        /// `hub.logLevel` when it is written and one of `logLevels`; nil otherwise. Read from the tree without a
        /// word: whatever is wrong with it is said once, by the plan.
        public var logLevel: String? {
            guard case .mapping(let top)? = root?.node.value,
                  case .mapping(let hub)? = top.first(where: { $0.key == "hub" })?.value.value,
                  case .scalar(let level, _)? = hub.first(where: { $0.key == "logLevel" })?.value.value,
                  HubConfiguration.logLevels.contains(level) else { return nil }
            return level
        }
    }

    static func readPartially(_ root: ConfigValue, diagnostics: ConfigDiagnostics) -> HubConfiguration? {
        let directory = Self.directory(of: root.file)
        guard let top = root.mapping(Keys.root) else { return nil }

        var config = HubConfiguration(
            file: root.file, hubID: hostName(), boardFile: "", stateDirectory: "/var/lib/hearth", logLevel: "info",
            stepsPerSecond: 50, prefix: "hearth", mqtt: MQTTConnectOptions(), devices: [])

        if let ha = top["homeAssistant"]?.mapping(Keys.homeAssistant) {
            if let discovery = ha.bool("discovery") { config.homeAssistantDiscovery = discovery }
            if let prefix = ha.text("prefix") { config.homeAssistantPrefix = prefix }
        }
        if let web = top["web"]?.mapping(Keys.web) {
            if let enabled = web.bool("enabled") { config.web.enabled = enabled }
            if let listen = web.text("listen") {
                if WebSettings.isAddress(listen) {
                    config.web.listen = listen
                } else {
                    web["listen"]?.problem(
                        "'\(listen)' is not an IP address; write one such as 0.0.0.0, :: or 127.0.0.1")
                }
            }
            if let port = web.int("port") { config.web.port = port }
            if let tls = web["tls"]?.mapping(Keys.webTLS) { readWebTLS(tls, directory: directory, into: &config.web) }
        }
        if let matter = top["matter"]?.mapping(Keys.matter) { readMatter(matter, into: &config.matter) }
        if let hub = top.required("hub")?.mapping(Keys.hub) {
            if let id = hub.text("id") {
                // The key's pattern has said everything but this one (a NUL, written as "\0").
                if let problem = TopicScheme.problem(withLevel: id) {
                    hub["id"]?.problem("the hub id cannot be used: \(problem)")
                }
                config.hubID = id
            }
            if let name = hub.text("board", required: true), let board = hub["board"] {
                if let path = resolveBoard(name, near: directory) {
                    config.boardFile = path
                } else {
                    board.problem(
                        "no board file '\(name)'; looked for "
                            + "\(boardCandidates(name, near: directory).joined(separator: ", "))")
                }
            }
            if let dir = hub.text("stateDirectory") { config.stateDirectory = absolute(dir, near: directory) }
            if let level = hub.text("logLevel") { config.logLevel = level }
            if let steps = hub.int("stepsPerSecond") { config.stepsPerSecond = steps }
            if let beat = hub.duration("heartbeat") {
                if beat.components.attoseconds == 0 {
                    config.heartbeatInterval = Int(beat.components.seconds)
                } else {
                    hub["heartbeat"]?.problem("a heartbeat is a whole number of seconds, e.g. 5s")
                }
            }
        }
        if let mqtt = top["mqtt"] { readMQTT(mqtt, directory: directory, into: &config) }
        config.mqtt.clientID = config.mqtt.clientID ?? "hearth-\(config.hubID)"

        for peer in top["peers"]?.list ?? [] {
            guard let m = peer.mapping(Keys.peer), let hub = topicLevel(m, "hub", required: true) else { continue }
            let route = m.text("route").flatMap(PeerRoute.init(rawValue:)) ?? .local
            config.peers.append(PeerConfiguration(hub: hub, route: route, timeout: m.duration("timeout")))
        }
        var seen: [String: Int] = [:]
        for device in top.required("devices")?.list ?? [] {
            guard let d = readDevice(device, mirrors: &config.mirrors) else { continue }
            if let first = seen[d.configuration.id] {
                device.problem(
                    "the device id '\(d.configuration.id)' is already used on line \(first); ids must be unique")
                continue
            }
            seen[d.configuration.id] = device.line
            config.devices.append(d)
        }
        readGroups(top["groups"]?.list ?? [], into: &config.devices)
        for binding in top["bindings"]?.list ?? [] {
            if let b = readBinding(binding, hub: config.hubID, devices: config.devices) {
                config.peerBindings.append(b)
            }
        }
        return config
    }

    /// `groups: [{id: 1, name: Downstairs, members: [lamp], scenes: [{id: 1, name: Evening, transitionTime: 3s,
    /// values: {onOff: {onOff: true}, levelControl: {currentLevel: 80}}}]}]`: every device type of a member that has
    /// Groups (and is this hub's own, not mirrored) gets the group and its scenes as the configured part of its tables.
    static func readGroups(_ entries: [ConfigValue], into devices: inout [Device]) {
        var seen: [Int: Int] = [:]
        for entry in entries {
            guard let m = entry.mapping(Keys.group), let id = m.int("id", required: true) else { continue }
            if let first = seen[id] {
                m["id"]?.problem("group \(id) is already configured on line \(first); list all its members there")
                continue
            }
            seen[id] = entry.line
            let name = m.text("name") ?? ""
            var scenes: [String: Value] = [:]
            for sceneValue in m["scenes"]?.list ?? [] {
                guard let sm = sceneValue.mapping(Keys.scene), let sceneID = sm.int("id", required: true) else {
                    continue
                }
                if scenes["\(id)/\(sceneID)"] != nil { sm["id"]?.problem("scene \(sceneID) is already in group \(id)") }
                var values: [String: Value] = [:]
                for (traitName, traitValue) in sm.required("values")?.mapping(Keys.sceneValues)?.values ?? [] {
                    guard let server = TraitRegistry.standard.server(for: TraitID(qualifiedName: traitName)),
                          let tm = traitValue.anyMapping else { continue }
                    var attributes: [String: Value] = [:]
                    for (attributeName, v) in tm.values {
                        guard let a = server.descriptor.attribute(named: attributeName),
                            let value = value(
                                v, type: a.type, constraint: a.constraint, nullable: false, name: attributeName)
                        else { continue }
                        attributes[String(a.id)] = value
                    }
                    values[String(server.descriptor.clusterID)] = .structure(attributes)
                }
                let ms =
                    sm.duration("transitionTime").map {
                        Int($0.components.seconds) * 1000 + Int($0.components.attoseconds / 1_000_000_000_000_000)
                    } ?? 0
                scenes["\(id)/\(sceneID)"] = .structure([
                    "name": .string(sm.text("name") ?? ""), "transitionTime": .int(ms),
                    "values": .structure(values)
                ])
            }
            for member in m.required("members")?.list ?? [] {
                guard let deviceID = member.string else { continue }
                guard let d = devices.firstIndex(where: { $0.configuration.id == deviceID }) else {
                    member.problem(
                        "no device '\(deviceID)' on this hub; a group's members are this hub's devices (each hub "
                            + "lists its own under the same group id); devices: "
                            + devices.map(\.configuration.id).joined(separator: ", "))
                    continue
                }
                var joined = false
                for t in devices[d].configuration.types.indices {
                    var type = devices[d].configuration.types[t]
                    guard !type.isMirrored, type.type.allows(.groups) else { continue }
                    joined = true
                    merge(.groups, ["\(id)": .string(name)], into: &type)
                    if type.type.allows(.scenesManagement), !scenes.isEmpty {
                        merge(.scenesManagement, scenes.mapValues { only(ofTraitsOf: type, $0) }, into: &type)
                    }
                    devices[d].configuration.types[t] = type
                }
                if !joined {
                    member.problem(
                        "device '\(deviceID)' cannot be in a group: none of its own types has groups (lights and "
                            + "plugs do: OnOffLight, DimmableLight, OnOffPlugInUnit)")
                }
            }
        }
    }

    /// A configured scene with only the values of traits this device type has (Matter ignores the other clusters).
    private static func only(ofTraitsOf type: DeviceTypeConfiguration, _ scene: Value) -> Value {
        guard case .structure(var fields) = scene, let values = fields["values"]?.structureValue else { return scene }
        let present = Set((type.type.requiredTraits + type.traits.map(\.id)).compactMap {
            TraitRegistry.standard.server(for: $0).map { String($0.descriptor.clusterID) }
        })
        fields["values"] = .structure(values.filter { present.contains($0.key) })
        return .structure(fields)
    }

    private static func merge(_ trait: TraitID, _ entries: [String: Value], into type: inout DeviceTypeConfiguration) {
        if let i = type.traits.firstIndex(where: { $0.id == trait }) {
            let old = type.traits[i].table?.structureValue ?? [:]
            type.traits[i].table = .structure(old.merging(entries) { _, new in new })
        } else {
            type.traits.append(TraitConfiguration(trait, table: .structure(entries)))
        }
    }

    /// `{from: hall-switch, event: press, to: {hub: garage, device: lamp, trait: onOff, command: toggle, args: {…}}}`
    static func readBinding(_ value: ConfigValue, hub: String, devices: [Device]) -> (
        binding: PeerBinding, target: ConfigMap
    )? {
        guard let m = value.mapping(Keys.binding), let fromValue = m.required("from"), let from = m.text("from"),
              let to = m.required("to")?.mapping(Keys.bindingTarget) else { return nil }
        if let d = devices.first(where: { $0.configuration.id == from }) {
            if !d.configuration.types.contains(where: { $0.type == .genericSwitch }) {
                fromValue.problem("'\(from)' is not a GenericSwitch; a binding starts at a switch")
            }
        } else {
            fromValue.problem("no local device '\(from)'; a binding starts at one of this hub's switches")
        }
        let events: Set<String>
        switch m.text("event") {
        case "press"?: events = ["initialPress"]
        case "release"?: events = ["shortRelease"]
        case "latch"?: events = ["switchLatched"]
        case "any"?: events = ["initialPress", "shortRelease", "switchLatched"]
        default: events = ["initialPress", "switchLatched"]
        }
        let targetHub = topicLevel(to, "hub") ?? hub
        let trait = to.text("trait", required: true)
        let command = to.text("command", required: true)
        guard let deviceValue = to.required("device"), let device = topicLevel(to, "device"), let trait, let command
        else {
            return nil
        }
        if targetHub == hub && !devices.contains(where: { $0.configuration.id == device }) {
            deviceValue.problem("no device '\(device)' on this hub; give 'hub' for another hub's device")
        }
        let type = to.text("type")
        if let typeValue = to["type"], let name = type {
            if let descriptor = DeviceTypeDescriptor.named(name) {
                if !descriptor.allows(TraitID(qualifiedName: trait)) {
                    typeValue.problem("\(name) cannot have trait '\(trait)'")
                }
            } else {
                typeValue.problem(
                    "unknown device type '\(name)'; known: "
                        + "\(DeviceTypeDescriptor.catalogue.map(\.name).joined(separator: ", "))")
            }
        }
        var arguments: JSON = .object([])
        if let args = to["args"], args.anyMapping != nil { arguments = json(args) }
        return (PeerBinding(from: from, events: events, hub: targetHub, device: device, type: type, trait: trait,
                            command: command, arguments: arguments),
                to)
    }

    /// A YAML value as the JSON a client would send: unquoted whole numbers, `true`, `false` and `null` as
    /// such, any other scalar as a string, lists as arrays and mappings as objects (bitmaps as mappings of
    /// flags). Which of them a command accepts is `checkBindings`' to say, against the trait registry.
    static func json(_ value: ConfigValue) -> JSON {
        switch value.node.value {
        case .sequence: return .array((value.list ?? []).map(json))
        case .mapping: return .object((value.anyMapping?.values ?? []).map { (key: $0.key, value: json($0.value)) })
        default: break
        }
        // Scalars as YAML 1.2 reads them: `level: 42` is a number, `level: "42"` text.
        switch value.read(.scalar) {
        case .int(let i)?: return .int(i)
        case .number(let d)?: return .double(d)  // refused for a whole-number field, said so
        case .bool(let b)?: return .bool(b)
        case .text(let t)?: return .string(t)
        case .null?, .duration?, nil: return .null
        }
    }

    /// Checks each binding's command against the trait registry (the standard traits and those the hardware
    /// adds), as far as it can tell: the trait, the command, and every argument's name, type and range, so a
    /// binding never runs another command than the one written. A manufacturer's trait this hub does not
    /// know is left to the hub that owns the target.
    static func checkBindings(_ bindings: [(binding: PeerBinding, target: ConfigMap)], hub: String,
                              registry: TraitRegistry, diagnostics: ConfigDiagnostics) {
        func problem(_ at: ConfigValue, _ message: String) {
            diagnostics.add(ConfigProblem(file: at.file, line: at.line, path: at.path, message: message))
        }
        for (binding, to) in bindings {
            let id = TraitID(qualifiedName: binding.trait)
            guard let trait = registry.server(for: id)?.descriptor else {
                if id.namespace == TraitID.matterNamespace || binding.hub == hub, let at = to["trait"] {
                    let known = registry.servers.keys.map(\.qualifiedName).sorted().joined(separator: ", ")
                    problem(at, "no trait '\(binding.trait)'; known: \(known)")
                }
                continue
            }
            guard let command = trait.command(named: binding.command) else {
                if let at = to["command"] {
                    let known = trait.commands.map(\.name).joined(separator: ", ")
                    problem(at, "\(binding.trait) has no command '\(binding.command)'; its commands are \(known)")
                }
                continue
            }
            var values: [String: Value] = [:]
            var wrong = false
            for (key, value) in to["args"]?.anyMapping?.values ?? [] {
                guard let field = command.fields.first(where: { $0.name == key }) else {
                    let known =
                        command.fields.isEmpty
                        ? "it takes none" : "its fields are " + command.fields.map(\.name).joined(separator: ", ")
                    problem(value, "\(command.name) has no field '\(key)'; \(known)")
                    wrong = true
                    continue
                }
                do throws(HomeError) {
                    let v = try ValueCoding.value(json(value), as: field.type, what: "\(command.name).\(key)")
                    try field.type.check(v, nullable: field.isNullable, constraint: field.constraint,
                                         what: "\(command.name).\(key)")
                    values[key] = v
                } catch {
                    problem(value, error.message)
                    wrong = true
                }
            }
            // What is left: fields the command needs and the binding leaves out.
            if !wrong {
                do throws(HomeError) { _ = try command.validate(values) } catch {
                    problem(to["args"] ?? to.owner, error.message)
                }
            }
        }
    }

    /// What only the engine can check (features that conflict, values that depend on each other), once
    /// the bindings have added their traits and features.
    static func checkWithEngine(_ devices: [(configuration: DeviceConfiguration, line: Int, column: Int)], file: String,
                                registry: TraitRegistry, diagnostics: ConfigDiagnostics) {
        // One home for every device first: when it builds, no device has a problem, and start-up has not built
        // (and thrown away) a home per device — a thousand homes, each with its lane and its lock, for 1,000
        // devices. Only when it fails is each device built alone, to name every device with a problem.
        if (try? Home(devices: devices.map(\.configuration), clock: ManualClock(), registry: registry)) != nil {
            return
        }
        for (configuration, line, column) in devices {
            do throws(HomeError) {
                _ = try Home(devices: [configuration], clock: ManualClock(), registry: registry)
            } catch {
                diagnostics.add(
                    ConfigProblem(
                        file: file, line: line, column: column, path: "devices(\(configuration.id))",
                        message: error.message))
            }
        }
    }

    static func readMQTT(_ value: ConfigValue, directory: String, into config: inout HubConfiguration) {
        guard let m = value.mapping(Keys.mqtt) else { return }
        if let host = m.text("host") { config.mqtt.host = host }
        if let port = m.int("port") { config.mqtt.port = port }
        if let prefix = m.text("prefix") {
            // The table's pattern is this rule for editors; a NUL, which it leaves out, is caught here.
            if let problem = TopicScheme.problem(withPrefix: prefix) {
                m["prefix"]?.problem("the prefix '\(prefix)' cannot be used: \(problem)")
            }
            config.prefix = prefix
        }
        if let id = m.text("clientId") { config.mqtt.clientID = id }
        if let k = m.duration("keepAlive") { config.mqtt.keepAlive = Int(k.components.seconds) }
        config.mqtt.username = m.text("username")
        config.mqtt.password = m.text("password")
        if let f = m["passwordFile"], let path = m.text("passwordFile") {
            // Read raw: the first line is the password, whatever it holds (`#`, `:`, quotes, spaces).
            switch SecretFile.firstLine(absolute(path, near: directory)) {
            case .success(let password): config.mqtt.password = password
            case .failure(let failure): f.problem(failure.description)
            }
        }
        if let t = m["tls"]?.mapping(Keys.tls) {
            var tls = MQTTConnectOptions.TLS(caFile: t.text("caFile").map { absolute($0, near: directory) })
            tls.certificateFile = t.text("certFile").map { absolute($0, near: directory) }
            tls.keyFile = t.text("keyFile").map { absolute($0, near: directory) }
            if let verify = t.bool("verify") { tls.verifyPeer = verify }
            if tls.caFile == nil && tls.verifyPeer {
                t.owner.problem("missing 'caFile' (the CA that signed the broker's certificate), or verify: false")
            }
            config.mqtt.tls = tls
        }
        if let p = m.text("protocol") {
            config.mqtt.protocolVersion = p == "5" ? .v5 : .v311
            config.mqtt.allowsProtocolFallback = p == "5"
        }
    }

    static func readDevice(_ value: ConfigValue, mirrors: inout [MirrorRoute]) -> Device? {
        guard let m = value.mapping(Keys.device) else { return nil }
        guard let id = m.text("id", required: true) else { return nil }
        if let problem = TopicScheme.problem(withLevel: id) {
            m["id"]?.problem("the device id cannot be used: \(problem)")
        }
        var device = DeviceConfiguration(id: id, name: m.text("name") ?? id, types: [])
        device.roomID = m.text("room")
        device.structureID = m.text("structure")
        device.isMatterDevice = m.bool("matter") ?? true
        var bindings: [(Int, ConfigValue)] = []

        var typeValues: [ConfigMap] = []
        if let types = m["types"] {
            for t in types.list ?? [] { if let tm = t.mapping(Keys.deviceType) { typeValues.append(tm) } }
        } else if m["type"] != nil {
            typeValues.append(m)  // the one-type shorthand: type, traits and binding on the device itself
        } else {
            value.problem("missing 'type' (e.g. OnOffLight) or 'types' (a list)")
        }
        for tm in typeValues {
            guard let typeValue = tm.required("type"), let name = typeValue.string else { continue }
            guard let type = DeviceTypeDescriptor.named(name) else {
                typeValue.problem(
                    "unknown device type '\(name)'; known: "
                        + "\(DeviceTypeDescriptor.catalogue.map(\.name).joined(separator: ", "))")
                continue
            }
            var typeConfig = DeviceTypeConfiguration(type, isPrimary: tm["primary"] == nil ? nil : tm.bool("primary"))
            if let mirror = tm["mirror"]?.mapping(Keys.mirror) {
                if let hub = topicLevel(mirror, "hub", required: true),
                   let peerDevice = topicLevel(mirror, "device", required: true) {
                    typeConfig.isMirrored = true
                    mirrors.append(MirrorRoute(localDevice: id, localType: name, peerHub: hub, peerDevice: peerDevice,
                                               peerType: mirror.text("type") ?? name))
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
        if let info = m["info"], info.anyMapping != nil, !device.types.isEmpty {
            let primary = device.types.firstIndex { $0.isPrimary == true } ?? 0
            if let t = readTrait("basicInformation", info, type: device.types[primary].type) {
                device.types[primary].traits.removeAll { $0.id == .basicInformation }
                device.types[primary].traits.append(t)
            }
        }
        return Device(configuration: device, bindings: bindings, line: value.line, column: value.column)
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
        guard let m = value.mapping(Keys.trait(descriptor)) else { return nil }
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

    /// An attribute's configured value, read by its shape (`Keys.attributeShape`).
    static func attributeValue(_ v: ConfigValue, _ attribute: AttributeDescriptor) -> Value? {
        value(v, type: attribute.type, constraint: attribute.constraint, nullable: attribute.isNullable,
              name: attribute.name)
    }

    static func value(_ v: ConfigValue, type: ValueType, constraint: ClosedRange<Int>?, nullable: Bool, name: String)
        -> Value?
    {
        var shape = Keys.valueShape(type, constraint: constraint, nullable: nullable)
        if case .nullable(let inner) = shape {
            if v.isNull { return .null }
            shape = inner
        } else if v.isNull {
            v.problem("\(name) cannot be null")
            return nil
        }
        switch (type, shape) {
        case (.structure(let s), _):
            guard let m = v.mapping(Keys.structSection(s)) else { return nil }
            var fields: [String: Value] = [:]
            for f in s.fields {
                guard let fv = m.required(f.name),
                    let field = value(fv, type: f.type, constraint: f.constraint, nullable: f.isNullable, name: f.name)
                else { return nil }
                fields[f.name] = field
            }
            return .structure(fields)
        case (.list(let item, _), _):  // the count is the engine's to check (checkWithEngine), with the place
            guard let items = v.list else { return nil }
            // Every element is read, so each bad one is reported with its place, not only the first.
            let values = items.enumerated().map { i, element in
                value(element, type: item, constraint: nil, nullable: false, name: "\(name)[\(i)]")
            }
            let read = values.compactMap { $0 }
            return read.count == values.count ? .list(read) : nil
        case (.enumeration(let e), _):
            guard case .text(let s)? = v.read(shape) else { return nil }
            return e.value(named: s).map(Value.int)
        case (.bitmap(let b), .listOrOne(let flag)):
            var bits = 0
            for item in v.listOrSingle {
                guard case .text(let name)? = item.read(flag), let bit = b.bits.first(where: { $0.name == name })?.bit
                else { return nil }
                bits |= 1 << bit
            }
            return .int(bits)
        default:
            switch v.read(shape) {
            case .bool(let b)?: return .bool(b)
            case .text(let s)?: return .string(s)
            case .int(let i)?: return .int(i)
            default: return nil
            }
        }
    }

    // MARK: Paths

    /// The absolute directory of `file`, so paths in it stay right whatever the working directory.
    static func directory(of file: String) -> String {
        var path = file
        if !path.hasPrefix("/") {
            var buffer = [CChar](repeating: 0, count: 4096)
            if getcwd(&buffer, buffer.count) != nil {
                path =
                    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) + "/"
                    + path
            }
        }
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    static func absolute(_ path: String, near directory: String) -> String {
        path.hasPrefix("/") ? path : "\(directory)/\(path)"
    }

    /// Another hub's id, or a device's there: the key's pattern has said everything but a NUL (written "\0"), which
    /// would cut the topic it goes into.
    static func topicLevel(_ map: ConfigMap, _ key: String, required: Bool = false) -> String? {
        guard let id = map.text(key, required: required) else { return nil }
        if let problem = TopicScheme.problem(withLevel: id) { map[key]?.problem("'\(id)' cannot be used: \(problem)") }
        return id
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
