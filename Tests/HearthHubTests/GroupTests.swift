import Foundation
import HearthContract
import HearthJSON
import HearthMQTT
import HearthTestKit
import Testing

/// Groups and scenes home-wide (docs/clusters/groups.md): three real `hearthd` processes on one real broker.
@Suite(.serialized) struct GroupTests {
    /// Hub `hub`'s lamp, in group 5 from the configuration; hub c also has a porch light that is in no group.
    static func configure(_ rig: HomeRig, _ hub: String) throws {
        try rig.configure(hub, """
        devices:
          - id: lamp
            type: DimmableLight
            binding: {kind: pwmDimmer, pwm: dimmer-1, relay: dimmer-relay}
        \(hub == "c" ? "  - {id: porch, type: OnOffLight, binding: {kind: relay, pin: relay-1}}" : "")
        groups:
          - {id: 5, name: Home, members: [lamp]}
        """)
    }

    /// The summaries hub `hub` published for transaction `t`.
    static func summaries(_ w: Watcher, _ hub: String, _ t: String) -> [JSON] {
        w.all.filter { $0.topic == "hearth/\(hub)/responses" }.compactMap { try? JSON.parse($0.payload) }
            .filter { $0["transaction"] == .string(t) }
    }

    /// Publishes a group command once and waits for the summary of each of `hubs`; returns them by hub.
    static func send(_ w: Watcher, group: Int = 5, _ body: String, hubs: [String]) async throws -> [String: JSON] {
        let t = UUID().uuidString
        try w.client.publish(
            "hearth/groups/\(group)/set", payload: Array(#"{"transaction":"\#(t)",\#(body)}"#.utf8), qos: .atLeastOnce)
        var result: [String: JSON] = [:]
        for hub in hubs {
            result[hub] = await w.first("hearth/\(hub)/responses") { $0?["transaction"] == .string(t) }
                .flatMap { try? JSON.parse($0.payload) }
        }
        result["transaction"] = .string(t)
        return result
    }

    /// Every message a hub sent before its answer to a new request has arrived (one connection, in order).
    static func barrier(_ w: Watcher, _ hub: String) async throws {
        let answer = try await w.request("lamp", #""get":true"#, hub: hub)
        #expect(answer?["ok"] == .bool(true))
    }

    static func level(_ doc: JSON?) -> JSON? { attribute(doc, "levelControl", "currentLevel") }
    static func remaining(_ doc: JSON?) -> JSON? { attribute(doc, "levelControl", "remainingTime") }

    @Test(.timeLimit(.minutes(2))) func oneGroupOnThreeHubsWithAScene() async throws {
        let rig = try HomeRig()
        let hubs = ["a", "b", "c"]
        for hub in hubs { try Self.configure(rig, hub) }
        let w = try await Watcher(port: rig.broker.port)
        for hub in hubs { try rig.start(hub) }
        for hub in hubs {
            #expect(await w.waitFor(status: "online", hub: hub))
            let groups = await w.latest("hearth/\(hub)/groups") { $0.text.contains(#""group":5"#) }
            #expect(groups?.text == #"[{"group":5,"device":"lamp","type":"DimmableLight","name":"Home","scenes":[]}]"#)
        }

        // One publish toggles every member on every hub; each hub answers once; the porch light is no member.
        let toggle = try await Self.send(w, #""trait":"onOff","command":"toggle""#, hubs: hubs)
        for hub in hubs {
            let summary =
                #"{"transaction":\#(toggle["transaction"]!.text),"group":5,"hub":"\#(hub)","ok":true,"#
                + #""ran":["lamp"],"refused":[]}"#
            #expect(toggle[hub]?.text == summary)
            #expect(
                await w.latest("hearth/\(hub)/devices/lamp") { onOff($0) == .bool(true) }.flatMap(onOff) == .bool(true))
        }
        for hub in hubs { try await Self.barrier(w, hub) }
        let t = if case .string(let s)? = toggle["transaction"] { s } else { "" }
        for hub in hubs { #expect(Self.summaries(w, hub, t).count == 1) }
        // The same delivery again, as a client that lost its PUBACK sends it: every hub answers again, none toggles.
        try w.client.publish(
            "hearth/groups/5/set", payload: Array(#"{"transaction":"\#(t)","trait":"onOff","command":"toggle"}"#.utf8),
            qos: .atLeastOnce)
        for hub in hubs { try await Self.barrier(w, hub) }
        for hub in hubs {
            #expect(Self.summaries(w, hub, t).count == 2)
            #expect(w.document("lamp", hub: hub).flatMap(onOff) == .bool(true), "hub \(hub) toggled the copy")
        }
        #expect(w.document("porch", hub: "c").flatMap(onOff) == .bool(false))

        // A refusal is in the summary with its reason, and changes nothing.
        let bad = try await Self.send(
            w, #""trait":"levelControl","command":"moveToLevel","args":{"level":300}"#, hubs: ["a"])
        #expect(bad["a"]?["ok"] == .bool(false))
        #expect(bad["a"]?["refused"]?.text.contains(#""status":"constraintError""#) == true)

        // A scene stored on the group and recalled moves every hub's lamp within one transition.
        _ = try await Self.send(w, #""trait":"levelControl","command":"moveToLevel","args":{"level":200}"#, hubs: hubs)
        let stored = try await Self.send(
            w, #""trait":"scenesManagement","command":"storeScene","args":{"sceneId":1}"#, hubs: hubs)
        for hub in hubs { #expect(stored[hub]?["ok"] == .bool(true), "\(stored[hub]?.text ?? "")") }
        for hub in hubs {
            let groups = await w.latest("hearth/\(hub)/groups") { $0.text.contains(#""scene":1"#) }
            #expect(groups?.text.contains(#""scenes":[{"scene":1,"name":"","transitionTime":0}]"#) == true)
        }
        _ = try await Self.send(w, #""trait":"levelControl","command":"moveToLevel","args":{"level":20}"#, hubs: hubs)
        for hub in hubs {
            #expect(
                await w.latest("hearth/\(hub)/devices/lamp") { Self.level($0) == .int(20) }.flatMap(Self.level)
                    == .int(20))
        }
        w.clear()
        let recalled = try await Self.send(
            w, #""trait":"scenesManagement","command":"recallScene","args":{"sceneId":1,"transitionTime":2000}"#,
            hubs: hubs)
        for hub in hubs {
            #expect(recalled[hub]?["ok"] == .bool(true))
            // The 2 s transition starts on every hub (RemainingTime 20 tenths is reported as it starts) and ends
            // at 200.
            #expect(await w.first("hearth/\(hub)/devices/lamp") { Self.remaining($0) == .int(20) } != nil)
            let end = await w.latest("hearth/\(hub)/devices/lamp") {
                Self.level($0) == .int(200) && Self.remaining($0) == .int(0)
            }
            #expect(Self.level(end) == .int(200))
        }

        // Membership changes re-subscribe: b leaves group 5 and no longer runs its commands; back in, it does.
        let left = try await w.request(
            "lamp", #""trait":"groups","command":"removeGroup","args":{"groupId":5}"#, hub: "b")
        #expect(left?.text.contains(#""result":{"groupId":5}"#) == true)
        #expect(await w.latest("hearth/b/groups") { $0 == .array([]) } == .array([]))
        let without = try await Self.send(w, #""trait":"onOff","command":"off""#, hubs: ["a", "c"])
        try await Self.barrier(w, "b")
        if case .string(let t2)? = without["transaction"] { #expect(Self.summaries(w, "b", t2).isEmpty) }
        #expect(w.document("lamp", hub: "b").flatMap(onOff) == .bool(true))
        #expect(w.document("lamp", hub: "a").flatMap(onOff) == .bool(false))
        _ = try await w.request(
            "lamp", #""trait":"groups","command":"addGroup","args":{"groupId":5,"groupName":"Home"}"#, hub: "b")
        _ = await w.latest("hearth/b/groups") { $0.text.contains(#""group":5"#) }
        let back = try await Self.send(w, #""trait":"onOff","command":"off""#, hubs: hubs)
        #expect(back["b"]?["ran"] == .array([.string("lamp")]))

        // The group table is kept across a restart.
        _ = try await w.request(
            "lamp", #""trait":"groups","command":"addGroup","args":{"groupId":7,"groupName":"Upstairs"}"#, hub: "b")
        rig.daemons["b"]?.signal(SIGTERM)
        #expect(await rig.daemons["b"]?.exitStatus() == 0)
        w.clear()
        try rig.start("b")
        let restored = await w.latest("hearth/b/groups") { $0.text.contains(#""group":7"#) }
        #expect(
            restored?.text.contains(
                #"{"group":7,"device":"lamp","type":"DimmableLight","name":"Upstairs","scenes":[]}"#) == true)
        for hub in hubs { rig.daemons[hub]?.signal(SIGTERM) }
        for hub in hubs { #expect(await rig.daemons[hub]?.exitStatus() == 0) }
    }

    @Test(.timeLimit(.minutes(1))) func checkConfigNamesABadGroup() throws {
        let rig = try HomeRig()
        try rig.configure("a", """
        devices:
          - {id: lamp, type: DimmableLight}
          - {id: door, type: ContactSensor}
        groups:
          - {id: 0, members: [lamp]}
          - {id: 3, name: Everything, members: [lamp, door, garage]}
          - id: 4
            members: [lamp]
            scenes:
              - {id: 1, values: {levelControl: {currentLevel: 300}}}
        """)
        let check = try BuiltProduct.run("hearthd", ["check-config", "\(rig.directory)/a.yaml"])
        #expect(check.status == 78)
        #expect(check.output.contains("groups[0].id"), "\(check.output)")
        #expect(check.output.contains("device 'door' cannot be in a group"), "\(check.output)")
        #expect(check.output.contains("no device 'garage' on this hub"), "\(check.output)")
        #expect(check.output.contains("currentLevel"), "\(check.output)")
    }
}
