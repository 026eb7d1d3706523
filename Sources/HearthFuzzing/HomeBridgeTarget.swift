import HearthContract
import HearthEngine
import HearthHub
import HearthJSON
import HearthMatter
import HearthMatterBridge
import HearthModel
import HearthMQTT

/// What peer hubs publish, as the Matter bridge of a hub that bridges the whole home (`matter: {bridge: home}`) shows
/// it: hub `a` (the fixture's devices) with its router's peer devices fed to a `PeerBridge` on a data model.
///
/// Input: one message per line, `TOPIC PAYLOAD` (`hearth/b/devices/attic {"types":[…]}`), as `PeerTarget` reads
/// them; `~` drops hub a's own broker link, or brings it back. The promises, after every line: the bridged peer
/// devices are devices some peer's summary lists, never one of `a`'s own; every bridged endpoint is a child of the
/// aggregator or of a bridged node; a wildcard read of the whole node answers every path with a value or a status
/// (never a crash), and each value is TLV that reads back; a device's Reachable is false while its owner is not
/// online or a's link is down.
enum HomeBridgeTarget {
    static func run(_ bytes: [UInt8]) throws(FuzzFailure) {
        let home: Home
        do throws(HomeError) {
            home = try Home(devices: HomeFixture.configurations(relay: FlakyActuator(), dimmer: FlakyActuator()),
                            clock: ManualClock(), registry: HomeFixture.registry)
        } catch {
            throw FuzzFailure("the fixture cannot be built: \(error)")
        }
        let router = PeerRouter(home: home, topics: TopicScheme(hub: "a"), bridgesHome: true,
                                outbox: PeerOutbox(publish: { _ in }))
        let model = DataModel(initialDataVersion: 1) { [] }
        model.addEndpoint(EndpointDefinition(id: 0, deviceTypes: [.rootNode], clusters: []))
        model.addEndpoint(EndpointDefinition(id: EndpointNumbers.aggregator, deviceTypes: [.aggregator], clusters: []))
        let bridge: PeerBridge
        do {
            bridge = PeerBridge(registry: home.registry, door: RefusingDoor(), dataModel: model,
                                numbers: try EndpointNumbers(storage: InMemoryNodeStorage()), log: { _ in })
        } catch {
            throw FuzzFailure("the endpoint table cannot be made: \(error)")
        }
        router.feedBridge(bridge, log: { _ in })
        var linkUp = true
        router.linkChanged(up: true)
        var status: [String: String] = [:]

        for line in lines(bytes) {
            if line.first == UInt8(ascii: "~") {
                linkUp.toggle()
                router.linkChanged(up: linkUp)
            } else {
                let (topic, payload) = word(line)
                let message = MQTTMessage(topic: topic, payload: payload, retain: true)
                _ = router.handle(message)
                if case .status(let hub)? = router.topics.classify(topic) {
                    status[hub] = String(decoding: payload, as: UTF8.self)
                }
            }
            try check(bridge, model: model, home: home, router: router, status: status, linkUp: linkUp)
        }
    }

    private static func check(_ bridge: PeerBridge, model: DataModel, home: Home, router: PeerRouter,
                              status: [String: String], linkUp: Bool) throws(FuzzFailure) {
        let document = router.homeDocument()
        var listed: [String: String] = [:]
        if case .array(let entries) = document {
            for entry in entries {
                if case .string(let id)? = entry["id"], case .string(let hub)? = entry["hub"], hub != "a" {
                    listed[id] = hub
                }
            }
        }
        for id in bridge.deviceIDs {
            try require(!home.contains(id), "a's own device '\(id)' is bridged as a peer's")
            try require(listed[id] != nil, "'\(id)' is bridged but no peer's summary lists it")
            guard let primary = bridge.endpoints(of: id)?.values.min() else {
                throw FuzzFailure("'\(id)' is bridged with no endpoint")
            }
            let reports = model.read([AttributePath(endpoint: primary, cluster: 0x0039, attribute: 0x0011)],
                                     context: ReadContext(subject: .pase(), isFabricFiltered: true))
            if let owner = listed[id], !linkUp || status[owner] != "online", case .data(let data)? = reports.first {
                try require(data.data == .bool(false),
                            "'\(id)' is Reachable while its owner '\(owner)' is \(status[owner] ?? "unheard of") "
                            + "and the link is \(linkUp ? "up" : "down")")
            }
        }
        let ids = Set(model.endpointIDs)
        for endpoint in ids where endpoint > EndpointNumbers.aggregator {
            let parts = model.read([AttributePath(endpoint: 0, cluster: 0x001D, attribute: 0x0003)],
                                   context: ReadContext(subject: .pase(), isFabricFiltered: true))
            guard case .data(let data)? = parts.first, case .array(let items) = data.data else {
                throw FuzzFailure("the root's PartsList cannot be read")
            }
            try require(
                items.contains { $0.unsignedValue == UInt64(endpoint) },
                "endpoint \(endpoint) is not a part of the node")
        }
        for report in model.read([AttributePath()], context: ReadContext(subject: .pase(), isFabricFiltered: true)) {
            guard case .data(let data) = report else { continue }
            let element = TLVElement(data.data)
            let bytes = element.encoded()
            try require((try? TLVElement(decoding: bytes)) == element, "a bridged value does not read back: \(element)")
        }
    }

    /// The fuzzer exercises reading; a command would go to the owner, which is not here.
    private struct RefusingDoor: BridgeDoor {
        func invoke(device: String, type: String, trait: TraitID, command: String, arguments: [String: Value],
                    reply: @escaping @Sendable (Result<[String: Value]?, HomeError>) -> Void) {
            reply(.failure(.unavailable("no owner in the fuzzer")))
        }
        func update(device: String, type: String, trait: TraitID, attributes: [String: Value],
                    reply: @escaping @Sendable (HomeError?) -> Void) { reply(.unavailable("no owner in the fuzzer")) }
        func rename(device: String, to name: String, reply: @escaping @Sendable (HomeError?) -> Void) {
            reply(.unavailable("no owner in the fuzzer"))
        }
    }
}
