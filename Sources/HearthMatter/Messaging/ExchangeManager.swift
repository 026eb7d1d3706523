// Exchanges and MRP (core specification 4.10 and 4.12): messages are matched to exchanges by session, exchange id
// and role; reliable messages are retransmitted until acknowledged or given up; acknowledgements ride on the next
// message of the exchange or go alone after the standalone-ack timeout. A synchronous state machine driven by `now`
// arguments, so the transport runs it on its event loop and tests run it on a manual clock, step by step.

/// A session as the exchange layer knows it: an opaque id the session layer gives out.
public struct SessionHandle: Hashable, Sendable, CustomStringConvertible {
    public var id: UInt64
    public init(_ id: UInt64) { self.id = id }
    public var description: String { "session \(id)" }
}

/// Which end of an exchange this node is.
public enum ExchangeRole: Sendable, Hashable {
    case initiator
    case responder
}

/// An exchange: its session, its id and this node's role in it.
public struct ExchangeKey: Hashable, Sendable, CustomStringConvertible {
    public var session: SessionHandle
    public var exchangeID: UInt16
    public var role: ExchangeRole

    public init(session: SessionHandle, exchangeID: UInt16, role: ExchangeRole) {
        self.session = session
        self.exchangeID = exchangeID
        self.role = role
    }

    public var description: String { "exchange \(exchangeID) (\(role)) on \(session)" }
}

/// Why a message could not be sent on an exchange.
public enum ExchangeError: Error, Sendable, Equatable {
    /// The exchange is closed or was never opened.
    case unknownExchange(ExchangeKey)
    /// A reliable message is still waiting for its acknowledgement (one at a time per exchange).
    case reliableMessageOutstanding(ExchangeKey)
    /// The session could not encode the message (its counter is exhausted, the session is gone…).
    case encodingFailed(String)
    /// MRP sent the message `maxTransmissions` times without an acknowledgement.
    case noAcknowledgement(messageCounter: UInt32)
}

/// What the exchange layer needs of the session layer below it.
public protocol ExchangeTransport: AnyObject {
    /// The message as bytes for `session`, with the session's next message counter (and encrypted, for a secure
    /// session).
    func encode(_ payloadHeader: PayloadHeader, payload: [UInt8], for session: SessionHandle) throws
        -> (messageCounter: UInt32, datagram: [UInt8])
    /// Sends the bytes to the session's peer.
    func send(_ datagram: [UInt8], to session: SessionHandle)
}

/// The application side of an exchange: a protocol's state machine (PASE, CASE, an interaction).
public protocol ExchangeHandler: AnyObject {
    /// A message arrived on the exchange (never a duplicate, never a standalone acknowledgement).
    func exchange(_ exchange: ExchangeKey, received message: MatterMessage, manager: ExchangeManager)
    /// A reliable message of the exchange was given up on; the exchange is closed.
    func exchange(_ exchange: ExchangeKey, failed error: ExchangeError, manager: ExchangeManager)
}

/// Counts of what the exchange layer did with messages, for diagnostics and tests.
public struct ExchangeCounters: Sendable, Equatable {
    public var delivered = 0
    public var duplicates = 0
    public var retransmissions = 0
    public var standaloneAcksSent = 0
    public var givenUp = 0
    /// Messages that matched no exchange and opened none (no handler for their protocol, or not from an initiator).
    public var unmatched = 0
    /// Unsolicited messages refused because their session had `maximumExchangesPerSession` open already.
    public var refusedForExchangeLimit = 0
    public init() {}
}

/// The exchanges of a node and their reliability. Not thread-safe: one owner (an event loop, a lock) calls it.
public final class ExchangeManager {
    public let parameters: ReliabilityParameters
    /// How many exchanges one session may have open: past it an unsolicited message opens none (it is still
    /// acknowledged), so a peer that never finishes its exchanges cannot grow memory.
    public static let maximumExchangesPerSession = 16
    public private(set) var counters = ExchangeCounters()
    /// The time of the latest event the manager handled (a message, a timer, a send): what a handler passes as `now`
    /// when it answers from inside `exchange(_:received:manager:)`.
    public private(set) var now = MatterInstant(milliseconds: 0)
    /// Weak: the transport usually owns the manager. Without it, nothing is sent.
    private weak var transport: (any ExchangeTransport)?
    /// 0…1 for each retransmission's jitter.
    private let jitter: () -> Double

    private struct Retransmission {
        var messageCounter: UInt32
        var datagram: [UInt8]
        var sent: Int
        var deadline: MatterInstant
    }

    private struct PendingAck {
        var messageCounter: UInt32
        var deadline: MatterInstant
    }

    private struct Exchange {
        var handler: any ExchangeHandler
        var retransmission: Retransmission?
        var pendingAck: PendingAck?
        var closing = false
    }

    private var exchanges: [ExchangeKey: Exchange] = [:]
    private var unsolicitedHandlers: [ProtocolID: (ExchangeKey) -> any ExchangeHandler] = [:]
    /// When each session's peer last sent something: MRP uses the active interval for a peer heard from recently.
    private var lastHeard: [SessionHandle: MatterInstant] = [:]
    /// Intervals a peer announced (in PASE's and CASE's session parameters, or DNS-SD), instead of the defaults.
    private var peerIntervals: [SessionHandle: (idle: Int64, active: Int64, activeThreshold: Int64)] = [:]
    private var nextExchangeID: UInt16

    /// `jitter` gives a number in 0…1 per retransmission;
    /// `firstExchangeID` is random in use.
    public init(transport: any ExchangeTransport, parameters: ReliabilityParameters = ReliabilityParameters(),
                firstExchangeID: UInt16, jitter: @escaping () -> Double) {
        self.transport = transport
        self.parameters = parameters
        self.jitter = jitter
        nextExchangeID = firstExchangeID
    }

    /// Messages from an initiator for `protocolID` that match no exchange open a responder exchange run by the
    /// handler `makeHandler` returns.
    public func registerUnsolicitedHandler(for protocolID: ProtocolID,
                                           _ makeHandler: @escaping (ExchangeKey) -> any ExchangeHandler) {
        unsolicitedHandlers[protocolID] = makeHandler
    }

    public func unregisterUnsolicitedHandler(for protocolID: ProtocolID) {
        unsolicitedHandlers[protocolID] = nil
    }

    /// Opens an exchange this node initiates on `session`.
    public func openExchange(on session: SessionHandle, handler: any ExchangeHandler) -> ExchangeKey {
        var key: ExchangeKey
        repeat {
            key = ExchangeKey(session: session, exchangeID: nextExchangeID, role: .initiator)
            nextExchangeID &+= 1
        } while exchanges[key] != nil
        exchanges[key] = Exchange(handler: handler)
        return key
    }

    public func isOpen(_ exchange: ExchangeKey) -> Bool { exchanges[exchange].map { !$0.closing } ?? false }

    /// Sends a message on an open exchange, reliably unless `reliable` is false, with any pending acknowledgement
    /// riding on it.
    public func send(
        on key: ExchangeKey, protocolID: ProtocolID, opcode: UInt8, payload: [UInt8], reliable: Bool = true,
        now: MatterInstant
    ) throws(ExchangeError) {
        self.now = max(self.now, now)
        guard var exchange = exchanges[key], !exchange.closing else { throw .unknownExchange(key) }
        if reliable && exchange.retransmission != nil { throw .reliableMessageOutstanding(key) }
        let header = PayloadHeader(isInitiator: key.role == .initiator, needsAcknowledgement: reliable, opcode: opcode,
                                   exchangeID: key.exchangeID, protocolID: protocolID,
                                   acknowledgedMessageCounter: exchange.pendingAck?.messageCounter)
        guard let transport else { throw .encodingFailed("the transport is gone") }
        let encoded: (messageCounter: UInt32, datagram: [UInt8])
        do { encoded = try transport.encode(header, payload: payload, for: key.session) } catch {
            throw .encodingFailed("\(error)")
        }
        exchange.pendingAck = nil
        if reliable {
            exchange.retransmission = Retransmission(
                messageCounter: encoded.messageCounter, datagram: encoded.datagram, sent: 1,
                deadline: now + timeout(for: key.session, sent: 1, now: now))
        }
        exchanges[key] = exchange
        transport.send(encoded.datagram, to: key.session)
    }

    /// Closes an exchange: a pending acknowledgement goes at once; a reliable message still outstanding keeps being
    /// retransmitted until acknowledged or given up, without telling the handler.
    public func close(_ key: ExchangeKey, now: MatterInstant) {
        guard var exchange = exchanges[key] else { return }
        if let ack = exchange.pendingAck {
            sendStandaloneAck(for: ack.messageCounter, exchange: key)
            exchange.pendingAck = nil
        }
        exchange.closing = true
        exchanges[key] = exchange.retransmission == nil ? nil : exchange
    }

    /// Forgets every exchange of a session (the session is gone), without telling their handlers.
    public func removeSession(_ session: SessionHandle) {
        exchanges = exchanges.filter { $0.key.session != session }
        lastHeard[session] = nil
        peerIntervals[session] = nil
    }

    /// The peer's SESSION_IDLE_INTERVAL, SESSION_ACTIVE_INTERVAL and SESSION_ACTIVE_THRESHOLD (ms), as it announced
    /// them; a value it left out keeps the default. Retransmissions to it are timed with these from now on.
    public func setPeerIntervals(for session: SessionHandle, idle: Int64? = nil, active: Int64? = nil,
                                 activeThreshold: Int64? = nil) {
        peerIntervals[session] = (idle ?? parameters.idleInterval, active ?? parameters.activeInterval,
                                  activeThreshold ?? parameters.activeThreshold)
    }

    /// Takes a received message that the session layer has decoded and authenticated. `isDuplicate` is the reception
    /// state's verdict: a duplicate is acknowledged again if it asks for it, and goes no further.
    public func receive(_ message: MatterMessage, from session: SessionHandle, isDuplicate: Bool, now: MatterInstant) {
        self.now = max(self.now, now)
        lastHeard[session] = now
        let header = message.payloadHeader
        // The message's role is the peer's: ours is the other one.
        let key = ExchangeKey(session: session, exchangeID: header.exchangeID,
                              role: header.isInitiator ? .responder : .initiator)
        if let acked = header.acknowledgedMessageCounter { acknowledge(acked, on: key) }

        if isDuplicate {
            counters.duplicates += 1
            if header.needsAcknowledgement { sendStandaloneAck(for: message.header.messageCounter, exchange: key) }
            return
        }
        let isStandaloneAck = header.protocolID == .secureChannel
            && header.opcode == SecureChannelOpcode.standaloneAck.rawValue
        if exchanges[key] == nil, !isStandaloneAck, header.isInitiator,
           let makeHandler = unsolicitedHandlers[header.protocolID] {
            if exchanges.keys.count(where: { $0.session == session }) < Self.maximumExchangesPerSession {
                exchanges[key] = Exchange(handler: makeHandler(key))
            } else {
                counters.refusedForExchangeLimit += 1
            }
        }
        guard var exchange = exchanges[key], !exchange.closing else {
            // No exchange: acknowledge it anyway so the peer stops retransmitting (4.12.5.2.2).
            if !isStandaloneAck { counters.unmatched += 1 }
            if header.needsAcknowledgement { sendStandaloneAck(for: message.header.messageCounter, exchange: key) }
            return
        }
        if header.needsAcknowledgement {
            // A pending acknowledgement not yet sent is replaced: the newer one is the one to send, the older is
            // flushed first so the peer stops retransmitting it.
            if let older = exchange.pendingAck { sendStandaloneAck(for: older.messageCounter, exchange: key) }
            exchange.pendingAck = PendingAck(messageCounter: message.header.messageCounter,
                                             deadline: now + parameters.standaloneAckTimeout)
            exchanges[key] = exchange
        }
        if isStandaloneAck { return }
        counters.delivered += 1
        exchange.handler.exchange(key, received: message, manager: self)
    }

    /// The earliest moment `fire(now:)` has something to do.
    public var nextDeadline: MatterInstant? {
        var earliest: MatterInstant?
        for exchange in exchanges.values {
            for deadline in [exchange.retransmission?.deadline, exchange.pendingAck?.deadline].compactMap(\.self) {
                if earliest.map({ deadline < $0 }) ?? true { earliest = deadline }
            }
        }
        return earliest
    }

    /// Sends what is due at `now`: standalone acknowledgements and retransmissions; gives up on messages sent
    /// `maxTransmissions` times, closing their exchanges and telling their handlers.
    public func fire(now: MatterInstant) {
        self.now = max(self.now, now)
        var failures: [(ExchangeKey, any ExchangeHandler, ExchangeError)] = []
        for key in exchanges.keys.sorted(by: { ($0.session.id, $0.exchangeID) < ($1.session.id, $1.exchangeID) }) {
            guard var exchange = exchanges[key] else { continue }
            if let ack = exchange.pendingAck, ack.deadline <= now {
                sendStandaloneAck(for: ack.messageCounter, exchange: key)
                exchange.pendingAck = nil
            }
            if var retransmission = exchange.retransmission, retransmission.deadline <= now {
                if retransmission.sent >= parameters.maxTransmissions {
                    counters.givenUp += 1
                    exchanges[key] = nil
                    if !exchange.closing {
                        failures.append(
                            (key, exchange.handler, .noAcknowledgement(messageCounter: retransmission.messageCounter)))
                    }
                    continue
                }
                retransmission.sent += 1
                retransmission.deadline = now + timeout(for: key.session, sent: retransmission.sent, now: now)
                exchange.retransmission = retransmission
                counters.retransmissions += 1
                transport?.send(retransmission.datagram, to: key.session)
            }
            exchanges[key] = exchange
        }
        for (key, handler, error) in failures { handler.exchange(key, failed: error, manager: self) }
    }

    private func acknowledge(_ counter: UInt32, on key: ExchangeKey) {
        // An acknowledgement for nothing outstanding (a duplicate, or a late one) is ignored.
        guard var exchange = exchanges[key], exchange.retransmission?.messageCounter == counter else { return }
        exchange.retransmission = nil
        exchanges[key] = exchange.closing && exchange.pendingAck == nil ? nil : exchange
    }

    private func sendStandaloneAck(for counter: UInt32, exchange key: ExchangeKey) {
        let header = PayloadHeader(isInitiator: key.role == .initiator, needsAcknowledgement: false,
                                   opcode: SecureChannelOpcode.standaloneAck.rawValue, exchangeID: key.exchangeID,
                                   protocolID: .secureChannel, acknowledgedMessageCounter: counter)
        guard let transport, let encoded = try? transport.encode(header, payload: [], for: key.session) else { return }
        counters.standaloneAcksSent += 1
        transport.send(encoded.datagram, to: key.session)
    }

    private func timeout(for session: SessionHandle, sent: Int, now: MatterInstant) -> Int64 {
        let intervals = peerIntervals[session]
            ?? (parameters.idleInterval, parameters.activeInterval, parameters.activeThreshold)
        let active = lastHeard[session].map { now - $0 < intervals.activeThreshold } ?? false
        return parameters.retransmissionTimeout(baseInterval: active ? intervals.active : intervals.idle,
                                                sent: sent, jitter: jitter())
    }
}
