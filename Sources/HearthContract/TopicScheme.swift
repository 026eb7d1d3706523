/// The MQTT topics of one hub, as `docs/mqtt-api.md` defines them. Clients and other hubs depend on
/// these names; change them only with that document.
public struct TopicScheme: Sendable, Hashable {
    public let prefix: String
    public let hub: String
    /// `<prefix>/<hub>`.
    public let base: String
    /// Where answers go.
    public let responses: String
    /// `<prefix>/<hub>/` and `<prefix>/<hub>/devices/`: made once, since a hub matches the topic of every message it
    /// receives against the first and names every document it publishes (and every request it forwards) with the
    /// second.
    private let own: String
    private let devicePrefix: String

    public init(prefix: String = "hearth", hub: String) {
        self.prefix = prefix
        self.hub = hub
        base = "\(prefix)/\(hub)"
        own = base + "/"
        devicePrefix = own + "devices/"
        responses = own + "responses"
    }

    /// `online` / `offline`, retained; the will says `offline`.
    public var status: String { "\(base)/status" }
    /// `{"interval":N}` every N seconds, retained, for hubs across a bridge (`Heartbeat`); empty when none is sent.
    public var heartbeat: String { "\(base)/heartbeat" }
    /// The summary of every device, retained.
    public var devices: String { "\(base)/devices" }
    /// One device's document, retained.
    public func device(_ id: String) -> String { devicePrefix + id }
    /// Where requests for a device arrive.
    public func set(_ id: String) -> String { devicePrefix + id + "/set" }
    /// The filter that receives every device's requests.
    public var setFilter: String { "\(base)/devices/+/set" }
    /// Where other hubs answer the requests this hub forwarded to them (MQTT 5's response topic), so that a hub
    /// hears only its own answers rather than every hub's `responses`.
    public var answers: String { "\(base)/answers" }

    /// This hub's group memberships and scenes (`docs/mqtt-api.md`), retained.
    public var groups: String { "\(base)/groups" }
    /// Where a command for every member of a group arrives, on every hub (`docs/clusters/groups.md`).
    public func groupSet(_ group: Int) -> String { "\(prefix)/groups/\(group)/set" }
    /// The filter that receives every hub's group memberships.
    public var groupsFilter: String { "\(prefix)/+/groups" }

    /// The group id of a `<prefix>/groups/<id>/set` topic (1…65535, decimal without leading zeros), or nil.
    public func groupID(fromSetTopic topic: String) -> Int? {
        guard let rest = Self.after(prefix.utf8, in: Substring(topic).utf8).flatMap({ Self.after("/groups/".utf8, in: $0) }),
              let digits = Self.dropping("/set".utf8, from: rest), (1...5).contains(digits.count),
              digits.first != UInt8(ascii: "0")
        else { return nil }
        var id = 0
        for b in digits {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b) else { return nil }
            id = id * 10 + Int(b - UInt8(ascii: "0"))
        }
        return id <= 0xFFFF ? id : nil
    }

    /// The device id of a `…/devices/<id>/set` topic of this hub, or nil.
    ///
    /// This and ``groupID(fromSetTopic:)`` run for every message the hub receives: they compare bytes in place
    /// and allocate nothing but the id (splitting the topic into levels was about 4 % of a request's instructions).
    public func deviceID(fromSetTopic topic: String) -> String? {
        guard let own = ownRemainder(topic), let rest = Self.after("devices/".utf8, in: own),
              let id = Self.dropping("/set".utf8, from: rest), !id.isEmpty, !id.contains(UInt8(ascii: "/"))
        else { return nil }
        return String(Substring(id))
    }

    /// Whether `topic` is this hub's `…/devices//set`: a request for a device with no id, which the hub's `set`
    /// subscription receives (its `+` matches an empty level) and answers as a request it cannot run.
    public func isSetTopicWithoutDeviceID(_ topic: String) -> Bool {
        ownRemainder(topic).map { $0.elementsEqual("devices//set".utf8) } ?? false
    }

    /// What follows `<prefix>/<hub>/` in `topic`, or nil when it is not a topic of this hub.
    public func ownRemainder(_ topic: String) -> Substring.UTF8View? {
        Self.after(own.utf8, in: Substring(topic).utf8)
    }

    /// `text` after `part`, or nil when it does not start with it.
    ///
    /// Compares the bytes in place (a native string's UTF-8 is contiguous): `Sequence.starts(with:)` stepped through
    /// both views index by index, and the topic of every message the hub receives passes here (8 % of a request's
    /// instructions, callgrind).
    private static func after(_ part: String.UTF8View, in text: Substring.UTF8View) -> Substring.UTF8View? {
        starts(text, with: part) ? text.dropFirst(part.count) : nil
    }

    /// `text` without its last bytes `suffix`, or nil when it does not end with them.
    private static func dropping(_ suffix: String.UTF8View, from text: Substring.UTF8View) -> Substring.UTF8View? {
        guard text.count >= suffix.count else { return nil }
        let head = text.dropLast(suffix.count)
        return starts(text[head.endIndex...], with: suffix) ? head : nil
    }

    /// Whether `text` starts with `part`: in place when both are contiguous (a native string's are), else by views.
    private static func starts(_ text: Substring.UTF8View, with part: String.UTF8View) -> Bool {
        let inPlace = text.withContiguousStorageIfAvailable { t in
            part.withContiguousStorageIfAvailable { p in Self.bytes(t, startWith: p) }
        }
        return (inPlace ?? nil) ?? text.starts(with: part)
    }

    /// Whether `text` starts with `part`.
    private static func bytes(_ text: UnsafeBufferPointer<UInt8>, startWith part: UnsafeBufferPointer<UInt8>) -> Bool {
        guard text.count >= part.count else { return false }
        var i = 0
        while i < part.count {
            if text[i] != part[i] { return false }
            i += 1
        }
        return true
    }

    /// The levels of a topic below the prefix (which may itself have several levels), or nil when the
    /// topic is not under it. Bytes, not characters: this runs for every message the hub receives.
    public func levels(of topic: String, maxSplits: Int) -> [Substring.UTF8View]? {
        guard let rest = Self.after(prefix.utf8, in: Substring(topic).utf8), rest.first == UInt8(ascii: "/") else {
            return nil
        }
        return rest.dropFirst().split(separator: UInt8(ascii: "/"), maxSplits: maxSplits, omittingEmptySubsequences: false)
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
        if bytes.contains(where: { $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "#") }) { return "it contains '+' or '#'" }
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
