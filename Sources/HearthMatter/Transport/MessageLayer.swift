// The session layer between UDP and the exchanges (core specification 4.4–4.7): a datagram is decoded, matched to
// its session (unsecured by peer and node id, secure by our session id), checked against the session's reception
// state, authenticated and decrypted, then handed to the exchange manager; outgoing messages take the session's
// counter and key. Bad datagrams are counted and dropped before they change anything.

public import NIOCore

/// What happened to datagrams, for diagnostics and tests.
public struct TransportCounters: Sendable, Equatable {
    public var datagramsReceived = 0
    /// Headers that did not parse, or payload headers of unsecured messages that did not.
    public var malformed = 0
    /// Secure messages for a session id this node does not have.
    public var unknownSession = 0
    /// Secure messages whose MIC did not verify (or whose payload header did not parse once decrypted).
    public var authenticationFailed = 0
    /// Messages the reception state had seen already.
    public var duplicates = 0
    /// Group messages, which this node does not take.
    public var unsupported = 0
    public var datagramsSent = 0
    public var sendFailures = 0
    public init() {}
}

/// The keys and identities of a secure unicast session, as PASE or CASE establish them.
public struct SecureSessionParameters: Sendable {
    /// The id the peer puts in its messages to us.
    public var localSessionID: UInt16
    /// The id we put in our messages to the peer.
    public var peerSessionID: UInt16
    /// Our key for what we send (I2R for an initiator, R2I for a responder).
    public var encryptionKey: [UInt8]
    /// Our key for what we receive.
    public var decryptionKey: [UInt8]
    /// The node ids in the nonces: 0 for both in a PASE session, the operational ids in a CASE session.
    public var localNodeID: UInt64
    public var peerNodeID: UInt64
    public var peerAddress: SocketAddress

    public init(localSessionID: UInt16, peerSessionID: UInt16, encryptionKey: [UInt8], decryptionKey: [UInt8],
                localNodeID: UInt64 = 0, peerNodeID: UInt64 = 0, peerAddress: SocketAddress) {
        self.localSessionID = localSessionID
        self.peerSessionID = peerSessionID
        self.encryptionKey = encryptionKey
        self.decryptionKey = decryptionKey
        self.localNodeID = localNodeID
        self.peerNodeID = peerNodeID
        self.peerAddress = peerAddress
    }
}

/// Sessions, counters and the exchange manager of a node. Confined to one event loop (the transport's): every
/// method is called there, handlers included.
public final class MessageLayer: ExchangeTransport, @unchecked Sendable {
    public private(set) var counters = TransportCounters()
    /// The exchanges on top; set in `init`, never nil afterwards.
    public private(set) var exchanges: ExchangeManager!

    private enum SessionKind {
        /// The peer's (ephemeral) node id when its messages carry one; ours when we initiate with one.
        case unsecured(peerNodeID: UInt64?, localNodeID: UInt64?)
        case secure(SecureSessionParameters)
    }

    private struct Session {
        var kind: SessionKind
        var peerAddress: SocketAddress
        var counter: MessageCounter?
        var reception: MessageReceptionState
        var lastActivity = MatterInstant(milliseconds: 0)
    }

    /// How many unsecured sessions (handshakes in progress) are kept; past it, the one idle longest goes, so that
    /// a flood of messages from made-up node ids cannot grow memory.
    public static let maximumUnsecuredSessions = 32

    private struct UnsecuredKey: Hashable {
        var peer: SocketAddress
        var nodeID: UInt64?
    }

    private var sessions: [SessionHandle: Session] = [:]
    private var unsecuredSessions: [UnsecuredKey: SessionHandle] = [:]
    private var secureSessions: [UInt16: SessionHandle] = [:]
    private var nextHandle: UInt64 = 1
    private var unencryptedCounter: MessageCounter
    private let cipher: any MessageCipher
    private let randomCounterStart: () -> UInt32
    private let output: (SocketAddress, [UInt8]) -> Bool

    /// `output` sends a datagram and says whether it could; `randomCounterStart` gives counters' random starts (in
    /// `MessageCounter.initialRange`); `jitter` MRP's 0…1; `firstExchangeID` is random in use.
    public init(cipher: any MessageCipher, parameters: ReliabilityParameters = ReliabilityParameters(),
                randomCounterStart: @escaping () -> UInt32, jitter: @escaping () -> Double, firstExchangeID: UInt16,
                output: @escaping (SocketAddress, [UInt8]) -> Bool) {
        self.cipher = cipher
        self.randomCounterStart = randomCounterStart
        self.output = output
        unencryptedCounter = .unencrypted(start: randomCounterStart())
        exchanges = nil
        exchanges = ExchangeManager(
            transport: self, parameters: parameters, firstExchangeID: firstExchangeID, jitter: jitter)
    }

    // MARK: Sessions

    /// The unsecured session with a peer, made on first use. An initiator of PASE or CASE gives `localNodeID`, the
    /// random ephemeral node id its messages carry as their source.
    public func unsecuredSession(with peer: SocketAddress, peerNodeID: UInt64? = nil, localNodeID: UInt64? = nil)
        -> SessionHandle
    {
        let key = UnsecuredKey(peer: peer, nodeID: peerNodeID)
        if let handle = unsecuredSessions[key] { return handle }
        if unsecuredSessions.count >= Self.maximumUnsecuredSessions,
           let idlest = unsecuredSessions.values.min(by: {
                (sessions[$0]?.lastActivity ?? MatterInstant(milliseconds: .min))
                    < (sessions[$1]?.lastActivity ?? MatterInstant(milliseconds: .min))
           }) {
            removeSession(idlest)
        }
        let handle = newHandle()
        sessions[handle] = Session(
            kind: .unsecured(peerNodeID: peerNodeID, localNodeID: localNodeID), peerAddress: peer,
            counter: nil,
            reception: MessageReceptionState(kind: .unencrypted))
        unsecuredSessions[key] = handle
        return handle
    }

    /// Adds a secure session that PASE or CASE established; nil when the local session id is taken.
    public func addSecureSession(_ parameters: SecureSessionParameters) -> SessionHandle? {
        guard secureSessions[parameters.localSessionID] == nil, parameters.localSessionID != 0 else { return nil }
        let handle = newHandle()
        sessions[handle] = Session(kind: .secure(parameters), peerAddress: parameters.peerAddress,
                                   counter: .session(start: randomCounterStart()),
                                   reception: MessageReceptionState(kind: .encryptedUnicast, synchronizedAt: 0))
        secureSessions[parameters.localSessionID] = handle
        return handle
    }

    /// Removes a session and its exchanges.
    public var unsecuredSessionCount: Int { unsecuredSessions.count }

    public func removeSession(_ handle: SessionHandle) {
        guard let session = sessions.removeValue(forKey: handle) else { return }
        switch session.kind {
        case .unsecured(let nodeID, _): unsecuredSessions[UnsecuredKey(peer: session.peerAddress, nodeID: nodeID)] = nil
        case .secure(let p): secureSessions[p.localSessionID] = nil
        }
        exchanges.removeSession(handle)
    }

    public func peerAddress(of handle: SessionHandle) -> SocketAddress? { sessions[handle]?.peerAddress }

    private func newHandle() -> SessionHandle {
        defer { nextHandle += 1 }
        return SessionHandle(nextHandle)
    }

    // MARK: Receiving

    /// Takes one datagram. Anything wrong with it is counted and it is dropped; nothing changes for it.
    public func receive(_ datagram: [UInt8], from peer: SocketAddress, now: MatterInstant) {
        counters.datagramsReceived += 1
        guard let (header, headerLength) = try? MessageHeader.decode(datagram) else {
            counters.malformed += 1
            return
        }
        if header.sessionType == .group {
            counters.unsupported += 1
            return
        }
        if header.sessionID == 0 {
            guard let message = try? MatterMessage.decodeUnsecured(datagram) else {
                counters.malformed += 1
                return
            }
            let handle = unsecuredSession(with: peer, peerNodeID: header.sourceNodeID)
            deliver(message, on: handle, now: now)
            return
        }
        guard let handle = secureSessions[header.sessionID], let session = sessions[handle],
              case .secure(let parameters) = session.kind else {
            counters.unknownSession += 1
            return
        }
        guard let message = try? MatterMessage.decodeSecured(
            datagram, header: header, headerLength: headerLength, key: parameters.decryptionKey,
            sourceNodeID: parameters.peerNodeID, cipher: cipher)
        else {
            counters.authenticationFailed += 1
            return
        }
        deliver(message, on: handle, from: peer, now: now)
    }

    private func deliver(_ message: MatterMessage, on handle: SessionHandle, from peer: SocketAddress? = nil,
                         now: MatterInstant) {
        guard var session = sessions[handle] else { return }
        let counter = message.header.messageCounter
        let isNew = session.reception.isNew(counter)
        if isNew {
            session.reception.commit(counter)
            // Authenticated and new: the peer may have moved. A replayed message does not move it.
            if let peer { session.peerAddress = peer }
        } else {
            counters.duplicates += 1
        }
        session.lastActivity = now
        sessions[handle] = session
        exchanges.receive(message, from: handle, isDuplicate: !isNew, now: now)
    }

    // MARK: Sending (ExchangeTransport)

    public func encode(_ payloadHeader: PayloadHeader, payload: [UInt8], for handle: SessionHandle) throws
        -> (messageCounter: UInt32, datagram: [UInt8])
    {
        guard var session = sessions[handle] else { throw ExchangeError.encodingFailed("\(handle) is gone") }
        switch session.kind {
        case .unsecured(let peerNodeID, let localNodeID):
            let counter = try unencryptedCounter.next()
            let header = MessageHeader(messageCounter: counter, sourceNodeID: localNodeID,
                                       destination: peerNodeID.map { .node($0) } ?? .none)
            return (
                counter,
                MatterMessage(header: header, payloadHeader: payloadHeader, payload: payload).encodedUnsecured()
            )
        case .secure(let parameters):
            guard var sessionCounter = session.counter else { throw ExchangeError.encodingFailed("no counter") }
            let counter = try sessionCounter.next()
            session.counter = sessionCounter
            sessions[handle] = session
            let header = MessageHeader(sessionID: parameters.peerSessionID, messageCounter: counter)
            let datagram = try MatterMessage(header: header, payloadHeader: payloadHeader, payload: payload)
                .encodedSecured(key: parameters.encryptionKey, sourceNodeID: parameters.localNodeID, cipher: cipher)
            return (counter, datagram)
        }
    }

    public func send(_ datagram: [UInt8], to handle: SessionHandle) {
        guard let peer = sessions[handle]?.peerAddress else { return }
        if output(peer, datagram) { counters.datagramsSent += 1 } else { counters.sendFailures += 1 }
    }
}
