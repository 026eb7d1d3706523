import HearthContract
import HearthEngine
import HearthHub
import HearthJSON
import HearthMQTT
import HearthModel
import HearthTestKit
import Synchronization
import Testing

/// Proof that a slow device cannot stall the hub, end to end over a real broker: a relay whose write hangs and a
/// sensor whose re-read hangs (each a latch the test holds shut) leave every other device answering, keep the
/// hub's connection alive past 1.5 keep-alive periods, and get their own answers once they come back.
@Suite(.serialized, .timeLimit(.minutes(2))) struct SlowDeviceHubTests {
    @Test func aStuckRelayAndAStuckSensorHoldUpOnlyThemselves() async throws {
        let broker = try TestBroker()
        let relay = BlockingActuator()
        let sensorRead = Latch()
        let home = try Home(devices: [
            DeviceConfiguration(
                id: "stuck-relay", name: "Stuck relay", types: [DeviceTypeConfiguration(.onOffLight, actuator: relay)]),
            DeviceConfiguration(
                id: "stuck-sensor", name: "Stuck sensor", types: [DeviceTypeConfiguration(.humiditySensor)]),
            DeviceConfiguration(id: "lamp", name: "Lamp", types: [DeviceTypeConfiguration(.onOffLight)])
        ])
        let topics = TopicScheme(hub: "slow")
        let keepAlive = 5  // libmosquitto's smallest
        let client = try MQTTClient(
            options: MQTTHub.clientOptions(
                broker.options(clientID: "hub") { $0.keepAlive = keepAlive },
                topics: topics))
        let hubEvents = Recorder<MQTTConnectionEvent>()
        client.onConnectionEvent = { hubEvents.append($0) }
        let hub = MQTTHub(home: home, client: client, topics: topics,
                          refresh: { id in if id == "stuck-sensor" { sensorRead.pass() } })
        let probe = try await broker.connectedProbe(clientID: "probe")
        defer { hub.stop(); probe.client.disconnect() }
        try probe.client.subscribe("hearth/#")
        #expect(try await probe.barrier("hearth/barrier"))
        try hub.start()
        #expect(await probe.message(on: topics.status) { $0.payload == Array("online") } != nil)

        func send(_ device: String, _ transaction: String, _ body: String) throws {
            try probe.client.publish(
                topics.set(device), payload: Array(#"{"transaction":"\#(transaction)",\#(body)}"#.utf8),
                qos: .atLeastOnce)
        }
        func response(_ transaction: String) async -> JSON? {
            await probe.message(on: topics.responses) {
                (try? JSON.parse($0.payload))?["transaction"] == .string(transaction)
            }
            .flatMap { try? JSON.parse($0.payload) }
        }
        func answered(_ transaction: String) -> Bool {
            probe.messages.all.contains { $0.topic == topics.responses
                && (try? JSON.parse($0.payload))?["transaction"] == .string(transaction) }
        }

        // The relay's line write hangs, and so does the sensor's re-read.
        let relayWrite = relay.hold()
        try send("stuck-relay", "relay", #""trait":"onOff","command":"on""#)
        try send("stuck-sensor", "sensor", #""get":true"#)
        #expect(relayWrite.waitForArrival())
        #expect(sensorRead.waitForArrival())

        // Meanwhile every other device answers, one request after another.
        var latencies: [Duration] = []
        for i in 0..<20 {
            let started = ContinuousClock.now
            try send("lamp", "lamp-\(i)", #""trait":"onOff","command":"toggle""#)
            #expect(await response("lamp-\(i)")?["ok"] == .bool(true))
            latencies.append(ContinuousClock.now - started)
        }
        #expect(!answered("relay") && !answered("sensor"))
        latencies.sort()
        print("slow-device: lamp toggles while two devices hang: p50 \(latencies[10]), max \(latencies[19])")

        // Hold them past one and a half keep-alive periods: the hub's connection stays up, no will is published.
        // (Time passing is what is tested here, so this waits for the clock, not for a condition.)
        try await Task.sleep(until: ContinuousClock.now + .milliseconds(keepAlive * 1600), clock: .continuous)
        try send("lamp", "after-hold", #""trait":"onOff","command":"toggle""#)
        #expect(await response("after-hold")?["ok"] == .bool(true))
        #expect(!hubEvents.all.contains { if case .disconnected = $0 { true } else { false } })
        #expect(!probe.messages.all.contains { $0.topic == topics.status && $0.payload == Array("offline") })

        // Back, both get their answers, and the relay's new state is published before its response.
        relayWrite.open()
        sensorRead.open()
        #expect(await response("relay")?["ok"] == .bool(true))
        #expect(await response("sensor")?["ok"] == .bool(true))
        let all = probe.messages.all
        let state = all.lastIndex {
            $0.topic == topics.device("stuck-relay") && (try? JSON.parse($0.payload)).flatMap(onOff) == .bool(true)
        }
        let answer = all.firstIndex {
            $0.topic == topics.responses && (try? JSON.parse($0.payload))?["transaction"] == .string("relay")
        }
        #expect(state != nil && answer != nil && state! < answer!)
    }

    /// Back-pressure: a device whose hardware hangs holds at most `requestsWaitingPerDevice` requests (the one
    /// running and those queued behind it); every request past that is refused at once with `busy`, nothing done,
    /// so a client flooding a stuck device gets answers instead of a queue that grows without end. The queued ones
    /// run, in order, when the device is back, and it takes requests again.
    @Test func aStuckDeviceHoldsABoundedQueueAndRefusesTheRestWithBusy() async throws {
        let broker = try TestBroker()
        let relay = BlockingActuator()
        let home = try Home(devices: [
            DeviceConfiguration(
                id: "relay", name: "Relay", types: [DeviceTypeConfiguration(.onOffLight, actuator: relay)]),
            DeviceConfiguration(id: "lamp", name: "Lamp", types: [DeviceTypeConfiguration(.onOffLight)])
        ])
        let topics = TopicScheme(hub: "bounded")
        let client = try MQTTClient(options: MQTTHub.clientOptions(broker.options(clientID: "hub"), topics: topics))
        let limit = 4
        let hub = MQTTHub(home: home, client: client, topics: topics, requestsWaitingPerDevice: limit)
        let probe = try await broker.connectedProbe(clientID: "probe")
        defer { hub.stop(); probe.client.disconnect() }
        try probe.client.subscribe("hearth/#")
        #expect(try await probe.barrier("hearth/barrier"))
        try hub.start()
        #expect(await probe.message(on: topics.status) { $0.payload == Array("online") } != nil)
        func send(_ device: String, _ transaction: String) throws {
            try probe.client.publish(topics.set(device), payload: Array(
                #"{"transaction":"\#(transaction)","trait":"onOff","command":"toggle"}"#.utf8), qos: .atLeastOnce)
        }
        func response(_ transaction: String) async -> JSON? {
            await probe.message(on: topics.responses) {
                (try? JSON.parse($0.payload))?["transaction"] == .string(transaction)
            }
            .flatMap { try? JSON.parse($0.payload) }
        }

        let write = relay.hold()
        try send("relay", "r0")
        #expect(write.waitForArrival(), "the first toggle is stuck in the relay's write")
        for i in 1..<10 { try send("relay", "r\(i)") }
        for i in limit..<10 {
            let refused = await response("r\(i)")
            #expect(refused?["ok"] == .bool(false))
            #expect(refused?["error"]?["status"] == .string("busy"), "\(String(describing: refused))")
            #expect(refused?["error"]?["code"] == .string("resourceExhausted"))
        }
        try send("lamp", "lamp")
        #expect(await response("lamp")?["ok"] == .bool(true), "another device is not held up")

        write.open()
        var answered: [String] = []
        for i in 0..<limit {
            #expect(await response("r\(i)")?["ok"] == .bool(true))
            answered.append("r\(i)")
        }
        let order = probe.messages.all.compactMap { m -> String? in
            guard m.topic == topics.responses, case .string(let t)? = (try? JSON.parse(m.payload))?["transaction"],
                  answered.contains(t) else { return nil }
            return t
        }
        #expect(order == answered, "the queued requests ran in the order they came")
        #expect(relay.outputs.count == limit, "only the admitted toggles reached the hardware")
        #expect(try home.device("relay").trait(.onOff)?["onOff"]?.value == .bool(false), "four toggles: off again")
        try send("relay", "after")
        #expect(await response("after")?["ok"] == .bool(true), "the device takes requests again")
    }

    /// Back-pressure on the network-thread path: requests for devices without hardware run on libmosquitto's
    /// thread one at a time, so a client that sends faster than they are served is held back by the socket and
    /// the broker (TCP flow control, and at QoS 1 the broker's in-flight window and queue), not by a queue in the
    /// hub. A burst of 601 QoS 1 requests sent without waiting (fewer than the broker queues for one client) is
    /// answered in full: each exactly once, none refused, each device's in the order they were sent, and every
    /// toggle applied.
    @Test func aFloodOfRequestsForDevicesWithoutHardwareIsAnsweredInFullAndInOrder() async throws {
        let broker = try TestBroker()
        let home = try Home(devices: ["lamp-a", "lamp-b"].map {
            DeviceConfiguration(id: $0, name: $0, types: [DeviceTypeConfiguration(.onOffLight)])
        })
        let topics = TopicScheme(hub: "flood")
        let client = try MQTTClient(options: MQTTHub.clientOptions(broker.options(clientID: "hub"), topics: topics))
        let hub = MQTTHub(home: home, client: client, topics: topics, hasHardware: { _ in false })
        let probe = try await broker.connectedProbe(clientID: "probe")
        defer { hub.stop(); probe.client.disconnect() }
        try probe.client.subscribe(topics.responses)
        try probe.client.subscribe(topics.status)
        try probe.client.subscribe("hearth/barrier")
        #expect(try await probe.barrier("hearth/barrier"))
        try hub.start()
        #expect(await probe.message(on: topics.status) { $0.payload == Array("online") } != nil)

        let count = 601
        for i in 0..<count {
            try probe.client.publish(topics.set(i % 2 == 0 ? "lamp-a" : "lamp-b"), payload: Array(
                #"{"transaction":"f\#(i)","trait":"onOff","command":"toggle"}"#.utf8), qos: .atLeastOnce)
        }
        #expect(await probe.messages.count(atLeast: count, within: .seconds(45)) { $0.topic == topics.responses })
        let responses = probe.messages.all.filter { $0.topic == topics.responses }.compactMap {
            try? JSON.parse($0.payload)
        }
        #expect(responses.count == count, "each request answered exactly once")
        #expect(responses.allSatisfy { $0["ok"] == .bool(true) }, "none refused")
        let order = responses.compactMap { r -> Int? in
            guard case .string(let t)? = r["transaction"] else { return nil }
            return Int(t.dropFirst())
        }
        #expect(order.filter { $0 % 2 == 0 } == Array(stride(from: 0, to: count, by: 2)), "lamp-a's in the order sent")
        #expect(order.filter { $0 % 2 == 1 } == Array(stride(from: 1, to: count, by: 2)), "lamp-b's in the order sent")
        // 301 toggles for lamp-a, 300 for lamp-b.
        #expect(try home.device("lamp-a").trait(.onOff)?["onOff"]?.value == .bool(true))
        #expect(try home.device("lamp-b").trait(.onOff)?["onOff"]?.value == .bool(false))
    }
}
