public import HearthContract
public import HearthJSON
public import HearthEngine
public import HearthModel
import HearthSync

/// How a peer hub is reached: over this broker (`local`) or through a bridged or cloud broker (`remote`).
public enum PeerRoute: String, Sendable, Hashable {
    case local, remote
}

/// A peer hub the configuration names (any hub heard on the broker is a peer; naming one sets its route
/// and makes it `unknown` until heard from).
public struct PeerConfiguration: Sendable, Hashable {
    public var hub: String
    public var route: PeerRoute
    /// How long a request forwarded to it waits for its answer; nil: the default for its route.
    public var timeout: Duration?
    public init(hub: String, route: PeerRoute = .local, timeout: Duration? = nil) {
        self.hub = hub
        self.route = route
        self.timeout = timeout
    }

    /// A request forwarded to a hub on this broker waits this long for its answer.
    public static let defaultTimeout = Duration.seconds(3)
    /// Through a bridge, longer: two more hops, and a link between buildings that may be slow or lossy.
    public static let defaultRemoteTimeout = Duration.seconds(5)
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

/// What this hub knows of its peers: which are online, their summaries and device documents, the mirrored
/// traits it ingests into the engine from them, and the whole home as seen from here (`<prefix>/<hub>/home`).
///
/// Fed by `PeerRouter.handle` on the thread that delivers MQTT messages; it never waits on anything but its
/// own short lock and the engine's.
///
/// Anything on the broker may publish under a peer's topics, so what a peer sends is read as untrusted: a
/// summary or document that is too large, not JSON or not of the contract's shape is ignored (the last good one
/// is kept) and logged once until a good one comes; only the documents of mirrored devices are kept.
public final class PeerDirectory: Sendable {
    public let home: Home
    public let topics: TopicScheme
    let routes: [String: PeerRoute]
    let mirrors: [MirrorRoute]
    /// Every peer device's document is kept, not only mirrored ones' (`matter.bridge: home`).
    let keepsEveryDocument: Bool
    /// Told of every change to what this hub knows of a peer (`watch`).
    private let watcher = Locked<(@Sendable (PeerChange) -> Void)?>(nil)
    let outbox: PeerOutbox
    let clock: any EngineClock
    let log: @Sendable (String) -> Void

    /// The largest summary read: one entry is about 200 bytes, so this is some 20,000 devices.
    static let maximumSummaryBytes = 4 * 1024 * 1024
    /// The largest device document read: a document is 1–10 KB.
    static let maximumDocumentBytes = 1024 * 1024

    struct Peer {
        /// What its status topic says: `online`, `offline` (its will, or a clean stop), `unknown` until heard.
        var announced: ConnectivityState = .unknown
        /// Its heartbeat, once it has published one (retained or live); nil: its will alone says when it is gone.
        var heartbeat: Heartbeat?
        /// When it goes silent unless heard from again (a live heartbeat or status), while it has a heartbeat.
        var silentAfter: EngineInstant?
        /// Not heard from within its heartbeat's bound: offline whatever its retained status says.
        var silent = false
        /// How this hub sees it: online only while its status says so and it is not silent.
        var status: ConnectivityState { silent && announced == .online ? .offline : announced }
        /// The devices of its latest summary, nil until one is read (or after it was cleared).
        var devices: [PeerDevice]?
        /// The documents of the devices this hub mirrors, by device id.
        var documents: [String: JSON] = [:]
        /// Counts the changes of `status` and `summary`: the cached entries below are current while it is the same.
        var version = 0
        /// This peer's entries of the whole-home document as last written (comma-separated, no brackets), with
        /// the version and link state they were written for.
        var entries: (version: Int, linkUp: Bool, bytes: [UInt8])?
    }

    /// One device of a peer's summary, as the whole-home document shows it, kept as bytes: the parsed trees of
    /// 9 peers' summaries (900 devices) were about half of what a hub with peers held beyond a lone hub's memory.
    struct PeerDevice {
        let id: String
        /// The summary's entry re-serialised without `hub`, `sourceConnectivity` and the closing brace:
        /// `{"id":"lamp","name":…,"types":[…]`.
        let members: [UInt8]
        /// The state the peer reports for the device.
        let owner: ConnectivityState?

        init?(_ entry: JSON) {
            guard case .object(var members) = entry, case .string(let id)? = entry["id"] else { return nil }
            if case .string(let raw)? = entry["sourceConnectivity"]?["connectivityState"] {
                owner = ConnectivityState(rawValue: raw)
            } else {
                owner = nil
            }
            members.removeAll { $0.key == "hub" || $0.key == "sourceConnectivity" }
            var bytes: [UInt8] = []
            JSON.object(members).write(to: &bytes)
            self.id = id
            self.members = Array(bytes.dropLast())  // without `}`; a copy of its own size (900 of them are kept)
        }
    }

    struct State {
        var peers: [String: Peer] = [:]
        var linkUp = false
        /// The silence deadline `PeerRouter`'s liveness loop sleeps until; nil while it sleeps without one.
        var livenessSleepsUntil: EngineInstant?
        /// What was logged about a peer's topic (`hub/devices`, `hub/devices/id`, `claims/hub/id`) and not yet put
        /// right, each kind of problem once, so a broken or hostile peer is logged once, not at every message.
        var complaints: [String: Set<Complaint>] = [:]
        /// The owner index: for each device id some peer's summary lists, the hubs that list it (usually one),
        /// kept as summaries change so that forwarding finds the owner without reading every summary.
        var listedBy: [String: [String]] = [:]
    }

    private let state = Locked(State())
    /// The whole-home document is republished once changes settle for a window, at the latest a second after
    /// the first (`PublicationThrottle`, `.settled`).
    let homeThrottle: PublicationThrottle

    /// - Parameters:
    ///   - clock: runs the whole-home document's publication window (the home's clock unless given).
    ///   - publicationWindow: milliseconds; the whole-home document goes out once no change came for a window
    ///     (at the latest a second after the first), always the newest.
    public init(home: Home, topics: TopicScheme, peers: [PeerConfiguration] = [], mirrors: [MirrorRoute] = [],
                keepsEveryDocument: Bool = false, outbox: PeerOutbox, clock: (any EngineClock)? = nil,
                publicationWindow: Int64 = PublicationThrottle.defaultSettleWindow,
                log: @escaping @Sendable (String) -> Void = { _ in }) {
        self.home = home
        self.topics = topics
        self.routes = Dictionary(peers.map { ($0.hub, $0.route) }, uniquingKeysWith: { a, _ in a })
        self.mirrors = mirrors
        self.keepsEveryDocument = keepsEveryDocument
        self.outbox = outbox
        self.clock = clock ?? home.clock
        self.log = log
        // The throttle outlives nothing it publishes for: it reaches the directory through a weak reference.
        let directory = WeakDirectory()
        homeThrottle = PublicationThrottle(window: publicationWindow,
                                           rule: .settled(maximumDelay: PublicationThrottle.defaultMaximumDelay),
                                           clock: clock ?? home.clock) {
            directory.value?.sendHome()
        }
        directory.value = self
        state.withLock { s in for p in peers { s.peers[p.hub] = Peer() } }
    }

    private final class WeakDirectory: Sendable {
        private struct Reference { weak var value: PeerDirectory? }
        private let reference = Locked(Reference())
        var value: PeerDirectory? {
            get { reference.withLock { $0.value } }
            set { reference.withLock { $0.value = newValue } }
        }
    }

    enum Complaint: Hashable { case tooLarge, notJSON, wrongShape, ownDevice, claimedTwice, badHeartbeat }

    /// Logs `problem` unless this kind of problem with `key` is logged already.
    private func complain(_ key: String, _ kind: Complaint, _ problem: String) {
        if state.withLock({ $0.complaints[key, default: []].insert(kind).inserted }) { log(problem) }
    }

    /// `key` is right again: its next problem is logged.
    private func settled(_ key: String) {
        state.withLock { _ = $0.complaints.removeValue(forKey: key) }
    }

    /// Reads what a peer published on `what`, or nil (logged) when it is too large or not JSON.
    private func read(_ payload: [UInt8], limit: Int, key: String, what: String) -> JSON? {
        guard payload.count <= limit else {
            complain(
                key, .tooLarge,
                "ignored \(what): \(payload.count) bytes, more than the \(limit) a hub reads; the last good one is kept"
            )
            return nil
        }
        do {
            return try JSON.parse(payload)
        } catch {
            complain(key, .notJSON, "ignored \(what): not JSON (\(error)); the last good one is kept")
            return nil
        }
    }

    /// Where the whole home (local devices and every peer's) is published, retained.
    public var homeTopic: String { topics.home }

    // MARK: Presence

    /// Every peer this hub knows of and its last status, in hub id order (what the web page lists).
    package func peerStatuses() -> [(hub: String, status: ConnectivityState)] {
        state.withLock { s in s.peers.map { (hub: $0.key, status: $0.value.status) } }.sorted { $0.hub < $1.hub }
    }

    /// A peer's last status: nil for a hub never named nor heard of, `unknown` until heard from.
    public func status(of hub: String) -> ConnectivityState? {
        state.withLock { $0.peers[hub]?.status }
    }

    /// Our own broker link went up or down: every mirror follows. While it was down nothing could be heard, so each
    /// peer with a heartbeat gets a full bound from now to be heard again.
    func linkChanged(up: Bool) {
        let now = clock.now
        state.withLock { s in
            s.linkUp = up
            guard up else { return }
            for (hub, peer) in s.peers {
                if let h = peer.heartbeat, !peer.silent { s.peers[hub]!.silentAfter = now + h.silenceMilliseconds }
            }
        }
        refreshMirrors()
        notify(.link)
        if up { homeThrottle.publishNow() }
    }

    /// A peer's status (`online`, `offline`, or empty when it was cleared); returns how this hub now sees it. A live
    /// `online` (not a retained copy) is proof of life, as a heartbeat is.
    @discardableResult
    func statusChanged(hub: String, payload: [UInt8], retained: Bool = true) -> ConnectivityState {
        let announced: ConnectivityState =
            payload.isEmpty ? .unknown : payload == Array("online".utf8) ? .online : .offline
        let now = clock.now
        let (status, heardAgain) = state.withLock { s -> (ConnectivityState, Bool) in
            s.peers[hub, default: Peer()].announced = announced
            s.peers[hub]!.version += 1
            let heardAgain = announced == .online && !retained && Self.heard(&s.peers[hub]!, at: now)
            return (s.peers[hub]!.status, heardAgain)
        }
        if heardAgain { log("hub '\(hub)' is heard from again: its devices follow its status") }
        refreshMirrors(hub: hub)
        notify(.hub(hub))
        publishHome()
        return status
    }

    // MARK: Liveness (peers across a bridge)

    /// A peer's heartbeat (`<prefix>/<hub>/heartbeat`). A live one is proof of life; a retained copy (read on
    /// subscribing) only says the peer sends them and how often, and gives it one bound from now to be heard; an empty
    /// one says it sends none, so that only its will says when it is gone.
    func heartbeatChanged(hub: String, payload: [UInt8], retained: Bool) {
        let key = "\(hub)/heartbeat"
        var heartbeat: Heartbeat?
        if !payload.isEmpty {
            switch Heartbeat.parse(payload) {
            case .success(let h): heartbeat = h
            case .failure(let error):
                complain(key, .badHeartbeat, "ignored hub '\(hub)''s heartbeat: \(error); the last good one is kept")
                return
            }
        }
        settled(key)
        let now = clock.now
        let (changed, heardAgain, wake) = state.withLock { s -> (Bool, Bool, Bool) in
            var peer = s.peers[hub, default: Peer()]
            let wasSilent = peer.silent
            peer.heartbeat = heartbeat
            var heardAgain = false
            if let heartbeat {
                if !retained {
                    heardAgain = Self.heard(&peer, at: now)
                } else if peer.silentAfter == nil {
                    peer.silentAfter = now + heartbeat.silenceMilliseconds
                }
            } else {
                peer.silentAfter = nil
                peer.silent = false
            }
            if peer.silent != wasSilent { peer.version += 1 }
            s.peers[hub] = peer
            // The liveness loop sleeps without a deadline, or until a later one: it must wake for this one.
            let wake = peer.silentAfter.map { d in s.livenessSleepsUntil.map { $0 > d } ?? true } ?? false
            if wake { s.livenessSleepsUntil = peer.silentAfter }
            return (peer.silent != wasSilent, heardAgain, wake)
        }
        if wake { livenessWaker.wake() }
        if heardAgain { log("hub '\(hub)' is heard from again: its devices follow its status") }
        if changed {
            refreshMirrors(hub: hub)
            notify(.hub(hub))
            publishHome()
        }
    }

    /// `peer` was heard from at `now`: its silence deadline moves a bound on. Returns whether it was silent.
    private static func heard(_ peer: inout Peer, at now: EngineInstant) -> Bool {
        guard let h = peer.heartbeat else { return false }
        peer.silentAfter = now + h.silenceMilliseconds
        guard peer.silent else { return false }
        peer.silent = false
        peer.version += 1
        return true
    }

    /// Marks every peer whose silence deadline has passed as silent (offline); returns those that went silent now, for
    /// their mirrors, the home document and the requests waiting on them to follow.
    func silenceDue() -> [String] {
        let now = clock.now
        let gone = state.withLock { s -> [(String, Heartbeat)] in
            var gone: [(String, Heartbeat)] = []
            for (hub, peer) in s.peers where !peer.silent {
                guard let deadline = peer.silentAfter, deadline <= now, let h = peer.heartbeat else { continue }
                s.peers[hub]!.silent = true
                s.peers[hub]!.version += 1
                gone.append((hub, h))
            }
            return gone.sorted { $0.0 < $1.0 }
        }
        for (hub, h) in gone {
            log(
                "hub '\(hub)' has not been heard from for \(h.interval * Heartbeat.silenceFactor) s (it sends a "
                    + "heartbeat every "
                    + "\(h.interval) s): its devices are offline until it is heard again")
            refreshMirrors(hub: hub)
            notify(.hub(hub))
        }
        if !gone.isEmpty { publishHome() }
        return gone.map(\.0)
    }

    /// The earliest silence deadline of a peer not silent yet; records it as what the liveness loop sleeps until at the
    /// latest (it may wake sooner, for this hub's heartbeat).
    func nextSilenceDeadline() -> EngineInstant? {
        state.withLock { s in
            s.livenessSleepsUntil = s.peers.values.compactMap { $0.silent ? nil : $0.silentAfter }.min()
            return s.livenessSleepsUntil
        }
    }

    /// Wakes the liveness loop when a peer's first silence deadline comes before the one it sleeps until at the latest.
    let livenessWaker = DeadlineWaker(coarse: true)

    /// A peer's device summary (`<prefix>/<hub>/devices`): a list of devices, each with a string `id`; an empty
    /// payload clears it (the peer removed its retained summary).
    func summaryChanged(hub: String, payload: [UInt8]) {
        let key = "\(hub)/devices", what = "hub '\(hub)''s device summary"
        var devices: [PeerDevice]?
        if !payload.isEmpty {
            guard let read = read(payload, limit: Self.maximumSummaryBytes, key: key, what: what) else { return }
            guard case .array(let entries) = read,
                  entries.allSatisfy({ if case .string? = $0["id"] { true } else { false } }) else {
                complain(
                    key, .wrongShape,
                    "ignored \(what): not a list of devices each with a string 'id'; the last good one is kept")
                return
            }
            devices = entries.compactMap(PeerDevice.init)
        }
        settled(key)
        let ids = devices?.map(\.id) ?? []
        let others = state.withLock { s -> [[String]] in
            let old = s.peers[hub]?.devices?.map(\.id) ?? []
            s.peers[hub, default: Peer()].devices = devices
            s.peers[hub]!.version += 1
            Self.reindex(&s.listedBy, hub: hub, removing: old, adding: ids)
            return ids.map { id in s.listedBy[id, default: []].filter { $0 != hub } }
        }
        for (id, claimants) in zip(ids, others) {
            let claimants = claimants.sorted()
            let claim = "claims/\(hub)/\(id)"
            if home.contains(id) {
                complain(
                    claim, .ownDevice,
                    "hub '\(hub)' lists device '\(id)', which is this hub's own: requests for it are run here")
            } else if !claimants.isEmpty {
                complain(
                    claim, .claimedTwice,
                    "hubs \(([hub] + claimants).map { "'\($0)'" }.joined(separator: " and ")) all list device "
                        + "'\(id)': requests for it on this hub are refused until only one does")
            } else {
                settled(claim)
            }
        }
        notify(.hub(hub))
        publishHome()
    }

    /// Moves `hub` in the owner index from the ids of its old summary to those of its new one.
    static func reindex(_ index: inout [String: [String]], hub: String, removing old: [String], adding new: [String]) {
        for id in old {
            guard var hubs = index[id] else { continue }
            hubs.removeAll { $0 == hub }
            index[id] = hubs.isEmpty ? nil : hubs
        }
        for id in new where !(index[id]?.contains(hub) ?? false) { index[id, default: []].append(hub) }
    }

    /// One of a peer's device documents (`<prefix>/<hub>/devices/<device>`), kept only when a mirror reads it or the
    /// hub bridges the whole home.
    func documentChanged(hub: String, device: String, payload: [UInt8]) {
        let mirrored = mirrors.contains(where: { $0.peerHub == hub && $0.peerDevice == device })
        guard mirrored || keepsEveryDocument else { return }
        let key = "\(hub)/devices/\(device)", what = "hub '\(hub)''s document of '\(device)'"
        var document: JSON?
        if !payload.isEmpty {
            guard let read = read(payload, limit: Self.maximumDocumentBytes, key: key, what: what) else { return }
            guard case .array? = read["types"] else {
                complain(key, .wrongShape, "ignored \(what): it has no list of 'types'; the last good one is kept")
                return
            }
            document = read
        }
        settled(key)
        state.withLock { $0.peers[hub, default: Peer()].documents[device] = document }
        if mirrored { refreshMirrors(hub: hub) }
        notify(.document(hub: hub, device: device))
    }

    /// How many peer device documents are kept (only mirrored devices', unless the hub bridges the whole home).
    var documentCount: Int { state.withLock { $0.peers.values.reduce(0) { $0 + $1.documents.count } } }

    /// The peer hub whose summary lists `device`, if exactly one does: one look-up in the owner index.
    /// (Whether this hub has a device of that id is the caller's question: a local device shadows a peer's.)
    func owner(of device: String) -> String? {
        state.withLock { s in
            guard let hubs = s.listedBy[device], hubs.count == 1 else { return nil }
            return hubs[0]
        }
    }

    /// The hubs whose summaries list `device` (the owner index), in the order they first listed it.
    func hubsListing(_ device: String) -> [String] { state.withLock { $0.listedBy[device] ?? [] } }

    func route(_ hub: String) -> PeerRoute { routes[hub] ?? .local }

    /// How this hub sees data owned by `hub`: the owner's own state while the owner and our link are up;
    /// offline when either is down; unknown until the owner has been heard from.
    static func connectivity(status: ConnectivityState?, linkUp: Bool, route: PeerRoute,
                             ownerState: ConnectivityState?) -> SourceConnectivity {
        guard let status, status != .unknown else { return .notHeardFrom }
        let locality: DataSourceLocality = route == .remote ? .remote : .localPeer
        guard linkUp, status == .online else { return SourceConnectivity(.offline, locality) }
        return SourceConnectivity(ownerState ?? .unknown, locality)
    }

    // MARK: Mirrors

    /// Whether some type of `device` is another hub's.
    func hasMirror(_ device: String) -> Bool { mirrors.contains { $0.localDevice == device } }

    /// The mirror route of a local device type, if it is another hub's.
    func mirror(of device: String, type: String?) -> MirrorRoute? {
        mirrors.first { $0.localDevice == device && (type == nil || $0.localType == type) }
    }

    /// Copies what the owners publish into the mirrored traits, with the connectivity seen from here.
    ///
    /// Each on its device's lane, not on the network thread that received the peer's message: a composite device
    /// whose local part is writing to its hardware holds its gate, and only its lane may wait for that.
    func refreshMirrors(hub only: String? = nil) {
        for m in mirrors where only == nil || m.peerHub == only {
            home.enqueue(on: m.localDevice) { [self] in refresh(m) }
        }
    }

    /// Copies the owner's current document of one mirrored type into its local traits.
    private func refresh(_ m: MirrorRoute) {
        let (doc, status, linkUp) = state.withLock { s in
            (s.peers[m.peerHub]?.documents[m.peerDevice], s.peers[m.peerHub]?.status, s.linkUp)
        }
        let type = doc?["types"].flatMap { t -> JSON? in
            guard case .array(let types) = t else { return nil }
            return types.first { $0["type"] == .string(m.peerType) }
        }
        guard let local = try? home.device(m.localDevice), let localType = local.type(named: m.localType) else {
            return
        }
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
                    // An attribute this hub cannot read, or whose value its descriptor refuses (a broken or hostile
                    // owner: a string for a level, 9999 for a uint8), is left out — the mirror then shows it as not
                    // supported — never guessed and never kept: clients, the state file and Home Assistant read
                    // this hub's values by the descriptor.
                    if let descriptor = trait.descriptor.attribute(named: key),
                        let v = try? ValueCoding.value(json, as: descriptor.type, what: key),
                        (try? descriptor.type.check(
                            v, nullable: descriptor.isNullable, constraint: descriptor.constraint,
                            what: key)) != nil
                    {
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
                                      Self.connectivity(status: status, linkUp: linkUp, route: route(m.peerHub),
                                                        ownerState: ownerState))
        }
    }

    // MARK: Watching (the Matter bridge of the whole home)

    /// What changed in this hub's view of its peers.
    enum PeerChange: Sendable, Equatable {
        /// The broker link: every peer's devices as seen from here.
        case link
        /// A peer's status, liveness or summary.
        case hub(String)
        /// One of a peer's device documents.
        case document(hub: String, device: String)
    }

    /// Calls `handler` after each change to what this hub knows of a peer, on the thread that made it (the MQTT
    /// network thread, the liveness loop); one handler, replacing any before.
    func watch(_ handler: @escaping @Sendable (PeerChange) -> Void) { watcher.withLock { $0 = handler } }

    private func notify(_ change: PeerChange) {
        if let handler = watcher.withLock({ $0 }) { handler(change) }
    }

    /// A peer as the bridge of the whole home needs it: how it is seen from here, the devices its summary lists with
    /// the state it reports for each, and their documents.
    struct PeerView {
        var connectivity: (ConnectivityState?) -> SourceConnectivity
        var devices: [(id: String, owner: ConnectivityState?)]
        var documents: [String: JSON]
    }

    /// Every peer this hub knows of, by hub id.
    func peerIDs() -> [String] { state.withLock { Array($0.peers.keys) } }

    /// `hub` as the bridge of the whole home needs it; nil for a hub never heard of.
    func view(of hub: String, devices only: String? = nil) -> PeerView? {
        let route = route(hub)
        return state.withLock { s -> PeerView? in
            guard let peer = s.peers[hub] else { return nil }
            let status = peer.status, linkUp = s.linkUp
            let listed = (peer.devices ?? []).filter { only == nil || $0.id == only }
            return PeerView(
                connectivity: { Self.connectivity(status: status, linkUp: linkUp, route: route, ownerState: $0) },
                devices: listed.map { ($0.id, $0.owner) },
                documents: only.map { id in peer.documents[id].map { [id: $0] } ?? [:] } ?? peer.documents)
        }
    }

    // MARK: The whole home

    /// Local devices and every peer's, each with its hub and how this hub sees it.
    public func homeDocument() -> JSON {
        var entries: [JSON] = []
        home.forEachDevice { entries.append(DeviceDocument.summary($0, hub: topics.hub)) }
        let (peers, linkUp) = state.withLock { ($0.peers, $0.linkUp) }
        for (hub, peer) in peers.sorted(by: { $0.key < $1.key }) {
            var bytes: [UInt8] = [UInt8(ascii: "[")]
            writeHomeEntries(hub: hub, devices: peer.devices, status: peer.status, linkUp: linkUp, to: &bytes)
            bytes.append(UInt8(ascii: "]"))
            if case .array(let written)? = try? JSON.parse(bytes) { entries += written }
        }
        return .array(entries)
    }

    /// A peer's devices as the whole-home document shows them, comma-separated: as the peer published them, with
    /// `hub` and the connectivity seen from here last.
    private func writeHomeEntries(hub: String, devices: [PeerDevice]?, status: ConnectivityState, linkUp: Bool,
                                  to out: inout [UInt8]) {
        for (k, d) in (devices ?? []).enumerated() {
            if k > 0 { out.append(UInt8(ascii: ",")) }
            let c = Self.connectivity(status: status, linkUp: linkUp, route: route(hub), ownerState: d.owner)
            out.append(contentsOf: d.members)
            DocumentWriter.raw(#","hub":"#, &out)
            JSON.writeString(hub, to: &out)
            DocumentWriter.raw(#","sourceConnectivity":"#, &out)
            DocumentWriter.connectivity(c, &out)
            out.append(UInt8(ascii: "}"))
        }
    }

    /// `homeDocument().bytes`, written from each peer's entries as last written unless that peer's status or
    /// summary (or our link) changed since. Why: in a home of many hubs the document is large, and rebuilding every
    /// peer's part for each publication cost each hub more CPU than its start-up; now a
    /// publication rewrites this hub's own devices and the peers that changed, and copies the rest.
    func homeDocumentBytes() -> [UInt8] {
        let (peers, linkUp) = state.withLock { s in
            (s.peers.sorted { $0.key < $1.key }.map { hub, peer in
                (hub: hub, version: peer.version, status: peer.status,
                 cached: peer.entries.flatMap { $0.version == peer.version && $0.linkUp == s.linkUp ? $0.bytes : nil },
                 devices: peer.devices)
            }, s.linkUp)
        }
        var out: [UInt8] = [UInt8(ascii: "[")]
        out.reserveCapacity(peers.reduce(4096) { $0 + ($1.cached?.count ?? 0) })
        var first = true
        home.forEachView { device in
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            SummaryWriter.write(device, hub: topics.hub, to: &out)
        }
        var written: [(hub: String, version: Int, bytes: [UInt8])] = []
        for peer in peers {
            var bytes: [UInt8]
            if let cached = peer.cached {
                bytes = cached
            } else {
                bytes = []
                writeHomeEntries(hub: peer.hub, devices: peer.devices, status: peer.status, linkUp: linkUp, to: &bytes)
                written.append((peer.hub, peer.version, bytes))
            }
            if bytes.isEmpty { continue }
            if out.count > 1 { out.append(UInt8(ascii: ",")) }
            out.append(contentsOf: bytes)
        }
        if !written.isEmpty {
            state.withLock { s in
                for w in written where s.peers[w.hub]?.version == w.version && s.linkUp == linkUp {
                    s.peers[w.hub]!.entries = (w.version, linkUp, w.bytes)
                }
            }
        }
        out.append(UInt8(ascii: "]"))
        return out
    }

    /// Something the whole-home document shows changed: it goes out now, or at the end of the window.
    func publishHome() { homeThrottle.changed() }

    /// Publishes the whole-home document now if a change is held (a clean stop).
    func flushHome() { homeThrottle.flush() }

    private func sendHome() {
        guard outbox.isConnected else { return }  // republished when the link comes back
        try? outbox.publish(PeerOutbox.Message(topic: homeTopic, payload: homeDocumentBytes(), retain: true))
    }
}
