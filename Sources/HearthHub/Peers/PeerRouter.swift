public import HearthContract
public import HearthJSON
package import HearthMQTT
public import HearthEngine
package import HearthModel

/// Makes several hubs on one broker one home (`docs/peer-routing.md`): the face `MQTTHub` talks to, which
/// sorts peer messages to the three parts that do the work.
///
/// - `PeerDirectory`: which peers are online, their documents, mirrored traits, the whole-home document.
/// - `PeerForwarder`: requests for a peer's device sent to the owner, its answer relayed, with deadlines.
/// - `PeerBindings`: a local switch's events as commands on any hub.
///
/// Everything crosses the broker as the public topic contract, so peers may sit behind bridges or a
/// clustered broker; nothing here assumes one broker or one hub.
public final class PeerRouter: Sendable {
    public let home: Home
    public let topics: TopicScheme
    let outbox: PeerOutbox
    let directory: PeerDirectory
    let forwarder: PeerForwarder
    let bindings: PeerBindings

    /// - Parameters:
    ///   - timeout: how long a forwarded request or a binding's command waits for the owner's answer.
    ///   - clock: keeps those deadlines and the whole-home document's publication window; the home's clock unless given.
    ///   - outbox: where messages go; `attach` connects the hub's client to it.
    ///   - publicationWindow: milliseconds on `clock`: the whole-home document goes out once no change came for
    ///     this long (at the latest a second after the first), always the newest (`PublicationThrottle`).
    public init(home: Home, topics: TopicScheme, peers: [PeerConfiguration] = [], mirrors: [MirrorRoute] = [],
                bindings: [PeerBinding] = [], timeout: Duration = .seconds(3), clock: (any EngineClock)? = nil,
                publicationWindow: Int64 = PublicationThrottle.defaultSettleWindow,
                outbox: PeerOutbox = PeerOutbox(), log: @escaping @Sendable (String) -> Void = { _ in }) {
        self.home = home
        self.topics = topics
        self.outbox = outbox
        directory = PeerDirectory(home: home, topics: topics, peers: peers, mirrors: mirrors, outbox: outbox,
                                  clock: clock, publicationWindow: publicationWindow, log: log)
        forwarder = PeerForwarder(home: home, topics: topics, directory: directory, outbox: outbox,
                                  clock: clock ?? home.clock, timeout: timeout)
        self.bindings = PeerBindings(home: home, hub: topics.hub, bindings: bindings, forwarder: forwarder, log: log)
    }

    /// Where the whole home (local devices and every peer's) is published, retained.
    public var homeTopic: String { directory.homeTopic }

    // MARK: Wiring (called by MQTTHub)

    func attach(_ client: MQTTClient) throws(MQTTError) {
        outbox.connect(to: client)
        // No-local: a hub's own documents must not come back to it. Besides the wasted work, the broker
        // would hold the next request behind them (Nagle on its side, a delayed ACK on ours: 40 ms).
        for filter in subscriptions {
            try client.subscribe(filter, options: MQTTSubscriptionOptions(qos: .atLeastOnce, noLocal: true))
        }
        bindings.start()
    }

    /// What this hub listens to of its peers: only what it uses, so that a state change on one hub costs the
    /// others nothing unless they mirror that device (docs/peer-routing.md, "What a hub listens to"). Every
    /// peer's status and summary (presence, owners, the whole-home document); the documents of the devices this
    /// hub mirrors; the answers to the requests it forwards, on its own `answers` topic.
    var subscriptions: [String] {
        let p = topics.prefix
        var mirrored: [String] = []
        for m in directory.mirrors {
            let topic = "\(p)/\(m.peerHub)/devices/\(m.peerDevice)"
            if !mirrored.contains(topic) { mirrored.append(topic) }
        }
        return ["\(p)/+/status", "\(p)/+/devices"] + mirrored + [topics.answers]
    }

    /// The broker accepted our connection with `version`. Over MQTT 3.1.1 there is no response topic, so the
    /// owners' answers come only on their `responses` topics: listen to every hub's.
    package func connected(_ version: MQTTProtocolVersion, client: MQTTClient) {
        guard version != .v5 else { return }
        try? client.subscribe("\(topics.prefix)/+/responses", options: MQTTSubscriptionOptions(qos: .atLeastOnce))
    }

    /// Our own broker link went up or down: every mirror follows.
    package func linkChanged(up: Bool) { directory.linkChanged(up: up) }

    /// Takes a peer's message; returns false when it is not one.
    package func handle(_ message: MQTTMessage) -> Bool {
        // This hub's own topics (its requests, above all) are not a peer's: told apart without allocating.
        if let own = topics.ownRemainder(message.topic) {
            guard own.elementsEqual("answers".utf8) else { return false }
            forwarder.answered(by: nil, message.payload, repliedToClient: DirectReply.saysAnswered(message))
            return true
        }
        guard let parts = topics.levels(of: message.topic, maxSplits: 3), parts.count >= 2,
              !parts[0].elementsEqual(topics.hub.utf8) else { return false }
        let hub = String(Substring(parts[0]))
        switch (parts.count, Substring(parts[1])) {
        case (2, "status"):
            if directory.statusChanged(hub: hub, payload: message.payload) != .online { forwarder.ownerWentOffline(hub) }
        case (2, "devices"):
            directory.summaryChanged(hub: hub, payload: message.payload)
        case (3, "devices"):
            directory.documentChanged(hub: hub, device: String(Substring(parts[2])), payload: message.payload)
        case (2, "responses"):
            forwarder.answered(by: hub, message.payload)
        default:
            return false  // e.g. another hub's requests
        }
        return true
    }

    /// Where a request must go when this hub does not own what it addresses (`PeerForwarder.target`).
    package func target(of request: HubRequest, device: String) -> (owner: String, device: String, request: JSON)? {
        forwarder.target(of: request, device: device)
    }

    /// Sends a client's request to its owner (`PeerForwarder.forward`); nil when it is on its way.
    package func forward(_ request: JSON, transaction: JSON, device: String, to owner: String, ownerDevice: String,
                 responseTopic: String?, correlationData: [UInt8]?) -> HomeError? {
        forwarder.forward(request, transaction: transaction, device: device, to: owner, ownerDevice: ownerDevice,
                          responseTopic: responseTopic, correlationData: correlationData)
    }

    /// Local devices and every peer's, each with its hub and how this hub sees it.
    public func homeDocument() -> JSON { directory.homeDocument() }

    func publishHome() { directory.publishHome() }

    /// Publishes the whole-home document now if a change is held for the end of its window (a clean stop).
    package func flush() { directory.flushHome() }

    /// How many whole-home documents this hub has published.
    public var homePublications: Int { directory.homeThrottle.publications }

    package func fireBindings(_ events: [HomeEvent]) { bindings.fireBindings(events) }

    /// Keeps the deadlines of requests sent to peers until cancelled.
    public func run() async { await forwarder.run() }
}
