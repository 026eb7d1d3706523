import HearthContract
import HearthEngine
import HearthHub
import HearthJSON
import HearthMQTT
import HearthModel
import HearthSync
import HearthTestKit
import Testing

/// A group request from a door inside the hub (the web page's `POST /api/groups/<g>/request`) for the whole home: two
/// hubs on one real broker, each with a lamp in group 1.
@Suite(.serialized) struct PageGroupRequestTests {
    final class Rig: Sendable {
        let broker: TestBroker
        let clocks: [String: ManualClock]
        let homes: [String: Home]
        let hubs: [String: MQTTHub]

        init() async throws {
            broker = try TestBroker()
            var clocks: [String: ManualClock] = [:], homes: [String: Home] = [:], hubs: [String: MQTTHub] = [:]
            for id in ["a", "b"] {
                let clock = ManualClock()
                let home = try Home(devices: [
                    DeviceConfiguration(id: "lamp", name: "Lamp", types: [DeviceTypeConfiguration(.onOffLight)]),
                ], clock: clock)
                _ = try home.invoke("lamp", type: nil, trait: "groups", command: "addGroup",
                                    arguments: ["groupId": .int(1), "groupName": .string("All")])
                let topics = TopicScheme(hub: id)
                let peer = id == "a" ? "b" : "a"
                let router = PeerRouter(home: home, topics: topics, peers: [PeerConfiguration(hub: peer)], clock: clock)
                let client = try MQTTClient(
                    options: MQTTHub.clientOptions(broker.options(clientID: "hub-\(id)"), topics: topics))
                hubs[id] = MQTTHub(
                    home: home, client: client, topics: topics, hasHardware: { _ in false }, router: router)
                clocks[id] = clock
                homes[id] = home
            }
            self.clocks = clocks
            self.homes = homes
            self.hubs = hubs
        }

        func lampOn(_ hub: String) -> JSON? {
            guard let bytes = hubs[hub]!.document(of: "lamp"), let doc = try? JSON.parse(bytes) else { return nil }
            return onOff(doc)
        }

        func groupRequest(_ hub: String, _ body: String) async -> JSON {
            await withCheckedContinuation { c in
                hubs[hub]!.groupRequest(Array(body.utf8), group: 1) { c.resume(returning: $0) }
            }
        }
    }

    @Test(.timeLimit(.minutes(1))) func thePagesGroupRequestRunsOnEveryHubAndListsEachSummary() async throws {
        let rig = try await Rig()
        try rig.hubs["b"]!.start()
        try rig.hubs["a"]!.start()
        #expect(
            await eventually { rig.hubs["a"]!.peersWithMembers(of: 1) == ["b"] && rig.hubs["b"]!.client.isConnected })

        let answer = await rig.groupRequest("a", #"{"transaction":"p1","trait":"onOff","command":"toggle"}"#)
        #expect(answer.text == #"{"transaction":"p1","group":1,"ok":true,"hubs":["#
                + #"{"transaction":"p1","group":1,"hub":"a","ok":true,"ran":["lamp"],"refused":[]},"#
                + #"{"transaction":"p1","group":1,"hub":"b","ok":true,"ran":["lamp"],"refused":[]}]}"#)
        // Each lamp toggled once: hub a ran its own member, not again through its own group subscription.
        #expect(rig.lampOn("a") == .bool(true))
        #expect(rig.lampOn("b") == .bool(true))
        // A device request to a's lamp after a's own copy of the group message has come back and been dropped.
        let again = await rig.groupRequest("a", #"{"transaction":"p2","trait":"onOff","command":"toggle"}"#)
        #expect(again["ok"] == .bool(true))
        #expect(rig.lampOn("a") == .bool(false))
        #expect(rig.lampOn("b") == .bool(false))

        // Hub b gone: after the wait on a's clock it is shown as not answered, neither ran nor refused.
        rig.hubs["b"]!.stop()
        let late = Locked<JSON?>(nil)
        let payload = Array(#"{"transaction":"p3","trait":"onOff","command":"on"}"#.utf8)
        rig.hubs["a"]!.groupRequest(payload, group: 1) { j in
            late.withLock { $0 = j }
        }
        #expect(await eventually {
            if late.withLock({ $0 }) == nil { rig.clocks["a"]!.advance(by: MQTTHub.defaultGroupAnswerWait) }
            return late.withLock { $0 } != nil
        })
        #expect(late.withLock { $0 }?.text == #"{"transaction":"p3","group":1,"ok":false,"hubs":["#
                + #"{"transaction":"p3","group":1,"hub":"a","ok":true,"ran":["lamp"],"refused":[]},"#
                + #"{"hub":"b","answered":false}]}"#)
        rig.hubs["a"]!.stop()
    }

    @Test(.timeLimit(.minutes(1))) func aPeersUnreadableMembershipsLeaveTheLastOnes() async throws {
        let rig = try await Rig()
        let probe = try await rig.broker.connectedProbe(clientID: "probe")
        try rig.hubs["a"]!.start()
        let valid = Array(#"[{"group":1,"device":"lamp","type":"OnOffLight","name":"All","scenes":[]}]"#.utf8)
        try probe.client.publish("hearth/c/groups", payload: valid, qos: .atLeastOnce, retain: true)
        #expect(await eventually { rig.hubs["a"]!.peersWithMembers(of: 1) == ["c"] })
        // Not JSON, then (on the same connection, so after it) a valid document for hub d: c's is unchanged.
        try probe.client.publish("hearth/c/groups", payload: Array("not json".utf8), qos: .atLeastOnce, retain: true)
        try probe.client.publish("hearth/d/groups", payload: valid, qos: .atLeastOnce, retain: true)
        #expect(await eventually { rig.hubs["a"]!.peersWithMembers(of: 1) == ["c", "d"] })
        // Cleared: hub c is no longer waited for.
        try probe.client.publish("hearth/c/groups", payload: [], qos: .atLeastOnce, retain: true)
        #expect(await eventually { rig.hubs["a"]!.peersWithMembers(of: 1) == ["d"] })
        try probe.client.publish("hearth/d/groups", payload: [], qos: .atLeastOnce, retain: true)
        rig.hubs["a"]!.stop()
    }
}
