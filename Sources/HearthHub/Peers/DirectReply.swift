import HearthContract
import HearthJSON
import HearthMQTT

/// Where the owner of a device answers a forwarded request straight to the client that asked another hub.
///
/// Why: relayed, a forwarded request crossed the broker four times (client → hub A → owner → hub A → client)
/// and took hub A twice; answered directly, three times and once (docs/peer-routing.md). Hub A still
/// hears the answer on its `answers` topic, so it ends the request's deadline and publishes the answer on its
/// `responses` topic as before; it relays the answer to the client only when the owner did not say it answered.
///
/// Both halves travel as MQTT 5 user properties, which a receiver that does not know them ignores: an owner of an
/// earlier version answers hub A only (and hub A relays, as before), and an owner never gets the property from a hub
/// of an earlier version. Over MQTT 3.1.1 there are no properties, and no response topic to answer on either.
struct DirectReply: Sendable, Equatable {
    /// The forwarded request's property: where and how to answer the client (a JSON object, `encoded`).
    static let property = "hearth-reply-to"
    /// The owner's answer to hub A carries this property when the owner has published the client's answer itself.
    static let answered = MQTTUserProperty("hearth-replied", "client")

    /// The client's response topic and correlation data.
    var topic: String
    var correlationData: [UInt8]?
    /// The client's transaction and its name for the device (a composite's own id, not the owner's).
    var transaction: JSON
    var device: String

    /// The property a forwarded request carries.
    var encoded: MQTTUserProperty {
        var members: [(String, JSON)] = [
            ("topic", .string(topic)), ("transaction", transaction), ("device", .string(device))
        ]
        if let correlationData { members.append(("correlationData", .string(Self.hex(correlationData)))) }
        return MQTTUserProperty(Self.property, JSON.object(members).text)
    }

    init(topic: String, correlationData: [UInt8]?, transaction: JSON, device: String) {
        self.topic = topic
        self.correlationData = correlationData
        self.transaction = transaction
        self.device = device
    }

    /// The instruction a forwarded request carries; nil without one, or with one that is not well formed (the owner
    /// then answers hub A only, which relays).
    init?(_ message: MQTTMessage) {
        guard !message.userProperties.isEmpty, let text = message.userProperty(Self.property),
              let json = try? JSON.parse(text), case .string(let topic)? = json["topic"], !topic.isEmpty,
              case .string(let device)? = json["device"], let transaction = json["transaction"] else { return nil }
        var correlationData: [UInt8]?
        switch json["correlationData"] {
        case nil: break
        case .string(let hex)?:
            guard let bytes = Self.bytes(hex: hex) else { return nil }
            correlationData = bytes
        default: return nil
        }
        self.init(topic: topic, correlationData: correlationData, transaction: transaction, device: device)
    }

    /// Whether an answer on this hub's `answers` topic says its owner has answered the client itself.
    static func saysAnswered(_ message: MQTTMessage) -> Bool { message.userProperty(answered.name) == answered.value }

    /// The owner's response as the client expects it: with the client's transaction and device name, whatever the
    /// owner calls them (and even when a broken owner leaves the device out), the rest as the owner wrote it.
    static func clientResponse(_ owners: JSON, transaction: JSON, device: String) -> JSON {
        guard case .object(let members) = owners else { return owners }
        return .object([("transaction", transaction), ("device", .string(device))]
                       + members.filter { $0.key != "transaction" && $0.key != "device" })
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for b in bytes { out.append(digits[Int(b >> 4)]); out.append(digits[Int(b & 15)]) }
        return String(decoding: out, as: UTF8.self)
    }

    static func bytes(hex: String) -> [UInt8]? {
        let utf8 = Array(hex.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(utf8.count / 2)
        var i = 0
        while i < utf8.count {
            guard let high = nibble(utf8[i]), let low = nibble(utf8[i + 1]) else { return nil }
            out.append(high << 4 | low)
            i += 2
        }
        return out
    }
}

/// Where an owner answers a request another hub forwarded, besides the request's response topic and its own
/// `responses`: the client itself (`DirectReply`), and the forwarding hub's `answers` topic whenever the request came
/// without a response topic. The request names that hub in `forwardedBy`; the response topic is lost when this hub or
/// the forwarding one speaks MQTT 3.1.1, and when a mosquitto bridge between them does (its default): a forwarding hub
/// on MQTT 5 listens to its `answers` only, and a bridge that carries `hearth/#` carries `answers` too. Made once per
/// forwarded request and kept with it, through a device's lane and the answer to a copy of it.
struct ForwardedAnswer: Sendable {
    var client: DirectReply?
    /// `<prefix>/<forwardedBy>/answers`.
    var forwarderAnswers: String?

    /// Nil for a request no hub forwarded, or when there is nowhere more to answer.
    init?(_ request: HubRequest, _ message: MQTTMessage, topics: TopicScheme) {
        guard let hub = request.forwardedBy else { return nil }
        client = DirectReply(message)
        if message.responseTopic == nil, hub != topics.hub, TopicScheme.problem(withLevel: hub) == nil {
            forwarderAnswers = topics.topic(.answers(hub: hub))
        }
        if client == nil && forwarderAnswers == nil { return nil }
    }
}
