import Foundation
import HearthContract
import HearthJSON
import HearthMQTT
import HearthTestKit
import Testing

/// Several real `hearthd` processes on one real broker.
final class HomeRig: @unchecked Sendable {
    let broker: TestBroker
    let directory: String
    var daemons: [String: RunningProduct] = [:]
    var starts = 0

    /// - Parameter brokerListeners: more `listener PORT ADDRESS` lines for the broker (a namespace's link).
    init(brokerListeners: [String] = []) throws {
        broker = try TestBroker(extraConfiguration: brokerListeners)
        directory = NSTemporaryDirectory() + "hearth-peers-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        // The repository's simulated board, found from this source file.
        try FileManager.default.copyItem(atPath: Repository.path("boards/sim.yaml"), toPath: "\(directory)/sim.yaml")
    }

    /// - Parameter mqtt: more keys of the `mqtt:` section, one `key: value` a line.
    func configure(_ hub: String, _ body: String, host: String = "127.0.0.1", port: Int? = nil, mqtt: [String] = [])
        throws
    {
        try """
        hub:
          id: \(hub)
          board: sim.yaml
          stateDirectory: state-\(hub)
        mqtt:
          host: \(host)
          port: \(port ?? broker.port)
          keepAlive: 5s
        \(mqtt.map { "  \($0)\n" }.joined())\(body)
        web: {enabled: false}
        """.write(toFile: "\(directory)/\(hub).yaml", atomically: true, encoding: .utf8)
    }

    func start(_ hub: String, launcher: [String] = []) throws {
        starts += 1
        daemons[hub] = try RunningProduct("hearthd", ["run", "--config", "\(directory)/\(hub).yaml"],
                                         outputFile: "\(directory)/\(hub)-\(starts).log", launcher: launcher)
    }

    func log(_ hub: String) -> String { daemons[hub]?.output ?? "" }

    deinit { try? FileManager.default.removeItem(atPath: directory) }
}

extension Watcher {
    /// Waits until the latest message on `topic` satisfies `predicate`.
    func latest(_ topic: String, within timeout: Duration = .seconds(20), _ predicate: @Sendable (JSON) -> Bool) async
        -> JSON?
    {
        _ = await poll(within: timeout) {
            all.last(where: { $0.topic == topic }).flatMap { try? JSON.parse($0.payload) }.map(predicate) ?? false
        }
        return all.last(where: { $0.topic == topic }).flatMap { try? JSON.parse($0.payload) }
    }
}

func entry(_ home: JSON?, _ hub: String, _ device: String) -> JSON? {
    guard case .array(let list)? = home else { return nil }
    return list.first { $0["hub"] == .string(hub) && $0["id"] == .string(device) }
}

func connectivity(_ j: JSON?) -> String {
    func s(_ v: JSON?) -> String { if case .string(let x)? = v { x } else { "?" } }
    return "\(s(j?["sourceConnectivity"]?["connectivityState"]))/\(s(j?["sourceConnectivity"]?["dataSourceLocality"]))"
}

func typeConnectivity(_ doc: JSON?, _ type: String) -> String {
    guard case .array(let types)? = doc?["types"] else { return "?" }
    return connectivity(types.first { $0["type"] == .string(type) })
}

/// Presses and releases a simulated wall switch, held until hub a has seen the press (past the switch's
/// debounce) and then until it has seen the release, so each press counts once.
func press(_ w: Watcher, hub: String = "a") async throws {
    let topic = "hearth/\(hub)/devices/hall-switch"
    _ = try await w.request("hall-switch", #""trait":"dev.hearth.simulatedSwitch","command":"press""#, hub: hub)
    let seen1 = await w.latest(topic) { attribute($0, "switch", "currentPosition") == .int(1) }
    #expect(attribute(seen1, "switch", "currentPosition") == .int(1))
    _ = try await w.request("hall-switch", #""trait":"dev.hearth.simulatedSwitch","command":"release""#, hub: hub)
    let seen0 = await w.latest(topic) { attribute($0, "switch", "currentPosition") == .int(0) }
    #expect(attribute(seen0, "switch", "currentPosition") == .int(0))
}

@Suite(.serialized) struct PeerTests {
    /// `hearthd check-config` refuses a binding whose arguments the target command would
    /// refuse (it used to accept it, and the hub dropped the argument at the first press).
    @Test(.timeLimit(.minutes(1))) func checkConfigRefusesABindingWithBadArguments() throws {
        let rig = try HomeRig()
        try rig.configure(
            "a",
            """
            devices:
              - id: hall-switch
                type: GenericSwitch
                binding: {kind: wallSwitch, pin: wall-switch-1, mode: momentary}
            bindings:
              - {from: hall-switch, to: {hub: b, device: lamp, trait: levelControl, command: moveToLevel, \
            args: {level: 300}}}
              - {from: hall-switch, to: {hub: b, device: lamp, trait: onOff, command: offWithEffect, \
            args: {effectIdentifier: dyingLite}}}
            """)
        let check = try BuiltProduct.run("hearthd", ["check-config", "\(rig.directory)/a.yaml"])
        #expect(check.status == 78)
        #expect(
            check.output.contains(
                "a.yaml:14: bindings[0].to.args.level: moveToLevel.level 300 is out of range; allowed: 0…254"),
            "\(check.output)")
        #expect(
            check.output.contains(
                "a.yaml:15: bindings[1].to.args.effectIdentifier: offWithEffect.effectIdentifier 'dyingLite' "
                    + "is not one of delayedAllOff, dyingLight"
            ))
        #expect(check.output.contains("2 problem(s)"))
    }

    @Test(.timeLimit(.minutes(1))) func twoHubsAndARemotePeerMakeOneHome() async throws {
        let rig = try HomeRig()
        // Hub a: a wall switch bound to hub b's lamp, and a bathroom fan whose humidity sensor is hub b's.
        try rig.configure("a", """
        peers:
          - {hub: b}
          - {hub: c, route: remote}
        devices:
          - id: hall-switch
            type: GenericSwitch
            binding: {kind: wallSwitch, pin: wall-switch-1, mode: momentary}
          - id: bathroom
            types:
              - type: OnOffPlugInUnit
                binding: {kind: relay, pin: relay-1}
              - type: HumiditySensor
                mirror: {hub: b, device: climate}
        bindings:
          - {from: hall-switch, to: {hub: b, device: lamp, trait: onOff, command: toggle}}
        """)
        try rig.configure("b", """
        devices:
          - id: lamp
            type: OnOffLight
            binding: {kind: relay, pin: relay-2}
          - id: climate
            type: HumiditySensor
            binding: {kind: humiditySensor, sensor: humidity-1, interval: 1s}
          - id: fan
            type: OnOffPlugInUnit
        """)
        try rig.configure("c", """
        devices:
          - id: porch
            type: OnOffLight
        """)
        let w = try await Watcher(port: rig.broker.port)
        try rig.start("a")
        // Before b is heard from, a's mirror of it is unknown/unspecified.
        let early = await w.latest("hearth/a/devices/bathroom") {
            typeConnectivity($0, "HumiditySensor") == "unknown/unspecified"
        }
        #expect(typeConnectivity(early, "HumiditySensor") == "unknown/unspecified")
        try rig.start("b")
        try rig.start("c")
        #expect(await w.waitFor(status: "online", hub: "b"))
        #expect(await w.waitFor(status: "online", hub: "c"))

        // Mirrors: b's devices localPeer, c's remote, a's own direct.
        let home = await w.latest("hearth/a/home") {
            entry($0, "b", "lamp") != nil && entry($0, "c", "porch") != nil
                && connectivity(entry($0, "b", "lamp")) == "online/localPeer"
                && connectivity(entry($0, "c", "porch")) == "online/remote"
        }
        #expect(connectivity(entry(home, "b", "lamp")) == "online/localPeer")
        #expect(connectivity(entry(home, "c", "porch")) == "online/remote")
        #expect(connectivity(entry(home, "a", "hall-switch")) == "online/direct")
        let cli = try BuiltProduct.run(
            "hearth", ["devices", "--all", "--hub", "a", "--broker", "127.0.0.1:\(rig.broker.port)"])
        #expect(cli.status == 0)
        #expect(cli.output.contains("HUB"))
        #expect(
            cli.output.split(separator: "\n").contains {
                $0.hasPrefix("b ") && $0.contains("lamp") && $0.contains("online, localPeer")
            },
            "\(cli.output)")
        #expect(cli.output.split(separator: "\n").contains { $0.hasPrefix("c ") && $0.contains("online, remote") })

        // The composite device mixes a direct relay with b's sensor.
        let bathroom = await w.latest("hearth/a/devices/bathroom") { connectivity($0) == "online/mixed" }
        #expect(connectivity(bathroom) == "online/mixed")
        #expect(typeConnectivity(bathroom, "HumiditySensor") == "online/localPeer")
        #expect(bathroom?.text.contains(#""measuredValue":"#) == true)

        // A press on a's switch toggles b's lamp.
        try await press(w)
        #expect(await w.latest("hearth/b/devices/lamp") { onOff($0) == .bool(true) }.flatMap(onOff) == .bool(true))

        // A client may talk to any hub: a forwards to b and relays b's answer.
        let forwarded = try await w.request("lamp", #""trait":"onOff","command":"off""#, hub: "a")
        #expect(forwarded?["ok"] == .bool(true))
        #expect(forwarded?["device"] == .string("lamp"))
        #expect(await w.latest("hearth/b/devices/lamp") { onOff($0) == .bool(false) }.flatMap(onOff) == .bool(false))
        // A client with a response topic (MQTT 5) is answered by the owner itself, once: b tells a so on a's
        // `answers` (DirectReply), and a publishes the answer on its `responses` without relaying it.
        try w.client.subscribe("clients/w/inbox")
        try w.client.publish(
            "hearth/a/devices/lamp/set",
            payload: Array(#"{"transaction":"direct-1","trait":"onOff","command":"on"}"#.utf8),
            qos: .atLeastOnce, responseTopic: "clients/w/inbox", correlationData: [1, 2])
        let direct = await w.first("clients/w/inbox") { $0?["transaction"] == .string("direct-1") }
        #expect(direct?.correlationData == [1, 2])
        let directAnswer = direct.flatMap { try? JSON.parse($0.payload) }
        #expect(directAnswer?["ok"] == .bool(true) && directAnswer?["device"] == .string("lamp"))
        #expect(await w.first("hearth/a/responses") { $0?["transaction"] == .string("direct-1") } != nil)
        // b's answer to a came before a's `responses` (the earlier ones on `answers` were relayed: no response topic).
        let told = w.all.last { $0.topic == "hearth/a/answers" }
        #expect(told?.userProperty("hearth-replied") == "client")
        // a's `responses` comes after anything a relays to the client (one publisher, delivered in order): nothing was.
        #expect(w.all.filter { $0.topic == "clients/w/inbox" }.count == 1)
        // The same for a device without hardware (its request runs on the owner's network thread, not in a lane).
        try w.client.publish(
            "hearth/a/devices/fan/set",
            payload: Array(#"{"transaction":"direct-2","trait":"onOff","command":"on"}"#.utf8),
            qos: .atLeastOnce, responseTopic: "clients/w/inbox")
        #expect(await w.first("hearth/a/responses") { $0?["transaction"] == .string("direct-2") } != nil)
        #expect(w.all.last { $0.topic == "hearth/a/answers" }?.userProperty("hearth-replied") == "client")
        // A remote peer (behind a bridge, which would not carry the client's topic) is never asked: a relays.
        try w.client.publish(
            "hearth/a/devices/porch/set",
            payload: Array(#"{"transaction":"relayed-1","trait":"onOff","command":"on"}"#.utf8),
            qos: .atLeastOnce, responseTopic: "clients/w/inbox")
        #expect(await w.first("hearth/a/responses") { $0?["transaction"] == .string("relayed-1") } != nil)
        #expect(w.all.last { $0.topic == "hearth/a/answers" }?.userProperties.isEmpty == true)
        #expect(w.all.filter { $0.topic == "clients/w/inbox" }.map { try? JSON.parse($0.payload)["transaction"] }
                == [.string("direct-1"), .string("direct-2"), .string("relayed-1")])
        let unknown = try await w.request("garage-door", #""trait":"onOff","command":"on""#, hub: "a")
        #expect(unknown?["error"]?["code"] == .string("notFound"))

        // kill -9 b: its will says offline; a's mirrors go offline and the binding fails fast.
        await rig.daemons["b"]?.kill()
        #expect(await w.waitFor(status: "offline", hub: "b"))
        let down = await w.latest("hearth/a/devices/bathroom") {
            connectivity($0) == "partiallyOnline/mixed" && typeConnectivity($0, "HumiditySensor") == "offline/localPeer"
        }
        #expect(connectivity(down) == "partiallyOnline/mixed")
        #expect(typeConnectivity(down, "HumiditySensor") == "offline/localPeer")
        let homeDown = await w.latest("hearth/a/home") { connectivity(entry($0, "b", "lamp")) == "offline/localPeer" }
        #expect(connectivity(entry(homeDown, "b", "lamp")) == "offline/localPeer")
        try await press(w)
        #expect(
            await eventually { rig.log("a").contains("binding hall-switch → b/lamp onOff.toggle failed: unavailable") },
            "\(rig.log("a"))")
        let refused = try await w.request("lamp", #""trait":"onOff","command":"on""#, hub: "a")
        #expect(refused?["error"]?["code"] == .string("unavailable"))

        // b is back: mirrors online again and the binding works.
        w.clear()
        try rig.start("b")
        #expect(await w.waitFor(status: "online", hub: "b"))
        let up = await w.latest("hearth/a/devices/bathroom") { connectivity($0) == "online/mixed" }
        #expect(connectivity(up) == "online/mixed")
        // (b may have restored either state: a kill -9 can come before its last change was saved.)
        let restored = await w.latest("hearth/b/devices/lamp") { onOff($0) != nil }.flatMap(onOff)
        try await press(w)
        let flipped: JSON = restored == .bool(true) ? .bool(false) : .bool(true)
        #expect(await w.latest("hearth/b/devices/lamp") { onOff($0) == flipped }.flatMap(onOff) == flipped)

        // A forwarded request is never forwarded again.
        let loop = try await w.request("nowhere", #""trait":"onOff","command":"on","forwardedBy":"x""#, hub: "a")
        #expect(loop?["error"]?["code"] == .string("notFound"))
        for hub in ["a", "b", "c"] { rig.daemons[hub]?.signal(SIGTERM) }
        for hub in ["a", "b", "c"] { #expect(await rig.daemons[hub]?.exitStatus() == 0) }
    }
}
