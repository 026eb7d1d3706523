public import HearthContract
public import HearthJSON
import HearthMQTT
public import HearthEngine
import HearthModel
import Synchronization

/// How a peer hub is reached: over this broker (`local`) or through a bridged or cloud broker (`remote`).
public enum PeerRoute: String, Sendable, Hashable {
    case local, remote
}

/// A peer hub the configuration names (any hub heard on the broker is a peer; naming one sets its route
/// and makes it `unknown` until heard from).
public struct PeerConfiguration: Sendable, Hashable {
    public var hub: String
    public var route: PeerRoute
    public init(hub: String, route: PeerRoute = .local) {
        self.hub = hub
        self.route = route
    }
}

/// A device type of a local device whose traits are another hub's (a composite device).
public struct MirrorRoute: Sendable, Hashable {
    public var localDevice: String
    public var localType: String
    public var peerHub: String
    public var peerDevice: String
    public var peerType: String
    public init(localDevice: String, localType: String, peerHub: String, peerDevice: String, peerType: String) {
        self.localDevice = localDevice
        self.localType = localType
        self.peerHub = peerHub
        self.peerDevice = peerDevice
        self.peerType = peerType
    }
}

/// A local switch bound to a command on any hub.
public struct PeerBinding: Sendable, Hashable {
    public var from: String
    /// Switch events that fire it (default: `initialPress` and `switchLatched`).
    public var events: Set<String>
    public var hub: String
    public var device: String
    public var type: String?
    public var trait: String
    public var command: String
    public var arguments: JSON

    public init(from: String, events: Set<String> = ["initialPress", "switchLatched"], hub: String, device: String,
                type: String? = nil, trait: String, command: String, arguments: JSON = .object([])) {
        self.from = from
        self.events = events
        self.hub = hub
        self.device = device
        self.type = type
        self.trait = trait
        self.command = command
        self.arguments = arguments
    }

    var label: String { "\(from) → \(hub)/\(device) \(trait).\(command)" }
}

/// Makes several hubs on one broker one home: mirrors what peers publish, routes requests for their
/// devices to them, and runs bindings whose target is on another hub (`docs/peer-routing.md`).
///
/// Everything it needs crosses the broker as the public topic contract, so peers may sit behind
/// bridges or a clustered broker; nothing here assumes one broker or one hub.
public final class PeerRouter: Sendable {
    public let home: Home
    public let topics: TopicScheme
    let peers: [String: PeerRoute]
    let mirrors: [MirrorRoute]
    let bindings: [PeerBinding]
    let timeout: Duration
    let log: @Sendable (String) -> Void

    struct Peer {
        var status: ConnectivityState = .unknown
        var summary: JSON?
        var documents: [String: JSON] = [:]
    }

    enum Waiter {
        /// A client's request relayed to the owner: answer the client when the owner answers.
        case relay(original: JSON, device: String, responseTopic: String?, correlationData: [UInt8]?)
        /// A binding's command: log failures, retry once on silence.
        case binding(PeerBinding, attempt: Int)
    }

    struct Pending {
        var waiter: Waiter
        var owner: String
        var deadline: ContinuousClock.Instant
        var payload: [UInt8]
        var topic: String
    }

    struct State {
        var peers: [String: Peer] = [:]
        var linkUp = false
        var pending: [String: Pending] = [:]
        var counter = 0
        var client: MQTTClient?
    }

    private let state = Mutex(State())
    /// Wakes `run` when a request starts waiting; idle, nothing wakes at all.
    private let waiting: (stream: AsyncStream<Void>, continuation: AsyncStream<Void>.Continuation) =
        AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))

    public init(home: Home, topics: TopicScheme, peers: [PeerConfiguration] = [], mirrors: [MirrorRoute] = [],
                bindings: [PeerBinding] = [], timeout: Duration = .seconds(3),
                log: @escaping @Sendable (String) -> Void = { _ in }) {
        self.home = home
        self.topics = topics
        self.peers = Dictionary(peers.map { ($0.hub, $0.route) }, uniquingKeysWith: { a, _ in a })
        self.mirrors = mirrors
        self.bindings = bindings
        self.timeout = timeout
        self.log = log
        state.withLock { s in for p in peers { s.peers[p.hub] = Peer() } }
    }

    /// Where the whole home (local devices and every peer's) is published, retained.
    public var homeTopic: String { "\(topics.base)/home" }

    // MARK: Wiring (called by MQTTHub)

    func attach(_ client: MQTTClient) throws(MQTTError) {
        state.withLock { $0.client = client }
        let p = topics.prefix
        // No-local: a hub's own documents must not come back to it. Besides the wasted work, the broker
        // would hold the next request behind them (Nagle on its side, a delayed ACK on ours: 40 ms).
        for filter in ["\(p)/+/status", "\(p)/+/devices", "\(p)/+/devices/+", "\(p)/+/responses"] {
            try client.subscribe(filter, options: MQTTSubscriptionOptions(qos: .atLeastOnce, noLocal: true))
        }
        _ = home.observe { [weak self] events in self?.fireBindings(events) }
    }

    /// Our own broker link went up or down: every mirror follows.
    func linkChanged(up: Bool) {
        state.withLock { $0.linkUp = up }
        refreshMirrors()
        if up { publishHome() }
    }

    /// Takes a peer's message; returns false when it is not one.
    func handle(_ message: MQTTMessage) -> Bool {
        guard let parts = topics.levels(of: message.topic, maxSplits: 3), parts.count >= 2,
              !parts[0].elementsEqual(topics.hub.utf8) else { return false }
        let hub = String(Substring(parts[0]))
        switch (parts.count, Substring(parts[1])) {
        case (2, "status"):
            let online = message.payload == Array("online".utf8)
            state.withLock { $0.peers[hub, default: Peer()].status = message.payload.isEmpty ? .unknown : (online ? .online : .offline) }
            if !online { failPending(owner: hub) }
            refreshMirrors(hub: hub)
            publishHome()
        case (2, "devices"):
            let summary = try? JSON.parse(message.payload)
            state.withLock { $0.peers[hub, default: Peer()].summary = summary }
            publishHome()
        case (3, "devices"):
            let doc = try? JSON.parse(message.payload)
            state.withLock { $0.peers[hub, default: Peer()].documents[String(Substring(parts[2]))] = doc }
            refreshMirrors(hub: hub)
        case (2, "responses"):
            answered(by: hub, message.payload)
        default:
            return false  // e.g. another hub's requests
        }
        return true
    }

    // MARK: Mirrors

    func route(_ hub: String) -> PeerRoute { peers[hub] ?? .local }

    /// A mirrored trait's connectivity: the owner's own while the owner and our link are up; offline when
    /// either is down; unknown until the owner has been heard from.
    func connectivity(hub: String, ownerState: ConnectivityState?) -> SourceConnectivity {
        let locality: DataSourceLocality = route(hub) == .remote ? .remote : .localPeer
        let (linkUp, peer) = state.withLock { ($0.linkUp, $0.peers[hub]) }
        guard let peer, peer.status != .unknown else { return .notHeardFrom }
        guard linkUp, peer.status == .online else { return SourceConnectivity(.offline, locality) }
        return SourceConnectivity(ownerState ?? .unknown, locality)
    }

    func refreshMirrors(hub only: String? = nil) {
        for m in mirrors where only == nil || m.peerHub == only {
            let doc = state.withLock { $0.peers[m.peerHub]?.documents[m.peerDevice] }
            let type = doc?["types"].flatMap { t -> JSON? in
                guard case .array(let types) = t else { return nil }
                return types.first { $0["type"] == .string(m.peerType) }
            }
            guard let local = try? home.device(m.localDevice), let localType = local.type(named: m.localType) else { continue }
            for trait in localType.traits {
                let name = trait.descriptor.id.qualifiedName
                let owned = type?["traits"]?[name]
                var ownerState: ConnectivityState?
                if let s = owned?["sourceConnectivity"]?["connectivityState"], case .string(let raw) = s {
                    ownerState = ConnectivityState(rawValue: raw)
                }
                if let owned, case .object(let attributes)? = owned["attributes"] {
                    var values: [String: Value] = [:]
                    for (key, json) in attributes {
                        if let descriptor = trait.descriptor.attribute(named: key),
                           let v = try? ValueCoding.value(json, as: descriptor.type, what: key) {
                            values[key] = v
                        }
                    }
                    var commands: [String] = []
                    if case .array(let names)? = owned["commands"] {
                        for n in names { if case .string(let s) = n { commands.append(s) } }
                    }
                    try? home.ingest(m.localDevice, type: m.localType, trait: name, .mirror(values, commands: commands))
                } else if doc != nil {
                    ownerState = .offline  // the owner no longer has this trait
                }
                try? home.setConnectivity(m.localDevice, type: m.localType, trait: name,
                                          connectivity(hub: m.peerHub, ownerState: ownerState))
            }
        }
    }

    /// The mirror route of a local device type, if it is another hub's.
    func mirror(of device: String, type: String?) -> MirrorRoute? {
        mirrors.first { $0.localDevice == device && (type == nil || $0.localType == type) }
    }

    // MARK: The whole home

    /// Local devices and every peer's, each with its hub and how this hub sees it.
    public func homeDocument() -> JSON {
        var entries = home.list().map { DeviceDocument.summary($0, hub: topics.hub) }
        let (peers, linkUp) = state.withLock { ($0.peers, $0.linkUp) }
        for (hub, peer) in peers.sorted(by: { $0.key < $1.key }) {
            guard case .array(let devices)? = peer.summary else { continue }
            for d in devices {
                guard case .object(var members) = d else { continue }
                var owner: ConnectivityState?
                if case .string(let raw)? = d["sourceConnectivity"]?["connectivityState"] { owner = ConnectivityState(rawValue: raw) }
                let c = peer.status == .unknown ? SourceConnectivity.notHeardFrom
                    : !linkUp || peer.status != .online ? SourceConnectivity(.offline, route(hub) == .remote ? .remote : .localPeer)
                    : SourceConnectivity(owner ?? .unknown, route(hub) == .remote ? .remote : .localPeer)
                members.removeAll { $0.key == "hub" || $0.key == "sourceConnectivity" }
                members.append(("hub", .string(hub)))
                members.append(("sourceConnectivity", DeviceDocument.connectivity(c)))
                entries.append(.object(members))
            }
        }
        return .array(entries)
    }

    func publishHome() {
        guard let client = state.withLock({ $0.client }), client.isConnected else { return }
        try? client.publish(homeTopic, payload: homeDocument().bytes, qos: .atMostOnce, retain: true)
    }

    // MARK: Routing requests

    /// The peer hub that has `device`, if exactly one does.
    func owner(of device: String) -> String? {
        let owners = state.withLock { s in
            s.peers.filter { _, peer in
                guard case .array(let list)? = peer.summary else { return peer.documents[device] != nil }
                return list.contains { $0["id"] == .string(device) }
            }.map(\.key)
        }
        return owners.count == 1 ? owners[0] : nil
    }

    /// Where a request must go when this hub does not own what it addresses: a peer's device, or the
    /// mirrored type of a composite device. Nil when it is this hub's to run.
    func target(of request: HubRequest, device: String) -> (owner: String, device: String, request: JSON)? {
        guard request.forwardedBy == nil else { return nil }
        guard home.contains(device) else {
            return owner(of: device).map { ($0, device, request.json) }
        }
        // Most devices are wholly this hub's: no snapshot on the command path for them.
        guard mirrors.contains(where: { $0.localDevice == device }), let local = try? home.device(device) else { return nil }
        let type: String?, trait: String
        switch request.action {
        case .command(let t, let tr, _, _), .update(let t, let tr, _): (type, trait) = (t, tr)
        default: return nil
        }
        let id = TraitID(qualifiedName: trait)
        let candidates = local.types.filter { ($0.descriptor.name == type || type == nil) && $0.trait(id) != nil }
        guard candidates.count == 1, let m = mirror(of: device, type: candidates[0].descriptor.name) else { return nil }
        guard case .object(var members) = request.json else { return nil }
        members.removeAll { $0.key == "type" }
        members.append(("type", .string(m.peerType)))
        return (m.peerHub, m.peerDevice, .object(members))
    }

    /// Sends a client's request to the hub that owns the device and relays its answer. Returns the error
    /// to answer with at once, or nil when the request is on its way.
    func forward(_ request: JSON, transaction: JSON, device: String, to owner: String, ownerDevice: String,
                 responseTopic: String?, correlationData: [UInt8]?) -> HomeError? {
        send(request, to: owner, device: ownerDevice,
             waiter: .relay(original: transaction, device: device, responseTopic: responseTopic, correlationData: correlationData))
    }

    private func send(_ request: JSON, to owner: String, device: String, waiter: Waiter) -> HomeError? {
        let (client, status) = state.withLock { ($0.client, $0.peers[owner]?.status) }
        guard let client, client.isConnected else {
            return .unavailable("this hub is not connected to its broker, so hub '\(owner)' cannot be reached")
        }
        guard status == .online else {
            return .unavailable("hub '\(owner)' is \(status == .offline ? "offline" : "not heard from yet"); try again when it is online")
        }
        let id = state.withLock { s -> String in
            s.counter += 1
            return "\(topics.hub)-\(s.counter)"
        }
        guard case .object(var members) = request else { return .invalidCommand("a request must be an object") }
        members.removeAll { $0.key == "transaction" || $0.key == "forwardedBy" }
        members.insert(("transaction", .string(id)), at: 0)
        members.append(("forwardedBy", .string(topics.hub)))
        let payload = JSON.object(members).bytes
        let topic = "\(topics.prefix)/\(owner)/devices/\(device)/set"
        state.withLock { $0.pending[id] = Pending(waiter: waiter, owner: owner, deadline: .now + timeout, payload: payload, topic: topic) }
        waiting.continuation.yield()
        do {
            try client.publish(topic, payload: payload, qos: .atLeastOnce)
        } catch {
            _ = state.withLock { $0.pending.removeValue(forKey: id) }
            return .unavailable("could not send to hub '\(owner)': \(error)")
        }
        return nil
    }

    private func answered(by hub: String, _ payload: [UInt8]) {
        guard let response = try? JSON.parse(payload), case .string(let id)? = response["transaction"],
              let pending = state.withLock({ $0.pending.removeValue(forKey: id) }), pending.owner == hub else { return }
        switch pending.waiter {
        case .relay(let original, let device, let responseTopic, let correlationData):
            guard case .object(var members) = response else { return }
            members = members.map { m in
                m.key == "transaction" ? (key: m.key, value: original) : m.key == "device" ? (key: m.key, value: JSON.string(device)) : m
            }
            reply(JSON.object(members), responseTopic: responseTopic, correlationData: correlationData)
        case .binding(let binding, _):
            if response["ok"] != .bool(true) {
                log("binding \(binding.label) failed: \(response["error"]?["message"]?.text ?? response.text)")
            }
        }
    }

    func reply(_ response: JSON, responseTopic: String?, correlationData: [UInt8]?) {
        guard let client = state.withLock({ $0.client }) else { return }
        let bytes = response.bytes
        try? client.publish(topics.responses, payload: bytes)
        if let responseTopic { try? client.publish(responseTopic, payload: bytes, correlationData: correlationData) }
    }

    /// Fails everything waiting on a hub that went offline, at once rather than at the timeout.
    private func failPending(owner: String) {
        let failed = state.withLock { s -> [Pending] in
            let gone = s.pending.filter { $0.value.owner == owner }
            for k in gone.keys { s.pending.removeValue(forKey: k) }
            return Array(gone.values)
        }
        for p in failed { fail(p, .unavailable("hub '\(owner)' went offline before it answered")) }
    }

    private func fail(_ pending: Pending, _ error: HomeError) {
        switch pending.waiter {
        case .relay(let original, let device, let responseTopic, let correlationData):
            reply(HubResponse.failure(transaction: original, device: device, error), responseTopic: responseTopic,
                  correlationData: correlationData)
        case .binding(let binding, _):
            log("binding \(binding.label) failed: \(error)")
        }
    }

    /// Expires requests nobody answered; a binding's command is retried once. Runs until cancelled, and
    /// sleeps without waking while nothing is waiting for an answer.
    public func run() async {
        var signals = waiting.stream.makeAsyncIterator()
        while !Task.isCancelled {
            if let next = state.withLock({ $0.pending.values.map(\.deadline).min() }) {
                try? await Task.sleep(until: next, clock: .continuous)
            } else if await signals.next() == nil {
                return
            }
            let now = ContinuousClock.now
            let expired = state.withLock { s -> [Pending] in
                let due = s.pending.filter { $0.value.deadline <= now }
                for k in due.keys { s.pending.removeValue(forKey: k) }
                return Array(due.values)
            }
            for p in expired {
                if case .binding(let binding, let attempt) = p.waiter, attempt == 0 {
                    log("binding \(binding.label): no answer from hub '\(p.owner)' in \(timeout); retrying once")
                    fire(binding, attempt: 1)
                } else {
                    fail(p, HomeError(.timeout, "hub '\(p.owner)' did not answer within \(timeout)"))
                }
            }
        }
    }

    // MARK: Bindings

    func fireBindings(_ events: [HomeEvent]) {
        for e in events {
            guard case .event(_, let trait, let name, _) = e.change, trait == .switchTrait else { continue }
            for b in bindings where b.from == e.deviceID && b.events.contains(name) { fire(b, attempt: 0) }
        }
    }

    func fire(_ binding: PeerBinding, attempt: Int) {
        if binding.hub == topics.hub {
            var values: [String: Value] = [:]
            let fields = home.registry.server(for: TraitID(qualifiedName: binding.trait))?.descriptor.command(named: binding.command)?.fields
            if case .object(let members) = binding.arguments {
                for (k, v) in members { values[k] = try? ValueCoding.value(v, as: fields?.first { $0.name == k }?.type, what: k) }
            }
            do throws(HomeError) {
                try home.invoke(binding.device, type: binding.type, trait: binding.trait, command: binding.command, arguments: values)
            } catch {
                log("binding \(binding.label) failed: \(error)")
            }
            return
        }
        var request: [(key: String, value: JSON)] = []
        if let type = binding.type { request.append(("type", .string(type))) }
        request += [("trait", .string(binding.trait)), ("command", .string(binding.command)), ("args", binding.arguments)]
        if let error = send(.object(request), to: binding.hub, device: binding.device, waiter: .binding(binding, attempt: attempt)) {
            log("binding \(binding.label) failed: \(error)")
        }
    }
}
