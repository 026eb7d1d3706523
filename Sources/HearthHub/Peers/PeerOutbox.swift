public import HearthMQTT
import HearthSync

/// What the peer types publish through: the hub's MQTT client once `PeerRouter.attach` connects it, or a
/// recording closure in a unit test, so forwarding and bindings are tested without a broker.
///
/// Publishing only queues the message in libmosquitto (it never waits for the network), so any thread
/// may publish, the libmosquitto network thread included.
public final class PeerOutbox: Sendable {
    /// One message to publish.
    public struct Message: Sendable, Hashable {
        public var topic: String
        public var payload: [UInt8]
        public var qos: MQTTQoS
        public var retain: Bool
        /// MQTT 5's response topic: where the receiver should answer (dropped on an MQTT 3.1.1 connection).
        public var responseTopic: String?
        public var correlationData: [UInt8]?
        /// MQTT 5's user properties (dropped on an MQTT 3.1.1 connection): `DirectReply`'s.
        public var userProperties: [MQTTUserProperty]

        public init(topic: String, payload: [UInt8], qos: MQTTQoS = .atMostOnce, retain: Bool = false,
                    responseTopic: String? = nil, correlationData: [UInt8]? = nil,
                    userProperties: [MQTTUserProperty] = []) {
            self.topic = topic
            self.payload = payload
            self.qos = qos
            self.retain = retain
            self.responseTopic = responseTopic
            self.correlationData = correlationData
            self.userProperties = userProperties
        }
    }

    public typealias Publish = @Sendable (Message) throws -> Void

    private struct Target {
        var isConnected: @Sendable () -> Bool
        var publish: Publish
    }

    private let target: Locked<Target?>

    /// An outbox with nowhere to send yet: not connected until `connect(to:)`.
    public init() { target = Locked(nil) }

    /// An outbox that publishes with `publish` (a test's recorder).
    public init(isConnected: @escaping @Sendable () -> Bool = { true }, publish: @escaping Publish) {
        target = Locked(Target(isConnected: isConnected, publish: publish))
    }

    /// Publishes through `client` from now on.
    public func connect(to client: MQTTClient) {
        target.withLock {
            $0 = Target(
                isConnected: { client.isConnected },
                publish: { m in
                    try client.publish(
                        m.topic, payload: m.payload, qos: m.qos, retain: m.retain, responseTopic: m.responseTopic,
                        correlationData: m.correlationData, userProperties: m.userProperties)
                })
        }
    }

    public var isConnected: Bool { target.withLock { $0 }?.isConnected() ?? false }

    /// Publishes `message`; throws what the client throws, or `notConnected` before `connect(to:)`.
    public func publish(_ message: Message) throws {
        guard let target = target.withLock({ $0 }) else { throw NotConnected() }
        try target.publish(message)
    }

    struct NotConnected: Error, CustomStringConvertible {
        var description: String { "this hub has no broker connection yet" }
    }
}
