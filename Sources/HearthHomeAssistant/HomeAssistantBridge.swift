public import HearthEngine
import HearthModel
import HearthSync

/// Keeps Home Assistant's view of a hub's devices current: what the hub calls on its MQTT events, and what it
/// gets back to publish through `publish`. It holds no MQTT client, so the hub decides how messages go out.
///
/// The hub subscribes to `subscriptions` for its whole life and wires:
/// - every connection to the broker → `connected()`: reads this hub's retained configs (subscribe to its own config
///   filter, then a marker on `syncTopic`; when the marker comes back every retained config came before it, as
///   mosquitto queues a SUBSCRIBE's retained messages before it reads the next packet; `syncTimeout` ends the reading
///   if it never does), clears the stale ones, moves the earlier layout's configs by Home Assistant's discovery
///   migration, and only then announces every device, `announcementsPerTurn` at a time (`afterWritten`), so the
///   network thread answers requests between parts;
/// - every message on those subscriptions, and on the filters the bridge subscribes itself →
///   `received(topic:payload:)`: Home Assistant's birth message announces everything again;
/// - `Home.observe` batches → `handle(_:)`: a rename or a room change re-announces the device, a trait event goes to
///   the device's events topic.
///
/// Why it is done this way (one reading per connection, announcing after it, a part at a time, the migration):
/// docs/home-assistant.md, "Lifecycle". A reconnection while the filters are still subscribed only sends a new
/// marker (the client re-sends its subscriptions itself); clearing a stale config twice is harmless.
public final class HomeAssistantBridge: Sendable {
    public let home: Home
    public let discovery: HomeAssistantDiscovery
    private let publish: @Sendable (HomeAssistantMessage) -> Void
    private let subscribe: @Sendable (String) -> Void
    private let unsubscribe: @Sendable (String) -> Void
    private let log: @Sendable (String) -> Void
    private let clock: any EngineClock
    private let afterWritten: @Sendable (@escaping @Sendable () -> Void) -> Void
    private let syncTimeout: Duration
    private let migrationSettle: Duration
    /// A digest of the config payload last published per device id, so an unchanged device is not announced twice.
    /// The digest, not the payload: a config is kilobytes, kept for every device for the hub's whole life, and all
    /// it is used for is to tell whether a new one differs.
    private let announced = Locked<[String: UInt64]>([:])
    private let current = Locked<Set<String>?>(nil)
    /// Counts announcements of everything: a part of an earlier one than the latest ends it.
    private let announcements = Locked<UInt64>(0)

    /// How many device configs one part of an announcement of everything writes (see the type's comment): a few
    /// milliseconds of a turn of the network thread.
    public static let announcementsPerTurn = 64

    /// Where this bridge stands in reading the retained configs of the current connection.
    private struct Sync {
        /// Names this bridge's markers apart from any other's (another process with the same hub id, a stray
        /// publisher): drawn once.
        let nonce = UInt64.random(in: 0...UInt64.max)
        /// Counts connections; the marker of connection `generation` ends only that connection's reading.
        var generation: UInt64 = 0
        /// Whether the config filter and the earlier layout's hub topic are subscribed (recorded by the client,
        /// so re-sent on a reconnection): the reading is going on.
        var subscribed = false
        /// Whether the earlier layout's filter is subscribed: the reading's second step.
        var legacySubscribed = false
        /// This hub's configs in the earlier layout seen in this reading (object ids, in order of arrival).
        var legacy: [String] = []
        /// Whether announcements wait for the reading (and a move) to end; `handle` and the birth message then
        /// leave them to it.
        var held = true
        var deadline: Task<Void, Never>?
        /// How many readings have ended: by their marker, by the time limit.
        var endedByMarker = 0
        var endedByTimeout = 0
    }
    private let sync = Locked(Sync())

    /// - Parameters:
    ///   - clock, syncTimeout: bound the wait for the marker (see the type's comment).
    ///   - migrationSettle: how long Home Assistant is given to unload the entities of the earlier layout's configs
    ///     before the same entities are announced on their new topics.
    ///   - subscribe, unsubscribe: subscribe the hub's client to a topic filter (for the config filters, on
    ///     each connection) and unsubscribe it; both must return without waiting for the broker.
    ///   - log: told when a reading ended by the time limit (its marker never came back), and of a move.
    ///   - afterWritten: runs the next part of an announcement once what `publish` queued has been written (the
    ///     hub's `MQTTClient.whenWritten`); by default at once, every part in one go.
    ///   - publish: sends one message.
    public init(home: Home, options: HomeAssistantOptions, clock: any EngineClock = MonotonicClock(),
                syncTimeout: Duration = .seconds(30), migrationSettle: Duration = .seconds(2),
                subscribe: @escaping @Sendable (String) -> Void = { _ in },
                unsubscribe: @escaping @Sendable (String) -> Void = { _ in },
                log: @escaping @Sendable (String) -> Void = { _ in },
                afterWritten: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void = { $0() },
                publish: @escaping @Sendable (HomeAssistantMessage) -> Void) {
        self.home = home
        self.discovery = HomeAssistantDiscovery(options: options)
        self.clock = clock
        self.afterWritten = afterWritten
        self.syncTimeout = syncTimeout
        self.migrationSettle = migrationSettle
        self.subscribe = subscribe
        self.unsubscribe = unsubscribe
        self.log = log
        self.publish = publish
    }

    /// The topic filters to subscribe to for the hub's whole life, whose messages go to
    /// `received(topic:payload:)`: Home Assistant's birth topic and this bridge's marker topic. The config
    /// filters are subscribed and unsubscribed by the bridge itself on each connection.
    public var subscriptions: [String] { [discovery.birthTopic, discovery.syncTopic] }

    /// Whether the bridge is reading the retained configs (the config filter is subscribed).
    public var isReadingRetainedConfigs: Bool { sync.withLock { $0.subscribed } }
    /// How many readings of the retained configs have ended: by the marker's return, by the time limit.
    public var readingsEnded: (byMarker: Int, byTimeout: Int) {
        sync.withLock { ($0.endedByMarker, $0.endedByTimeout) }
    }

    /// Reads the retained configs (subscribe, marker); their end announces the hub and every device this hub owns
    /// (on every connection: the broker may have lost them).
    public func connected() {
        // An announcement of the previous connection's ends here: this one's reading ends in a new one.
        announcements.withLock { $0 &+= 1 }
        let (generation, nonce, subscribeNow) = sync.withLock { s in
            s.generation &+= 1
            s.deadline?.cancel()
            s.deadline = nil
            s.held = true
            defer { s.subscribed = true }
            return (s.generation, s.nonce, !s.subscribed)
        }
        // Subscribing and publishing the marker in this order on one connection is what makes the marker come back
        // after the retained configs; both only queue a packet.
        if subscribeNow {
            subscribe(discovery.configFilter)
            subscribe(discovery.legacyHubConfigTopic)
        }
        publish(discovery.syncMarker(nonce: nonce, generation: generation))
        let clock = self.clock, deadline = clock.now + Self.milliseconds(syncTimeout)
        let task = Task { [weak self] in
            do { try await clock.sleep(until: deadline) } catch { return }
            self?.endReading(generation: generation, byMarker: false)
        }
        sync.withLock { s in
            if s.generation == generation && s.subscribed { s.deadline = task } else { task.cancel() }
        }
    }

    public func received(topic: String, payload: [UInt8]) {
        if topic == discovery.birthTopic {
            if payload.elementsEqual("online".utf8), !sync.withLock({ $0.held }) { announceAll(force: true) }
            return
        }
        if topic == discovery.syncTopic {
            let (nonce, generation) = sync.withLock { ($0.nonce, $0.generation) }
            // Only the current connection's markers; anything else on the topic (an earlier connection's, a stray
            // or malformed message) is ignored.
            if payload == discovery.syncMarker(nonce: nonce, generation: generation).payload {
                firstStepEnded(generation: generation)
            } else if payload == discovery.syncMarker(nonce: nonce, generation: generation, legacy: true).payload {
                endReading(generation: generation, byMarker: true)
            }
            return
        }
        if let objectID = discovery.legacyObjectID(topic: topic) {
            if !payload.isEmpty {
                sync.withLock { s in if s.subscribed && !s.legacy.contains(objectID) { s.legacy.append(objectID) } }
            }
            return
        }
        if let removal = discovery.staleConfig(topic: topic, payload: payload,
                                               isCurrent: { currentDevices().contains(String($0)) }) {
            publish(removal)
        }
    }

    /// The first marker is back: every retained config of this hub's node, and its hub config in the earlier layout,
    /// has been delivered. With that config found, the earlier layout is read too (a second marker ends it).
    private func firstStepEnded(generation: UInt64) {
        let readLegacy = sync.withLock { s -> UInt64? in
            guard s.generation == generation, s.subscribed, !s.legacy.isEmpty, !s.legacySubscribed else { return nil }
            s.legacySubscribed = true
            subscribe(discovery.legacyConfigFilter)
            return s.nonce
        }
        if let nonce = readLegacy {
            publish(discovery.syncMarker(nonce: nonce, generation: generation, legacy: true))
        } else {
            endReading(generation: generation, byMarker: true)
        }
    }

    /// Unsubscribes from the config filters if connection `generation`'s reading is still going on, then moves
    /// what it found of the earlier layout and announces. The calls are made under the lock so that they cannot
    /// cross a reconnection's subscribe.
    private func endReading(generation: UInt64, byMarker: Bool) {
        let found = sync.withLock { s -> [String]? in
            guard s.generation == generation, s.subscribed else { return nil }
            s.subscribed = false
            if byMarker { s.endedByMarker += 1 } else { s.endedByTimeout += 1 }
            if byMarker { s.deadline?.cancel() }
            s.deadline = nil
            unsubscribe(discovery.configFilter)
            unsubscribe(discovery.legacyHubConfigTopic)
            if s.legacySubscribed {
                unsubscribe(discovery.legacyConfigFilter)
                s.legacySubscribed = false
            }
            defer { s.legacy = [] }
            return s.legacy
        }
        guard let found else { return }
        if !byMarker {
            log("""
                Home Assistant discovery: the marker on \(discovery.syncTopic) did not come back within \
                \(syncTimeout); stopped reading the retained configs (a stale config of this hub may stay until the \
                next connection; a broker that drops messages, or an ACL that does not let the hub read its own \
                topics, can cause this)
                """)
        }
        if found.isEmpty { announceAfterReading(generation: generation) } else { move(found, generation: generation) }
    }

    /// Moves this hub's configs of the earlier layout (see the type's comment): a device no longer here is cleared,
    /// the others are handed over by Home Assistant's discovery migration, and announced after `migrationSettle`.
    private func move(_ found: [String], generation: UInt64) {
        let devices = currentDevices()
        var moving: [String] = [], cleared = 0
        for objectID in found {
            let device = ObjectID.encodedDevice(inObjectID: objectID, hub: discovery.options.hub)
            if objectID == discovery.node || device.map({ devices.contains(String($0)) }) == true {
                moving.append(objectID)
                publish(discovery.migrationRequest(legacyObjectID: objectID))
            } else {
                cleared += 1
                publish(discovery.legacyRemoval(objectID: objectID))
            }
        }
        log("""
            Home Assistant discovery: moving \(moving.count) config(s) of this hub from \
            \(discovery.legacyConfigFilter) to \(discovery.configFilter) (Home Assistant keeps their entities' ids, \
            names and areas)\
            \(cleared > 0 ? "; cleared \(cleared) of devices no longer here" : "")
            """)
        let clock = self.clock, deadline = clock.now + Self.milliseconds(migrationSettle)
        Task { [weak self] in
            try? await clock.sleep(until: deadline)
            guard let self else { return }
            self.announceAfterReading(generation: generation)
            for objectID in moving { self.publish(self.discovery.legacyRemoval(objectID: objectID)) }
        }
    }

    /// Announces everything, unless a newer connection has started its own reading (whose end announces).
    private func announceAfterReading(generation: UInt64) {
        let current = sync.withLock { s -> Bool in
            guard s.generation == generation else { return false }
            s.held = false
            return true
        }
        if current { announceAll(force: true) }
    }

    static func milliseconds(_ d: Duration) -> Int64 {
        d.components.seconds * 1000 + d.components.attoseconds / 1_000_000_000_000_000
    }

    public func handle(_ events: [HomeEvent]) {
        var metadata: [String] = []
        for e in events {
            switch e.change {
            case .metadata:
                if !metadata.contains(e.deviceID) { metadata.append(e.deviceID) }
            case .event:
                if let message = discovery.event(e) { publish(message) }
            case .attribute, .connectivity, .unsupported, .table:
                break
            }
        }
        // While announcements are held, the reading's end announces every device as it is then. (Asked only for a
        // batch with metadata: every state change of the hub comes through here.)
        guard !metadata.isEmpty, !sync.withLock({ $0.held }) else { return }
        for id in metadata { if let view = try? home.view(id) { announce(view, force: false) } }
    }

    /// The encoded ids of the devices this hub announces, read from the home (retained configs may arrive before
    /// `connected()`), kept until the next announcement of everything: only a device whose types stop or start
    /// being mirrored changes it, and that is announced on the next connection.
    private func currentDevices() -> Set<String> {
        if let cached = current.withLock({ $0 }) { return cached }
        let devices = Set(home.views().filter { discovery.hasConfig($0) }.map { ObjectID.encode($0.id) })
        current.withLock { $0 = devices }
        return devices
    }

    /// Announces everything, a part at a time (see the type's comment), and notes which devices it announced: that
    /// is the set `currentDevices` needs, and building it again meant writing every device's config a second time
    /// (an eighth of a 1,000-device hub's start-up, callgrind).
    private func announceAll(force: Bool) {
        let pass = announcements.withLock { n in n &+= 1; return n }
        publish(discovery.hubConfig())
        announce(home.deviceIDs, from: 0, announced: [], force: force, pass: pass)
    }

    /// Announces the devices of `ids` from `start` on, one part, and hands the rest to `afterWritten`. Each device's
    /// view is taken as its part is written, so a part shows the device as it is then; a device added or removed
    /// meanwhile is announced or cleared by the next connection, as before.
    private func announce(_ ids: [String], from start: Int, announced: Set<String>, force: Bool, pass: UInt64) {
        guard announcements.withLock({ $0 == pass }) else { return }
        var announcedNow = announced
        let end = min(start + Self.announcementsPerTurn, ids.count)
        for id in ids[start..<end] {
            if let view = try? home.view(id), announce(view, force: force) { announcedNow.insert(ObjectID.encode(id)) }
        }
        guard end == ids.count else {
            afterWritten { [weak self, announcedNow] in
                self?.announce(ids, from: end, announced: announcedNow, force: force, pass: pass)
            }
            return
        }
        current.withLock { $0 = announcedNow }
    }

    /// Returns whether the device has a config of this hub's own (published or unchanged).
    @discardableResult
    private func announce(_ view: DeviceView, force: Bool) -> Bool {
        guard let message = discovery.config(view) else { return false }
        let digest = Self.digest(message.payload)
        let changed = announced.withLock { a in
            defer { a[view.id] = digest }
            return a[view.id] != digest
        }
        if changed || force { publish(message) }
        return true
    }

    /// 64-bit FNV-1a: stable, and two different configs of one device colliding is not a practical concern
    /// (the worst it could do is skip one re-announcement, which the next connection's announces anyway).
    static func digest(_ bytes: [UInt8]) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in bytes { h = (h ^ UInt64(b)) &* 0x0000_0100_0000_01b3 }
        return h
    }
}
