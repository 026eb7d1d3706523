/// Where and how an ``MQTTClient`` connects.
public struct MQTTConnectOptions: Sendable, Hashable {
    /// Files for a TLS connection. Keys must not be encrypted (no passphrase prompt is possible on a hub).
    public struct TLS: Sendable, Hashable {
        /// PEM file of the certificate authorities to trust; `nil` trusts the operating system's store.
        public var caFile: String?
        /// Directory of hashed CA certificates (`c_rehash`), as an alternative to ``caFile``.
        public var caDirectory: String?
        /// PEM client certificate, for brokers that require one (with ``keyFile``).
        public var certificateFile: String?
        /// PEM private key for ``certificateFile``.
        public var keyFile: String?
        /// Verify the broker's certificate chain. Turning this off makes TLS encryption-only.
        public var verifyPeer: Bool
        /// Accept a broker certificate whose names do not match ``MQTTConnectOptions/host``. Insecure.
        public var skipsHostnameVerification: Bool

        public init(caFile: String? = nil, caDirectory: String? = nil, certificateFile: String? = nil,
                    keyFile: String? = nil, verifyPeer: Bool = true, skipsHostnameVerification: Bool = false) {
            self.caFile = caFile
            self.caDirectory = caDirectory
            self.certificateFile = certificateFile
            self.keyFile = keyFile
            self.verifyPeer = verifyPeer
            self.skipsHostnameVerification = skipsHostnameVerification
        }
    }

    /// The message the broker publishes for this client if its connection dies without a DISCONNECT.
    public struct Will: Sendable, Hashable {
        public var topic: String
        public var payload: [UInt8]
        public var qos: MQTTQoS
        public var retain: Bool

        public init(topic: String, payload: [UInt8], qos: MQTTQoS = .atLeastOnce, retain: Bool = true) {
            self.topic = topic
            self.payload = payload
            self.qos = qos
            self.retain = retain
        }
    }

    public var host: String
    public var port: Int
    /// `nil` lets libmosquitto generate a random id (only with ``cleanStart``).
    public var clientID: String?
    /// Seconds between pings when idle; the broker drops the client (and publishes its will) after 1.5× this.
    public var keepAlive: Int
    public var username: String?
    public var password: String?
    /// `nil` for plain TCP.
    public var tls: TLS?
    /// The version tried first. With ``allowsProtocolFallback``, a `.v5` client that a v3.1.1-only broker refuses
    /// retries at once with `.v311` and stays with it for the client's life.
    public var protocolVersion: MQTTProtocolVersion
    public var allowsProtocolFallback: Bool
    public var will: Will?
    /// Start a new session (MQTT 5 clean start / 3.1.1 clean session). With `false`, the broker keeps the session
    /// across reconnects on v3.1.1; on v5 libmosquitto sends no session-expiry interval, so the broker ends the
    /// session when the connection does.
    public var cleanStart: Bool
    /// Delays between reconnection attempts.
    public var reconnectBackoff: MQTTBackoff

    public init(host: String = "127.0.0.1", port: Int = 1883, clientID: String? = nil, keepAlive: Int = 30,
                username: String? = nil, password: String? = nil, tls: TLS? = nil,
                protocolVersion: MQTTProtocolVersion = .v5, allowsProtocolFallback: Bool = true, will: Will? = nil,
                cleanStart: Bool = true, reconnectBackoff: MQTTBackoff = MQTTBackoff()) {
        self.host = host
        self.port = port
        self.clientID = clientID
        self.keepAlive = keepAlive
        self.username = username
        self.password = password
        self.tls = tls
        self.protocolVersion = protocolVersion
        self.allowsProtocolFallback = allowsProtocolFallback
        self.will = will
        self.cleanStart = cleanStart
        self.reconnectBackoff = reconnectBackoff
    }

    /// "host:port", for error contexts.
    var endpoint: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// Capped exponential backoff with jitter, for reconnection attempts.
///
/// Attempt `n` (0-based, counted since the last successful connection) waits
/// `min(initialDelay × multiplier^n, maximumDelay) × (1 − jitter × r)` for a random `r` in `[0, 1)`: the delay
/// falls in `[base × (1 − jitter), base]`. Jitter spreads the reconnects of many devices after a broker restart.
public struct MQTTBackoff: Sendable, Hashable {
    public var initialDelay: Duration
    public var maximumDelay: Duration
    public var multiplier: Double
    /// The fraction of the delay that is random, in `0...1`.
    public var jitter: Double

    public init(initialDelay: Duration = .milliseconds(200), maximumDelay: Duration = .seconds(30),
                multiplier: Double = 2, jitter: Double = 0.5) {
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
        self.multiplier = multiplier
        self.jitter = jitter
    }

    /// The delay before attempt `attempt` (0-based), with `random` in `[0, 1)` as the jitter source.
    public func delay(forAttempt attempt: Int, random: Double) -> Duration {
        let initial = initialDelay.seconds
        let maximum = maximumDelay.seconds
        let growth = multiplier > 1 ? multiplier : 1
        var base = initial
        // Multiply step by step, stopping at the cap, so a large attempt count can neither overflow nor loop long.
        var step = 0
        while step < attempt && base < maximum && growth > 1 {
            base *= growth
            step += 1
        }
        base = min(max(base, 0), max(maximum, 0))
        let fraction = min(max(jitter, 0), 1)
        let unit = min(max(random, 0), 1)
        return .nanoseconds(Int64((base * (1 - fraction * unit) * 1e9).rounded()))
    }

    /// The delay before attempt `attempt` (0-based), drawing the jitter from `generator`.
    public func delay<Generator: RandomNumberGenerator>(forAttempt attempt: Int,
                                                        using generator: inout Generator) -> Duration {
        delay(forAttempt: attempt, random: Double.random(in: 0..<1, using: &generator))
    }
}

extension Duration {
    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) * 1e-18
    }
}
