import HearthContract
import HearthEngine
@testable import HearthHub
import HearthJSON
@_spi(Testing) import HearthMQTT
import HearthModel
import HearthTestKit
import Synchronization
import Testing

/// A hub with a dimmable lamp (plus a humidity sensor) and a relay, on a private broker, and a client
/// that watches everything under the hub's prefix.
struct HubRig {
    let broker: TestBroker
    let home: Home
    let hub: MQTTHub
    let topics = TopicScheme(hub: "test")
    let probe: Probe

    init(users: [String: String] = [:], security: TestBroker.Security = .none,
         configure: (inout MQTTConnectOptions) -> Void = { _ in }) async throws {
        broker = try TestBroker(users: users, security: security)
        home = try Home(devices: [
            DeviceConfiguration(id: "lamp", name: "Lamp", types: [
                DeviceTypeConfiguration(.dimmableLight),
                DeviceTypeConfiguration(.humiditySensor),
            ]),
            DeviceConfiguration(id: "relay", name: "Relay", types: [DeviceTypeConfiguration(.onOffLight)]),
        ], clock: ManualClock())
        let client = try MQTTClient(
            options: MQTTHub.clientOptions(broker.options(clientID: "hub", configure), topics: topics))
        hub = MQTTHub(home: home, client: client, topics: topics)
        probe = try await broker.connectedProbe(clientID: "probe", configure)
        try probe.client.subscribe("hearth/#", options: MQTTSubscriptionOptions(retainAsPublished: true))
        #expect(try await probe.barrier("hearth/barrier"))
        try hub.start()
        #expect(await probe.message(on: topics.status) { $0.payload == Array("online") } != nil)
    }

    /// Sends a request and returns the response with its transaction.
    func request(_ device: String, _ json: String, transaction: String) async throws -> JSON? {
        try probe.client.publish(topics.set(device), payload: Array(json.utf8), qos: .atLeastOnce)
        let message = await probe.message(on: topics.responses) {
            (try? JSON.parse($0.payload))?["transaction"] == .string(transaction)
        }
        return message.flatMap { try? JSON.parse($0.payload) }
    }

    func error(_ device: String, _ body: String) async throws -> JSON? {
        let t = "e\(UInt32.random(in: 0...UInt32.max))"
        let json = body.isEmpty ? #"{"transaction":"\#(t)"}"# : #"{"transaction":"\#(t)",\#(body)}"#
        return try await request(device, json, transaction: t)?["error"]
    }

    func document(_ device: String, where predicate: @escaping @Sendable (JSON) -> Bool) async -> JSON? {
        await probe.message(on: topics.device(device)) { m in (try? JSON.parse(m.payload)).map(predicate) ?? false }
            .flatMap { try? JSON.parse($0.payload) }
    }

    func stop() { hub.stop(); probe.client.disconnect() }
}

func onOff(_ doc: JSON) -> JSON? {
    doc["types"].flatMap { if case .array(let t) = $0 { t.first } else { nil } }?["traits"]?["onOff"]?["attributes"]?[
        "onOff"]
}

@Suite(.serialized, .timeLimit(.minutes(2))) struct HubTests {
    @Test func everyTopicOfTheContractIsPublishedRetained() async throws {
        let rig = try await HubRig()
        defer { rig.stop() }
        let status = await rig.probe.message(on: rig.topics.status)
        #expect(status?.retain == true)
        let list = await rig.probe.message(on: rig.topics.devices)
        #expect(list?.retain == true)
        let devices = try JSON.parse(list!.payload)
        #expect(devices.text.contains(#""id":"lamp""#))
        #expect(devices.text.contains(#""id":"relay""#))
        let lamp = await rig.document("lamp") { _ in true }
        #expect(lamp?["types"]?.text.contains("HumiditySensor") == true)
        // A new subscriber gets everything from the broker's retained store.
        let late = try await rig.broker.connectedProbe(clientID: "late")
        try late.client.subscribe("hearth/test/#")
        #expect(await late.message(on: rig.topics.device("relay")) { $0.retain } != nil)
        #expect(await late.message(on: rig.topics.status) { $0.payload == Array("online") && $0.retain } != nil)
        late.client.disconnect()
    }

    @Test func aCommandPublishesTheNewStateBeforeItsResponse() async throws {
        let rig = try await HubRig()
        defer { rig.stop() }
        let response = try await rig.request(
            "relay", #"{"transaction":"t1","trait":"onOff","command":"toggle"}"#, transaction: "t1")
        #expect(
            response == .object([("transaction", .string("t1")), ("device", .string("relay")), ("ok", .bool(true))]))
        let all = rig.probe.messages.all
        let stateIndex = all.lastIndex {
            $0.topic == rig.topics.device("relay") && (try? JSON.parse($0.payload)).flatMap(onOff) == .bool(true)
        }
        let responseIndex = all.firstIndex { $0.topic == rig.topics.responses }
        #expect(stateIndex != nil)
        #expect(responseIndex != nil)
        if let s = stateIndex, let r = responseIndex { #expect(s < r) }
    }

    @Test func commandsWritesAndRenamesWithNamedEnumsAndBitmaps() async throws {
        let rig = try await HubRig()
        defer { rig.stop() }
        var r = try await rig.request(
            "lamp",
            #"{"transaction":"a","type":"DimmableLight","trait":"levelControl","#
                + #""command":"moveToLevelWithOnOff","args":{"level":127,"transitionTime":0,"#
                + #""optionsMask":{"executeIfOff":true},"optionsOverride":{"executeIfOff":true}}}"#,
            transaction: "a")
        #expect(r?["ok"] == .bool(true))
        #expect(await rig.document("lamp") { $0.text.contains(#""currentLevel":127"#) } != nil)
        r = try await rig.request(
            "lamp", #"{"transaction":"b","trait":"onOff","update":{"startUpOnOff":"toggle","onTime":30}}"#,
            transaction: "b")
        #expect(r?["ok"] == .bool(true))
        #expect(await rig.document("lamp") { $0.text.contains(#""startUpOnOff":"toggle""#) } != nil)
        let long = String(repeating: "🏠", count: 70)
        r = try await rig.request("lamp", #"{"transaction":"c","setName":"\#(long)"}"#, transaction: "c")
        #expect(r?["result"] == .object([("name", .string(String(repeating: "🏠", count: 60)))]))
        #expect(
            await rig.probe.message(on: rig.topics.devices) {
                $0.payload.count > 200
                    && String(decoding: $0.payload, as: UTF8.self).contains(String(repeating: "🏠", count: 60))
            } != nil)
        r = try await rig.request("lamp", #"{"transaction":"d","setRoom":"kitchen"}"#, transaction: "d")
        #expect(r?["result"] == .object([("roomId", .string("kitchen"))]))
        r = try await rig.request("lamp", #"{"transaction":"e","get":true}"#, transaction: "e")
        #expect(r?["ok"] == .bool(true))
    }

    @Test func everyBadRequestGetsItsErrorAndChangesNothing() async throws {
        let rig = try await HubRig()
        defer { rig.stop() }
        func check(_ device: String, _ body: String, _ code: String, _ status: String, _ fragment: String,
                   sourceLocation: SourceLocation = #_sourceLocation) async throws {
            let e = try await rig.error(device, body)
            #expect(e?["code"] == .string(code), "\(body)", sourceLocation: sourceLocation)
            #expect(e?["status"] == .string(status), "\(body)", sourceLocation: sourceLocation)
            #expect(e?["message"]?.text.contains(fragment) == true, "\(body): \(e?["message"]?.text ?? "none")",
                    sourceLocation: sourceLocation)
        }
        try await check(
            "relay", #""trait":"onOff","command":"on","extra":1"#, "invalidArgument", "invalidCommand",
            "unknown key 'extra'")
        try await check(
            "relay", #""trait":5,"command":"on""#, "invalidArgument", "invalidCommand", "trait must be a string")
        try await check("garage", #""trait":"onOff","command":"on""#, "notFound", "notFound", "no device 'garage'")
        try await check(
            "lamp", #""type":"Fan","trait":"onOff","command":"on""#, "notFound", "unsupportedEndpoint",
            "has no type 'Fan'")
        try await check(
            "lamp", #""trait":"colorControl","command":"on""#, "unimplemented", "unsupportedCluster",
            "no trait 'colorControl'")
        try await check(
            "lamp", #""trait":"identify","command":"identify","args":{"identifyTime":1}"#, "invalidArgument",
            "invalidCommand", "several types")
        try await check(
            "relay", #""trait":"onOff","command":"blink""#, "unimplemented", "unsupportedCommand", "no command 'blink'")
        try await check(
            "relay", #""trait":"onOff","update":{"brightness":1}"#, "unimplemented", "unsupportedAttribute",
            "no attribute 'brightness'")
        try await check(
            "relay", #""trait":"onOff","update":{"onOff":true}"#, "failedPrecondition", "unsupportedWrite", "read-only")
        try await check(
            "lamp", #""trait":"levelControl","command":"moveToLevel","args":{"level":"high"}"#, "invalidArgument",
            "invalidDataType", "moveToLevel.level")
        try await check(
            "lamp", #""trait":"levelControl","command":"moveToLevel","args":{"level":300}"#, "invalidArgument",
            "constraintError", "moveToLevel.level 300 is out of range")
        try await check(
            "lamp", #""trait":"levelControl","command":"moveToLevel","args":{"level":2.5}"#, "invalidArgument",
            "invalidDataType", "whole number")
        try await check(
            "relay", #""trait":"onOff","update":{"startUpOnOff":"sometimes"}"#, "invalidArgument", "constraintError",
            "not one of off, on, toggle")

        // Malformed payloads, oversized, invalid UTF-8, no transaction: answered with transaction null.
        let payloads: [([UInt8], String?)] = [
            (Array("{nope".utf8), "invalidCommand"), (Array("[]".utf8), "invalidCommand"),
            ([UInt8](repeating: 0x20, count: 70_000), "resourceExhausted"),
            (Array("{\"setName\":\"".utf8) + [0xFF, 0xFE] + Array("\"}".utf8), "invalidCommand"),
            (Array(#"{"trait":"onOff","command":"on"}"#.utf8), nil),
        ]
        for (payload, status) in payloads {
            rig.probe.messages.clearAll()
            try rig.probe.client.publish(rig.topics.set("relay"), payload: payload, qos: .atLeastOnce)
            let m = await rig.probe.message(on: rig.topics.responses)
            let response = m.flatMap { try? JSON.parse($0.payload) }
            #expect(response?["transaction"] == .null)
            #expect(response?["error"]?["status"] == status.map(JSON.string), "\(payload.prefix(20))")
        }
        // The last of those was a valid "on": the hub kept serving.
        #expect(await rig.document("relay") { onOff($0) == .bool(true) } != nil)
        let lamp = try rig.home.device("lamp")
        #expect(lamp.trait(.levelControl)?["currentLevel"]?.value == .int(254))
        #expect(lamp.name == "Lamp")
    }

    @Test func aV5ResponseTopicGetsTheResponseWithTheCorrelationData() async throws {
        let rig = try await HubRig()
        defer { rig.stop() }
        try rig.probe.client.subscribe("replies/me")
        #expect(try await rig.probe.barrier("replies/me"))
        try rig.probe.client.publish(
            rig.topics.set("relay"), payload: Array(#"{"transaction":"v5","trait":"onOff","command":"on"}"#.utf8),
            responseTopic: "replies/me", correlationData: [1, 2, 3])
        let reply = await rig.probe.message(on: "replies/me") {
            (try? JSON.parse($0.payload))?["transaction"] == .string("v5")
        }
        #expect(reply?.correlationData == [1, 2, 3])
        #expect(
            await rig.probe.message(on: rig.topics.responses) {
                (try? JSON.parse($0.payload))?["transaction"] == .string("v5")
            } != nil)
    }

    @Test func aRetainedRequestIsNeverRunAndIsCleared() async throws {
        let rig = try await HubRig()
        defer { rig.stop() }
        try rig.probe.client.publish(
            rig.topics.set("relay"), payload: Array(#"{"transaction":"ghost","trait":"onOff","command":"on"}"#.utf8),
            qos: .atLeastOnce, retain: true)
        let r = await rig.probe.message(on: rig.topics.responses) {
            (try? JSON.parse($0.payload))?["transaction"] == .string("ghost")
        }
        let response = r.flatMap { try? JSON.parse($0.payload) }
        #expect(response?["error"]?["status"] == .string("invalidCommand"))
        #expect(response?["error"]?["message"]?.text.contains("retained requests are never executed") == true)
        #expect(await rig.probe.message(on: rig.topics.set("relay")) { $0.payload.isEmpty && $0.retain } != nil)
        #expect(try rig.home.device("relay").trait(.onOff)?["onOff"]?.value == .bool(false))
        // A retained request left on the broker before the hub starts is refused the same way.
        let second = try MQTTClient(
            options: MQTTHub.clientOptions(rig.broker.options(clientID: "hub2"), topics: TopicScheme(hub: "other")))
        try rig.probe.client.publish(
            "hearth/other/devices/relay/set",
            payload: Array(#"{"transaction":"old","trait":"onOff","command":"on"}"#.utf8),
            qos: .atLeastOnce, retain: true)
        #expect(try await rig.probe.barrier("hearth/other/devices/relay/set"))
        let other = MQTTHub(home: rig.home, client: second, topics: TopicScheme(hub: "other"))
        try other.start()
        let old = await rig.probe.message(on: "hearth/other/responses") {
            (try? JSON.parse($0.payload))?["transaction"] == .string("old")
        }
        #expect(old != nil)
        #expect(try rig.home.device("relay").trait(.onOff)?["onOff"]?.value == .bool(false))
        other.stop()
    }

    @Test func theLastWillSaysOfflineWhenTheConnectionDiesAndTheHubComesBack() async throws {
        let rig = try await HubRig()
        defer { rig.stop() }
        rig.probe.messages.clearAll()
        rig.hub.client.severConnectionWithoutDisconnect()
        #expect(await rig.probe.message(on: rig.topics.status) { $0.payload == Array("offline") } != nil)
        #expect(await rig.probe.message(on: rig.topics.status) { $0.payload == Array("online") } != nil)
    }

    @Test func aBrokerRestartIsSurvivedWithAFullRepublish() async throws {
        let rig = try await HubRig()
        defer { rig.stop() }
        try rig.home.invoke("relay", trait: "onOff", command: "on")
        rig.broker.stop()
        // State produced while the broker is away is not queued; the newest wins on reconnection.
        try rig.home.invoke("relay", trait: "onOff", command: "off")
        try rig.home.invoke("relay", trait: "onOff", command: "on")
        try rig.home.setName("relay", "Porch")
        try rig.broker.restart()
        let watcher = try await rig.broker.connectedProbe(clientID: "watcher")
        try watcher.client.subscribe("hearth/test/#")
        #expect(await watcher.message(on: rig.topics.status) { $0.payload == Array("online") } != nil)
        let doc = await watcher.message(on: rig.topics.device("relay")).flatMap { try? JSON.parse($0.payload) }
        #expect(doc.flatMap(onOff) == .bool(true))
        #expect(doc?["name"] == .string("Porch"))
        // The probe reconnects on its own schedule, not the hub's: wait until it is back and subscribed again
        // (publishing while it is still away failed the test now and then).
        #expect(await rig.probe.connects.count(atLeast: 2) { _ in true })
        #expect(try await rig.probe.barrier("hearth/barrier"))
        let r = try await rig.request(
            "relay", #"{"transaction":"after","trait":"onOff","command":"off"}"#, transaction: "after")
        #expect(r?["ok"] == .bool(true))
        watcher.client.disconnect()
    }

    /// A home of several parts (`MQTTHub.documentsPerTurn`) publishes every document before `online`, on the first
    /// connection and after a broker restart, and a state changed while the parts go out is what stays retained.
    @Test func aHomeOfSeveralPartsIsPublishedWholeBeforeOnline() async throws {
        let broker = try TestBroker()
        let count = MQTTHub.documentsPerTurn * 3 + 5
        let home = try Home(devices: (0..<count).map {
            DeviceConfiguration(id: "light-\($0)", name: "Light \($0)", types: [DeviceTypeConfiguration(.onOffLight)])
        }, clock: ManualClock())
        let topics = TopicScheme(hub: "big")
        let probe = try await broker.connectedProbe(clientID: "probe")
        try probe.client.subscribe("hearth/big/#")
        #expect(try await probe.barrier("hearth/big/barrier"))
        let hub = MQTTHub(
            home: home,
            client: try MQTTClient(options: MQTTHub.clientOptions(broker.options(clientID: "hub"), topics: topics)),
            topics: topics)
        defer { hub.stop(); probe.client.disconnect() }
        let messages = probe.messages
        @Sendable func documentsBeforeOnline() -> Set<String>? {
            let all = messages.all
            guard
                let online = all.firstIndex(where: { $0.topic == topics.status && $0.payload == Array("online".utf8) })
            else { return nil }
            return Set(all[..<online].map(\.topic).filter { $0.hasPrefix("hearth/big/devices/") })
        }
        try hub.start()
        // Changed as the parts go out: the last part must not put back the state it had when publishing began.
        try home.invoke("light-\(count - 1)", trait: "onOff", command: "on")
        #expect(await eventually { documentsBeforeOnline() != nil })
        #expect(documentsBeforeOnline()?.count == count)
        let last = await probe.message(on: topics.device("light-\(count - 1)")) { m in
            (try? JSON.parse(m.payload)).flatMap(onOff) == .bool(true)
        }
        #expect(last != nil)

        probe.messages.clearAll()
        broker.stop()
        try broker.restart()
        let watcher = try await broker.connectedProbe(clientID: "watcher")
        try watcher.client.subscribe("hearth/big/#")
        #expect(await watcher.message(on: topics.status) { $0.payload == Array("online".utf8) } != nil)
        let retained = watcher.messages.all.filter { $0.topic.hasPrefix("hearth/big/devices/") }
        #expect(Set(retained.map(\.topic)).count == count, "every document republished before online")
        let kept = retained.last { $0.topic == topics.device("light-\(count - 1)") }
        #expect(kept.flatMap { try? JSON.parse($0.payload) }.flatMap(onOff) == .bool(true))
        watcher.client.disconnect()
    }

    @Test func aCleanStopPublishesOffline() async throws {
        let rig = try await HubRig()
        rig.hub.stop()
        #expect(await rig.probe.message(on: rig.topics.status) { $0.payload == Array("offline") } != nil)
        rig.probe.client.disconnect()
    }

    @Test func tlsWithAPassword() async throws {
        let broker = try TestBroker(users: ["hub": "s3cret"], security: .tls)
        let home = try Home(
            devices: [DeviceConfiguration(id: "relay", name: "Relay", types: [DeviceTypeConfiguration(.onOffLight)])],
            clock: ManualClock())
        let topics = TopicScheme(hub: "secure")
        let options = broker.options(clientID: "hub") {
            $0.username = "hub"
            $0.password = "s3cret"
            $0.tls = MQTTConnectOptions.TLS(caFile: broker.certificates!.caFile)
        }
        let hub = MQTTHub(
            home: home, client: try MQTTClient(options: MQTTHub.clientOptions(options, topics: topics)), topics: topics)
        let probe = try await broker.connectedProbe(clientID: "probe") {
            $0.username = "hub"
            $0.password = "s3cret"
            $0.tls = MQTTConnectOptions.TLS(caFile: broker.certificates!.caFile)
        }
        try probe.client.subscribe("hearth/#")
        #expect(try await probe.barrier("hearth/barrier"))
        try hub.start()
        #expect(await probe.message(on: topics.status) { $0.payload == Array("online") } != nil)
        try probe.client.publish(
            topics.set("relay"), payload: Array(#"{"transaction":"s","trait":"onOff","command":"on"}"#.utf8))
        #expect(
            await probe.message(on: topics.responses) {
                String(decoding: $0.payload, as: UTF8.self).contains(#""ok":true"#)
            } != nil)
        // The wrong password is refused.
        let intruder = try MQTTClient(options: broker.options(clientID: "x") {
            $0.username = "hub"
            $0.password = "guess"
            $0.tls = MQTTConnectOptions.TLS(caFile: broker.certificates!.caFile)
        })
        await #expect(throws: MQTTError.self) { try await intruder.connect() }
        intruder.disconnect()
        hub.stop()
        probe.client.disconnect()
    }
}

extension Recorder {
    /// Forgets what was recorded, so the next wait sees only what comes after.
    func clearAll() { removeAll() }
}
