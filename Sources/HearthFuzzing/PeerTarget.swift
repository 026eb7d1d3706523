import HearthContract
import HearthEngine
import HearthHub
import HearthJSON
import HearthModel
import HearthMQTT
import HearthSync

/// What other hubs on the broker publish, as hub `a` takes it (`PeerRouter.handle`, `docs/peer-routing.md`):
/// status, device summaries, device documents (mirrored into `combo`'s HumiditySensor and `desk`'s DimmableLight,
/// from hub `b`), answers to requests `a` forwarded, and the heartbeats of hub `c`, across a bridge.
///
/// Input: one message per line, `TOPIC PAYLOAD` (`hearth/b/status online`), retained as read on subscribing, or live
/// with a leading `!` (`!hearth/c/heartbeat {"interval":1}`); `>DEVICE JSON` is a client's request to hub `a`,
/// forwarded as the hub forwards it when a peer owns the device; `*` presses the hall switch, whose binding sends a
/// command to hub `b`; `~` drops hub a's own broker link, or brings it back; `+` lets a second pass (a silent remote
/// peer goes offline). The promises, after every line: a peer, however hostile or broken, changes
/// nothing of `a`'s own devices (only the mirrored types follow it); every value in `a` is one its descriptor
/// allows and documents are exact (`HomeFixture.Checker`); everything `a` publishes — the whole-home document,
/// forwarded requests, relayed answers — is JSON that HearthJSON (and so every Hearth client) reads back; a
/// relayed answer carries the client's own transaction and device.
enum PeerTarget {
    static let mirrors = [
        MirrorRoute(localDevice: "combo", localType: "HumiditySensor", peerHub: "b", peerDevice: "climate",
                    peerType: "HumiditySensor"),
        MirrorRoute(localDevice: "desk", localType: "DimmableLight", peerHub: "b", peerDevice: "desk-lamp",
                    peerType: "DimmableLight"),
    ]

    static func run(_ bytes: [UInt8]) throws(FuzzFailure) {
        let clock = ManualClock()
        let relay = FlakyActuator(), dimmer = FlakyActuator()
        let home: Home
        do throws(HomeError) {
            home = try Home(devices: HomeFixture.configurations(relay: relay, dimmer: dimmer) + [
                DeviceConfiguration(id: "desk", name: "Desk lamp (hub b's)", types: [
                    DeviceTypeConfiguration(.dimmableLight, isMirrored: true),
                ]),
            ], clock: clock, registry: HomeFixture.registry)
        } catch {
            throw FuzzFailure("the peer fixture cannot be built: \(error)")
        }
        let sent = Sent()
        let router = PeerRouter(
            home: home, topics: TopicScheme(hub: "a"),
            peers: [PeerConfiguration(hub: "b"), PeerConfiguration(hub: "c", route: .remote)], mirrors: mirrors,
            bindings: [PeerBinding(from: "hall", hub: "b", device: "desk-lamp", trait: "onOff", command: "toggle")],
            clock: clock, outbox: PeerOutbox(publish: { sent.append($0) }))
        router.linkChanged(up: true)
        let observer = home.observe { router.fireBindings($0) }  // as `PeerRouter.attach` starts the bindings
        defer { home.removeObserver(observer) }
        var linkUp = true
        var checker = HomeFixture.Checker()
        var clientRequests: [(transaction: JSON, device: String)] = []
        var lastWhole: [UInt8] = []

        for line in lines(bytes) {
            let own = ownState(home)
            let firstSent = sent.count
            var changesOwnState = false
            if line.first == UInt8(ascii: "~") {
                linkUp.toggle()
                router.linkChanged(up: linkUp)
            } else if line.first == UInt8(ascii: "+") {
                clock.advance(by: 1_000)
                router.expireSilentPeers()
            } else if line.first == UInt8(ascii: "*") {
                changesOwnState = true
                _ = try? home.ingest("hall", trait: "switch", .switchPosition(1))
                _ = try? home.ingest("hall", trait: "switch", .switchPosition(0))
            } else if line.first == UInt8(ascii: ">") {
                let (device, payload) = word(line.dropFirst())
                let (transaction, parsed) = HubRequest.parse(payload)
                if case .success(let request) = parsed, let target = router.target(of: request, device: device) {
                    clientRequests.append((transaction, device))
                    _ = router.forward(target.request, transaction: transaction, device: device, to: target.owner,
                                       ownerDevice: target.device, responseTopic: nil, correlationData: nil)
                }
            } else {
                let live = line.first == UInt8(ascii: "!")
                let (topic, payload) = word(live ? line.dropFirst() : line)
                _ = router.handle(MQTTMessage(topic: topic, payload: payload, retain: !live))
            }
            home.drainLanes()

            if !changesOwnState {
                try require(ownState(home) == own, "a peer's message changed hub a's own devices: \(shown(line))")
            }
            try checker.check(home)
            let whole = router.homeDocument().bytes
            if whole != lastWhole {
                try HomeFixture.requireJSON(whole, "the whole-home document")
                lastWhole = whole
            }
            // Status and heartbeat are not JSON documents (`online`, and the empty heartbeat that clears one).
            for message in sent.since(firstSent) {
                let topic = router.topics.classify(message.topic)
                if case .status? = topic { continue }
                if topic == .heartbeat(hub: "a") && message.payload.isEmpty { continue }
                let json = try HomeFixture.requireJSON(message.payload, "what hub a published on \(message.topic)")
                if topic == .responses(hub: "a") {
                    try require(
                        clientRequests.contains {
                            json["transaction"] == $0.transaction && json["device"] == .string($0.device)
                        },
                        "a relayed answer is not for any client request: \(json.text)")
                }
                if case .set? = topic {
                    try require(
                        json["forwardedBy"] == .string("a"), "a forwarded request without forwardedBy: \(json.text)")
                    guard case .success = HubRequest.parse(message.payload).result else {
                        throw FuzzFailure("hub a forwarded a request its owner would refuse as malformed: \(json.text)")
                    }
                }
            }
        }
    }

    /// Hub a's own devices and the local type of the composite device: what no peer may change. (The composite
    /// device's own connectivity is its parts' together, so it follows the mirrored part: left out.)
    static func ownState(_ home: Home) -> [HomeDevice] {
        home.list().filter { $0.id != "desk" }.map { d in
            var own = d
            own.types = d.types.filter { t in
                !mirrors.contains { $0.localDevice == d.id && $0.localType == t.descriptor.name }
            }
            if own.types.count != d.types.count { own.sourceConnectivity = .notHeardFrom }
            return own
        }
    }
}

/// What hub a published, in order.
final class Sent: Sendable {
    private let messages = Locked<[PeerOutbox.Message]>([])
    func append(_ m: PeerOutbox.Message) { messages.withLock { $0.append(m) } }
    var count: Int { messages.withLock { $0.count } }
    func since(_ start: Int) -> [PeerOutbox.Message] { messages.withLock { Array($0[start...]) } }
}
