import HearthContract
import HearthEngine
@testable import HearthHub
import HearthJSON
import HearthMQTT
import HearthModel
import HearthTestKit
import Testing

/// A peer across a bridge is watched by its heartbeat: a cut between two brokers delivers no last will. Every bound is
/// stepped on the manual clock (`PeerRig`), never slept through.
@Suite struct PeerLivenessTests {
    static let remoteB = [PeerConfiguration(hub: "b", route: .remote)]

    func heartbeat(_ rig: PeerRig, _ payload: String, retained: Bool = false, hub: String = "b") {
        _ = rig.router.handle(
            MQTTMessage(topic: "hearth/\(hub)/heartbeat", payload: Array(payload.utf8), retain: retained))
    }

    /// Hub b is `status` and has a porch light that it reports online.
    func b(_ rig: PeerRig, _ status: String) {
        let summary =
            #"[{"id":"porch","sourceConnectivity":{"connectivityState":"online","dataSourceLocality":"direct"}}]"#
        _ = rig.router.handle(MQTTMessage(topic: "hearth/b/devices", payload: Array(summary.utf8), retain: true))
        _ = rig.router.handle(MQTTMessage(topic: "hearth/b/status", payload: Array(status.utf8), retain: true))
    }

    /// How hub a's home shows b's porch light (hub a's own broker link up).
    func porch(_ rig: PeerRig) -> String {
        rig.router.directory.linkChanged(up: true)
        return connectivity(entry(rig.router.homeDocument(), "b", "porch"))
    }

    @Test(.timeLimit(.minutes(1))) func aRemotePeerSilentForThreeIntervalsIsOfflineUntilHeardAgain() async throws {
        let rig = try PeerRig(peers: Self.remoteB)
        b(rig, "online")
        // Read on subscribing: b sends a heartbeat every second, but a retained copy is no proof that b is alive now.
        heartbeat(rig, #"{"interval":1}"#, retained: true)
        #expect(porch(rig) == "online/remote")
        let runner = Task { await rig.router.run() }
        defer { runner.cancel() }

        // A millisecond before two intervals nothing is silent, whenever the loop looks.
        rig.clock.advance(by: 1_999)
        #expect(rig.router.directory.silenceDue().isEmpty)
        #expect(rig.router.directory.status(of: "b") == .online)

        // At two intervals the loop, asleep on the manual clock, marks b offline: its devices, and requests for them.
        rig.clock.advance(by: 1)
        #expect(await eventually { rig.router.directory.status(of: "b") == .offline })
        #expect(porch(rig) == "offline/remote")
        #expect(
            rig.logs.all.contains(
                "hub 'b' has not been heard from for 2 s (it sends a heartbeat every 1 s): its devices are "
                    + "offline until it is heard again"
            ))
        let refused = try rig.forward(#""trait":"onOff","command":"on""#, device: "porch")
        #expect(refused?.code == .unavailable, "\(String(describing: refused))")

        // A live heartbeat: online at once, with no time passing.
        heartbeat(rig, #"{"interval":1}"#)
        #expect(rig.router.directory.status(of: "b") == .online)
        #expect(porch(rig) == "online/remote")
        #expect(rig.logs.all.last == "hub 'b' is heard from again: its devices follow its status")

        // Heard every interval, it never goes silent.
        for _ in 0..<20 {
            rig.clock.advance(by: 1_000)
            heartbeat(rig, #"{"interval":1}"#)
            #expect(rig.router.directory.silenceDue().isEmpty)
        }
        #expect(rig.router.directory.status(of: "b") == .online)
    }

    @Test(.timeLimit(.minutes(1))) func aRequestWaitingOnAPeerThatFallsSilentIsAnsweredAtOnce() async throws {
        let rig = try PeerRig(peers: [PeerConfiguration(hub: "b", route: .remote, timeout: .seconds(30))])
        b(rig, "online")
        heartbeat(rig, #"{"interval":2}"#)
        let runner = Task { await rig.router.run() }
        defer { runner.cancel() }
        #expect(try rig.forward(#""trait":"onOff","command":"on""#, device: "porch") == nil)
        rig.clock.advance(by: 4_000)
        #expect(await eventually { !rig.responses.isEmpty })
        // It was sent before b fell silent, and may have run: its outcome is unknown.
        #expect(rig.responses.first?["error"]?["code"] == .string("deadlineExceeded"))
        #expect(rig.router.forwarder.waitingCount == 0)
    }

    @Test func aLiveOnlineStatusIsProofOfLifeAndARetainedOneIsNot() throws {
        let rig = try PeerRig(peers: Self.remoteB)
        b(rig, "online")
        heartbeat(rig, #"{"interval":1}"#)
        rig.clock.advance(by: 2_000)
        #expect(rig.router.directory.silenceDue() == ["b"])
        // The bridge came back and replays b's retained status to this hub's live subscription: b was online at its
        // last word, and had it died meanwhile its will would say `offline`.
        _ = rig.router.handle(MQTTMessage(topic: "hearth/b/status", payload: Array("online".utf8), retain: true))
        #expect(rig.router.directory.status(of: "b") == .offline)
        _ = rig.router.handle(MQTTMessage(topic: "hearth/b/status", payload: Array("online".utf8), retain: false))
        #expect(rig.router.directory.status(of: "b") == .online)
    }

    @Test func aPeerThatSendsNoHeartbeatKeepsItsWillOnlyLiveness() throws {
        let rig = try PeerRig(peers: Self.remoteB)
        b(rig, "online")
        rig.clock.advance(by: 3_600_000)
        #expect(rig.router.directory.silenceDue().isEmpty)
        #expect(porch(rig) == "online/remote")
        // One that stops sending (its heartbeat cleared) goes back to its will alone, even while silent.
        heartbeat(rig, #"{"interval":1}"#)
        rig.clock.advance(by: 2_000)
        #expect(rig.router.directory.silenceDue() == ["b"])
        heartbeat(rig, "", retained: true)
        #expect(porch(rig) == "online/remote")
        rig.clock.advance(by: 3_600_000)
        #expect(rig.router.directory.silenceDue().isEmpty)
    }

    @Test func ourOwnReconnectionGivesEveryPeerAFullBound() throws {
        let rig = try PeerRig(peers: Self.remoteB)
        b(rig, "online")
        heartbeat(rig, #"{"interval":1}"#)
        rig.router.linkChanged(up: false)
        rig.clock.advance(by: 10_000)  // nothing could be heard meanwhile
        rig.router.linkChanged(up: true)
        rig.clock.advance(by: 1_999)
        #expect(rig.router.directory.silenceDue().isEmpty)
        rig.clock.advance(by: 1)
        #expect(rig.router.directory.silenceDue() == ["b"])
    }

    @Test func aBrokenHeartbeatIsIgnoredAndLoggedOnce() throws {
        let rig = try PeerRig(peers: Self.remoteB)
        b(rig, "online")
        for payload in [#"{"interval":0}"#, "beat", #"{"interval":"5"}"#, #"{"interval":3601}"#, #"{"interval":4000}"#]
        {
            heartbeat(rig, payload)
        }
        #expect(
            rig.logs.all == [
                "ignored hub 'b''s heartbeat: interval 0 is out of range; allowed: 1…3600 seconds; the last "
                    + "good one is kept"
            ])
        rig.clock.advance(by: 3_600_000)
        #expect(rig.router.directory.silenceDue().isEmpty, "no heartbeat was read: b is watched by its will alone")
        heartbeat(rig, #"{"interval":5}"#)
        heartbeat(rig, String(repeating: " ", count: 300))
        #expect(
            rig.logs.all.last
                == "ignored hub 'b''s heartbeat: 300 bytes, more than the 256 a heartbeat may have; the last good "
                + "one is kept"
        )
    }

    @Test func onlyTheRemotePeersHeartbeatsAreListenedTo() throws {
        let rig = try PeerRig(peers: [PeerConfiguration(hub: "b"), PeerConfiguration(hub: "c", route: .remote),
                                      PeerConfiguration(hub: "d", route: .remote)])
        #expect(rig.router.subscriptions == ["hearth/+/status", "hearth/+/devices", "hearth/a/answers",
                                             "hearth/c/heartbeat", "hearth/d/heartbeat"])
    }

    @Test(.timeLimit(.minutes(1))) func aHubSendsItsHeartbeatEveryIntervalRetained() async throws {
        let rig = try PeerRig(peers: Self.remoteB, heartbeat: Heartbeat(interval: 2))
        rig.router.linkChanged(up: true)
        let beats: @Sendable () -> [PeerOutbox.Message] = { rig.sent.all.filter { $0.topic == "hearth/a/heartbeat" } }
        #expect(beats().map { String(decoding: $0.payload, as: UTF8.self) } == [#"{"interval":2}"#])
        #expect(beats().allSatisfy { $0.retain && $0.qos == .atMostOnce })
        let runner = Task { await rig.router.run() }
        defer { runner.cancel() }
        for n in 2...4 {
            // The loop sleeps on the manual clock: step it until the next beat goes out.
            #expect(await eventually {
                if beats().count < n { rig.clock.advance(by: 100) }
                return beats().count >= n
            })
        }
        #expect(rig.clock.now.milliseconds >= 6_000)
    }

    @Test func aHubWithoutAHeartbeatClearsAnyItLeftRetained() throws {
        let rig = try PeerRig()
        rig.router.linkChanged(up: true)
        let beats = rig.sent.all.filter { $0.topic == "hearth/a/heartbeat" }
        #expect(beats.count == 1)
        #expect(beats.first?.payload == [] && beats.first?.retain == true)
    }

    @Test(.timeLimit(.minutes(1))) func aRemotePeerGetsItsOwnDeadline() async throws {
        let rig = try PeerRig(peers: Self.remoteB + [PeerConfiguration(hub: "c", timeout: .milliseconds(500))])
        b(rig, "online")
        rig.peer("c", "online", devices: ["garage"])
        #expect(rig.router.forwarder.timeout(for: "b") == PeerConfiguration.defaultRemoteTimeout)
        #expect(rig.router.forwarder.timeout(for: "c") == .milliseconds(500))
        #expect(rig.router.forwarder.timeout(for: "d") == .seconds(3))
        let runner = Task { await rig.router.run() }
        defer { runner.cancel() }
        #expect(try rig.forward(#""trait":"onOff","command":"on""#, device: "porch", transaction: "tb") == nil)
        #expect(try rig.forward(#""trait":"onOff","command":"on""#, device: "garage", transaction: "tc") == nil)
        rig.clock.advance(by: 500)
        #expect(await eventually { rig.responses.count == 1 })
        #expect(rig.responses.first?["transaction"] == .string("tc"))
        rig.router.forwarder.expireDue()
        rig.clock.advance(by: 4_499)
        rig.router.forwarder.expireDue()
        #expect(rig.responses.count == 1)
        rig.clock.advance(by: 1)
        #expect(await eventually { rig.responses.count == 2 })
        #expect(rig.responses.last?["error"]?["message"]?.text.contains("within 5.0 seconds") == true)
    }
}
