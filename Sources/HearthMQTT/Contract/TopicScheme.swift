/// The MQTT topics of one hub, as `docs/mqtt-api.md` defines them. Clients and other hubs depend on
/// these names; change them only with that document.
public struct TopicScheme: Sendable, Hashable {
    public var prefix: String
    public var hub: String

    public init(prefix: String = "hearth", hub: String) {
        self.prefix = prefix
        self.hub = hub
    }

    public var base: String { "\(prefix)/\(hub)" }
    /// `online` / `offline`, retained; the will says `offline`.
    public var status: String { "\(base)/status" }
    /// The summary of every device, retained.
    public var devices: String { "\(base)/devices" }
    /// One device's document, retained.
    public func device(_ id: String) -> String { "\(base)/devices/\(id)" }
    /// Where requests for a device arrive.
    public func set(_ id: String) -> String { "\(base)/devices/\(id)/set" }
    /// The filter that receives every device's requests.
    public var setFilter: String { "\(base)/devices/+/set" }
    /// Where answers go.
    public var responses: String { "\(base)/responses" }

    /// The device id of a `…/devices/<id>/set` topic of this hub, or nil.
    public func deviceID(fromSetTopic topic: String) -> String? {
        let head = "\(base)/devices/", tail = "/set"
        guard topic.hasPrefix(head), topic.hasSuffix(tail), topic.utf8.count > head.utf8.count + tail.utf8.count else {
            return nil
        }
        let id = topic.dropFirst(head.count).dropLast(tail.count)
        return id.contains("/") ? nil : String(id)
    }

    /// Why `name` cannot be one level of a topic (a hub or device id), or nil if it can.
    public static func problem(withLevel name: String) -> String? {
        if name.isEmpty { return "it is empty" }
        if name.contains(where: { $0 == "/" || $0 == "+" || $0 == "#" }) { return "it contains '/', '+' or '#'" }
        if name.utf8.contains(0) { return "it contains a NUL character" }
        return nil
    }
}
