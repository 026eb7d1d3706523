public import HearthContract
public import HearthJSON
package import HearthMQTT
public import HearthEngine
package import HearthModel
package import HearthMatterBridge

/// Makes several hubs on one broker one home (`docs/peer-routing.md`): the face `MQTTHub` talks to, which
/// sorts peer messages to the three parts that do the work.
///
/// - `PeerDirectory`: which peers are online, their documents, mirrored traits, the whole-home document.
/// - `PeerForwarder`: requests for a peer's device sent to the owner, its answer relayed, with deadlines.
/// - `PeerBindings`: a local switch's events as commands on any hub.
///
/// Everything crosses the broker as the public topic contract, so peers may sit behind bridges or a
/// clustered broker; nothing here assumes one broker or one hub. A peer across a bridge (`route: remote`) is also
/// watched by its heartbeat (`Heartbeat`): a cut between two brokers delivers no last will to the other side.
public final class PeerRouter: Sendable {
    public let home: Home
    public let topics: TopicScheme
    let outbox: PeerOutbox
    let directory: PeerDirectory
    let forwarder: PeerForwarder
    let bindings: PeerBindings
    /// What this hub says on its heartbeat topic, every `interval` seconds; nil: it sends none (and clears any it
    /// sent).
    let heartbeat: Heartbeat?
    /// The peers across a bridge, whose heartbeats this hub listens to.
    let remotePeers: [String]

    /// - Parameters:
    ///   - bridgesHome: this hub's Matter bridge shows every peer's devices (`matter.bridge: home`): it listens to
    ///     every peer's device documents and keeps them.
    ///   - timeout: how long a forwarded request or a binding's command waits for the answer of an owner on this broker
    ///     (a peer's own `timeout`, or `PeerConfiguration.defaultRemoteTimeout` across a bridge, wins).
    ///   - heartbeat: this hub's heartbeat, for the hubs that see it across a bridge; nil for none.
    ///   - clock: keeps those deadlines and the whole-home document's publication window; the home's clock unless
    ///     given.
    ///   - outbox: where messages go; `attach` connects the hub's client to it.
    ///   - publicationWindow: milliseconds on `clock`: the whole-home document goes out once no change came for
    ///     this long (at the latest a second after the first), always the newest (`PublicationThrottle`).
    public init(home: Home, topics: TopicScheme, peers: [PeerConfiguration] = [], mirrors: [MirrorRoute] = [],
                bindings: [PeerBinding] = [], bridgesHome: Bool = false,
                timeout: Duration = PeerConfiguration.defaultTimeout,
                heartbeat: Heartbeat? = nil, clock: (any EngineClock)? = nil,
                publicationWindow: Int64 = PublicationThrottle.defaultSettleWindow,
                outbox: PeerOutbox = PeerOutbox(), log: @escaping @Sendable (String) -> Void = { _ in }) {
        self.home = home
        self.topics = topics
        self.outbox = outbox
        self.heartbeat = heartbeat
        var remote: [String] = []
        for p in peers where p.route == .remote && !remote.contains(p.hub) && p.hub != topics.hub {
            remote.append(p.hub)
        }
        remotePeers = remote
        directory = PeerDirectory(home: home, topics: topics, peers: peers, mirrors: mirrors,
                                  keepsEveryDocument: bridgesHome, outbox: outbox,
                                  clock: clock, publicationWindow: publicationWindow, log: log)
        forwarder = PeerForwarder(home: home, topics: topics, directory: directory, outbox: outbox,
                                  clock: clock ?? home.clock, timeout: timeout, peers: peers)
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
    /// hub mirrors (every peer's when it bridges the whole home); the answers to the requests it forwards, on its own
    /// `answers` topic; the heartbeats of the peers across a bridge.
    var subscriptions: [String] {
        if directory.keepsEveryDocument {
            return [topics.statusFilter, topics.summaryFilter, topics.documentFilter, topics.answers]
                + remotePeers.map { topics.topic(.heartbeat(hub: $0)) }
        }
        var mirrored: [String] = []
        for m in directory.mirrors {
            let topic = topics.topic(.document(hub: m.peerHub, device: m.peerDevice))
            if !mirrored.contains(topic) { mirrored.append(topic) }
        }
        return [topics.statusFilter, topics.summaryFilter] + mirrored + [topics.answers]
            + remotePeers.map { topics.topic(.heartbeat(hub: $0)) }
    }

    /// The broker accepted our connection with `version`. Over MQTT 3.1.1 there is no response topic, so the
    /// owners' answers come only on their `responses` topics: listen to every hub's.
    package func connected(_ version: MQTTProtocolVersion, client: MQTTClient) {
        guard version != .v5 else { return }
        try? client.subscribe(topics.responsesFilter, options: MQTTSubscriptionOptions(qos: .atLeastOnce))
    }

    /// Our own broker link went up or down: every mirror follows. Up, this hub's heartbeat goes out at once (after
    /// `online`), or an empty one clears what an earlier configuration of this hub left retained, so that no peer waits
    /// for heartbeats that will not come.
    package func linkChanged(up: Bool) {
        if up { sendHeartbeat(clearing: true) }
        directory.linkChanged(up: up)
    }

    /// Publishes this hub's heartbeat, retained (or, when `clearing` and it sends none, the empty one that clears it).
    func sendHeartbeat(clearing: Bool = false) {
        guard heartbeat != nil || clearing else { return }
        try? outbox.publish(PeerOutbox.Message(topic: topics.heartbeat, payload: heartbeat?.bytes ?? [], retain: true))
    }

    /// Takes a peer's message; returns false when it is not one.
    package func handle(_ message: MQTTMessage) -> Bool {
        handle(message, as: topics.classify(message.topic))
    }

    /// Takes a peer's message whose topic `MQTTHub` has read as `topic`; returns false when it is not one.
    package func handle(_ message: MQTTMessage, as topic: HubTopic?) -> Bool {
        guard let topic, let hub = topic.hub else { return false }
        // This hub's own topics (its requests, above all) are not a peer's: only the answers to what it forwarded.
        guard !topics.isThisHub(hub) else {
            guard case .answers = topic else { return false }
            forwarder.answered(by: nil, message.payload, repliedToClient: DirectReply.saysAnswered(message))
            return true
        }
        switch topic {
        case .status:
            if directory.statusChanged(hub: hub, payload: message.payload, retained: message.retain) != .online {
                forwarder.ownerWentOffline(hub)
            }
        case .heartbeat:
            directory.heartbeatChanged(hub: hub, payload: message.payload, retained: message.retain)
        case .summary:
            directory.summaryChanged(hub: hub, payload: message.payload)
        case .document(_, let device):
            directory.documentChanged(hub: hub, device: device, payload: message.payload)
        case .responses:
            forwarder.answered(by: hub, message.payload)
        case .set, .setWithoutDevice, .events, .answers, .home, .groups, .discoverySync, .groupSet:
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

    /// Keeps `bridge` (the Matter bridge's peer devices, `matter.bridge: home`) as this hub sees its peers, from now on
    /// (`PeerBridgeFeed`); the router must have been made with `bridgesHome`, or it has no peer documents to show.
    package func feedBridge(_ bridge: PeerBridge, log: @escaping @Sendable (String) -> Void) {
        PeerBridgeFeed(directory: directory, bridge: bridge, log: log).start()
    }

    /// Local devices and every peer's, each with its hub and how this hub sees it.
    public func homeDocument() -> JSON { directory.homeDocument() }

    func publishHome() { directory.publishHome() }

    /// Publishes the whole-home document now if a change is held for the end of its window (a clean stop).
    package func flush() { directory.flushHome() }

    /// How many whole-home documents this hub has published.
    public var homePublications: Int { directory.homeThrottle.publications }

    package func fireBindings(_ events: [HomeEvent]) { bindings.fireBindings(events) }

    /// Keeps the deadlines of requests sent to peers until cancelled; with peers across a bridge or a heartbeat, their
    /// liveness and this hub's heartbeat too.
    public func run() async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.forwarder.run() }
            if heartbeat != nil || !remotePeers.isEmpty { group.addTask { await self.keepLiveness() } }
        }
    }

    /// One loop, one timer: sends this hub's heartbeat every interval while connected, and marks a peer across a bridge
    /// offline once it is silent past its bound (`PeerDirectory.silenceDue`), failing the requests that wait on it.
    /// Why one: an idle hub's cost is its wake-ups (each a few thread switches), and a peer that is heard from keeps
    /// its silence deadline past this hub's next beat, so the beats are the only wakes. A coarse timer: a beat a little
    /// late is harmless, a peer's bound being two of its intervals.
    private func keepLiveness() async {
        let clock = directory.clock
        let beat = heartbeat.map { Int64($0.interval) * 1000 }
        var nextBeat = beat.map { clock.now + $0 }
        while !Task.isCancelled {
            expireSilentPeers()
            if let beat, let due = nextBeat, clock.now >= due {
                if outbox.isConnected { sendHeartbeat() }
                nextBeat = clock.now + beat
            }
            let until = [nextBeat, directory.nextSilenceDeadline()].compactMap { $0 }.min()
            await directory.livenessWaker.wait(until: until, clock: clock)
        }
    }

    /// Marks every peer silent past its bound offline now, and fails the requests waiting on it (what the liveness
    /// loop does at each deadline).
    package func expireSilentPeers() {
        for hub in directory.silenceDue() { forwarder.ownerWentOffline(hub) }
    }

}
