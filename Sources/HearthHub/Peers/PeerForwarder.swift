public import HearthContract
import HearthJSON
public import HearthEngine
import HearthMQTT
import HearthModel
import HearthSync

/// Sends requests to the hub that owns a device and waits for its answer, with a deadline on the engine's
/// clock: a client's request is relayed back with the client's transaction, a binding's command reports to
/// its binding.
///
/// Nothing here blocks: `forward` and `send` publish and return (the answer arrives later through
/// `answered`, on the thread that delivers MQTT messages), and deadlines are kept by `run`, a task of its
/// own that sleeps on the clock. A request for an owner that is offline is not sent (`unavailable`); one waiting on an
/// owner that goes offline ends at once (`deadlineExceeded`: it was sent, and may have run);
/// one that is not answered in time fails with `timeout` (`deadlineExceeded`), whose message says that it may have run:
/// the owner may have run it and its answer been lost on the way back.
public final class PeerForwarder: Sendable {
    /// How a request sent to a peer ended.
    enum Outcome: Sendable {
        /// The owner's response, as it sent it; `repliedToClient` when the owner has also answered the client itself
        /// (`DirectReply`).
        case answered(JSON, repliedToClient: Bool)
        /// No answer: the owner went offline (`unavailable`) or the deadline passed (`timeout`).
        case failed(HomeError)
    }

    struct Pending {
        var owner: String
        var deadline: EngineInstant
        var timeout: Duration
        var transaction: String
        var completion: @Sendable (Outcome, _ transaction: String) -> Void
    }

    struct State {
        var pending: [String: Pending] = [:]
        var counter = 0
        /// The deadline `run` sleeps until; nil while it sleeps without one (or has not started).
        var sleepingUntil: EngineInstant?
    }

    public let home: Home
    public let topics: TopicScheme
    let directory: PeerDirectory
    let outbox: PeerOutbox
    let clock: any EngineClock
    /// How long a request waits for a hub on this broker's answer, unless its peer's configuration says otherwise.
    let timeout: Duration
    /// The peers' own deadlines: configured, or the remote default for a hub across a bridge.
    let timeouts: [String: Duration]
    private let state = Locked(State())
    /// Wakes `run` when a request starts waiting and `run` does not already sleep until an earlier deadline
    /// (with one timeout for every request, a request sent while others wait never needs it: one wake per
    /// timeout at most, not one per request); idle, nothing wakes at all.
    private let waker = DeadlineWaker()

    public init(home: Home, topics: TopicScheme, directory: PeerDirectory, outbox: PeerOutbox,
                clock: any EngineClock, timeout: Duration = PeerConfiguration.defaultTimeout,
                peers: [PeerConfiguration] = []) {
        self.home = home
        self.topics = topics
        self.directory = directory
        self.outbox = outbox
        self.clock = clock
        self.timeout = timeout
        var timeouts: [String: Duration] = [:]
        for p in peers where timeouts[p.hub] == nil {
            if let t = p.timeout ?? (p.route == .remote ? PeerConfiguration.defaultRemoteTimeout : nil) {
                timeouts[p.hub] = t
            }
        }
        self.timeouts = timeouts
    }

    /// How long a request sent to `owner` waits for its answer.
    func timeout(for owner: String) -> Duration { timeouts[owner] ?? timeout }

    /// The longest answer read: a response is a few hundred bytes, and a request may be at most 64 KiB.
    static let maximumAnswerBytes = 64 * 1024

    private static func milliseconds(_ d: Duration) -> Int64 {
        d.components.seconds * 1000 + d.components.attoseconds / 1_000_000_000_000_000
    }

    // MARK: Owner lookup

    /// Where a request must go when this hub does not own what it addresses: a peer's device, or the
    /// mirrored type of a composite device. Nil when it is this hub's to run.
    func target(of request: HubRequest, device: String) -> (owner: String, device: String, request: JSON)? {
        guard request.forwardedBy == nil else { return nil }  // a forwarded request is never forwarded again
        guard home.contains(device) else {
            return directory.owner(of: device).map { ($0, device, request.json) }
        }
        // Most devices are wholly this hub's: no snapshot on the command path for them.
        guard directory.hasMirror(device), let local = try? home.device(device) else { return nil }
        let type: String?, trait: String
        switch request.action {
        case .command(let t, let tr, _, _), .update(let t, let tr, _): (type, trait) = (t, tr)
        default: return nil
        }
        let id = TraitID(qualifiedName: trait)
        let candidates = local.types.filter { ($0.descriptor.name == type || type == nil) && $0.trait(id) != nil }
        guard candidates.count == 1, let m = directory.mirror(of: device, type: candidates[0].descriptor.name) else {
            return nil
        }
        guard case .object(var members) = request.json else { return nil }
        members.removeAll { $0.key == "type" }
        members.append(("type", .string(m.peerType)))
        return (m.peerHub, m.peerDevice, .object(members))
    }

    // MARK: Sending

    /// Sends a client's request to the hub that owns the device and relays its answer. Returns the error
    /// to answer with at once, or nil when the request is on its way.
    ///
    /// A client that gave a response topic (MQTT 5) is answered by an owner on this broker itself (`DirectReply`);
    /// this hub then publishes the answer on its `responses` topic only, and relays it when the owner did not answer
    /// the client.
    func forward(_ request: JSON, transaction: JSON, device: String, to owner: String, ownerDevice: String,
                 responseTopic: String?, correlationData: [UInt8]?) -> HomeError? {
        // Only an owner on this broker: a bridge (`route: remote`) carries the hubs' topics, not the client's.
        let direct = directory.route(owner) == .local ? responseTopic.map {
            DirectReply(topic: $0, correlationData: correlationData, transaction: transaction, device: device)
        } : nil
        return send(request, to: owner, device: ownerDevice, directReply: direct) { [weak self] outcome, _ in
            guard let self else { return }
            let response: JSON, repliedToClient: Bool
            switch outcome {
            case .answered(let answer, let replied):
                guard case .object = answer else { return }
                // The client's transaction and device name, whatever the owner calls them: a client matches the
                // answer by them.
                response = DirectReply.clientResponse(answer, transaction: transaction, device: device)
                repliedToClient = replied
            case .failed(let error):
                response = HubResponse.failure(transaction: transaction, device: device, error)
                repliedToClient = false
            }
            reply(response, responseTopic: repliedToClient ? nil : responseTopic, correlationData: correlationData)
        }
    }

    /// Sends `request` to `owner`'s `set` topic with a transaction of ours and `forwardedBy`, and calls
    /// `completion` once, with the transaction it was sent with: with the answer, when the owner goes offline, or at
    /// the deadline. Returns the error instead (and never calls `completion`) when the request cannot be sent at all.
    ///
    /// - Parameter transaction: the transaction to send it with; a new one (`<hub>-<n>`) when nil. A request sent again
    ///   with the transaction of the first is the same message, which the owner answers without running it again if it
    ///   ran the first (`RecentRequests`).
    func send(_ request: JSON, to owner: String, device: String, directReply: DirectReply? = nil,
              transaction: String? = nil,
              completion: @escaping @Sendable (Outcome, _ transaction: String) -> Void) -> HomeError? {
        guard outbox.isConnected else {
            return .unavailable("this hub is not connected to its broker, so hub '\(owner)' cannot be reached")
        }
        let status = directory.status(of: owner)
        guard status == .online else {
            return .unavailable(
                "hub '\(owner)' is \(status == .offline ? "offline" : "not heard from yet"); try again when it is "
                    + "online")
        }
        guard case .object(var members) = request else { return .invalidCommand("a request must be an object") }
        let timeout = timeout(for: owner)
        let deadline = clock.now + Self.milliseconds(timeout)
        let (id, wake) = state.withLock { s -> (String, Bool) in
            let id = transaction ?? {
                s.counter += 1
                return "\(topics.hub)-\(s.counter)"
            }()
            // Waiting before it is sent: a quick answer must find it.
            s.pending[id] = Pending(owner: owner, deadline: deadline, timeout: timeout, transaction: id,
                                    completion: completion)
            if let until = s.sleepingUntil, until <= deadline { return (id, false) }
            s.sleepingUntil = deadline
            return (id, true)
        }
        if wake { waker.wake() }
        members.removeAll { $0.key == "transaction" || $0.key == "forwardedBy" }
        members.insert(("transaction", .string(id)), at: 0)
        members.append(("forwardedBy", .string(topics.hub)))
        do {
            // The owner answers on our `answers` topic (MQTT 5's response topic) as well as on its `responses`;
            // over MQTT 3.1.1 the response topic is dropped, and the router listens to every hub's `responses`.
            try outbox.publish(PeerOutbox.Message(topic: topics.topic(.set(hub: owner, device: device)),
                                                  payload: JSON.object(members).bytes, qos: .atLeastOnce,
                                                  responseTopic: topics.answers,
                                                  userProperties: directReply.map { [$0.encoded] } ?? []))
        } catch {
            _ = state.withLock { $0.pending.removeValue(forKey: id) }
            return .unavailable("could not send to hub '\(owner)': \(error)")
        }
        return nil
    }

    // MARK: Answers

    /// An answer: a message on a peer's `responses` topic (`hub` is that peer), or on this hub's `answers` topic
    /// (`hub` nil: MQTT does not say who published it; `repliedToClient` when it says the owner answered the client
    /// too). Ends the request it answers, if it is one of ours.
    func answered(by hub: String?, _ payload: [UInt8], repliedToClient: Bool = false) {
        guard payload.count <= Self.maximumAnswerBytes, let response = try? JSON.parse(payload),
              case .string(let id)? = response["transaction"] else { return }
        let pending = state.withLock { s -> Pending? in
            // On a `responses` topic, only the hub it was sent to may answer it.
            guard let waiting = s.pending[id], hub == nil || waiting.owner == hub else { return nil }
            return s.pending.removeValue(forKey: id)
        }
        pending?.completion(.answered(response, repliedToClient: repliedToClient), id)
    }

    func reply(_ response: JSON, responseTopic: String?, correlationData: [UInt8]?) {
        let bytes = response.bytes
        // The client waiting for it first, as `MQTTHub.respond` does: the broker then delivers it before it serves
        // `responses`' watchers.
        if let responseTopic {
            try? outbox.publish(
                PeerOutbox.Message(topic: responseTopic, payload: bytes, correlationData: correlationData))
        }
        try? outbox.publish(PeerOutbox.Message(topic: topics.responses, payload: bytes))
    }

    /// Fails everything waiting on a hub that is no longer online, at once rather than at the deadline. Each was sent:
    /// it may have run before the owner went (or before this hub stopped hearing it), so its outcome is unknown
    /// (`deadlineExceeded`, saying so), never `unavailable`, which tells a client that nothing ran.
    func ownerWentOffline(_ owner: String) {
        let failed = state.withLock { s -> [Pending] in
            let gone = s.pending.filter { $0.value.owner == owner }
            for k in gone.keys { s.pending.removeValue(forKey: k) }
            return Array(gone.values)
        }
        for p in failed {
            p.completion(
                .failed(
                    HomeError(
                        .timeout,
                        "hub '\(owner)' went offline before it answered: the request may have "
                            + "run there; read the device's state once the hub is back before sending it "
                            + "again")), p.transaction)
        }
    }

    // MARK: Deadlines

    /// The earliest deadline of a request still waiting.
    var nextDeadline: EngineInstant? { state.withLock { $0.pending.values.map(\.deadline).min() } }

    /// How many requests wait for an answer.
    var waitingCount: Int { state.withLock { $0.pending.count } }

    /// Fails every request whose deadline has passed, earliest first.
    func expireDue() {
        let now = clock.now
        let expired = state.withLock { s -> [Pending] in
            let due = s.pending.filter { $0.value.deadline <= now }
            for k in due.keys { s.pending.removeValue(forKey: k) }
            return due.values.sorted { $0.deadline < $1.deadline }
        }
        for p in expired {
            p.completion(
                .failed(
                    HomeError(
                        .timeout,
                        "hub '\(p.owner)' did not answer within \(p.timeout): the request may "
                            + "have run there (its answer may have been lost on the way back); read the "
                            + "device's state before sending it again")), p.transaction)
        }
    }

    /// Keeps the deadlines until cancelled; sleeps without waking while nothing is waiting for an answer.
    public func run() async {
        while !Task.isCancelled {
            expireDue()
            let next = state.withLock { s in
                s.sleepingUntil = s.pending.values.map(\.deadline).min()
                return s.sleepingUntil
            }
            await waker.wait(until: next, clock: clock)
        }
    }
}
