import Foundation
import HearthContract
import HearthEngine
import HearthHub
import HearthJSON
import HearthMQTT
import HearthModel
import HearthTestKit
import Testing
import HearthSync

/// A broker, a hub "test" publishing a dimmable lamp (with a humidity sensor) and a relay, and a client that records
/// what the hubs publish.
final class CLIRig: Sendable {
    let broker: TestBroker
    let home: Home
    let hub: MQTTHub
    let watcher: MQTTClient
    let seen = MessageLog()

    /// - Parameters:
    ///   - users: user names and passwords the broker accepts; the hub and the rig's own client log in as `hub`.
    ///   - extraConfiguration: more mosquitto.conf lines (an ACL file).
    init(users: [String: String] = [:], extraConfiguration: [String] = []) async throws {
        broker = try TestBroker(users: users, extraConfiguration: extraConfiguration)
        home = try Self.home()
        let login = users["hub"].map { (user: "hub", password: $0) }
        hub = try Self.hub("test", home, broker, login: login)
        watcher = try MQTTClient(options: MQTTConnectOptions(host: broker.host, port: broker.port, clientID: "watcher",
                                                             username: login?.user, password: login?.password))
        let seen = seen
        watcher.onMessage = { message in seen.append(message) }
        try watcher.subscribe("hearth/#")
        try await watcher.connect()
        try hub.start()
        #expect(await waitForMessage { $0.topic == "hearth/test/status" && $0.payload == Array("online".utf8) })
    }

    static func home() throws -> Home {
        try Home(devices: [
            DeviceConfiguration(id: "lamp", name: "Lamp", roomID: "kitchen", types: [
                DeviceTypeConfiguration(.dimmableLight),
                DeviceTypeConfiguration(.humiditySensor),
            ]),
            DeviceConfiguration(id: "relay", name: "Relay", types: [DeviceTypeConfiguration(.onOffLight)]),
        ], clock: ManualClock())
    }

    static func hub(_ id: String, _ home: Home, _ broker: TestBroker,
                    login: (user: String, password: String)? = nil) throws -> MQTTHub {
        let topics = TopicScheme(hub: id)
        let options = MQTTHub.clientOptions(
            MQTTConnectOptions(
                host: broker.host, port: broker.port, clientID: "hub-\(id)",
                username: login?.user, password: login?.password),
            topics: topics)
        return MQTTHub(home: home, client: try MQTTClient(options: options), topics: topics)
    }

    func waitForMessage(within timeout: Duration = .seconds(15),
                        _ predicate: @Sendable (MQTTMessage) -> Bool) async -> Bool {
        await poll(within: timeout) { seen.contains(where: predicate) }
    }

    var brokerArgument: [String] { ["--broker", "\(broker.host):\(broker.port)"] }

    /// Runs `hearth <arguments> --broker …` to completion.
    func run(_ arguments: [String], environment: [String: String] = [:]) async throws -> CLIResult {
        try await CLIProcess(arguments + brokerArgument, environment: environment).finish()
    }

    func stop() {
        hub.stop()
        watcher.disconnect()
    }
}

/// Every message a client received, from its network thread.
final class MessageLog: Sendable {
    private let messages = Locked<[MQTTMessage]>([])

    func append(_ message: MQTTMessage) { messages.withLock { $0.append(message) } }

    func contains(where predicate: (MQTTMessage) -> Bool) -> Bool {
        messages.withLock { $0.contains(where: predicate) }
    }
}

extension HomeDevice {
    func value(_ trait: TraitID, _ attribute: String, type: Int = 0) -> Value? {
        types[type].traits.first { $0.descriptor.id == trait }?[attribute]?.value
    }
}

@Suite(.timeLimit(.minutes(3))) struct CLITests {
    @Test func devicesListsEveryDeviceAndItsJSONParses() async throws {
        let rig = try await CLIRig()
        defer { rig.stop() }
        let r = try await rig.run(["devices"])
        #expect(r.status == 0, "\(r)")
        let lines = r.stdout.split(separator: "\n").map(String.init)
        try #require(lines.count == 3, "\(r)")
        #expect(lines.first?.hasPrefix("ID") == true)
        let lamp = lines.first { $0.hasPrefix("lamp ") } ?? ""
        #expect(lamp.contains("Lamp") && lamp.contains("kitchen") && lamp.contains("DimmableLight*, HumiditySensor")
                && lamp.contains("online, direct"), "\(lamp)")
        let relay = lines.first { $0.hasPrefix("relay ") } ?? ""
        #expect(relay.contains("Relay") && relay.contains("OnOffLight") && !relay.contains("*"), "\(relay)")
        // Columns line up: every row's name starts where the header's NAME does.
        let column = try #require(lines[0].range(of: "NAME")).lowerBound.utf16Offset(in: lines[0])
        #expect(lines.dropFirst().allSatisfy { $0.utf16.count > column && $0.utf16.dropFirst(column).first != 0x20 })

        let json = try await rig.run(["devices", "--json"])
        #expect(json.status == 0, "\(json)")
        let parsed = try JSON.parse(json.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        guard case .array(let devices) = parsed else { Issue.record("not an array: \(json.stdout)"); return }
        #expect(devices.compactMap { $0["id"] } == [.string("lamp"), .string("relay")])
        #expect(json.stderr.isEmpty)
    }

    @Test func getShowsEveryTraitWithItsAttributesAndCommands() async throws {
        let rig = try await CLIRig()
        defer { rig.stop() }
        let r = try await rig.run(["get", "lamp"])
        #expect(r.status == 0, "\(r)")
        let lines = r.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "lamp  Lamp")
        #expect(lines.contains("DimmableLight (primary, 0x0101)"), "\(r)")
        #expect(lines.contains("HumiditySensor (0x0307)"), "\(r)")
        #expect(lines.contains("  levelControl (0x0008)"), "\(r)")
        func row(_ name: String) -> [Substring]? {
            lines.first { $0.split(separator: " ").first.map(String.init) == name }?.split(separator: " ")
        }
        #expect(row("currentLevel")?.dropFirst().first == "254", "\(r)")
        #expect(row("onLevel").map { Array($0.dropFirst()) } == ["null", "writable,", "nullable"], "\(r)")
        #expect(row("options").map { Array($0.dropFirst()) } == ["{}", "writable"], "\(r)")
        #expect(row("measuredValue").map { Array($0.dropFirst()) } == ["null", "nullable"], "\(r)")
        #expect(lines.contains { $0.contains("not supported") }, "\(r)")
        #expect(lines.contains { $0.hasPrefix("    commands") && $0.contains("moveToLevel, move, step, stop") }, "\(r)")

        let json = try await rig.run(["get", "lamp", "--json"])
        #expect(json.status == 0, "\(json)")
        let document = try JSON.parse(json.stdout.trimmingCharacters(in: .newlines))
        #expect(document["id"] == .string("lamp"))
        #expect(document == DeviceDocument.document(try rig.home.device("lamp")))

        let refreshed = try await rig.run(["get", "relay", "--refresh"])
        #expect(refreshed.status == 0 && refreshed.stdout.hasPrefix("relay  Relay\n"), "\(refreshed)")
    }

    @Test func setTogglesTheRelayAndPrintsTheNewState() async throws {
        let rig = try await CLIRig()
        defer { rig.stop() }
        #expect(try rig.home.device("relay").value(.onOff, "onOff") == .bool(false))
        let r = try await rig.run(["set", "relay", "onOff", "toggle"])
        #expect(r.status == 0, "\(r)")
        #expect(r.stdout.hasPrefix("relay onOff: onOff=true "), "\(r)")
        #expect(try rig.home.device("relay").value(.onOff, "onOff") == .bool(true))
        // The new state was published for everyone.
        #expect(
            await rig.waitForMessage { m in
                m.topic == "hearth/test/devices/relay"
                    && String(decoding: m.payload, as: UTF8.self).contains(#""onOff":true"#)
            })
        let json = try await rig.run(["set", "relay", "onOff", "off", "--json"])
        #expect(json.status == 0, "\(json)")
        let response = try JSON.parse(json.stdout.trimmingCharacters(in: .newlines))
        #expect(response["ok"] == .bool(true))
        #expect(response["device"] == .string("relay"))
        #expect(try rig.home.device("relay").value(.onOff, "onOff") == .bool(false))
    }

    @Test func aValueOutOfRangeIsTheHubsConstraintError() async throws {
        let rig = try await CLIRig()
        defer { rig.stop() }
        let r = try await rig.run(["set", "lamp", "levelControl", "moveToLevel", "level=300"])
        #expect(r.status == 1, "\(r)")
        #expect(r.stderr.hasPrefix("error: invalidArgument (constraintError): moveToLevel.level 300 is out of range"),
                "\(r)")
        #expect(r.stdout.isEmpty)
        #expect(try rig.home.device("lamp").value(.levelControl, "currentLevel") == .int(254))
        // A trait on two types of the lamp needs --type; the hub says so, and --type settles it.
        let ambiguous = try await rig.run(["set", "lamp", "identify", "identify", "identifyTime=0"])
        #expect(ambiguous.status == 1, "\(ambiguous)")
        #expect(
            ambiguous.stderr.contains("(invalidCommand)") && ambiguous.stderr.contains("several types"), "\(ambiguous)")
        let typed = try await rig.run([
            "set", "lamp", "identify", "identify", "identifyTime=0", "--type", "HumiditySensor"
        ])
        #expect(typed.status == 0, "\(typed)")
    }

    @Test func enumsAndBitmapsAreWrittenByName() async throws {
        let rig = try await CLIRig()
        defer { rig.stop() }
        let r = try await rig.run(["update", "relay", "onOff", "startUpOnOff=toggle", "onTime=30"])
        #expect(r.status == 0, "\(r)")
        #expect(r.stdout.contains("startUpOnOff=toggle"), "\(r)")
        #expect(r.stdout.contains("onTime=30"), "\(r)")
        #expect(try rig.home.device("relay").value(.onOff, "startUpOnOff") == .int(2))
        #expect(try rig.home.device("relay").value(.onOff, "onTime") == .int(30))
        // A bitmap attribute: one flag by name.
        let options = try await rig.run(["update", "lamp", "levelControl", "options=executeIfOff"])
        #expect(options.status == 0, "\(options)")
        #expect(options.stdout.contains("options={executeIfOff}"), "\(options)")
        #expect(try rig.home.device("lamp").value(.levelControl, "options") == .int(1))
        // Bitmap command fields, as a list: the lamp is off, and moves only because of executeIfOff.
        #expect(try rig.home.device("lamp").value(.onOff, "onOff") == .bool(false))
        let moved = try await rig.run([
            "set", "lamp", "levelControl", "moveToLevel", "level=100", "transitionTime=0",
            "optionsMask=executeIfOff,coupleColorTempToLevel", "optionsOverride={executeIfOff}"
        ])
        #expect(moved.status == 0, "\(moved)")
        #expect(try rig.home.device("lamp").value(.levelControl, "currentLevel") == .int(100))
        // An unknown enum name is the hub's error, word for word.
        let bad = try await rig.run(["update", "relay", "onOff", "startUpOnOff=sometimes"])
        #expect(bad.status == 1, "\(bad)")
        #expect(
            bad.stderr.contains("error: invalidArgument (constraintError):")
                && bad.stderr.contains("not one of off, on, toggle"),
            "\(bad)")
    }

    @Test func renamePrintsTheNameAsStored() async throws {
        let rig = try await CLIRig()
        defer { rig.stop() }
        let r = try await rig.run(["rename", "lamp", String(repeating: "🏠", count: 70)])
        #expect(r.status == 0, "\(r)")
        #expect(r.stdout == String(repeating: "🏠", count: 60) + "\n", "\(r)")
        #expect(r.stderr.contains("60 of the name's 70 code points"), "\(r)")
        #expect(try rig.home.device("lamp").name == String(repeating: "🏠", count: 60))
        let short = try await rig.run(["rename", "relay", "Porch light"])
        #expect(short.status == 0 && short.stdout == "Porch light\n" && short.stderr.isEmpty, "\(short)")
        let room = try await rig.run(["room", "relay", "porch"])
        #expect(room.status == 0 && room.stdout == "porch\n", "\(room)")
        let cleared = try await rig.run(["room", "lamp", "--clear"])
        #expect(cleared.status == 0 && cleared.stdout == "(no room)\n", "\(cleared)")
        #expect(try rig.home.device("lamp").roomID == nil)
        #expect(try rig.home.device("relay").roomID == "porch")
        let structure = try await rig.run(["structure", "relay", "cottage"])
        #expect(structure.status == 0 && structure.stdout == "cottage\n", "\(structure)")
        #expect(try rig.home.device("relay").structureID == "cottage")
        let out = try await rig.run(["structure", "relay", "--clear"])
        #expect(out.status == 0 && out.stdout == "(no structure)\n", "\(out)")
        #expect(try rig.home.device("relay").structureID == nil)
        let both = try await rig.run(["structure", "relay", "cottage", "--clear"])
        #expect(both.status == 64 && both.stderr.contains("give a structure, or --clear (not both)"), "\(both)")
    }

    @Test func watchPrintsWhatChanged() async throws {
        let rig = try await CLIRig()
        defer { rig.stop() }
        let watch = try CLIProcess(["watch", "relay", "--count", "1"] + rig.brokerArgument)
        #expect(await watch.waitForStderr(containing: "watching 'relay' on hub 'test'"), "\(watch.stderr)")
        // A change to another device is not this watch's business.
        try rig.home.invoke("lamp", type: "DimmableLight", trait: "onOff", command: "on")
        try rig.home.invoke("relay", trait: "onOff", command: "on")
        let r = await watch.finish()
        #expect(r.status == 0, "\(r)")
        let lines = r.stdout.split(separator: "\n")
        #expect(lines.count == 1, "\(r)")
        #expect(lines.first?.contains("  relay  onOff.onOff: false → true") == true, "\(r)")

        let all = try CLIProcess(["watch", "--count", "2", "--json"] + rig.brokerArgument)
        #expect(await all.waitForStderr(containing: "watching 2 devices"), "\(all.stderr)")
        try rig.home.setName("lamp", "Desk lamp")
        try rig.home.invoke("relay", trait: "onOff", command: "off")
        let j = await all.finish()
        #expect(j.status == 0, "\(j)")
        let documents = j.stdout.split(separator: "\n").compactMap { try? JSON.parse(String($0)) }
        #expect(documents.map { $0["id"] } == [.string("lamp"), .string("relay")], "\(j)")
        #expect(documents.first?["name"] == .string("Desk lamp"))

        // Ctrl-C ends a watch normally.
        let endless = try CLIProcess(["watch"] + rig.brokerArgument)
        #expect(await endless.waitForStderr(containing: "Ctrl-C to stop"), "\(endless.stderr)")
        kill(endless.pid, SIGINT)
        let interrupted = await endless.finish()
        #expect(interrupted.status == 0 && interrupted.stdout.isEmpty, "\(interrupted)")
    }

    @Test func anUnknownDeviceIsNotFound() async throws {
        let rig = try await CLIRig()
        defer { rig.stop() }
        let get = try await rig.run(["get", "garage"])
        #expect(get.status == 2, "\(get)")
        #expect(get.stderr.hasPrefix("error: notFound (notFound): no device 'garage'"), "\(get)")
        let set = try await rig.run(["set", "garage", "onOff", "on"])
        #expect(set.status == 2, "\(set)")
        #expect(set.stderr.hasPrefix("error: notFound (notFound): no device 'garage'"), "\(set)")
        let type = try await rig.run(["set", "lamp", "onOff", "on", "--type", "Fan"])
        #expect(type.status == 2, "\(type)")
        #expect(type.stderr.contains("(unsupportedEndpoint)"), "\(type)")
        let watch = try await rig.run(["watch", "garage"])
        #expect(watch.status == 2, "\(watch)")
    }

    @Test func noBrokerIsAClearErrorOfItsOwn() async throws {
        let port = try TestBroker.unusedLoopbackPort()
        let r = try await CLIProcess(["devices", "--broker", "127.0.0.1:\(port)"]).finish()
        #expect(r.status == 4, "\(r)")
        #expect(r.stderr == "error: cannot reach the MQTT broker at 127.0.0.1:\(port): Connection refused; "
                + "is it running? Check --broker or $HEARTH_BROKER\n", "\(r)")
        #expect(r.stdout.isEmpty)
        // $HEARTH_BROKER is read too.
        let env = try await CLIProcess(["hubs"], environment: ["HEARTH_BROKER": "127.0.0.1:\(port)"]).finish()
        #expect(env.status == 4 && env.stderr.contains("127.0.0.1:\(port)"), "\(env)")
        let usage = try await CLIProcess(["devices", "--broker", "127.0.0.1:http"]).finish()
        #expect(usage.status == 64, "\(usage)")
        // Broker URLs as other MQTT tools write them; a password in one is never echoed.
        let url = try await CLIProcess(["devices", "--broker", "mqtt://someone:s3cret@127.0.0.1:\(port)/"]).finish()
        #expect(url.status == 4 && url.stderr.contains("127.0.0.1:\(port)") && !url.stderr.contains("s3cret"), "\(url)")
        let websocket = try await CLIProcess(["devices", "--broker", "ws://127.0.0.1:\(port)"]).finish()
        #expect(websocket.status == 64 && websocket.stderr.contains("'ws://' is not supported"), "\(websocket)")
        let badPort = try await CLIProcess(["devices", "--broker", "mqtt://someone:s3cret@127.0.0.1:99999"]).finish()
        #expect(badPort.status == 64 && badPort.stderr.contains("someone:***@") && !badPort.stderr.contains("s3cret"),
                "\(badPort)")
    }

    @Test func aHubThatDoesNotAnswerIsATimeout() async throws {
        let rig = try await CLIRig()
        defer { rig.stop() }
        // "mute" says it is online but nothing serves its topics.
        try rig.watcher.publish("hearth/mute/status", payload: Array("online".utf8), qos: .atLeastOnce, retain: true)
        #expect(await rig.waitForMessage { $0.topic == "hearth/mute/status" })
        let r = try await rig.run(["set", "relay", "onOff", "on", "--hub", "mute", "--timeout", "2"])
        #expect(r.status == 3, "\(r)")
        #expect(r.stderr == "error: no answer from hub 'mute' within 2 s; is it online? (hearth hubs)\n", "\(r)")
        #expect(try rig.home.device("relay").value(.onOff, "onOff") == .bool(false))
    }

    @Test func theHubIsFoundWhenAloneAndMustBeNamedWhenNot() async throws {
        let rig = try await CLIRig()
        defer { rig.stop() }
        let alone = try await rig.run(["set", "relay", "onOff", "on"])
        #expect(alone.status == 0, "\(alone)")

        let otherHome = try Home(devices: [
            DeviceConfiguration(id: "fan", name: "Attic fan", types: [DeviceTypeConfiguration(.onOffPlugInUnit)]),
        ], clock: ManualClock())
        let other = try CLIRig.hub("attic", otherHome, rig.broker)
        try other.start()
        defer { other.stop() }
        #expect(await rig.waitForMessage { $0.topic == "hearth/attic/status" && $0.payload == Array("online".utf8) })

        let ambiguous = try await rig.run(["devices"])
        #expect(ambiguous.status == 5, "\(ambiguous)")
        #expect(ambiguous.stderr.contains("2 hubs are online"), "\(ambiguous)")
        #expect(ambiguous.stderr.contains("attic") && ambiguous.stderr.contains("test"), "\(ambiguous)")
        #expect(ambiguous.stderr.contains("--hub"), "\(ambiguous)")

        let attic = try await rig.run(["devices", "--hub", "attic"])
        #expect(attic.status == 0, "\(attic)")
        #expect(attic.stdout.contains("Attic fan") && !attic.stdout.contains("lamp"), "\(attic)")
        let test = try await rig.run(["set", "relay", "onOff", "off"], environment: ["HEARTH_HUB": "test"])
        #expect(test.status == 0, "\(test)")
        #expect(try rig.home.device("relay").value(.onOff, "onOff") == .bool(false))

        let hubs = try await rig.run(["hubs", "--json"])
        #expect(hubs.status == 0, "\(hubs)")
        let statuses = try JSON.parse(hubs.stdout.trimmingCharacters(in: .newlines))
        #expect(
            statuses.text.contains(#"{"hub":"attic","status":"online"}"#)
                && statuses.text.contains(#"{"hub":"test","status":"online"}"#))

        let ghost = try await rig.run(["devices", "--hub", "ghost"])
        #expect(ghost.status == 5, "\(ghost)")
        #expect(ghost.stderr.contains("no hub 'ghost'"), "\(ghost)")

        // An offline hub is named as such; with one hub left online it is found again.
        other.stop()
        #expect(await rig.waitForMessage { $0.topic == "hearth/attic/status" && $0.payload == Array("offline".utf8) })
        let offline = try await rig.run(["devices", "--hub", "attic"])
        #expect(offline.status == 5 && offline.stderr.contains("hub 'attic' is offline"), "\(offline)")
        let found = try await rig.run(["devices"])
        #expect(found.status == 0, "\(found)")
    }

    @Test func credentialsAndABrokerThatForbidsTheCLIsOwnTopics() async throws {
        // The CLI may use hearth/# only: its barrier and v5 response topics (hearth-cli/…) are denied, so it has to
        // settle on a quiet spell for the retained documents and take the response from hearth/<hub>/responses.
        let directory = try FileManager.default.url(for: .itemReplacementDirectory, in: .userDomainMask,
                                                    appropriateFor: URL(fileURLWithPath: NSTemporaryDirectory()),
                                                    create: true).path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try "user hub\ntopic readwrite hearth/#\n\nuser cli\ntopic readwrite hearth/#\n"
            .write(toFile: "\(directory)/acl", atomically: true, encoding: .utf8)
        let rig = try await CLIRig(users: ["hub": "hub-secret", "cli": "cli-secret"],
                                   extraConfiguration: ["acl_file \(directory)/acl"])
        defer { rig.stop() }
        let set = try await rig.run(["set", "relay", "onOff", "on", "--username", "cli"],
                                    environment: ["HEARTH_PASSWORD": "cli-secret"])
        #expect(set.status == 0, "\(set)")
        #expect(set.stdout.hasPrefix("relay onOff: onOff=true"), "\(set)")
        #expect(try rig.home.device("relay").value(.onOff, "onOff") == .bool(true))
        let get = try await rig.run(["get", "lamp", "--username", "cli", "--password", "cli-secret"])
        #expect(get.status == 0 && get.stdout.hasPrefix("lamp  Lamp\n"), "\(get)")
        let unknown = try await rig.run(["get", "garage", "--username", "cli", "--password", "cli-secret"])
        #expect(unknown.status == 2, "\(unknown)")

        // The same credentials in a broker URL, escaped as URLs escape them.
        let url = try await CLIProcess([
            "get", "lamp", "--broker", "mqtt://cli:cli%2Dsecret@\(rig.broker.host):\(rig.broker.port)"
        ])
        .finish()
        #expect(url.status == 0 && url.stdout.hasPrefix("lamp  Lamp\n"), "\(url)")

        let wrong = try await rig.run(["devices", "--username", "cli", "--password", "guess"])
        #expect(wrong.status == 4, "\(wrong)")
        #expect(wrong.stderr.contains("refused the connection") && wrong.stderr.contains("--password"), "\(wrong)")
    }
}
