import HearthContract
public import HearthEngine
import HearthModel

/// One message for the broker: what the hub publishes for Home Assistant.
public struct HomeAssistantMessage: Sendable, Hashable, CustomStringConvertible {
    public var topic: String
    public var payload: [UInt8]
    public var retain: Bool

    public init(topic: String, payload: [UInt8], retain: Bool) {
        self.topic = topic
        self.payload = payload
        self.retain = retain
    }

    public var description: String {
        "\(topic)\(retain ? " (retained)" : ""): \(String(decoding: payload, as: UTF8.self))"
    }
}

/// What discovery needs to know besides the home: its topics and names.
public struct HomeAssistantOptions: Sendable, Hashable {
    /// Home Assistant's discovery prefix (its birth message is `<prefix>/status`).
    public var discoveryPrefix: String
    /// Hearth's own topic prefix and this hub's id, as in `TopicScheme`.
    public var hearthPrefix: String
    public var hub: String
    /// Named in every message's origin block.
    public var version: String
    /// How long `button.press` on an Identify button makes the device identify itself, in seconds.
    public var identifySeconds: Int

    public init(hub: String, hearthPrefix: String = "hearth", discoveryPrefix: String = "homeassistant",
                version: String = BasicInformationServer.hearthVersion, identifySeconds: Int = 10) {
        self.hub = hub
        self.hearthPrefix = hearthPrefix
        self.discoveryPrefix = discoveryPrefix
        self.version = version
        self.identifySeconds = identifySeconds
    }
}

/// Home Assistant's MQTT discovery for a hub's devices (`docs/home-assistant.md`): pure functions from a device
/// to the messages that announce it, remove it, and carry its trait events.
///
/// Home Assistant reads state straight from Hearth's device documents with value templates, and sends commands
/// as Hearth requests on the device's `set` topic with command templates: one source of truth, and commands take
/// the same engine path as every other request. Only trait events, which no document holds, get a topic of their
/// own (`<hearth prefix>/<hub>/devices/<device>/events`).
public struct HomeAssistantDiscovery: Sendable {
    public let options: HomeAssistantOptions
    /// This hub's Hearth topics, which the configs name.
    let topics: TopicScheme
    /// What configs of devices of one type share, written once.
    let templates = TemplateCache()

    public init(options: HomeAssistantOptions) {
        self.options = options
        topics = TopicScheme(prefix: options.hearthPrefix, hub: options.hub)
    }

    // MARK: Topics

    /// Home Assistant's birth (`online`) and will (`offline`).
    public var birthTopic: String { "\(options.discoveryPrefix)/status" }
    /// This hub's node in the discovery topics (`hearth_<hub>`): Home Assistant does not read it, but it puts every
    /// config of one hub under one topic level, so that a hub can subscribe to its own configs alone.
    public var node: String { ObjectID.hub(options.hub) }
    /// This hub's discovery configs; the hub reads the retained ones on each connection to clear those it no longer
    /// has, and unsubscribes once they have been delivered (`HomeAssistantBridge`). Other hubs' configs are under
    /// other nodes, so no hub receives them.
    public var configFilter: String { "\(options.discoveryPrefix)/device/\(node)/+/config" }
    /// Where this hub sends itself the marker that ends its reading of the retained configs: a topic of its own,
    /// not retained, that nothing else reads.
    public var syncTopic: String { topics.discoverySync }
    /// `<discovery prefix>/device/hearth_<hub>/<object id>/config`; object ids are `ObjectID`'s.
    public func configTopic(objectID: String) -> String {
        "\(options.discoveryPrefix)/device/\(node)/\(objectID)/config"
    }

    // MARK: The layout of earlier versions

    /// Where earlier versions of Hearth put a config: `<discovery prefix>/device/<object id>/config`, without the
    /// node, where no wildcard selects one hub's configs. A hub moves its own from there (`HomeAssistantBridge`).
    public func legacyConfigTopic(objectID: String) -> String { "\(options.discoveryPrefix)/device/\(objectID)/config" }
    /// The hub's own config in the earlier layout: a hub that finds it retained ran an earlier version, and only
    /// then reads `legacyConfigFilter`, which brings every hub's configs.
    public var legacyHubConfigTopic: String { legacyConfigTopic(objectID: node) }
    public var legacyConfigFilter: String { "\(options.discoveryPrefix)/device/+/config" }

    var statusTopic: String { topics.status }
    func documentTopic(_ device: String) -> String { topics.device(device) }
    func setTopic(_ device: String) -> String { topics.set(device) }
    /// Where a device's trait events go, one JSON object each, not retained.
    public func eventsTopic(_ device: String) -> String { topics.events(device) }

    // MARK: Messages

    /// The hub itself as a device: the parent (`via_device`) of its devices, with its connectivity.
    public func hubConfig() -> HomeAssistantMessage {
        let id = ObjectID.hub(options.hub)
        let component: DiscoveryJSON = .object([
            ("platform", .string("binary_sensor")),
            ("unique_id", .string(id + "__status")),
            ("name", .null),
            ("device_class", .string("connectivity")),
            ("entity_category", .string("diagnostic")),
            ("state_topic", .string(statusTopic)),
            ("payload_on", .string("online")),
            ("payload_off", .string("offline")),
        ])
        let payload: DiscoveryJSON = .object([
            ("device", .object([
                ("identifiers", .array([.string(id)])),
                ("name", .string("Hearth \(options.hub)")),
                ("manufacturer", .string("Hearth")),
                ("model", .string("Hearth hub")),
                ("sw_version", .string(options.version)),
            ])),
            ("origin", origin),
            ("components", .object([("status", component)])),
        ])
        return HomeAssistantMessage(topic: configTopic(objectID: id), payload: payload.bytes, retain: true)
    }

    /// The retained config announcing `device`, or nil when the device has nothing of this hub's own (every
    /// type mirrored from a peer: its owner announces it).
    public func config(_ device: DeviceView) -> HomeAssistantMessage? {
        guard let payload = configPayload(device) else { return nil }
        return HomeAssistantMessage(topic: configTopic(objectID: ObjectID.device(hub: options.hub, device: device.id)),
                                    payload: payload.bytes, retain: true)
    }

    /// The marker of connection `generation` of a bridge drawn `nonce`: `<nonce hex>-<generation>`, and
    /// `<nonce hex>-<generation>-legacy` for the second step of a reading that found the earlier layout; not retained.
    public func syncMarker(nonce: UInt64, generation: UInt64, legacy: Bool = false) -> HomeAssistantMessage {
        HomeAssistantMessage(topic: syncTopic,
                             payload: Array("\(String(nonce, radix: 16))-\(generation)\(legacy ? "-legacy" : "")".utf8),
                             retain: false)
    }

    /// The empty retained config that makes Home Assistant remove a device and its entities.
    public func removal(objectID: String) -> HomeAssistantMessage {
        HomeAssistantMessage(topic: configTopic(objectID: objectID), payload: [], retain: true)
    }

    /// The removal of a retained config seen on the broker when it is one of this hub's devices and `isCurrent`
    /// says the device is no longer announced (it left the configuration, or is now mirrored); nil otherwise.
    public func staleConfig(topic: String, payload: [UInt8], isCurrent: (_ encodedDeviceID: Substring) -> Bool)
        -> HomeAssistantMessage?
    {
        guard !payload.isEmpty,
            let objectID = Self.objectID(in: topic, after: "\(options.discoveryPrefix)/device/\(node)/"),
            let encoded = ObjectID.encodedDevice(inObjectID: objectID, hub: options.hub), !isCurrent(encoded)
        else { return nil }
        return removal(objectID: objectID)
    }

    /// The object id of a config of this hub's in the earlier layout (its own device's or one of its devices'),
    /// nil for any other topic.
    public func legacyObjectID(topic: String) -> String? {
        guard let objectID = Self.objectID(in: topic, after: "\(options.discoveryPrefix)/device/"),
              objectID == node || ObjectID.encodedDevice(inObjectID: objectID, hub: options.hub) != nil
        else { return nil }
        return objectID
    }

    /// Home Assistant's request to let go of the entities discovered on a config's topic while keeping their
    /// registry entries (entity ids, names, areas the user gave them), so that the same unique ids discovered on
    /// another topic take them over; published retained to the earlier layout's topic, which is cleared once the
    /// configs are announced on their new topics.
    public func migrationRequest(legacyObjectID objectID: String) -> HomeAssistantMessage {
        HomeAssistantMessage(
            topic: legacyConfigTopic(objectID: objectID), payload: Array(#"{"migrate_discovery":true}"#.utf8),
            retain: true)
    }

    /// The empty retained config on the earlier layout's topic: Home Assistant removes what was discovered there.
    public func legacyRemoval(objectID: String) -> HomeAssistantMessage {
        HomeAssistantMessage(topic: legacyConfigTopic(objectID: objectID), payload: [], retain: true)
    }

    /// The one topic level between `head` and `/config`, nil when `topic` is not of that shape.
    static func objectID(in topic: String, after head: String) -> String? {
        let tail = "/config"
        guard topic.hasPrefix(head), topic.hasSuffix(tail), topic.utf8.count > head.utf8.count + tail.utf8.count else {
            return nil
        }
        let level = topic.dropFirst(head.count).dropLast(tail.count)
        return level.contains("/") ? nil : String(level)
    }

    /// A trait event (a wall switch's `initialPress`) as the event entity reads it; nil for other changes.
    public func event(_ e: HomeEvent) -> HomeAssistantMessage? {
        guard case .event(let type, let trait, let name, let fields) = e.change else { return nil }
        // Fields as the device documents write values: enums by name, bitmaps as objects of flags.
        let descriptor = TraitRegistry.standard.server(for: trait)?.descriptor.event(named: name)
        var members: [(String, DiscoveryJSON)] = []
        for (key, value) in fields.sorted(by: { $0.key < $1.key }) {
            members.append((key, Self.json(value, as: descriptor?.field(named: key)?.type)))
        }
        let payload: DiscoveryJSON = .object([
            ("type", .string(type)), ("trait", .string(trait.qualifiedName)), ("event", .string(name)),
            ("fields", .object(members)),
        ])
        return HomeAssistantMessage(topic: eventsTopic(e.deviceID), payload: payload.bytes, retain: false)
    }

    /// A value in the MQTT API's coding (`docs/mqtt-api.md`), by its type when known.
    static func json(_ value: Value, as type: ValueType?) -> DiscoveryJSON {
        switch (value, type) {
        case (.null, _): return .null
        case (.bool(let b), _): return .bool(b)
        case (.string(let s), _): return .string(s)
        case (.int(let i), .enumeration(let e)?): return e.name(of: i).map(DiscoveryJSON.string) ?? .int(i)
        case (.int(let i), .bitmap(let b)?): return .object(b.bits.map { ($0.name, .bool(i & (1 << $0.bit) != 0)) })
        case (.int(let i), _): return .int(i)
        case (.structure(let fields), .structure(let s)?):
            return .object(s.fields.compactMap { f in fields[f.name].map { (f.name, json($0, as: f.type)) } })
        case (.structure(let fields), _):
            return .object(fields.sorted { $0.key < $1.key }.map { ($0.key, json($0.value, as: nil)) })
        case (.list(let items), .list(let element, _)?):
            return .array(items.map { json($0, as: element) })
        case (.list(let items), _):
            return .array(items.map { json($0, as: nil) })
        }
    }

    // MARK: Payloads

    var origin: DiscoveryJSON {
        .object([("name", .string("Hearth")), ("sw_version", .string(options.version))])
    }

    /// `{"device":{…},"origin":{…},"components":{…}}`, or nil when no type of the device is this hub's own.
    public func configPayload(_ device: DeviceView) -> DiscoveryJSON? {
        var components: [(String, DiscoveryJSON)] = []
        for t in 0..<device.typeCount where isLocal(device, type: t) {
            components += EntityMapping(discovery: self, device: device, typeIndex: t).components()
        }
        guard !components.isEmpty else { return nil }
        return .object([("device", deviceBlock(device)), ("origin", origin), ("components", .object(components))])
    }

    /// Whether the device has a config (``configPayload(_:)`` is not nil), without writing it.
    public func hasConfig(_ device: DeviceView) -> Bool {
        (0..<device.typeCount).contains { t in
            guard isLocal(device, type: t) else { return false }
            let type = device.type(t)
            return (0..<type.traitCount).contains { EntityMapping.entityTraits.contains(type.traitDescriptor($0).id) }
        }
    }

    /// A type is this hub's when every trait's data comes from its own hardware; a mirrored one is the owner's.
    func isLocal(_ device: DeviceView, type t: Int) -> Bool {
        let type = device.type(t)
        return (0..<type.traitCount).allSatisfy {
            device.sourceConnectivity(type: t, trait: $0).dataSourceLocality == .direct
        }
    }

    /// Home Assistant's device block from the device and its BasicInformation: names, maker, versions, the hub.
    func deviceBlock(_ device: DeviceView) -> DiscoveryJSON {
        var block: [(String, DiscoveryJSON)] = [
            ("identifiers", .array([.string(ObjectID.device(hub: options.hub, device: device.id))])),
            ("name", .string(device.name)),
        ]
        // BasicInformation's five attributes, found and read at once: one look-up of each by name, in every type,
        // was a sixth of writing a config (callgrind).
        if let (t, k) = Self.trait(.basicInformation, of: device) {
            let descriptor = device.type(t).traitDescriptor(k)
            let attributes = Self.deviceInformation.map { descriptor.attribute(named: $0.attribute)?.id }
            var values: [Value?] = []
            device.readValues(type: t, trait: k, of: attributes.map { $0 ?? 0 }, into: &values)
            for (i, (key, _)) in Self.deviceInformation.enumerated() where attributes[i] != nil {
                if let value = values[i]?.stringValue, !value.isEmpty { block.append((key, .string(value))) }
            }
        }
        if let room = device.roomID { block.append(("suggested_area", .string(room))) }
        block.append(("via_device", .string(ObjectID.hub(options.hub))))
        return .object(block)
    }

    /// Home Assistant's device block keys and the BasicInformation attributes they show.
    static let deviceInformation: [(key: String, attribute: String)] = [
        ("manufacturer", "vendorName"), ("model", "productName"), ("serial_number", "serialNumber"),
        ("sw_version", "softwareVersionString"), ("hw_version", "hardwareVersionString"),
    ]

    /// Where the first type that has the trait has it.
    static func trait(_ id: TraitID, of device: DeviceView) -> (type: Int, trait: Int)? {
        for t in 0..<device.typeCount {
            let type = device.type(t)
            for k in 0..<type.traitCount where type.traitDescriptor(k).id == id { return (t, k) }
        }
        return nil
    }
}
