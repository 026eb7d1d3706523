import Foundation
import HearthContract
import HearthJSON
import HearthMQTT
import HearthTestKit
import Testing

/// A network partition, not a clean close: hub a runs in a network namespace of its own and reaches the broker over
/// a veth link that the test makes drop every packet (iptables inside the namespace), as a pulled cable does. No
/// FIN, no RST: only the keep-alive can tell. Needs root (CI has it; scripts/setup installs iptables).
@Suite(.serialized, .timeLimit(.minutes(3)), .enabled(if: geteuid() == 0, "network namespaces need root"))
struct PartitionTests {
    @Test func aSilentPartitionIsNoticedByAllAndHealsWithoutReplayingCommands() async throws {
        let namespace = try NetworkNamespace()
        let rig = try HomeRig(brokerListeners: ["listener 1883 \(namespace.hostAddress)"])
        try rig.configure("a", """
        devices:
          - {id: relay, name: Relay, type: OnOffLight}
        """, host: namespace.hostAddress, port: 1883)
        try rig.configure("b", """
        devices:
          - {id: fan, name: Fan, type: OnOffLight}
        """)
        let w = try await Watcher(port: rig.broker.port)
        try rig.start("a", launcher: namespace.launcher)
        try rig.start("b")
        #expect(await w.waitFor(status: "online", hub: "a"), "\(rig.log("a"))")
        #expect(await w.waitFor(status: "online", hub: "b"))
        let seen = await w.latest("hearth/b/home") { connectivity(entry($0, "a", "relay")) == "online/localPeer" }
        #expect(connectivity(entry(seen, "a", "relay")) == "online/localPeer", "b sees a's relay")

        // The cable is pulled.
        w.clear()
        let cut = ContinuousClock.now
        try namespace.cut()
        // The broker gives up on a after 1.5 keep-alive periods (5 s here) and publishes its will.
        #expect(await w.waitFor(status: "offline", hub: "a"), "the broker publishes a's will")
        let willAfter = ContinuousClock.now - cut
        // b marks a's devices offline, and a request to b for one is answered `unavailable` at once.
        let offline = await w.latest("hearth/b/home") { connectivity(entry($0, "a", "relay")) == "offline/localPeer" }
        #expect(connectivity(entry(offline, "a", "relay")) == "offline/localPeer")
        let viaB = try await w.request("relay", #""trait":"onOff","command":"on""#, hub: "b")
        #expect(viaB?["error"]?["code"] == .string("unavailable"), "\(String(describing: viaB))")
        // A command straight to a during the partition reaches no one: a's session ended with the will.
        try w.client.publish(
            "hearth/a/devices/relay/set",
            payload: Array(#"{"transaction":"during","trait":"onOff","command":"on"}"#.utf8), qos: .atLeastOnce)
        // a notices on its own: its keep-alive goes unanswered.
        #expect(await poll(within: .seconds(60)) { rig.log("a").contains("disconnected") }, "\(rig.log("a"))")
        let noticedAfter = ContinuousClock.now - cut

        // The cable is back: a reconnects with its backoff and publishes everything again.
        let healed = ContinuousClock.now
        try namespace.heal()
        #expect(await poll(within: .seconds(120)) {
            w.all.contains { $0.topic == "hearth/a/status" && $0.payload == Array("online".utf8) }
        }, "\(rig.log("a"))")
        let backAfter = ContinuousClock.now - healed
        #expect(await w.first("hearth/a/devices/relay") != nil, "a republishes its devices")
        let back = await w.latest("hearth/b/home") { connectivity(entry($0, "a", "relay")) == "online/localPeer" }
        #expect(connectivity(entry(back, "a", "relay")) == "online/localPeer", "b sees a's relay again")
        // Nothing sent during the partition runs now: a request after it is answered, the one during it never is,
        // and the relay is still off (a's requests for one device are answered in order, so "during" would come first).
        let after = try await w.request("relay", #""trait":"onOff","command":"toggle""#, hub: "a")
        #expect(after?["ok"] == .bool(true))
        #expect(
            !w.all.contains {
                $0.topic == "hearth/a/responses" && (try? JSON.parse($0.payload))?["transaction"] == .string("during")
            })
        #expect(
            onOff(w.document("relay", hub: "a")) == .bool(true),
            "one toggle from off: the command during the cut never ran")
        print("partition: will published \(willAfter) after the cut (keep-alive 5 s), a noticed after \(noticedAfter), "
              + "back online \(backAfter) after the heal")
    }
}
