// What PASE and CASE share as responders: the messages they answer with, the status they end on, the session they
// establish, and the session parameters both sides announce (core specification 4.12.8, 4.14).
public import HearthCrypto

extension StatusReport {
    /// SessionEstablishmentSuccess: the end of a good PASE or CASE.
    public static let sessionEstablishmentSuccess = StatusReport(.success, .sessionEstablishmentSuccess)
    /// The failure PASE and CASE answer bad or unverifiable messages with.
    public static let invalidParameter = StatusReport(.failure, .invalidParameter)
    public static let noSharedTrustRoots = StatusReport(.failure, .noSharedTrustRoots)

    /// BUSY, with the minimum time to wait before trying again (milliseconds, 16 bits little-endian).
    public static func busy(waitMilliseconds: UInt16) -> StatusReport {
        StatusReport(.busy, protocolID: .secureChannel, protocolCode: SecureChannelStatusCode.busy.rawValue,
                     protocolData: [UInt8(waitMilliseconds & 0xFF), UInt8(waitMilliseconds >> 8)])
    }

    /// How long a busy responder asks the initiator to wait.
    static let busyWaitMilliseconds: UInt16 = 500

    /// Reads a StatusReport of the Secure Channel protocol, as ends an establishment exchange.
    init(sessionEstablishmentPayload payload: [UInt8]) throws(SessionEstablishmentError) {
        do { self = try StatusReport(decoding: payload) } catch { throw .malformed("status report: \(error)") }
        guard protocolID.fullID == ProtocolID.secureChannel.fullID else {
            throw .malformed("status report of protocol \(protocolID)")
        }
    }
}

/// Why an establishment attempt ended; the responder also tells the peer, with the status it carries.
public enum SessionEstablishmentError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A message that does not parse or has a field out of range.
    case malformed(String)
    /// A message that is not the one the exchange is waiting for.
    case unexpectedMessage(UInt8)
    /// The peer's proof did not verify (a wrong passcode, a bad signature, a MIC that does not match).
    case verificationFailed(String)
    /// No fabric here matches the peer's destination identifier.
    case noSharedTrustRoots
    /// The peer's certificates do not chain to the fabric's root, or break Matter's rules.
    case invalidCredentials(String)
    /// Another establishment is under way.
    case busy
    /// The peer ended the exchange with this status.
    case peerReported(StatusReport)
    /// A cryptographic operation failed on our side.
    case crypto(String)

    public var description: String {
        switch self {
        case .malformed(let what): "malformed message: \(what)"
        case .unexpectedMessage(let opcode): "unexpected message 0x\(String(opcode, radix: 16))"
        case .verificationFailed(let what): "verification failed: \(what)"
        case .noSharedTrustRoots: "no shared trust roots"
        case .invalidCredentials(let what): "invalid credentials: \(what)"
        case .busy: "busy"
        case .peerReported(let status):
            "peer reported general code \(status.generalCode), protocol code \(status.protocolCode)"
        case .crypto(let what): "crypto: \(what)"
        }
    }

    /// The status that tells the peer.
    var status: StatusReport {
        switch self {
        case .noSharedTrustRoots: .noSharedTrustRoots
        case .busy: .busy(waitMilliseconds: StatusReport.busyWaitMilliseconds)
        default: .invalidParameter
        }
    }
}

/// A message to send on the establishment exchange.
public struct SecureChannelMessage: Sendable, Equatable {
    public var opcode: SecureChannelOpcode
    public var payload: [UInt8]

    public init(_ opcode: SecureChannelOpcode, _ payload: [UInt8]) {
        self.opcode = opcode
        self.payload = payload
    }

    static func status(_ status: StatusReport) -> SecureChannelMessage {
        SecureChannelMessage(.statusReport, status.encoded())
    }
}

/// What a responder does with one received message: what to send back and what happened.
public struct SessionEstablishmentStep: Sendable {
    /// The reply, if any (a StatusReport when the attempt failed).
    public var reply: SecureChannelMessage?
    /// Set when the attempt succeeded: the session to install.
    public var established: EstablishedSession?
    /// Set when the attempt ended in failure (the reply, if any, tells the peer).
    public var failure: SessionEstablishmentError?

    static func reply(_ message: SecureChannelMessage) -> SessionEstablishmentStep {
        SessionEstablishmentStep(reply: message, established: nil, failure: nil)
    }
}

/// The three keys a secure session derives (16 bytes each); the responder decrypts with I2R and encrypts with R2I.
public struct SessionKeys: Sendable, Equatable, CustomStringConvertible, CustomReflectable {
    public var initiatorToResponder: [UInt8]
    public var responderToInitiator: [UInt8]
    public var attestationChallenge: [UInt8]

    /// HKDF-SHA256(secret, salt, info) split in three.
    init(secret: [UInt8], salt: [UInt8], info: String) throws(CryptoError) {
        let keys = try HKDFSHA256.deriveKey(
            inputKeyMaterial: secret, salt: salt, info: Array(info.utf8), outputByteCount: 48)
        initiatorToResponder = Array(keys[0..<16])
        responderToInitiator = Array(keys[16..<32])
        attestationChallenge = Array(keys[32..<48])
    }

    public var description: String { "SessionKeys(redacted)" }
    public var customMirror: Mirror { Mirror(self, children: []) }
}

/// A session a responder established: what the node installs in its session table.
public struct EstablishedSession: Sendable {
    public enum Kind: Sendable, Equatable {
        /// A PASE session (commissioning), with no fabric yet.
        case pase
        /// A CASE session on a fabric, with the peer's identity from its NOC.
        case `case`(fabricIndex: UInt8, peerNodeID: UInt64, peerCASEAuthenticatedTags: [UInt32])
    }

    public var kind: Kind
    public var localSessionID: UInt16
    public var peerSessionID: UInt16
    public var keys: SessionKeys
    /// The peer's announced session parameters (MRP intervals, revisions), when it sent them.
    public var peerParameters: SessionParameters?
    /// True when CASE resumed an earlier session (Sigma2Resume) instead of running Sigma2/Sigma3.
    public var resumed: Bool
}

/// The session parameters a node announces in PBKDFParamRequest/Response and Sigma1/Sigma2 (4.12.8).
public struct SessionParameters: Sendable, Equatable {
    public var idleInterval: UInt32?
    public var activeInterval: UInt32?
    public var activeThreshold: UInt16?
    public var dataModelRevision: UInt16?
    public var interactionModelRevision: UInt16?
    public var specificationVersion: UInt32?
    public var maxPathsPerInvoke: UInt16?

    public init(
        idleInterval: UInt32? = nil, activeInterval: UInt32? = nil, activeThreshold: UInt16? = nil,
        dataModelRevision: UInt16? = nil, interactionModelRevision: UInt16? = nil, specificationVersion: UInt32? = nil,
        maxPathsPerInvoke: UInt16? = nil
    ) {
        self.idleInterval = idleInterval
        self.activeInterval = activeInterval
        self.activeThreshold = activeThreshold
        self.dataModelRevision = dataModelRevision
        self.interactionModelRevision = interactionModelRevision
        self.specificationVersion = specificationVersion
        self.maxPathsPerInvoke = maxPathsPerInvoke
    }

    /// Matter 1.4's revisions, with the MRP defaults (500 ms idle, 300 ms active, 4 s threshold).
    public static let matter14 = SessionParameters(
        idleInterval: 500, activeInterval: 300, activeThreshold: 4000, dataModelRevision: 18,
        interactionModelRevision: 12, specificationVersion: 0x0104_0000, maxPathsPerInvoke: 1)

    func element(context tag: UInt8) -> TLVElement {
        .structure(tag: .context(tag)) {
            if let idleInterval { TLVElement(context: 1, .uint(idleInterval)) }
            if let activeInterval { TLVElement(context: 2, .uint(activeInterval)) }
            if let activeThreshold { TLVElement(context: 3, .uint(activeThreshold)) }
            if let dataModelRevision { TLVElement(context: 4, .uint(dataModelRevision)) }
            if let interactionModelRevision { TLVElement(context: 5, .uint(interactionModelRevision)) }
            if let specificationVersion { TLVElement(context: 6, .uint(specificationVersion)) }
            if let maxPathsPerInvoke { TLVElement(context: 7, .uint(maxPathsPerInvoke)) }
        }
    }

    /// Reads the structure; unknown members are skipped (later revisions may add some).
    init(element: TLVElement) throws(TLVFieldError) {
        _ = try element.structure()
        idleInterval = try element.optionalField(1)?.unsigned(UInt32.self)
        activeInterval = try element.optionalField(2)?.unsigned(UInt32.self)
        activeThreshold = try element.optionalField(3)?.unsigned(UInt16.self)
        dataModelRevision = try element.optionalField(4)?.unsigned(UInt16.self)
        interactionModelRevision = try element.optionalField(5)?.unsigned(UInt16.self)
        specificationVersion = try element.optionalField(6)?.unsigned(UInt32.self)
        maxPathsPerInvoke = try element.optionalField(7)?.unsigned(UInt16.self)
    }
}

/// Reads a message body: one anonymous structure, or `malformed`.
func decodeMessageStructure(_ payload: [UInt8], _ name: String) throws(SessionEstablishmentError) -> TLVElement {
    let element: TLVElement
    do { element = try TLVElement(decoding: payload) } catch { throw .malformed("\(name): \(error)") }
    guard element.tag == .anonymous, element.structureMembers != nil else {
        throw .malformed("\(name) is not a structure")
    }
    return element
}

/// Runs a field reader, turning its error into `malformed`.
func readFields<T>(_ name: String, _ body: () throws(TLVFieldError) -> T) throws(SessionEstablishmentError) -> T {
    do { return try body() } catch { throw .malformed("\(name): \(error)") }
}

/// Gives a responder the session id for an attempt: one not in use in the node's session table (non-zero), or nil
/// when the table is full (the attempt is then refused as busy). The id is only taken when the node installs the
/// session the attempt establishes.
public typealias SessionIDAllocator = @Sendable () -> UInt16?

/// Random bytes for responders; tests may substitute their own.
public typealias RandomBytes = @Sendable (Int) throws(CryptoError) -> [UInt8]

/// The system's cryptographic random source.
public let systemRandomBytes: RandomBytes = { (count: Int) throws(CryptoError) -> [UInt8] in
    try SecureRandom.bytes(count)
}
