import HearthContract
import HearthJSON
public import HearthConfig
package import HearthEngine
package import HearthHardware
package import HearthHomeAssistant
import HearthLinux
import HearthModel
public import HearthMQTT
public import Logging
import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// What `hearthd` does with a configuration: plans and checks it (`check-config`, the summary of what would run), and
/// runs it as a `Hub`.
public enum HubDaemon {
    /// The exit status for a configuration that cannot be used (`EX_CONFIG`).
    public static let configurationError: Int32 = 78
    /// The exit status for a state file that cannot be read (`EX_IOERR`).
    public static let stateError: Int32 = 74

    public struct Overrides: Sendable {
        public var stateDirectory: String?
        /// Replaces the configuration's host and port, and its user name, password and TLS when the address
        /// gives them (a URL).
        public var broker: MQTTBrokerAddress?
        public init(stateDirectory: String? = nil, broker: MQTTBrokerAddress? = nil) {
            self.stateDirectory = stateDirectory
            self.broker = broker
        }
    }

    /// Everything a configuration builds before anything is touched.
    package struct Plan {
        package var config: HubConfiguration
        package var board: Board
        package var devices: [DeviceConfiguration]
        package var bindings: [(device: String, binding: any HardwareBinding)]
        /// Printed by check-config and logged by the hub, which starts anyway.
        package var warnings: [ConfigProblem] = []
    }

    /// The engine's problems with the plan's devices, each at its place in the file (empty when the engine
    /// builds them all): what `plan` leaves out when the caller builds the home itself.
    static func problemsBuilding(_ plan: Plan, hardware: any HardwareProvider) -> [ConfigProblem] {
        let diagnostics = ConfigDiagnostics()
        HubConfiguration.checkWithEngine(zip(plan.devices, plan.config.devices).map { ($0, $1.line, $1.column) },
                                         file: plan.config.file, registry: registry(hardware), diagnostics: diagnostics)
        return diagnostics.problems
    }

    package static func plan(
        configFile: String, hardware: any HardwareProvider, logger: Logger,
        diagnostics: ConfigDiagnostics, checkingWithEngine: Bool = true
    ) -> Result<Plan, ConfigError> {
        plan(HubConfiguration.Source(file: configFile, diagnostics: diagnostics), hardware: hardware, logger: logger,
             checkingWithEngine: checkingWithEngine)
    }

    /// Reads and checks the configuration, its board and its bindings; every problem is listed.
    /// - Parameter checkingWithEngine: false when the caller builds the engine's home from the plan at once
    ///   (hearthd): the engine's own check (`checkWithEngine`, which builds a home of every device) is left to the
    ///   caller's build, and run only if it fails, to name the devices with their places (`problemsBuilding`).
    ///   Building every device twice was an eighth of a 1,000-device hub's start-up.
    static func plan(_ source: HubConfiguration.Source, hardware: any HardwareProvider, logger: Logger,
                     checkingWithEngine: Bool) -> Result<Plan, ConfigError> {
        let diagnostics = source.diagnostics
        // Read on past the configuration's problems to the board and the bindings, so one run lists them all.
        guard let config = HubConfiguration.loadPartially(source), !config.boardFile.isEmpty,
              let board = hardware.loadBoard(file: config.boardFile, diagnostics: diagnostics) else {
            return .failure(ConfigError(diagnostics.problems))
        }
        var devices: [DeviceConfiguration] = []
        var bindings: [(String, any HardwareBinding)] = []
        let pins = PinLedger()
        let backend = hardware.backend(for: board)
        for device in config.devices {
            var d = device.configuration
            for (index, section) in device.bindings {
                let type = d.types[index].type.name
                let deviceLogger = logger.with(device: d.id, type: type)
                let context = BindingContext(
                    deviceID: d.id, typeName: type, board: board, hardware: backend, pins: pins,
                    log: { deviceLogger.notice("\($0)") })
                let problemsBefore = diagnostics.problems.count
                guard let binding = hardware.makeBinding(section, context: context) else {
                    // Without a problem the plan would start the device with no hardware and no word of why.
                    if diagnostics.problems.count == problemsBefore {
                        section.problem("no binding was made from this section and no problem was named; the \(type) "
                                        + "would run without hardware, so the hub does not start")
                    }
                    continue
                }
                d.types[index].actuator = binding.actuator
                d.types[index].traits += binding.extraTraits
                for (trait, features) in binding.requiredFeatures {
                    if let t = d.types[index].traits.firstIndex(where: { $0.id == trait }) {
                        d.types[index].traits[t].features.formUnion(features)
                    } else {
                        d.types[index].traits.append(TraitConfiguration(trait, features: features))
                    }
                }
                for (trait, attributes) in binding.traitAttributes {
                    let t = d.types[index].traits.firstIndex(where: { $0.id == trait }) ?? {
                        d.types[index].traits.append(TraitConfiguration(trait))
                        return d.types[index].traits.count - 1
                    }()
                    for (name, value) in attributes.sorted(by: { $0.key < $1.key }) {
                        if let configured = d.types[index].traits[t].attributes[name], configured != value {
                            section.problem(
                                "\(trait).\(name) is \(configured) in the device's traits but \(value) from "
                                    + "this binding's hardware; leave it out of traits (the binding sets it)")
                        }
                        d.types[index].traits[t].attributes[name] = value
                    }
                }
                for (trait, attributes) in binding.defaultAttributes {
                    if let t = d.types[index].traits.firstIndex(where: { $0.id == trait }) {
                        d.types[index].traits[t].attributes.merge(attributes) { configured, _ in configured }
                    } else {
                        d.types[index].traits.append(TraitConfiguration(trait, attributes: attributes))
                    }
                }
                bindings.append((d.id, binding))
            }
            devices.append(d)
        }
        if !diagnostics.problems.isEmpty { return .failure(ConfigError(diagnostics.problems)) }
        if checkingWithEngine {
            HubConfiguration.checkWithEngine(zip(devices, config.devices).map { ($0, $1.line, $1.column) },
                                             file: config.file, registry: registry(hardware), diagnostics: diagnostics)
        }
        HubConfiguration.checkBindings(config.peerBindings, hub: config.hubID, registry: registry(hardware),
                                       diagnostics: diagnostics)
        if !diagnostics.problems.isEmpty { return .failure(ConfigError(diagnostics.problems)) }
        return .success(Plan(config: config, board: board, devices: devices, bindings: bindings,
                             warnings: diagnostics.warnings))
    }

    /// Checks a configuration without starting anything: the problems, one per line, or none.
    public static func check(configFile: String, hardware: any HardwareProvider) -> [ConfigProblem] {
        checkReport(configFile: configFile, hardware: hardware).problems
    }

    /// What `hearthd check-config` prints: the problems (nothing would start), the warnings, and, when
    /// there is no problem, a summary of what would run. No secret is ever in it.
    public struct CheckReport: Sendable {
        public var problems: [ConfigProblem]
        public var warnings: [ConfigProblem]
        public var summary: [String]
    }

    public static func checkReport(configFile: String, hardware: any HardwareProvider) -> CheckReport {
        let diagnostics = ConfigDiagnostics()
        switch plan(
            configFile: configFile, hardware: hardware, logger: Logger(label: "hearthd"), diagnostics: diagnostics)
        {
        case .success(let plan): return CheckReport(problems: [], warnings: plan.warnings, summary: summary(of: plan))
        case .failure(let error):
            return CheckReport(problems: error.problems, warnings: diagnostics.warnings, summary: [])
        }
    }

    /// What would run, in a few lines: the hub, the broker, each device with its types and wiring, the peers
    /// and the bindings across hubs.
    package static func summary(of plan: Plan) -> [String] {
        let c = plan.config
        var lines: [String] = []
        let board = "board \(plan.board.name)" + (plan.board.isSimulated ? " (simulated)" : "") + " from \(c.boardFile)"
        lines.append("hub \(c.hubID) on \(board)")
        var broker = "broker \(c.mqtt.host):\(c.mqtt.port)" + (c.mqtt.tls == nil ? "" : " over TLS")
        if c.mqtt.username != nil || c.mqtt.password != nil {
            broker +=
                ", with "
                + [c.mqtt.username == nil ? nil : "a user name", c.mqtt.password == nil ? nil : "a password"]
                .compactMap { $0 }.joined(separator: " and ")
        }
        lines.append(broker + ", topics \(c.prefix)/\(c.hubID)/…, state in \(c.stateDirectory)")
        lines.append("\(plan.devices.count) device(s):")
        let width = plan.devices.map(\.id.count).max() ?? 0
        for (index, device) in plan.devices.enumerated() {
            let bindings = c.devices[index].bindings
            var typeTexts: [String] = []
            for (t, type) in device.types.enumerated() {
                var text = type.type.name
                if type.isMirrored,
                    let m = c.mirrors.first(where: { $0.localDevice == device.id && $0.localType == type.type.name })
                {
                    text += " mirrored from \(m.peerHub)/\(m.peerDevice)"
                } else if let b = bindings.firstIndex(where: { $0.type == t }),
                          let binding = plan.bindings.filter({ $0.device == device.id }).dropFirst(b).first?.binding {
                    let kind = bindings[b].config.node.kindText
                    text += " ← \(kind)" + (binding.wiring.isEmpty ? "" : " \(binding.wiring)")
                } else {
                    text += " (engine only, no hardware)"
                }
                typeTexts.append(text)
            }
            let padded = device.id + String(repeating: " ", count: width - device.id.count)
            lines.append("  \(padded)  " + typeTexts.joined(separator: "; "))
        }
        // In steps: as one expression, Swift 6.2 gave up type-checking it.
        var peers: [String] = []
        for p in c.peers {
            let deadline = p.timeout.map { ", answers within \($0)" } ?? ""
            peers.append("\(p.hub) (\(p.route.rawValue)\(deadline))")
        }
        let heartbeat = c.heartbeat.map { "; heartbeat every \($0.interval) s" } ?? ""
        lines.append("peers: " + (peers.isEmpty ? "none named" : peers.joined(separator: ", ")) + heartbeat)
        let across = c.bindings.filter { $0.hub != c.hubID }
        let local = c.bindings.count - across.count
        if c.bindings.isEmpty { lines.append("bindings: none") } else {
            lines.append("\(c.bindings.count) binding(s)" + (local > 0 ? ", \(local) on this hub" : "")
                         + (across.isEmpty ? "" : ", \(across.count) to other hubs") + ":")
            for b in c.bindings {
                lines.append("  \(b.from) \(b.events.sorted().joined(separator: "/")) → \(b.hub)/\(b.device) "
                             + "\(b.trait).\(b.command)" + (b.arguments == .object([]) ? "" : " \(b.arguments.text)"))
            }
        }
        // Groups, from the tables the configuration gave the members' device types.
        var groups: [Int: (name: String, members: [String], scenes: Set<String>)] = [:]
        for device in c.devices {
            for type in device.configuration.types {
                for trait in type.traits {
                    for (key, value) in trait.table?.structureValue ?? [:] {
                        if trait.id == .groups, let id = Int(key) {
                            groups[id, default: ("", [], [])].name = value.stringValue ?? ""
                            if groups[id]?.members.contains(device.configuration.id) == false {
                                groups[id]?.members.append(device.configuration.id)
                            }
                        } else if trait.id == .scenesManagement,
                            let id = key.split(separator: "/").first.flatMap({ Int($0) })
                        {
                            groups[id, default: ("", [], [])].scenes.insert(key)
                        }
                    }
                }
            }
        }
        lines.append("groups: " + (groups.isEmpty ? "none" : groups.keys.sorted().map { id in
            let g = groups[id]!
            return "\(id)" + (g.name.isEmpty ? "" : " \(g.name)") + " (\(g.members.joined(separator: ", "))"
                + (g.scenes.isEmpty ? "" : "; \(g.scenes.count) scene(s)") + ")"
        }.joined(separator: ", ")))
        return lines
    }

    /// Runs the hub until SIGTERM or SIGINT; returns the exit status.
    public static func run(configFile: String, overrides: Overrides = Overrides(), hardware: any HardwareProvider,
                           logger: Logger) async -> Int32 {
        await run(HubConfiguration.Source(file: configFile), overrides: overrides, hardware: hardware, logger: logger)
    }

    /// Runs the hub from a configuration already parsed (hearthd has read its log level) until SIGTERM or SIGINT.
    public static func run(_ source: HubConfiguration.Source, overrides: Overrides = Overrides(),
                           hardware: any HardwareProvider, logger: Logger) async -> Int32 {
        switch Hub.assemble(source, overrides: overrides, hardware: hardware, logger: logger) {
        case .failure(let failure): return failure.exitStatus
        case .success(let hub): return await hub.run()
        }
    }

    /// Home Assistant's discovery wired to the hub's client: the bridge publishes at QoS 1 and subscribes and
    /// unsubscribes the config filters itself; its lifelong subscriptions (Home Assistant's birth, its marker
    /// topic) are made here. The hub passes its connections (`online`) and its other messages to it.
    package static func homeAssistantBridge(home: Home, client: MQTTClient, options: HomeAssistantOptions,
                                            clock: any EngineClock = MonotonicClock(),
                                            log: @escaping @Sendable (String) -> Void) -> HomeAssistantBridge {
        let bridge = HomeAssistantBridge(
            home: home, options: options, clock: clock,
            // The config filters without the hub's own publications (MQTT 5's no local): its clearing of a stale config
            // need not come back to it.
            subscribe: { [weak client] filter in
                do throws(MQTTError) {
                    try client?.subscribe(filter, options: MQTTSubscriptionOptions(noLocal: true))
                } catch {
                    log("subscribe to \(filter) failed: \(error)")
                }
            },
            unsubscribe: { [weak client] filter in
                do throws(MQTTError) { try client?.unsubscribe(filter) } catch {
                    log("unsubscribe from \(filter) failed: \(error)")
                }
            },
            log: log,
            // A part of an announcement of everything per turn of the network thread, once the last is written.
            afterWritten: { [weak client] work in client?.whenWritten(work) }
        ) { [weak client] m in
            do throws(MQTTError) {
                try client?.publish(m.topic, payload: m.payload, qos: .atLeastOnce, retain: m.retain)
            } catch {
                if error.code != .notConnected { log("publish to \(m.topic) failed: \(error)") }
            }
        }
        home.observe { bridge.handle($0) }
        for filter in bridge.subscriptions {
            do throws(MQTTError) { try client.subscribe(filter) } catch {
                log("subscribe to \(filter) failed: \(error)")
            }
        }
        return bridge
    }

    /// The standard traits and those the hardware adds.
    package static func registry(_ hardware: any HardwareProvider) -> TraitRegistry {
        var registry = TraitRegistry.standard
        for server in hardware.traitServers { registry.register(server) }
        return registry
    }

    /// Milliseconds since this process was exec'd, from the kernel's record of its start (10 ms grain).
    static func millisecondsSinceExec() -> Int? {
        guard let stat = readSmallFile("/proc/self/stat"), let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After "(comm)", field 3 is index 0; starttime is field 22 → index 19.
        guard fields.count > 19, let ticks = Double(fields[19]) else { return nil }
        let hz = Double(sysconf(Int32(_SC_CLK_TCK)))
        var now = timespec()
        clock_gettime(CLOCK_BOOTTIME, &now)
        let uptime = Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
        return Int(((uptime - ticks / hz) * 1000).rounded())
    }

    /// The CPU this process has used so far, all threads, user and system: what start-up cost, apart from the wait
    /// for a core that the time since exec includes on a busy machine.
    static func cpuMillisecondsSoFar() -> Int {
        var used = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &used)
        return Int(used.tv_sec) * 1000 + Int(used.tv_nsec) / 1_000_000
    }

    static func readSmallFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        return n > 0 ? String(decoding: buffer[..<n], as: UTF8.self) : nil
    }
}

extension Logger {
    /// A logger whose lines carry the device and device type.
    ///
    /// Set as one dictionary: a stream handler renders its metadata anew on every change.
    func with(device: String, type: String) -> Logger {
        var l = self
        l.handler.metadata.merge(["device": "\(device)", "type": "\(type)"]) { $1 }
        return l
    }
}

extension YAMLNode {
    /// A binding's `kind:` as written, for the summary.
    var kindText: String {
        if case .mapping(let entries) = value, let kind = entries.first(where: { $0.key == "kind" }),
           case .scalar(let text, _) = kind.value.value { return text }
        return "binding"
    }
}

/// Gives the C heap's free memory back to the kernel: at start, glibc's thresholds fixed (`CHeap` says why), and
/// after each connection's burst of publications, `malloc_trim(0)`.
///
/// Every (re)connection publishes every device's document and, with Home Assistant discovery, every device's
/// config, which libmosquitto copies into its queues and frees as the broker takes them (a QoS 1 config once
/// acknowledged). Without the trim the hub's Private_Dirty would stay at the burst's peak for its whole life;
/// without the fixed thresholds an arena's free top stays too (docs/benchmarks.md, "Memory"). The trim runs once, two
/// seconds after the burst was queued (on a utility thread: it takes each arena's lock for a moment, never the
/// engine's), by which time a broker on the LAN has long taken it; a trim that comes early only returns less.
public enum HeapTrim {
    /// Call first in a hub's process, before the configuration is read: the thresholds count from then.
    public static func atStart() {
        CHeap.keepThresholdsFixed()
    }

    static func afterBurst(delay: Duration = .seconds(2)) {
        let ms = Int(delay.components.seconds * 1000 + delay.components.attoseconds / 1_000_000_000_000_000)
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + .milliseconds(ms)) { CHeap.trim() }
    }
}

