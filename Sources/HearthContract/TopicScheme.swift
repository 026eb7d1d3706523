/// One topic of the contract (`docs/mqtt-api.md`), as ``TopicScheme/classify(_:)`` reads it and
/// ``TopicScheme/topic(_:)`` writes it. Hub and device ids are single levels (``TopicScheme/problem(withLevel:)``);
/// a group is 1…65535.
public enum HubTopic: Sendable, Hashable {
    /// `<prefix>/<hub>/status`: `online` / `offline`, retained; the will says `offline`.
    case status(hub: String)
    /// `<prefix>/<hub>/heartbeat`: `{"interval":N}` every N seconds, retained (`Heartbeat`); empty when none is sent.
    case heartbeat(hub: String)
    /// `<prefix>/<hub>/devices`: the summary of every device, retained.
    case summary(hub: String)
    /// `<prefix>/<hub>/devices/<device>`: one device's document, retained.
    case document(hub: String, device: String)
    /// `<prefix>/<hub>/devices/<device>/set`: where requests for a device arrive.
    case set(hub: String, device: String)
    /// `<prefix>/<hub>/devices//set`: a request that names no device, which the hub's `set` subscription receives (its
    /// `+` matches an empty level) and answers as one it cannot run.
    case setWithoutDevice(hub: String)
    /// `<prefix>/<hub>/devices/<device>/events`: one trait event each, not retained.
    case events(hub: String, device: String)
    /// `<prefix>/<hub>/responses`: one response per request.
    case responses(hub: String)
    /// `<prefix>/<hub>/answers`: other hubs' answers to the requests this hub forwarded to them.
    case answers(hub: String)
    /// `<prefix>/<hub>/home`: the whole home as this hub sees it, retained.
    case home(hub: String)
    /// `<prefix>/<hub>/groups`: this hub's group memberships and scenes, retained.
    case groups(hub: String)
    /// `<prefix>/<hub>/discovery-sync`: the marker that ends the hub's reading of Home Assistant's retained configs.
    case discoverySync(hub: String)
    /// `<prefix>/groups/<group>/set`: a command for every member of a group, on every hub.
    case groupSet(group: Int)

    /// The hub the topic belongs to; nil for a group's topic, which is every hub's.
    public var hub: String? {
        switch self {
        case .status(let hub), .heartbeat(let hub), .summary(let hub), .document(let hub, _), .set(let hub, _),
             .setWithoutDevice(let hub), .events(let hub, _), .responses(let hub), .answers(let hub), .home(let hub),
             .groups(let hub), .discoverySync(let hub):
            return hub
        case .groupSet:
            return nil
        }
    }
}

/// The MQTT topics under one prefix, seen from one hub, as `docs/mqtt-api.md` defines them: every topic Hearth
/// publishes or subscribes to is made here, and every topic it receives is read here (``classify(_:)``). Clients and
/// other hubs depend on these names; change them only with that document.
public struct TopicScheme: Sendable, Hashable {
    public let prefix: String
    /// This hub's id (empty for a client, which has none).
    public let hub: String
    /// `<prefix>/<hub>`.
    public let base: String
    /// Where answers go.
    public let responses: String
    /// `<prefix>/<hub>/` and `<prefix>/<hub>/devices/`: made once, since a hub names every document it publishes (and
    /// every request it forwards) with the second.
    private let own: String
    private let devicePrefix: String

    public init(prefix: String = "hearth", hub: String) {
        self.prefix = prefix
        self.hub = hub
        base = "\(prefix)/\(hub)"
        own = base + "/"
        devicePrefix = "\(own)\(Level.devices)/"
        responses = "\(own)\(Level.responses)"
    }

    /// The level names of the contract, each spelled once: what ``classify(_:)`` compares and ``topic(_:)`` writes.
    enum Level {
        static var status: StaticString { "status" }
        static var heartbeat: StaticString { "heartbeat" }
        static var devices: StaticString { "devices" }
        static var set: StaticString { "set" }
        static var events: StaticString { "events" }
        static var responses: StaticString { "responses" }
        static var answers: StaticString { "answers" }
        static var home: StaticString { "home" }
        static var groups: StaticString { "groups" }
        static var discoverySync: StaticString { "discovery-sync" }
    }

    // MARK: Making topics

    /// The topic of `value`. Its ids must be single levels and its group 1…65535; then ``classify(_:)`` reads it back
    /// as `value`.
    public func topic(_ value: HubTopic) -> String {
        switch value {
        case .status(let hub): return hubTopic(hub, Level.status)
        case .heartbeat(let hub): return hubTopic(hub, Level.heartbeat)
        case .summary(let hub): return hubTopic(hub, Level.devices)
        case .responses(let hub): return isThisHub(hub) ? responses : hubTopic(hub, Level.responses)
        case .answers(let hub): return hubTopic(hub, Level.answers)
        case .home(let hub): return hubTopic(hub, Level.home)
        case .groups(let hub): return hubTopic(hub, Level.groups)
        case .discoverySync(let hub): return hubTopic(hub, Level.discoverySync)
        case .document(let hub, let device):
            return isThisHub(hub) ? devicePrefix + device : "\(prefix)/\(hub)/\(Level.devices)/\(device)"
        case .set(let hub, let device):
            return isThisHub(hub) ? "\(devicePrefix)\(device)/\(Level.set)"
                : "\(prefix)/\(hub)/\(Level.devices)/\(device)/\(Level.set)"
        case .setWithoutDevice(let hub): return "\(prefix)/\(hub)/\(Level.devices)//\(Level.set)"
        case .events(let hub, let device): return "\(prefix)/\(hub)/\(Level.devices)/\(device)/\(Level.events)"
        case .groupSet(let group): return "\(prefix)/\(Level.groups)/\(group)/\(Level.set)"
        }
    }

    private func hubTopic(_ hub: String, _ level: StaticString) -> String {
        isThisHub(hub) ? "\(own)\(level)" : "\(prefix)/\(hub)/\(level)"
    }

    /// `online` / `offline`, retained; the will says `offline`.
    public var status: String { topic(.status(hub: hub)) }
    /// `{"interval":N}` every N seconds, retained, for hubs across a bridge (`Heartbeat`); empty when none is sent.
    public var heartbeat: String { topic(.heartbeat(hub: hub)) }
    /// The summary of every device, retained.
    public var devices: String { topic(.summary(hub: hub)) }
    /// One device's document, retained.
    public func device(_ id: String) -> String { devicePrefix + id }
    /// Where requests for a device arrive.
    public func set(_ id: String) -> String { topic(.set(hub: hub, device: id)) }
    /// Where a device's trait events go (`docs/home-assistant.md`), not retained.
    public func events(_ id: String) -> String { topic(.events(hub: hub, device: id)) }
    /// Where other hubs answer the requests this hub forwarded to them (MQTT 5's response topic), so that a hub
    /// hears only its own answers rather than every hub's `responses`.
    public var answers: String { topic(.answers(hub: hub)) }
    /// The whole home as this hub sees it, retained.
    public var home: String { topic(.home(hub: hub)) }
    /// This hub's group memberships and scenes (`docs/mqtt-api.md`), retained.
    public var groups: String { topic(.groups(hub: hub)) }
    /// Where the hub sends itself the marker that ends its reading of Home Assistant's retained configs.
    public var discoverySync: String { topic(.discoverySync(hub: hub)) }
    /// Where a command for every member of a group arrives, on every hub (`docs/clusters/groups.md`).
    public func groupSet(_ group: Int) -> String { topic(.groupSet(group: group)) }

    // MARK: Filters

    /// The filter that receives every device's requests to this hub.
    public var setFilter: String { "\(devicePrefix)+/\(Level.set)" }
    /// The filter that receives every hub's status.
    public var statusFilter: String { everyHub(Level.status) }
    /// The filter that receives every hub's summary.
    public var summaryFilter: String { everyHub(Level.devices) }
    /// The filter that receives every hub's device documents.
    public var documentFilter: String { "\(prefix)/+/\(Level.devices)/+" }
    /// The filter that receives every hub's whole-home document.
    public var homeFilter: String { everyHub(Level.home) }
    /// The filter that receives every hub's responses.
    public var responsesFilter: String { everyHub(Level.responses) }
    /// The filter that receives every hub's group memberships.
    public var groupsFilter: String { everyHub(Level.groups) }

    private func everyHub(_ level: StaticString) -> String { "\(prefix)/+/\(level)" }

    // MARK: Reading topics

    /// What `topic` is under this prefix, of any hub, or nil when it is none of the contract's topics (another
    /// prefix, an empty hub or device id, a group out of 1…65535 or with a leading zero, a level too many).
    ///
    /// This runs for every message a hub or a client receives: it compares bytes in place and allocates nothing but
    /// the ids it returns, and not this hub's id, which it returns as ``hub`` (splitting the topic into levels, or
    /// stepping through the UTF-8 views index by index, each showed in a request's instruction profile).
    public func classify(_ topic: String) -> HubTopic? {
        if let read = topic.utf8.withContiguousStorageIfAvailable({ classify(bytes: $0) }) { return read }
        var contiguous = topic
        contiguous.makeContiguousUTF8()
        return contiguous.utf8.withContiguousStorageIfAvailable { classify(bytes: $0) } ?? nil
    }

    private func classify(bytes t: UnsafeBufferPointer<UInt8>) -> HubTopic? {
        let slash = UInt8(ascii: "/")
        let end = t.count
        let prefixCount = prefix.utf8.count
        guard end > prefixCount, t[prefixCount] == slash, Self.bytes(t, 0..<prefixCount, equal: prefix) else {
            return nil
        }
        // The levels below the prefix: at most four (`<hub>/devices/<device>/set`).
        let first = Self.level(t, from: prefixCount + 1)
        guard first.upperBound < end else { return nil }
        let second = Self.level(t, from: first.upperBound + 1)
        if second.upperBound == end {
            guard !first.isEmpty else { return nil }
            let make: (String) -> HubTopic
            if Self.level(t, second, is: Level.status) { make = HubTopic.status(hub:) }
            else if Self.level(t, second, is: Level.devices) { make = HubTopic.summary(hub:) }
            else if Self.level(t, second, is: Level.responses) { make = HubTopic.responses(hub:) }
            else if Self.level(t, second, is: Level.answers) { make = HubTopic.answers(hub:) }
            else if Self.level(t, second, is: Level.heartbeat) { make = HubTopic.heartbeat(hub:) }
            else if Self.level(t, second, is: Level.home) { make = HubTopic.home(hub:) }
            else if Self.level(t, second, is: Level.groups) { make = HubTopic.groups(hub:) }
            else if Self.level(t, second, is: Level.discoverySync) { make = HubTopic.discoverySync(hub:) }
            else { return nil }
            return make(hubID(t, first))
        }
        let third = Self.level(t, from: second.upperBound + 1)
        if third.upperBound == end {
            if Self.level(t, first, is: Level.groups), Self.level(t, third, is: Level.set),
               let group = Self.group(t, second) {
                return .groupSet(group: group)
            }
            guard !first.isEmpty, !third.isEmpty, Self.level(t, second, is: Level.devices) else { return nil }
            return .document(hub: hubID(t, first), device: Self.string(t, third))
        }
        let fourth = Self.level(t, from: third.upperBound + 1)
        guard fourth.upperBound == end, !first.isEmpty, Self.level(t, second, is: Level.devices) else { return nil }
        if Self.level(t, fourth, is: Level.set) {
            return third.isEmpty ? .setWithoutDevice(hub: hubID(t, first))
                : .set(hub: hubID(t, first), device: Self.string(t, third))
        }
        if Self.level(t, fourth, is: Level.events), !third.isEmpty {
            return .events(hub: hubID(t, first), device: Self.string(t, third))
        }
        return nil
    }

    /// The hub id at `range`: this hub's own string when it is this hub (nothing to allocate), else a new one.
    private func hubID(_ t: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> String {
        Self.bytes(t, range, equal: hub) ? hub : Self.string(t, range)
    }

    /// The level that starts at `start`: up to the next '/' or the end.
    private static func level(_ t: UnsafeBufferPointer<UInt8>, from start: Int) -> Range<Int> {
        var i = start
        while i < t.count, t[i] != UInt8(ascii: "/") { i += 1 }
        return start..<i
    }

    private static func string(_ t: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> String {
        // Cut at '/' bytes, so at scalar boundaries of a valid string: decoding repairs nothing.
        String(decoding: UnsafeBufferPointer(rebasing: t[range]), as: UTF8.self)
    }

    /// The group id at `range`: 1…65535, decimal without leading zeros.
    private static func group(_ t: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Int? {
        guard (1...5).contains(range.count), t[range.lowerBound] != UInt8(ascii: "0") else { return nil }
        var id = 0
        for i in range {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(t[i]) else { return nil }
            id = id * 10 + Int(t[i] - UInt8(ascii: "0"))
        }
        return id <= 0xFFFF ? id : nil
    }

    private static func level(_ t: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, is word: StaticString) -> Bool {
        word.withUTF8Buffer { same(t, range, $0) }
    }

    private static func bytes(_ t: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, equal text: String) -> Bool {
        text.utf8.withContiguousStorageIfAvailable { same(t, range, $0) } ?? t[range].elementsEqual(text.utf8)
    }

    /// Whether the bytes of `t` at `range` are `part`.
    private static func same(_ t: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, _ part: UnsafeBufferPointer<UInt8>)
        -> Bool
    {
        guard range.count == part.count else { return false }
        var i = 0
        while i < part.count {
            if t[range.lowerBound + i] != part[i] { return false }
            i += 1
        }
        return true
    }

    /// Whether `id` is this hub's id, byte for byte as a topic level is compared (`==` would take a canonically
    /// equivalent spelling for it). Cheap for what ``classify(_:)`` returns: this hub's id is returned as ``hub``.
    public func isThisHub(_ id: String) -> Bool {
        let inPlace = id.utf8.withContiguousStorageIfAvailable { i in
            hub.utf8.withContiguousStorageIfAvailable { Self.same(i, 0..<i.count, $0) }
        }
        return (inPlace ?? nil) ?? id.utf8.elementsEqual(hub.utf8)
    }

    /// The device id of a `…/devices/<id>/set` topic of this hub, or nil.
    public func deviceID(fromSetTopic topic: String) -> String? {
        guard case .set(let hub, let device)? = classify(topic), isThisHub(hub) else { return nil }
        return device
    }

    /// The group id of a `<prefix>/groups/<id>/set` topic (1…65535, decimal without leading zeros), or nil.
    public func groupID(fromSetTopic topic: String) -> Int? {
        guard case .groupSet(let group)? = classify(topic) else { return nil }
        return group
    }

    /// The rule for a topic prefix, in words: what ``problem(withPrefix:)`` checks.
    public static let prefixRule =
        "the prefix starts every topic: levels split by '/', none empty, no '+' or '#', not starting with '$'"

    /// ``problem(withPrefix:)``'s rule as a regular expression (for the configuration's JSON Schema and its
    /// reader's table), NUL aside.
    public static let prefixPattern = "^[^$/+#][^/+#]*(/[^/+#]+)*$"

    /// Why `prefix` cannot be the topic prefix, or nil if it can: the one rule for the configuration's
    /// `mqtt.prefix` and `hearth --prefix`. One or more levels separated by '/', none empty (`hearth/` would make
    /// every topic `hearth//<hub>/…`), without the wildcards '+' and '#' or a NUL, and not starting with '$'
    /// (brokers keep `$…` topics for themselves, and a `#` subscription never matches them).
    ///
    /// Both checks read bytes, as the broker does, not characters: a '/', '+' or '$' followed by a combining mark
    /// (U+0301) is one `Character` that is none of them, yet the topic has the byte.
    public static func problem(withPrefix prefix: String) -> String? {
        let bytes = prefix.utf8
        if bytes.isEmpty { return "it is empty" }
        if bytes.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).contains(where: \.isEmpty) {
            return "it has an empty level (a leading, trailing or doubled '/')"
        }
        if bytes.contains(where: { $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "#") }) {
            return "it contains '+' or '#'"
        }
        if bytes.contains(0) { return "it contains a NUL character" }
        if bytes.first == UInt8(ascii: "$") { return "it starts with '$', which brokers keep for their own topics" }
        return nil
    }

    /// Why `name` cannot be one level of a topic (a hub or device id), or nil if it can.
    public static func problem(withLevel name: String) -> String? {
        let bytes = name.utf8
        if bytes.isEmpty { return "it is empty" }
        if bytes.contains(where: { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "#") }) {
            return "it contains '/', '+' or '#'"
        }
        if bytes.contains(0) { return "it contains a NUL character" }
        return nil
    }
}
