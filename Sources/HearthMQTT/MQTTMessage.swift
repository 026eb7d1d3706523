/// MQTT delivery guarantee.
public enum MQTTQoS: Int32, Sendable, Hashable, CaseIterable {
    case atMostOnce = 0
    case atLeastOnce = 1
    case exactlyOnce = 2
}

/// The MQTT protocol version spoken on a connection.
public enum MQTTProtocolVersion: Sendable, Hashable, CustomStringConvertible {
    /// MQTT 3.1.1 (protocol level 4).
    case v311
    /// MQTT 5 (protocol level 5).
    case v5

    /// The version to retry with after the broker refused a connection attempt made with this version, or `nil` to
    /// keep backing off with the same version.
    ///
    /// A broker that does not speak MQTT 5 answers a v5 CONNECT with "unsupported protocol version" (v5 reason
    /// 0x84, which libmosquitto also reports for a v3-style CONNACK code 1), or with a v3.1.1 CONNACK that a v5
    /// parser finds malformed. Only those refusals of a v5 attempt fall back to v3.1.1.
    ///
    /// - Parameters:
    ///   - connackReason: the CONNACK reason code, when a CONNACK arrived.
    ///   - error: the error that ended the attempt, when no CONNACK arrived.
    public func fallback(afterRefusalWith connackReason: Int32?, error: MQTTError.Code?) -> MQTTProtocolVersion? {
        guard self == .v5 else { return nil }
        if let connackReason {
            return connackReason == 0x84 || connackReason == 1 ? .v311 : nil
        }
        return error == .malformedPacket || error == .protocolError ? .v311 : nil
    }

    /// The `MQTT_PROTOCOL_V*` value libmosquitto takes.
    var level: Int32 { self == .v5 ? 5 : 4 }

    public var description: String { self == .v5 ? "MQTT 5" : "MQTT 3.1.1" }
}

/// A message received on a subscription.
public struct MQTTMessage: Sendable, Hashable {
    public var topic: String
    public var payload: [UInt8]
    public var qos: MQTTQoS
    /// Set for a retained message the broker sends on subscribing, and (with
    /// ``MQTTSubscriptionOptions/retainAsPublished``) for a live publish that had the retain flag.
    public var retain: Bool
    /// MQTT 5 response topic, if the publisher set one.
    public var responseTopic: String?
    /// MQTT 5 correlation data, if the publisher set it.
    public var correlationData: [UInt8]?
    /// MQTT 5 user properties, in the order the publisher set them.
    public var userProperties: [MQTTUserProperty]

    public init(
        topic: String, payload: [UInt8], qos: MQTTQoS = .atMostOnce, retain: Bool = false,
        responseTopic: String? = nil, correlationData: [UInt8]? = nil, userProperties: [MQTTUserProperty] = []
    ) {
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
        self.responseTopic = responseTopic
        self.correlationData = correlationData
        self.userProperties = userProperties
    }

    /// The value of the first user property called `name`.
    public func userProperty(_ name: String) -> String? { userProperties.first { $0.name == name }?.value }
}

/// An MQTT 5 user property: a name and a value the protocol leaves to the applications, which a receiver that does
/// not know the name ignores (so two versions of a program can add to what they say without breaking each other).
public struct MQTTUserProperty: Sendable, Hashable {
    public var name: String
    public var value: String
    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

/// How to subscribe to a topic filter. The MQTT 5 options are dropped on a v3.1.1 connection.
public struct MQTTSubscriptionOptions: Sendable, Hashable {
    /// When the broker sends the retained messages matching the filter.
    public enum RetainHandling: Int32, Sendable, Hashable {
        /// On every subscribe (`MQTT_SUB_OPT_SEND_RETAIN_ALWAYS`), including the resubscribe after a reconnect.
        case always = 0x00
        /// Only when the subscription is new (`MQTT_SUB_OPT_SEND_RETAIN_NEW`).
        case onNewSubscription = 0x10
        /// Never (`MQTT_SUB_OPT_SEND_RETAIN_NEVER`).
        case never = 0x20
    }

    public var qos: MQTTQoS
    /// MQTT 5: do not receive this client's own publishes (`MQTT_SUB_OPT_NO_LOCAL`).
    public var noLocal: Bool
    /// MQTT 5: keep the retain flag of live publishes as the publisher set it (`MQTT_SUB_OPT_RETAIN_AS_PUBLISHED`).
    public var retainAsPublished: Bool
    /// MQTT 5: when to send retained messages.
    public var retainHandling: RetainHandling

    public init(qos: MQTTQoS = .atMostOnce, noLocal: Bool = false, retainAsPublished: Bool = false,
                retainHandling: RetainHandling = .always) {
        self.qos = qos
        self.noLocal = noLocal
        self.retainAsPublished = retainAsPublished
        self.retainHandling = retainHandling
    }

    /// The options byte for `mosquitto_subscribe_v5`, without the QoS bits.
    var v5Flags: Int32 {
        (noLocal ? 0x04 : 0) | (retainAsPublished ? 0x08 : 0) | retainHandling.rawValue
    }
}

/// A change of the client's connection.
public enum MQTTConnectionEvent: Sendable, Hashable {
    /// The broker accepted a connection; subscriptions have been re-sent. `sessionPresent` is the CONNACK flag.
    case connected(MQTTProtocolVersion, sessionPresent: Bool)
    /// A connection attempt failed; the client tries again after a backoff delay.
    case connectionFailed(MQTTError)
    /// An established connection ended.
    case disconnected(MQTTDisconnectReason)
}

/// Why an established connection ended.
public enum MQTTDisconnectReason: Sendable, Hashable {
    /// ``MQTTClient/disconnect()`` was called (or the client was released). This is the last event.
    case requested
    /// The connection was lost or the broker closed it; the client reconnects by itself.
    case lost(MQTTError)
}
