import HearthConfig
import HearthContract
import HearthEngine
@testable import HearthHub
import HearthJSON
import HearthMatter
import HearthMatterBridge
import HearthModel
import HearthMQTT
import HearthSync
import Testing

/// `matter: {bridge: home}`: the peers' devices fed from what the hub hears of them to the bridge (the setting
/// itself: `MatterSettingsTests`).
@Suite struct HomeBridgeTests {
    /// Hub `a` (a lamp of its own) bridging the home; peer `b` publishes its status, summary and documents.
    struct Rig {
        let home: Home
        let router: PeerRouter
        let model = DataModel(initialDataVersion: 1) { [] }
        let bridge: PeerBridge
        let feed: PeerBridgeFeed

        init() throws {
            home = try Home(devices: [DeviceConfiguration(id: "lamp", name: "Lamp", isMatterDevice: true,
                                                          types: [DeviceTypeConfiguration(.onOffLight)])],
                            clock: ManualClock())
            router = PeerRouter(home: home, topics: TopicScheme(hub: "a"), bridgesHome: true,
                                outbox: PeerOutbox(publish: { _ in }))
            bridge = PeerBridge(registry: home.registry, door: NoDoor(), dataModel: model,
                                numbers: try EndpointNumbers(storage: InMemoryNodeStorage()), log: { _ in })
            feed = PeerBridgeFeed(directory: router.directory, bridge: bridge, log: { _ in })
            feed.start()
            router.directory.linkChanged(up: true)
        }

        func send(_ topic: String, _ payload: String) {
            _ = router.handle(MQTTMessage(topic: "hearth/" + topic, payload: Array(payload.utf8), retain: true))
        }

        /// `on`: onOff's value as JSON.
        func document(_ id: String, on: String, state: String = "online") -> String {
            #"{"id":"\#(id)","name":"Light \#(id)","isMatterDevice":false,"#
                + #""sourceConnectivity":{"connectivityState":"\#(state)","dataSourceLocality":"direct"},"#
                + #""types":[{"type":"OnOffLight","deviceTypeId":256,"isPrimaryType":true,"traits":{"#
                + #""onOff":{"attributes":{"onOff":\#(on)},"commands":["off","on","toggle"]},"#
                + #""identify":{"attributes":{"identifyTime":0,"identifyType":0},"commands":["identify"]}}}]}"#
        }

        func summary(_ ids: [String]) -> String {
            "[" + ids.map { #"{"id":"\#($0)","name":"Light \#($0)","types":[{"type":"OnOffLight","deviceTypeId":256}],"#
                + #""sourceConnectivity":{"connectivityState":"online","dataSourceLocality":"direct"}}"# }
                .joined(separator: ",") + "]"
        }

        func value(_ endpoint: EndpointID, _ cluster: ClusterID, _ attribute: AttributeID) -> TLVValue? {
            let reports = model.read([AttributePath(endpoint: endpoint, cluster: cluster, attribute: attribute)],
                                     context: ReadContext(subject: .pase(), isFabricFiltered: true))
            if case .data(let data)? = reports.first { return data.data }
            return nil
        }
    }

    struct NoDoor: BridgeDoor {
        func invoke(device: String, type: String, trait: TraitID, command: String, arguments: [String: Value],
                    reply: @escaping @Sendable (Result<[String: Value]?, HomeError>) -> Void) { reply(.success(nil)) }
        func update(device: String, type: String, trait: TraitID, attributes: [String: Value],
                    reply: @escaping @Sendable (HomeError?) -> Void) { reply(nil) }
        func rename(device: String, to name: String, reply: @escaping @Sendable (HomeError?) -> Void) { reply(nil) }
    }

    @Test func aHubBridgingTheHomeListensToEveryPeersDocuments() throws {
        let rig = try Rig()
        #expect(rig.router.subscriptions.contains("hearth/+/devices/+"))
        let alone = PeerRouter(home: rig.home, topics: TopicScheme(hub: "a"), outbox: PeerOutbox(publish: { _ in }))
        #expect(!alone.subscriptions.contains("hearth/+/devices/+"))
    }

    @Test func peerDevicesAreBridgedAsTheirOwnerPublishesThem() throws {
        let rig = try Rig()
        rig.send("b/status", "online")
        rig.send("b/devices", rig.summary(["attic", "lamp"]))
        rig.send("b/devices/attic", rig.document("attic", on: "false"))
        rig.send("b/devices/lamp", rig.document("lamp", on: "true"))
        // The lamp is this hub's own: b's claim to it is not bridged.
        #expect(rig.bridge.deviceIDs == ["attic"])
        let endpoint = try #require(rig.bridge.endpoints(of: "attic")?["OnOffLight"])
        #expect(rig.value(endpoint, 0x0006, 0) == .bool(false))
        #expect(rig.value(endpoint, 0x0039, 0x0005) == .utf8("Light attic"))
        #expect(rig.value(endpoint, 0x0039, 0x0011) == .bool(true))

        rig.send("b/devices/attic", rig.document("attic", on: "true"))
        #expect(rig.value(endpoint, 0x0006, 0) == .bool(true))
        // A value this hub's descriptor refuses is left out, as a mirror leaves it.
        rig.send("b/devices/attic", rig.document("attic", on: #""yes""#))
        #expect(rig.value(endpoint, 0x0006, 0) == nil)

        // b leaves its summary without the attic: the attic leaves the bridge.
        rig.send("b/devices", rig.summary([]))
        #expect(rig.bridge.deviceIDs == [])
    }

    @Test func reachableFollowsTheOwnersConnectivity() throws {
        let rig = try Rig()
        rig.send("b/status", "online")
        rig.send("b/devices", rig.summary(["attic"]))
        rig.send("b/devices/attic", rig.document("attic", on: "false"))
        let endpoint = try #require(rig.bridge.endpoints(of: "attic")?["OnOffLight"])
        #expect(rig.value(endpoint, 0x0039, 0x0011) == .bool(true))
        // The owner's will: gone.
        rig.send("b/status", "offline")
        #expect(rig.value(endpoint, 0x0039, 0x0011) == .bool(false))
        rig.send("b/status", "online")
        #expect(rig.value(endpoint, 0x0039, 0x0011) == .bool(true))
        // The device itself offline on its hub.
        rig.send("b/devices/attic", rig.document("attic", on: "false", state: "offline"))
        #expect(rig.value(endpoint, 0x0039, 0x0011) == .bool(false))
        // Our own link down: nothing of any peer can be reached.
        rig.send("b/devices/attic", rig.document("attic", on: "false"))
        rig.router.directory.linkChanged(up: false)
        #expect(rig.value(endpoint, 0x0039, 0x0011) == .bool(false))
    }

    @Test func aDeviceTwoPeersListIsNotBridged() throws {
        let rig = try Rig()
        for hub in ["b", "c"] {
            rig.send("\(hub)/status", "online")
            rig.send("\(hub)/devices/attic", rig.document("attic", on: "false"))
        }
        rig.send("b/devices", rig.summary(["attic"]))
        #expect(rig.bridge.deviceIDs == ["attic"])
        rig.send("c/devices", rig.summary(["attic"]))
        #expect(rig.bridge.deviceIDs == [])
        rig.send("b/devices", rig.summary([]))
        #expect(rig.bridge.deviceIDs == ["attic"])
    }
}

/// What the bridge's door sends for a peer's device is the request an MQTT client would send: forwarded as it is,
/// the owner reads back the same action.
@Suite struct BridgeDoorRequestTests {
    @Test(arguments: [
        HubRequest.Action.command(type: "OnOffLight", trait: "onOff", name: "toggle", arguments: .object([])),
        .command(type: nil, trait: "levelControl", name: "moveToLevel",
                 arguments: .object([("level", .int(40)), ("transitionTime", .null)])),
        .update(type: "DimmableLight", trait: "levelControl", attributes: .object([("onLevel", .int(9))])),
        .setName("Loft light"), .setRoom("attic"), .setRoom(nil), .setStructure("home"), .get,
    ])
    func theRequestReadsBackAsTheSameAction(action: HubRequest.Action) throws {
        var bytes: [UInt8] = []
        MQTTBridgeDoor.request(action).json.write(to: &bytes)
        let parsed = try HubRequest.parse(bytes).result.get()
        #expect(parsed.action == action)
    }
}
