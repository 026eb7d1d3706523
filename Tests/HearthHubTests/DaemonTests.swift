import Foundation
import HearthContract
import HearthJSON
import HearthMQTT
import HearthTestKit
import Testing
import HearthSync

/// Watches a hub over MQTT and sends it requests, as any client would.
final class Watcher: Sendable {
    let client: MQTTClient
    private let messages = Locked<[MQTTMessage]>([])

    init(port: Int, host: String = "127.0.0.1", protocolVersion: MQTTProtocolVersion? = nil) async throws {
        var options = MQTTConnectOptions(host: host, port: port, clientID: "watcher-\(UUID().uuidString.prefix(8))")
        if let protocolVersion { options.protocolVersion = protocolVersion }
        client = try MQTTClient(options: options)
        client.onMessage = { [weak self] m in self?.messages.withLock { $0.append(m) } }
        try client.subscribe("hearth/#")
        try await client.connect()
    }

    /// A watcher that logs in; call ``connect()``.
    init(port: Int, username: String, password: String) throws {
        client = try MQTTClient(
            options: MQTTConnectOptions(
                host: "127.0.0.1", port: port, clientID: "watcher-\(UUID().uuidString.prefix(8))",
                username: username, password: password))
        client.onMessage = { [weak self] m in self?.messages.withLock { $0.append(m) } }
        try client.subscribe("hearth/#")
    }

    func connect() async throws { try await client.connect() }

    deinit { client.disconnect() }

    var all: [MQTTMessage] { messages.withLock { $0 } }
    func clear() { messages.withLock { $0.removeAll() } }

    func first(_ topic: String, within timeout: Duration = .seconds(20),
               where predicate: @Sendable (JSON?) -> Bool = { _ in true }) async -> MQTTMessage? {
        var found: MQTTMessage?
        _ = await poll(within: timeout) {
            found = messages.withLock { $0.first { $0.topic == topic && predicate(try? JSON.parse($0.payload)) } }
            return found != nil
        }
        return found
    }

    /// Waits for the status topic to carry `value` (in any message since the last ``clear()``).
    func waitFor(status value: String, hub: String = "e2e") async -> Bool {
        await poll(within: .seconds(20)) {
            messages.withLock { $0.contains { $0.topic == "hearth/\(hub)/status" && $0.payload == Array(value.utf8) } }
        }
    }

    /// Sends a request and returns its response.
    func request(_ device: String, _ body: String, hub: String = "e2e") async throws -> JSON? {
        let t = UUID().uuidString
        try client.publish(
            "hearth/\(hub)/devices/\(device)/set", payload: Array(#"{"transaction":"\#(t)",\#(body)}"#.utf8),
            qos: .atLeastOnce)
        return await first("hearth/\(hub)/responses") { $0?["transaction"] == .string(t) }.flatMap {
            try? JSON.parse($0.payload)
        }
    }

    /// The latest document of a device.
    func document(_ device: String, hub: String = "e2e") -> JSON? {
        messages.withLock { $0.last { $0.topic == "hearth/\(hub)/devices/\(device)" } }.flatMap {
            try? JSON.parse($0.payload)
        }
    }
}

/// A configuration, a broker and the real `hearthd` binary.
final class DaemonRig: @unchecked Sendable {
    let broker: TestBroker
    let directory: String
    var daemon: RunningProduct?
    var configFile: String { "\(directory)/hearth.yaml" }
    var stateFile: String { "\(directory)/state/state.json" }
    var starts = 0

    /// - Parameters:
    ///   - board: `"sim"` copies the repository's simulated board; otherwise an empty simulated one.
    ///   - configuredPort: the port the configuration names, when a test wants it wrong (the broker's own port
    ///     otherwise).
    init(devices: String = DaemonRig.defaultDevices, board: String? = nil, mqtt: String = "", broker: TestBroker? = nil,
         configuredPort: Int? = nil) throws {
        self.broker = try broker ?? TestBroker()
        let broker = self.broker
        directory = NSTemporaryDirectory() + "hearth-e2e-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try "name: e2e-board\nsimulated: true\n".write(
            toFile: "\(directory)/board.yaml", atomically: true, encoding: .utf8)
        if board != nil {
            try FileManager.default.copyItem(
                atPath: Repository.path("boards/sim.yaml"), toPath: "\(directory)/sim.yaml")
        }
        try
            ("""
        hub:
          id: e2e
          board: \(board == nil ? "board.yaml" : "sim.yaml")
          stateDirectory: state
        mqtt:
          host: 127.0.0.1
          port: \(configuredPort ?? broker.port)
          keepAlive: 5s

        """ + (mqtt.isEmpty ? "" : mqtt + "\n") + "devices:\n" + devices + Self.noWebPage).write(
            toFile: configFile, atomically: true,
            encoding: .utf8)
    }

    /// Last, so that the places the tests expect in the file stay where they are: the hubs of tests run side by side,
    /// and one port 8470 for all would clash.
    static let noWebPage = "\nweb: {enabled: false}\n"

    static let defaultDevices = """
      - id: lamp
        name: Lamp
        type: DimmableLight
      - id: relay
        name: Relay
        type: OnOffLight
    """

    func start(_ arguments: [String] = []) throws {
        starts += 1
        daemon = try RunningProduct("hearthd", ["run", "--config", configFile] + arguments,
                                    outputFile: "\(directory)/hearthd-\(starts).log")
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }
}

func onOff(_ doc: JSON?) -> JSON? {
    guard case .array(let types)? = doc?["types"] else { return nil }
    return types.first?["traits"]?["onOff"]?["attributes"]?["onOff"]
}

func attribute(_ doc: JSON?, _ trait: String, _ name: String) -> JSON? {
    guard case .array(let types)? = doc?["types"] else { return nil }
    return types.first?["traits"]?[trait]?["attributes"]?[name]
}

@Suite(.serialized, .timeLimit(.minutes(5))) struct DaemonTests {
    @Test func startCommandWriteRenameAndAGracefulStop() async throws {
        let rig = try DaemonRig()
        let watcher = try await Watcher(port: rig.broker.port)
        try rig.start()
        #expect(await watcher.waitFor(status: "online"))
        #expect(await watcher.first("hearth/e2e/devices") != nil)
        #expect(try await watcher.request("relay", #""trait":"onOff","command":"on""#)?["ok"] == .bool(true))
        #expect(onOff(watcher.document("relay")) == .bool(true))
        #expect(
            try await watcher.request("lamp", #""trait":"levelControl","update":{"onLevel":100}"#)?["ok"] == .bool(true)
        )
        let renamed = try await watcher.request("lamp", #""setName":"\#(String(repeating: "é", count: 65))""#)
        #expect(renamed?["result"]?["name"] == .string(String(repeating: "é", count: 60)))
        let bad = try await watcher.request(
            "lamp", #""trait":"levelControl","command":"moveToLevel","args":{"level":999}"#)
        #expect(bad?["error"]?["status"] == .string("constraintError"))
        watcher.clear()
        rig.daemon?.signal(SIGTERM)
        #expect(await rig.daemon?.exitStatus() == 0)
        #expect(await watcher.waitFor(status: "offline"))
        let log = rig.daemon?.output ?? ""
        #expect(log.contains("online"))
        #expect(log.contains("ms after exec"))
        #expect(log.contains("stopped"))
    }

    @Test(arguments: [("off", false), ("on", true), ("toggle", false), ("null", true)])
    func restartAppliesStartUpOnOff(startUp: String, expected: Bool) async throws {
        let rig = try DaemonRig()
        let watcher = try await Watcher(port: rig.broker.port)
        try rig.start()
        #expect(await watcher.waitFor(status: "online"))
        let value = startUp == "null" ? "null" : "\"\(startUp)\""
        #expect(
            try await watcher.request("lamp", #""trait":"onOff","update":{"startUpOnOff":\#(value)}"#)?["ok"]
                == .bool(true))
        #expect(
            try await watcher.request(
                "lamp", #""trait":"levelControl","command":"moveToLevelWithOnOff","args":{"level":77}"#)?["ok"]
                == .bool(true))
        rig.daemon?.signal(SIGTERM)
        #expect(await rig.daemon?.exitStatus() == 0)
        watcher.clear()
        try rig.start()
        #expect(await watcher.waitFor(status: "online"))
        let doc = await watcher.first("hearth/e2e/devices/lamp").flatMap { try? JSON.parse($0.payload) }
        #expect(onOff(doc) == .bool(expected), "startUpOnOff \(startUp)")
        #expect(attribute(doc, "levelControl", "currentLevel") == .int(77))  // startUpCurrentLevel null: as before
        rig.daemon?.signal(SIGTERM)
        _ = await rig.daemon?.exitStatus()
    }

    /// Each round kills the hub at a random moment while it takes commands, restarts it, and checks that what
    /// it restores is a state it published, or one of the round's newer than any that reached the watcher: a save
    /// reads the home as it is, and the documents the hub had not yet sent die with it. `Watcher.waitFor(status:)`
    /// looks at the messages since the last `clear()`, so the watcher is cleared before every start: an `online`
    /// left over from the previous start must not pass for this one's (the kill could then come before the new hub
    /// had even connected, and the broker would have no will to publish).
    @Test func sigkillAtRandomMomentsNeverLeavesATornState() async throws {
        let rig = try DaemonRig()
        let watcher = try await Watcher(port: rig.broker.port)
        var roundsRestoringTheirOwnState = 0
        for round in 0..<4 {
            watcher.clear()
            try rig.start()
            #expect(await watcher.waitFor(status: "online"), "round \(round): \(rig.daemon?.output ?? "")")
            watcher.clear()
            // Stream commands; every state the hub publishes is a state it may legitimately restore. The short
            // sleep paces the load generator (a few hundred commands a second); it synchronises nothing.
            let stream = Task {
                var i = 0
                while !Task.isCancelled {
                    i += 1
                    try? watcher.client.publish("hearth/e2e/devices/lamp/set",
                                                payload: Array(#"{"setName":"lamp \#(round)-\#(i)"}"#.utf8))
                    try? watcher.client.publish("hearth/e2e/devices/lamp/set",
                                                payload: Array(#"{"trait":"onOff","command":"toggle"}"#.utf8))
                    try? await Task.sleep(for: .milliseconds(3))
                }
                return i
            }
            // The kill moment is counted from the load's first publication, not from its start: a slower build
            // (a sanitized one) may not have published anything 200 ms in, and then the round tests nothing.
            let firstOfLoad = await watcher.first("hearth/e2e/devices/lamp") {
                $0?["name"]?.text.hasPrefix("\"lamp \(round)-") == true
            }
            #expect(firstOfLoad != nil, "round \(round): nothing of the load published: \(rig.daemon?.output ?? "")")
            // A random moment to kill at, not a wait for anything: the hub is online and busy throughout.
            try await Task.sleep(for: .milliseconds(Int64.random(in: 200...1500)))
            await rig.daemon?.kill()
            // kill -9 leaves no chance to say goodbye: the broker publishes the hub's last will.
            #expect(await watcher.waitFor(status: "offline"), "round \(round)")
            stream.cancel()
            let sent = await stream.value
            let published = Set(
                watcher.all.filter { $0.topic == "hearth/e2e/devices/lamp" }.compactMap { m -> String? in
                guard let doc = try? JSON.parse(m.payload) else { return nil }
                return "\(doc["name"]?.text ?? "") \(onOff(doc)?.text ?? "")"
            })
            #expect(!published.isEmpty, "round \(round): the hub published nothing before it was killed")
            // The state file, if any, must parse and hold a published combination or a newer one of this round.
            watcher.clear()
            try rig.start()
            #expect(await watcher.waitFor(status: "online"), "round \(round): \(rig.daemon?.output ?? "")")
            let log = rig.daemon?.output ?? ""
            #expect(!log.contains("corrupt"), "round \(round): \(log)")
            let doc = await watcher.first("hearth/e2e/devices/lamp").flatMap { try? JSON.parse($0.payload) }
            let restored = "\(doc?["name"]?.text ?? "") \(onOff(doc)?.text ?? "")"
            let initial = restored == "\"Lamp\" false" || restored.hasPrefix("\"lamp \(round - 1)")
            // The stream's names count up, so "newer than any received" is a name past the newest received one.
            func index(_ state: String) -> Int? {
                let prefix = "\"lamp \(round)-"
                return state.hasPrefix(prefix) ? Int(state.dropFirst(prefix.count).prefix { $0.isNumber }) : nil
            }
            let newestReceived = published.compactMap(index).max() ?? 0
            let newerThanReceived = index(restored).map { $0 > newestReceived && $0 <= sent } ?? false
            let own = published.contains(restored) || newerThanReceived
            #expect(
                own || initial, "round \(round): restored \(restored), newest received \(newestReceived) of \(sent)")
            if own { roundsRestoringTheirOwnState += 1 }
            await rig.daemon?.kill()
        }
        // The first change is saved at once (later ones at most once a second), and every kill comes at least
        // 200 ms after the stream's first change was published: a run where no round restored its own state
        // tested nothing.
        #expect(roundsRestoringTheirOwnState > 0)
    }

    /// A window covering's position (Window Covering's non-volatile CurrentPositionLiftPercent100ths) is saved as its
    /// run reports it, and a hub killed mid-run comes back with the saved position in the blind's first document,
    /// the only one it publishes until something changes; nothing moves. The blind starts fully open (a saved
    /// state) and closes over a minute, so whenever the kill lands it is between the ends.
    @Test func aCoverKilledMidRunComesBackWithThePositionItSaved() async throws {
        let rig = try DaemonRig(devices: """
              - id: blind
                name: Blind
                type: WindowCovering
                binding: {kind: relayCover, up: blind-up, down: blind-down, openTime: 60s, closeTime: 60s}
            """, board: "sim")
        try FileManager.default.createDirectory(atPath: "\(rig.directory)/state", withIntermediateDirectories: true)
        let savedState =
            #"{"version":1,"devices":{"blind":{"attributes":{"WindowCovering":{"#
            + #""windowCovering":{"currentPositionLiftPercent100ths":0}}}}}}"#
        try savedState.write(toFile: rig.stateFile, atomically: true, encoding: .utf8)
        @Sendable func position(_ doc: JSON?) -> Int? {
            if case .int(let p)? = attribute(doc, "windowCovering", "currentPositionLiftPercent100ths") {
                p
            } else {
                nil
            }
        }
        func saved() -> Int? {
            let file = try? JSON.parse(Array(String(contentsOfFile: rig.stateFile, encoding: .utf8).utf8))
            let value = file?["devices"]?["blind"]?["attributes"]?["WindowCovering"]?["windowCovering"]?[
                "currentPositionLiftPercent100ths"]
            if case .int(let p)? = value { return p } else { return nil }
        }
        let watcher = try await Watcher(port: rig.broker.port)
        try rig.start()
        #expect(await watcher.waitFor(status: "online"), "\(rig.daemon?.output ?? "")")
        #expect(position(watcher.document("blind")) == 0)
        #expect(
            try await watcher.request("blind", #""trait":"windowCovering","command":"downOrClose""#)?["ok"]
                == .bool(true))
        // Moving: reported once a second, saved at most once a second after that.
        let moving = await watcher.first("hearth/e2e/devices/blind") { doc in position(doc).map { $0 > 0 } ?? false }
        #expect(moving != nil, "\(rig.daemon?.output ?? "")")
        #expect(
            await poll(within: .seconds(20)) { (saved() ?? 0) > 0 },
            "\((try? String(contentsOfFile: rig.stateFile, encoding: .utf8)) ?? "")")
        await rig.daemon?.kill()
        let kept = try #require(saved())
        #expect(kept > 0 && kept < 10_000)

        watcher.clear()
        try rig.start()
        #expect(await watcher.waitFor(status: "online"), "\(rig.daemon?.output ?? "")")
        let first = await watcher.first("hearth/e2e/devices/blind").flatMap { try? JSON.parse($0.payload) }
        #expect(position(first) == kept)
        #expect(attribute(first, "windowCovering", "targetPositionLiftPercent100ths") == .int(kept))
        let status = attribute(first, "windowCovering", "operationalStatus")
        #expect(
            status?["globalClosing"] == .bool(false) && status?["liftClosing"] == .bool(false),
            "\(String(describing: status))")
        rig.daemon?.signal(SIGTERM)
        #expect(await rig.daemon?.exitStatus() == 0)
        // A clean stop saves once more: still where it stopped, since nothing moved.
        #expect(saved() == kept)
    }

    @Test func aCorruptStateFileIsMovedAsideAndTheHubStarts() async throws {
        let rig = try DaemonRig()
        try FileManager.default.createDirectory(atPath: "\(rig.directory)/state", withIntermediateDirectories: true)
        try "{ not json".write(toFile: rig.stateFile, atomically: true, encoding: .utf8)
        let watcher = try await Watcher(port: rig.broker.port)
        try rig.start()
        #expect(await watcher.waitFor(status: "online"))
        #expect(rig.daemon?.output.contains("is corrupt; moved it to") == true)
        rig.daemon?.signal(SIGTERM)
        #expect(await rig.daemon?.exitStatus() == 0)
    }

    /// A state file that cannot be read is not corrupt: the hub refuses to start (it would overwrite the saved
    /// state at its first save) and leaves the file alone. /proc/self/mem is a regular file whose first page
    /// reads as EIO, the error a failing SD card gives.
    @Test func anUnreadableStateFileStopsTheStartAndIsLeftAlone() async throws {
        let rig = try DaemonRig()
        try FileManager.default.createDirectory(atPath: "\(rig.directory)/state", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: rig.stateFile, withDestinationPath: "/proc/self/mem")
        try rig.start()
        #expect(await rig.daemon?.exitStatus() == 74)
        let log = rig.daemon?.output ?? ""
        #expect(
            log.contains("Input/output error") && log.contains("left as it is") && log.contains("nothing was started"),
            "\(log)")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: rig.stateFile) == "/proc/self/mem")
        #expect(try FileManager.default.contentsOfDirectory(atPath: "\(rig.directory)/state") == ["state.json"])
    }

    /// `hearthd run --broker` reads an address as `hearth --broker` does (MQTTBrokerAddress): a URL with
    /// credentials, and IPv6 in brackets. The configuration names a port nothing listens on.
    @Test func theBrokerOverrideIsReadAsTheCLIReadsIt() async throws {
        let rig = try DaemonRig(
            broker: TestBroker(users: ["hub": "p@ss"]), configuredPort: TestBroker.unusedLoopbackPort())
        let watcher = try Watcher(port: rig.broker.port, username: "hub", password: "p@ss")
        try await watcher.connect()
        try rig.start(["--broker", "mqtt://hub:p%40ss@127.0.0.1:\(rig.broker.port)/"])
        #expect(await watcher.waitFor(status: "online"), "\(rig.daemon?.output ?? "")")
        rig.daemon?.signal(SIGTERM)
        #expect(await rig.daemon?.exitStatus() == 0)
        let usage = try BuiltProduct.run("hearthd", ["run", "--config", rig.configFile, "--broker", "[::1:1883"],
                                         timeout: .seconds(20))
        #expect(usage.status == 64 && usage.output.contains("an IPv6 address needs a closing ']'"), "\(usage.output)")
    }

    @Test(.enabled(if: ipv6LoopbackWorks, "needs ::1")) func anIPv6BrokerOverride() async throws {
        let port6 = try TestBroker.unusedLoopbackPort()
        let rig = try DaemonRig(broker: TestBroker(extraConfiguration: ["listener \(port6) ::1"]),
                                configuredPort: TestBroker.unusedLoopbackPort())
        let watcher = try await Watcher(port: rig.broker.port)
        try rig.start(["--broker", "[::1]:\(port6)"])
        #expect(await watcher.waitFor(status: "online"), "\(rig.daemon?.output ?? "")\n\(rig.broker.log)")
        rig.daemon?.signal(SIGTERM)
        #expect(await rig.daemon?.exitStatus() == 0)
    }

    @Test func aBrokenConfigurationIsRefusedWithEveryProblem() async throws {
        let rig = try DaemonRig(devices: """
          - id: lamp
            type: DimmableLamp
          - id: lamp
            type: OnOffLight
            colour: red
        """)
        let check = try BuiltProduct.run("hearthd", ["check-config", rig.configFile])
        #expect(check.status == 78)
        #expect(check.output.contains("hearth.yaml:11:11: devices[0].type: unknown device type 'DimmableLamp'"))
        #expect(check.output.contains("devices[1].colour: unknown key 'colour'"))
        #expect(check.output.contains("devices[1]: the device id 'lamp' is already used on line 10"))
        #expect(check.output.contains("3 problem(s)"))
        try rig.start()
        #expect(await rig.daemon?.exitStatus() == 78)
        #expect(rig.daemon?.output.contains("nothing was started") == true)
        let good = try DaemonRig()
        #expect(try BuiltProduct.run("hearthd", ["check-config", good.configFile]).status == 0)
    }

    /// hearthd leaves the engine's check to its own build of the home (one build, not two), and still names
    /// the device and its place, as check-config does.
    @Test(.timeLimit(.minutes(1))) func whatOnlyTheEngineRefusesIsNamedWithItsPlaceByRunToo() async throws {
        let rig = try DaemonRig(devices: """
          - id: lamp
            type: OnOffLight
          - id: fan
            type: OnOffLight
            traits:
              onOff: {features: [offOnly]}
        """)
        let check = try BuiltProduct.run("hearthd", ["check-config", rig.configFile])
        let problem =
            "devices(fan): device 'fan' type OnOffLight trait onOff: onOff cannot have both lighting and offOnly"
        #expect(check.status == 78 && check.output.contains(problem), "\(check.output)")
        try rig.start()
        #expect(await rig.daemon?.exitStatus() == 78)
        let output = rig.daemon?.output ?? ""
        #expect(output.contains(problem) && output.contains("1 problem(s); nothing was started"), "\(output)")
        // The same place in both.
        let place = { (text: String) in
            text.split(separator: "\n").first { $0.contains(problem) }?.split(separator: " ").first {
                $0.contains("hearth.yaml:")
            }
        }
        #expect(place(check.output) != nil && place(check.output) == place(output))
    }

    @Test(.timeLimit(.minutes(1))) func checkConfigSummarisesWhatWouldRun() throws {
        let rig = try DaemonRig(devices: """
          - id: porch
            type: OnOffLight
            binding: {kind: relay, pin: relay-1, activeLow: true}
          - id: hall
            room: no
            type: GenericSwitch
            binding: {kind: wallSwitch, pin: wall-switch-1, controls: porch}
        peers:
          - {hub: garage}
        bindings:
          - {from: hall, to: {hub: garage, device: door, trait: onOff, command: toggle}}
        """, board: "sim")
        let check = try BuiltProduct.run("hearthd", ["check-config", rig.configFile])
        #expect(check.status == 0)
        let lines = check.output.split(separator: "\n").map(String.init)
        #expect(
            lines.first == "\(rig.directory)/hearth.yaml:14:11: devices[1].room: warning: 'no' is read as the text "
                + "\"no\" (YAML 1.2), but YAML 1.1 tools such as Home Assistant read false; write \"no\" in quotes "
                + "to make it plain that it is text")
        #expect(lines.dropFirst().first == "\(rig.configFile): OK (1 warning(s))")
        #expect(lines.contains("hub e2e on board sim (simulated) from \(rig.directory)/sim.yaml"))
        #expect(
            lines.contains {
                $0.hasPrefix("broker 127.0.0.1:")
                    && $0.hasSuffix(", topics hearth/e2e/…, state in \(rig.directory)/state")
            })
        #expect(lines.contains("2 device(s):"))
        #expect(lines.contains("  porch  OnOffLight ← relay relay-1 (line 0 of hearth-sim), active low"))
        #expect(
            lines.contains(
                "  hall   GenericSwitch ← wallSwitch wall-switch-1 (line 8 of hearth-sim), momentary, controls porch"))
        #expect(lines.contains("peers: garage (local)"))
        #expect(lines.contains("1 binding(s), 1 to other hubs:"))
        #expect(lines.contains("  hall initialPress/switchLatched → garage/door onOff.toggle"))
    }

    /// Secrets from secrets.yaml and password files appear nowhere in what check-config prints, whether the
    /// configuration is fine, misuses a secret, or the secret file itself is wrong.
    @Test(.timeLimit(.minutes(1))) func checkConfigNeverPrintsASecret() throws {
        let secret = "hunter2-\(UUID().uuidString.prefix(8))"
        let rig = try DaemonRig(mqtt: "  username: !secret user\n  password: !secret password")
        let secrets = "\(rig.directory)/secrets.yaml"
        try "user: attic-\(secret)\npassword: \"\(secret) #1\"\nport: \(secret)\n".write(
            toFile: secrets, atomically: true, encoding: .utf8)
        chmod(secrets, 0o600)
        var outputs: [String] = []
        let fine = try BuiltProduct.run("hearthd", ["check-config", rig.configFile])
        #expect(fine.status == 0)
        #expect(fine.output.contains("with a user name and a password"))
        outputs.append(fine.output)

        // A secret where it does not belong, a secret used as a number, a missing one.
        let misuse = try DaemonRig(
            mqtt: "  username: !secret user\n  password: !secret pasword\n  clientId: !secret password\n"
                + "  prefix: !secret port")
        try FileManager.default.copyItem(atPath: secrets, toPath: "\(misuse.directory)/secrets.yaml")
        let refused = try BuiltProduct.run("hearthd", ["check-config", misuse.configFile])
        #expect(refused.status == 78)
        #expect(refused.output.contains("mqtt.prefix: !secret port cannot be used here"))
        #expect(
            refused.output.contains(
                "no secret 'pasword' in \(misuse.directory)/secrets.yaml; it has password, port, user"))
        outputs.append(refused.output)

        // A password file others can read, and a secrets file that is not YAML.
        let exposed = try DaemonRig(mqtt: "  passwordFile: password")
        try "\(secret)\n".write(toFile: "\(exposed.directory)/password", atomically: true, encoding: .utf8)
        chmod("\(exposed.directory)/password", 0o644)
        let loose = try BuiltProduct.run("hearthd", ["check-config", exposed.configFile])
        #expect(loose.output.contains("can be read by every user (mode 0644), and it holds a secret: run chmod 600"))
        outputs.append(loose.output)
        try "password: [\"\(secret)\", \\q\"\n: \(secret)\n".write(toFile: secrets, atomically: true, encoding: .utf8)
        let broken = try BuiltProduct.run("hearthd", ["check-config", rig.configFile])
        #expect(broken.status == 78)
        outputs.append(broken.output)

        for output in outputs { #expect(!output.contains(secret), "\(output)") }
    }
}

/// Whether a socket can be bound to ::1 here (a container may have no IPv6).
let ipv6LoopbackWorks: Bool = {
    let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_in6()
    address.sin6_family = sa_family_t(AF_INET6)
    address.sin6_addr = in6addr_loopback
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
        }
    } == 0
}()
