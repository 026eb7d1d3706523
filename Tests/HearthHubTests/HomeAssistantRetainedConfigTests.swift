import HearthContract
import HearthEngine
@testable import HearthHub
import HearthHomeAssistant
@_spi(Testing) import HearthMQTT
import HearthModel
import HearthSync
import HearthTestKit
import Testing

/// A hub reads its retained Home Assistant discovery configs once per connection, clears the stale ones, and then
/// stops receiving configs; other hubs' configs never reach it. A real mosquitto,
/// the hub wired as `hearthd` wires it (`HubDaemon.homeAssistantBridge`), and a probe playing Home Assistant's
/// broker contents and another hub.
@Suite(.timeLimit(.minutes(1))) struct HomeAssistantRetainedConfigTests {
    let config = Array(#"{"device":{"identifiers":["x"]},"components":{}}"#.utf8)
    let topics = TopicScheme(hub: "test")

    /// Where a hub puts a config: under its node, `hearth_<hub>`.
    func configTopic(_ objectID: String) -> String {
        "homeassistant/device/\(objectID.split(separator: "__")[0])/\(objectID)/config"
    }
    /// Where earlier versions put it.
    func legacyTopic(_ objectID: String) -> String { "homeassistant/device/\(objectID)/config" }

    /// What the hub's client received on the config filter, in order, and how many of its markers.
    final class Seen: Sendable {
        let configs = Locked<[String]>([])
        var count: Int { configs.withLock { $0.count } }
    }

    struct Rig {
        let broker: TestBroker
        let probe: Probe
        let client: MQTTClient
        let hub: MQTTHub
        let bridge: HomeAssistantBridge
        let seen: Seen
    }

    func start(broker: TestBroker, probe: Probe) throws -> Rig {
        let home = try Home(devices: [
            DeviceConfiguration(id: "lamp", name: "Lamp", types: [DeviceTypeConfiguration(.dimmableLight)]),
            DeviceConfiguration(id: "relay", name: "Relay", types: [DeviceTypeConfiguration(.onOffLight)]),
        ], clock: ManualClock())
        let client = try MQTTClient(options: MQTTHub.clientOptions(broker.options(clientID: "hub"), topics: topics))
        let bridge = HubDaemon.homeAssistantBridge(
            home: home, client: client, options: HomeAssistantOptions(hub: "test"),
            log: { _ in })
        let seen = Seen()
        let hub = MQTTHub(home: home, client: client, topics: topics, online: { bridge.connected() },
                          other: { m in
                              // Configs, not their clearing: over MQTT 3.1.1 (no "no local") the hub's own clearing of
                              // a stale config, published while it reads, may come back to it just after.
                              if m.topic.hasPrefix("homeassistant/device/") && !m.payload.isEmpty {
                                  seen.configs.withLock { $0.append(m.topic) }
                              }
                              bridge.received(topic: m.topic, payload: m.payload)
                          })
        try hub.start()
        return Rig(broker: broker, probe: probe, client: client, hub: hub, bridge: bridge, seen: seen)
    }

    /// Publishes retained and waits until the probe, subscribed to it, has it back (the broker has stored it).
    func retain(_ probe: Probe, _ topic: String, _ payload: [UInt8]) async throws {
        try probe.client.publish(topic, payload: payload, qos: .atLeastOnce, retain: true)
        #expect(await probe.messages.first { $0.topic == topic && $0.payload == payload } != nil)
    }

    /// Sends the hub a request and waits for its answer: every message the probe published before has reached
    /// the hub's handlers (the broker forwards one publisher's messages in order, the hub handles them in order).
    func handledEverythingBefore(_ rig: Rig, _ name: String) async throws {
        let t = "\(name)-\(UInt32.random(in: 0...UInt32.max))"
        try rig.probe.client.publish(
            topics.set("lamp"), payload: Array(#"{"transaction":"\#(t)"}"#.utf8), qos: .atLeastOnce)
        #expect(
            await rig.probe.message(on: topics.responses) { String(decoding: $0.payload, as: UTF8.self).contains(t) }
                != nil)
    }

    /// Waits until connection `count`'s reading has ended and the broker has taken its UNSUBSCRIBE: the hub announces
    /// its devices after unsubscribing, on the same connection, so once the probe has the `count`-th announcement of
    /// the lamp the subscription is gone.
    func readingEnded(_ rig: Rig, _ probe: Probe, count: Int) async -> Bool {
        let bridge = rig.bridge
        guard await eventually({ bridge.readingsEnded.byMarker == count }) else { return false }
        return await probe.messages.count(atLeast: count) {
            $0.topic == configTopic("hearth_test__lamp") && !$0.payload.isEmpty
        }
    }

    /// A probe that sees everything under `homeassistant/` and `hearth/`, retained flags as published.
    func watchingProbe(_ broker: TestBroker) async throws -> Probe {
        let probe = try await broker.connectedProbe(clientID: "probe")
        try probe.client.subscribe("homeassistant/#", options: MQTTSubscriptionOptions(retainAsPublished: true))
        try probe.client.subscribe("hearth/#", options: MQTTSubscriptionOptions(retainAsPublished: true))
        #expect(try await probe.barrier("hearth/barrier"))
        return probe
    }

    func isCleared(_ probe: Probe, _ topic: String) async -> Bool {
        await probe.message(on: topic) { $0.payload.isEmpty } != nil
    }

    @Test func staleConfigsOfThisHubAreClearedAndOtherHubsConfigsNeverCome() async throws {
        let broker = try TestBroker()
        let probe = try await watchingProbe(broker)
        // Left by an earlier run of this hub (a device that left its configuration), and another hub's devices.
        try await retain(probe, configTopic("hearth_test__gone"), config)
        try await retain(probe, configTopic("hearth_other__lamp"), config)
        try await retain(probe, configTopic("hearth_other__fan"), config)
        try await retain(probe, legacyTopic("hearth_other__heater"), config)

        let rig = try start(broker: broker, probe: probe)
        defer { rig.hub.stop(); probe.client.disconnect() }
        #expect(await isCleared(probe, configTopic("hearth_test__gone")))
        #expect(await readingEnded(rig, probe, count: 1))
        #expect(!rig.bridge.isReadingRetainedConfigs)
        #expect(rig.bridge.readingsEnded.byTimeout == 0)
        // During the reading the hub saw its own retained configs, and nothing of the other hub's.
        #expect(rig.seen.configs.withLock { $0 }.contains(configTopic("hearth_test__gone")))
        #expect(!rig.seen.configs.withLock { $0 }.contains { $0.contains("hearth_other") })

        // After it: another hub announcing, and even a config under this hub's ids, never reach the hub.
        let before = rig.seen.count
        try probe.client.publish(
            configTopic("hearth_other__lamp"), payload: config + [0x20], qos: .atLeastOnce, retain: true)
        try probe.client.publish(configTopic("hearth_other__new"), payload: config, qos: .atLeastOnce, retain: true)
        try probe.client.publish(configTopic("hearth_test__gone2"), payload: config, qos: .atLeastOnce, retain: true)
        try await handledEverythingBefore(rig, "after-reading")
        #expect(
            rig.seen.count == before,
            "configs received after the marker: \(rig.seen.configs.withLock { Array($0.dropFirst(before)) })")
        // Nothing of another hub was ever cleared.
        #expect(
            !probe.messages.all.contains {
                $0.topic.hasPrefix("homeassistant/device/hearth_other") && $0.payload.isEmpty
            })
    }

    @Test func configsOfTheEarlierLayoutAreMovedByHomeAssistantsMigration() async throws {
        let broker = try TestBroker()
        let probe = try await watchingProbe(broker)
        // What an earlier version left: this hub's own config, a device it still has, one it no longer has; another
        // hub's.
        for objectID in ["hearth_test", "hearth_test__lamp", "hearth_test__gone", "hearth_other__lamp"] {
            try await retain(probe, legacyTopic(objectID), config)
        }
        let rig = try start(broker: broker, probe: probe)
        defer { rig.hub.stop(); probe.client.disconnect() }
        let migrate = Array(#"{"migrate_discovery":true}"#.utf8)
        // In Home Assistant's order: the migration request, the config on its new topic, the old topic cleared.
        #expect(await isCleared(probe, legacyTopic("hearth_test__lamp")))
        let order = probe.messages.all.filter { $0.topic.contains("hearth_test__lamp") }.map { ($0.topic, $0.payload) }
        let expected: [(String, [UInt8]?)] = [
            (legacyTopic("hearth_test__lamp"), config), (legacyTopic("hearth_test__lamp"), migrate),
            (configTopic("hearth_test__lamp"), nil), (legacyTopic("hearth_test__lamp"), [])
        ]
        #expect(order.count == expected.count)
        for ((topic, payload), (expectedTopic, expectedPayload)) in zip(order, expected) {
            #expect(topic == expectedTopic)
            if let expectedPayload { #expect(payload == expectedPayload) } else { #expect(payload.count > 100) }
        }
        #expect(await isCleared(probe, legacyTopic("hearth_test")))
        #expect(await isCleared(probe, legacyTopic("hearth_test__gone")))
        #expect(!probe.messages.all.contains { $0.topic == legacyTopic("hearth_test__gone") && $0.payload == migrate })
        #expect(await probe.messages.first { $0.topic == configTopic("hearth_test") } != nil)
        #expect(!probe.messages.all.contains { $0.topic.contains("hearth_other") && $0.payload != config })
        // The next connection finds nothing of the earlier layout and only reads its own node.
        rig.client.severConnectionWithoutDisconnect()
        #expect(await readingEnded(rig, probe, count: 2))
        let before = rig.seen.count
        try probe.client.publish(legacyTopic("hearth_other__new"), payload: config, qos: .atLeastOnce, retain: true)
        try await handledEverythingBefore(rig, "after-the-move")
        #expect(rig.seen.count == before)
    }

    @Test func aReconnectionReadsTheRetainedConfigsAgain() async throws {
        let broker = try TestBroker()
        let probe = try await watchingProbe(broker)
        let rig = try start(broker: broker, probe: probe)
        defer { rig.hub.stop(); probe.client.disconnect() }
        #expect(await readingEnded(rig, probe, count: 1))

        // A stale config appears while the hub is not reading (as if left by a run the broker kept): not cleared now…
        try await retain(probe, configTopic("hearth_test__gone"), config)
        try await handledEverythingBefore(rig, "stale-kept")
        #expect(!probe.messages.all.contains { $0.topic == configTopic("hearth_test__gone") && $0.payload.isEmpty })

        // …but on the next connection.
        rig.client.severConnectionWithoutDisconnect()
        #expect(await isCleared(probe, configTopic("hearth_test__gone")))
        #expect(await readingEnded(rig, probe, count: 2))
        #expect(!rig.bridge.isReadingRetainedConfigs)
        // The subscription ended again: a new config under the hub's node does not reach it.
        let before = rig.seen.count
        try probe.client.publish(configTopic("hearth_test__new"), payload: config, qos: .atLeastOnce, retain: true)
        try await handledEverythingBefore(rig, "after-reconnection")
        #expect(rig.seen.count == before)
    }

    @Test func homeAssistantsBirthStillAnnouncesEverythingAfterTheReading() async throws {
        let broker = try TestBroker()
        let probe = try await watchingProbe(broker)
        let rig = try start(broker: broker, probe: probe)
        defer { rig.hub.stop(); probe.client.disconnect() }
        #expect(await readingEnded(rig, probe, count: 1))
        try probe.client.publish("homeassistant/status", payload: Array("online".utf8), qos: .atLeastOnce)
        #expect(await probe.messages.count(atLeast: 2) { $0.topic == configTopic("hearth_test__lamp") })
    }
}
