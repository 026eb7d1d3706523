public import HearthEngine
import HearthModel
import HearthSync

/// Keeps Home Assistant's view of a hub's devices current: what the hub calls on its MQTT events, and what it
/// gets back to publish through `publish`. It holds no MQTT client, so the hub decides how messages go out.
///
/// The hub subscribes to `subscriptions` and wires:
/// - every connection to the broker → `connected()` (announces every device);
/// - every message on those subscriptions → `received(topic:payload:)`: Home Assistant's birth message
///   announces everything again; a retained config of one of this hub's devices that is no longer announced
///   (it left the configuration, or is now another hub's) is cleared with an empty retained config;
/// - `Home.observe` batches → `handle(_:)`: a rename or a room change re-announces the device (Home Assistant
///   renames it; unique ids stay), a trait event goes to the device's events topic.
public final class HomeAssistantBridge: Sendable {
    public let home: Home
    public let discovery: HomeAssistantDiscovery
    private let publish: @Sendable (HomeAssistantMessage) -> Void
    /// A digest of the config payload last published per device id, so an unchanged device is not announced twice.
    /// The digest, not the payload: a config is 1–3 KB, kept for every device for the hub's whole life
    /// (2 MB of a 1,000-device hub's memory), and all it is used for is to tell whether a new one differs.
    private let announced = Locked<[String: UInt64]>([:])
    private let current = Locked<Set<String>?>(nil)

    public init(home: Home, options: HomeAssistantOptions, publish: @escaping @Sendable (HomeAssistantMessage) -> Void) {
        self.home = home
        self.discovery = HomeAssistantDiscovery(options: options)
        self.publish = publish
    }

    /// The topic filters whose messages go to `received(topic:payload:)`.
    public var subscriptions: [String] { [discovery.birthTopic, discovery.configFilter] }

    /// Announces the hub and every device this hub owns (on every connection: the broker may have lost them).
    public func connected() { announceAll(force: true) }

    public func received(topic: String, payload: [UInt8]) {
        if topic == discovery.birthTopic {
            if payload.elementsEqual("online".utf8) { announceAll(force: true) }
            return
        }
        if let removal = discovery.staleConfig(topic: topic, payload: payload,
                                               isCurrent: { currentDevices().contains(String($0)) }) {
            publish(removal)
        }
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
        for id in metadata { if let view = try? home.view(id) { announce(view, force: false) } }
    }

    /// The encoded ids of the devices this hub announces, read from the home (retained configs may arrive before
    /// `connected()`), kept until the next announcement of everything: only a device whose types stop or start
    /// being mirrored changes it, and that is announced on the next connection.
    private func currentDevices() -> Set<String> {
        if let cached = current.withLock({ $0 }) { return cached }
        let devices = Set(home.views().filter { discovery.configPayload($0) != nil }.map { ObjectID.encode($0.id) })
        current.withLock { $0 = devices }
        return devices
    }

    /// Announces everything, and notes which devices it announced: that is the set `currentDevices` needs, and
    /// building it again meant writing every device's config a second time (an eighth of a 1,000-device hub's
    /// start-up, callgrind, issue 21 §3).
    private func announceAll(force: Bool) {
        publish(discovery.hubConfig())
        var announcedNow = Set<String>()
        for view in home.views() where announce(view, force: force) {
            announcedNow.insert(ObjectID.encode(view.id))
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
