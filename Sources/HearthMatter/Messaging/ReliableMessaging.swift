// The Message Reliability Protocol's parameters and timing (core specification 4.12.8): how long a sender waits
// before retransmitting, with exponential backoff and jitter.

/// MRP's parameters. The defaults are the specification's.
public struct ReliabilityParameters: Sendable, Equatable {
    /// MRP_MAX_TRANSMISSIONS: the first transmission and up to four retransmissions.
    public var maxTransmissions = 5
    /// MRP_BACKOFF_BASE.
    public var backoffBase = 1.6
    /// MRP_BACKOFF_JITTER.
    public var backoffJitter = 0.25
    /// MRP_BACKOFF_MARGIN.
    public var backoffMargin = 1.1
    /// MRP_BACKOFF_THRESHOLD: retransmissions before the backoff starts growing.
    public var backoffThreshold = 1
    /// MRP_STANDALONE_ACK_TIMEOUT: how long an acknowledgement waits for a message to ride on.
    public var standaloneAckTimeout: Int64 = 200
    /// The peer's SESSION_IDLE_INTERVAL (ms): its retransmission base while idle.
    public var idleInterval: Int64 = 500
    /// The peer's SESSION_ACTIVE_INTERVAL (ms): its retransmission base while active.
    public var activeInterval: Int64 = 300
    /// The peer's SESSION_ACTIVE_THRESHOLD (ms): how long after its last message it counts as active.
    public var activeThreshold: Int64 = 4000

    public init() {}

    /// The wait before transmission number `sent + 1`, after `sent` transmissions (1 for the first wait), with
    /// `jitter` in 0…1 (random in use, fixed in tests): margin × base interval × backoff^max(0, sent − 1 −
    /// threshold) × (1 + jitter × MRP_BACKOFF_JITTER), in milliseconds.
    public func retransmissionTimeout(baseInterval: Int64, sent: Int, jitter: Double) -> Int64 {
        let exponent = max(0, sent - 1 - backoffThreshold)
        var growth = 1.0
        for _ in 0..<exponent { growth *= backoffBase }
        let clampedJitter = min(max(jitter, 0), 1)
        let timeout = backoffMargin * Double(baseInterval) * growth * (1 + clampedJitter * backoffJitter)
        return Int64(timeout.rounded())
    }
}
