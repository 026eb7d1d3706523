import Foundation
import HearthContract
import HearthEngine
@testable import HearthHub
import HearthJSON
import HearthMQTT
import HearthModel
import HearthTestKit
import Testing

/// Anything on the broker may publish under a peer's topics. A broken or hostile "peer" sending
/// malformed, huge or contradictory documents is ignored with a reason logged once, and this hub's own devices
/// go on as before. Also what a hub listens to of its peers (each hub pays only for what it uses).
@Suite(.serialized) struct MisbehavingPeerTests {
    /// Real `hearthd` on a real broker; the "peer" is a plain client publishing whatever it likes.
    @Test(.timeLimit(.minutes(1))) func aHostilePeerIsIgnoredWithAReasonAndTheHubGoesOn() async throws {
        let rig = try HomeRig()
        try rig.configure("a", """
        devices:
          - id: lamp
            type: OnOffLight
            binding: {kind: relay, pin: relay-1}
          - id: bathroom
            types:
              - type: OnOffPlugInUnit
                binding: {kind: relay, pin: relay-2}
              - type: HumiditySensor
                mirror: {hub: evil, device: climate}
        """)
        let w = try await Watcher(port: rig.broker.port)
        try rig.start("a")
        #expect(await w.waitFor(status: "online", hub: "a"))
        let evil = try MQTTClient(
            options: MQTTConnectOptions(host: "127.0.0.1", port: rig.broker.port, clientID: "evil"))
        defer { evil.disconnect() }
        _ = try await evil.connect()
        func send(_ topic: String, _ payload: [UInt8]) throws {
            try evil.publish("hearth/evil/\(topic)", payload: payload, qos: .atLeastOnce, retain: true)
        }
        func send(_ topic: String, _ text: String) throws { try send(topic, Array(text.utf8)) }
        @Sendable func humidity(_ doc: JSON?) -> JSON? {
            guard case .array(let types)? = doc?["types"] else { return nil }
            return types.first { $0["type"] == .string("HumiditySensor") }?["traits"]?["relativeHumidityMeasurement"]?[
                "attributes"]?["measuredValue"]
        }
        let goodDocument =
            #"{"id":"climate","types":[{"type":"HumiditySensor","#
            + #""traits":{"relativeHumidityMeasurement":{"attributes":{"measuredValue":5000}}}}]}"#

        // First a well-behaved peer: a's mirror and home document follow it.
        try send("status", "online")
        try send("devices", #"[{"id":"climate","types":[{"type":"HumiditySensor"}]}]"#)
        try send("devices/climate", goodDocument)
        #expect(humidity(await w.latest("hearth/a/devices/bathroom") { humidity($0) == .int(5000) }) == .int(5000))
        #expect(
            entry(await w.latest("hearth/a/home") { entry($0, "evil", "climate") != nil }, "evil", "climate") != nil)

        // Then garbage, each kind twice: logged once, the last good one kept.
        let huge =
            Array(#"{"id":"climate","pad":""#.utf8) + [UInt8](repeating: UInt8(ascii: "x"), count: 2 << 20)
            + Array(#""}"#.utf8)
        let hugeSummary = [UInt8](repeating: UInt8(ascii: " "), count: 5 << 20) + Array("[]".utf8)
        for _ in 0..<2 {
            try send("devices", "[{\"id\":")                 // not JSON
            try send("devices", hugeSummary)                 // 5 MiB
            try send("devices", #"{"climate":true}"#)        // not a list
            try send("devices/climate", "\u{FF}")            // not JSON
            try send("devices/climate", huge)                // 2 MiB
            try send("devices/climate", #"{"id":"climate"}"#)  // no types
        }
        let reasons = [
            "ignored hub 'evil''s device summary: not JSON",
            "ignored hub 'evil''s device summary: 5242882 bytes, more than the 4194304 a hub reads; the last "
                + "good one is kept",
            "ignored hub 'evil''s device summary: not a list of devices each with a string 'id'; the last good "
                + "one is kept",
            "ignored hub 'evil''s document of 'climate': not JSON",
            "ignored hub 'evil''s document of 'climate': 2097177 bytes, more than the 1048576 a hub reads",
            "ignored hub 'evil''s document of 'climate': it has no list of 'types'; the last good one is kept"
        ]
        #expect(await eventually { reasons.allSatisfy { rig.log("a").contains($0) } }, "\(rig.log("a"))")

        // A value the descriptor refuses is left out of the mirror, never shown (PeerMirrorValueTests), and the
        // document is published without it (found here: the engine reported no change when a mirrored attribute
        // went away, so clients kept the owner's old reading).
        try send(
            "devices/climate",
            #"{"types":[{"type":"HumiditySensor","#
                + #""traits":{"relativeHumidityMeasurement":{"attributes":{"measuredValue":"soaked"}}}}]}"#
        )
        let bathroom = await w.latest("hearth/a/devices/bathroom") { humidity($0) != .int(5000) }
        #expect(bathroom.map { !$0.text.contains("soaked") && humidity($0) != .int(5000) } == true, "\(rig.log("a"))")
        try send("devices/climate", goodDocument)
        #expect(humidity(await w.latest("hearth/a/devices/bathroom") { humidity($0) == .int(5000) }) == .int(5000))

        // Contradictions: evil claims a's own lamp, and two peers claim one device.
        try send("devices", #"[{"id":"climate"},{"id":"lamp"},{"id":"ghost"}]"#)
        try evil.publish("hearth/evil2/status", payload: Array("online".utf8), qos: .atLeastOnce, retain: true)
        try evil.publish(
            "hearth/evil2/devices", payload: Array(#"[{"id":"ghost"}]"#.utf8), qos: .atLeastOnce, retain: true)
        #expect(await eventually {
                rig.log("a").contains(
                    "hub 'evil' lists device 'lamp', which is this hub's own: requests for it are run here")
                    && rig.log("a").contains(
                        "hubs 'evil2' and 'evil' all list device 'ghost': requests for it on this hub are "
                            + "refused until only one does"
                    )
        }, "\(rig.log("a"))")
        let ghost = try await w.request("ghost", #""trait":"onOff","command":"on""#, hub: "a")
        #expect(ghost?["error"]?["code"] == .string("notFound"))

        // Through all of it a's own devices answered and changed as asked.
        let on = try await w.request("lamp", #""trait":"onOff","command":"on""#, hub: "a")
        #expect(on?["ok"] == .bool(true))
        #expect(await w.latest("hearth/a/devices/lamp") { onOff($0) == .bool(true) }.flatMap(onOff) == .bool(true))

        // Each reason once, though each was sent twice.
        for reason in reasons {
            #expect(rig.log("a").components(separatedBy: reason).count == 2, "\(reason)")
        }
        for topic in ["devices", "devices/climate", "status"] { try send(topic, []) }
        try evil.publish("hearth/evil2/status", payload: [], qos: .atLeastOnce, retain: true)
        try evil.publish("hearth/evil2/devices", payload: [], qos: .atLeastOnce, retain: true)
    }

    /// Hub a (no devices) and hub b (a lamp, on a relay when `relay`), each on the MQTT version given, both online
    /// and a's home listing b's lamp; then a request for the lamp sent to a, forwarded to b, and answered.
    func forwardToAnotherVersion(a: [String], b: [String], relay: Bool) async throws -> (HomeRig, Watcher) {
        let rig = try HomeRig()
        try rig.configure("a", "devices: []\n", mqtt: a)
        try rig.configure(
            "b", "devices:\n  - {id: lamp, type: OnOffLight\(relay ? ", binding: {kind: relay, pin: relay-2}" : "")}\n",
            mqtt: b)
        let w = try await Watcher(port: rig.broker.port)
        try rig.start("a")
        try rig.start("b")
        #expect(await w.waitFor(status: "online", hub: "a"))
        #expect(await w.waitFor(status: "online", hub: "b"))
        _ = await w.latest("hearth/a/home") { entry($0, "b", "lamp") != nil }
        let forwarded = try await w.request("lamp", #""trait":"onOff","command":"on""#, hub: "a")
        #expect(forwarded?["ok"] == .bool(true), "\(rig.log("a"))")
        return (rig, w)
    }

    /// Over MQTT 3.1.1 there is no response topic: the forwarding hub listens to every hub's `responses` and the
    /// owner's answer is relayed all the same.
    @Test(.timeLimit(.minutes(1))) func aForwardedRequestIsAnsweredOverMQTT311Too() async throws {
        let (rig, w) = try await forwardToAnotherVersion(a: [#"protocol: "3.1.1""#], b: [], relay: true)
        defer { withExtendedLifetime(rig) {} }
        #expect(await w.latest("hearth/b/devices/lamp") { onOff($0) == .bool(true) }.flatMap(onOff) == .bool(true))
    }

    /// The other way round: a hub on MQTT 5 forwards to an owner on MQTT 3.1.1, which never sees the response topic
    /// (the broker drops it) and so answers on the forwarding hub's `answers` topic, which the request names in
    /// `forwardedBy`. Without that the forwarding hub, which listens to its `answers` only, timed out.
    @Test(.timeLimit(.minutes(1))) func anOwnerOnMQTT311AnswersAForwarderOnMQTT5() async throws {
        let (rig, w) = try await forwardToAnotherVersion(a: [], b: [#"protocol: "3.1.1""#], relay: false)
        defer { withExtendedLifetime(rig) {} }
        #expect(await w.first("hearth/a/answers") { $0?["ok"] == .bool(true) } != nil)
        // A forwardedBy that is not a hub id names no topic: the request is answered on `responses` only.
        let odd = try await w.request("lamp", #""trait":"onOff","command":"off","forwardedBy":"x/y""#, hub: "b")
        #expect(odd?["ok"] == .bool(true))
        #expect(!w.all.contains { $0.topic.hasPrefix("hearth/x/") })
    }

    /// A hub hears every peer's status and summary, but of the documents only those it mirrors, and of the
    /// answers only its own: a state change on another hub costs it nothing unless it mirrors that device.
    @Test func aHubListensOnlyToWhatItUses() throws {
        let home = try Home(devices: [DeviceConfiguration(id: "bathroom", name: "Bathroom", types: [
            DeviceTypeConfiguration(.onOffPlugInUnit), DeviceTypeConfiguration(.humiditySensor, isMirrored: true),
            DeviceTypeConfiguration(.onOffLight, isMirrored: true),
        ])], clock: ManualClock())
        let router = PeerRouter(
            home: home, topics: TopicScheme(hub: "a"),
            mirrors: [
                MirrorRoute(
                    localDevice: "bathroom", localType: "HumiditySensor", peerHub: "b", peerDevice: "climate",
                    peerType: "HumiditySensor"),
                MirrorRoute(
                    localDevice: "bathroom", localType: "OnOffLight", peerHub: "b", peerDevice: "climate",
                    peerType: "OnOffLight")
            ], outbox: PeerOutbox(publish: { _ in }))
        #expect(
            router.subscriptions == [
                "hearth/+/status", "hearth/+/devices", "hearth/b/devices/climate", "hearth/a/answers"
            ])
        // A document of a device nobody mirrors is not kept, even if it arrives (a wider subscription of old).
        _ = router.handle(MQTTMessage(topic: "hearth/b/devices/other", payload: Array(#"{"types":[]}"#.utf8)))
        #expect(router.directory.documentCount == 0)
    }
}
