// CASE, the responder's side (core specification 4.14.2): Sigma1 → Sigma2, Sigma3 → StatusReport, and session
// resumption (Sigma1 with a resumption id → Sigma2Resume → the initiator's StatusReport), as a pure state machine.
// The node's fabric table answers through `OperationalIdentityStore`; resumption state lives in a
// `CASEResumptionStore`.
public import HearthCrypto
import HearthSync

/// This node on one fabric: what CASE needs to answer as it. Its description shows no key.
public struct OperationalIdentity: Sendable, CustomStringConvertible, CustomReflectable {
    public var fabricIndex: UInt8
    public var fabricID: UInt64
    public var nodeID: UInt64
    /// The root's public key (65 bytes), as the fabric table keeps it.
    public var rootPublicKey: [UInt8]
    /// The fabric's trusted root (Matter TLV), against which peers' chains are checked.
    public var rcac: [UInt8]
    /// This node's NOC and ICAC (Matter TLV), sent to peers.
    public var noc: [UInt8]
    public var icac: [UInt8]?
    /// The NOC's private key.
    public var operationalKey: P256.SigningKey
    /// The IPKs: the operational group keys of the epoch keys in the fabric's IPK key set (16 bytes each, at most
    /// three, current first). A peer's destination id may name any of them; CASE then uses that one throughout.
    public var ipks: [[UInt8]]

    public init(
        fabricIndex: UInt8, fabricID: UInt64, nodeID: UInt64, rootPublicKey: [UInt8], rcac: [UInt8], noc: [UInt8],
        icac: [UInt8]?, operationalKey: P256.SigningKey, ipks: [[UInt8]]
    ) {
        self.fabricIndex = fabricIndex
        self.fabricID = fabricID
        self.nodeID = nodeID
        self.rootPublicKey = rootPublicKey
        self.rcac = rcac
        self.noc = noc
        self.icac = icac
        self.operationalKey = operationalKey
        self.ipks = ipks
    }

    /// An identity from what AddNOC and AddTrustedRootCertificate gave (Matter TLV certificates) and the IPK epoch
    /// keys: checks the chain NOC → (ICAC) → RCAC and that the NOC is for `operationalKey`, takes the node and
    /// fabric ids from the NOC, and derives the IPKs through the compressed fabric id.
    /// - Parameter time: now in Matter epoch seconds, or nil when unknown (validity is then not checked).
    public init(fabricIndex: UInt8, rcac: [UInt8], noc: [UInt8], icac: [UInt8]?, operationalKey: P256.SigningKey,
                ipkEpochKeys: [[UInt8]], time: UInt32?) throws {
        let root = try MatterCertificate(tlv: rcac)
        let intermediate = try icac.map { bytes throws(CertificateError) in try MatterCertificate(tlv: bytes) }
        let node = try CertificateChain.validate(noc: try MatterCertificate(tlv: noc), icac: intermediate, rcac: root,
                                                 time: time)
        guard node.publicKey == operationalKey.publicKey.x963Representation else {
            throw CertificateError("NOC is not for this node's operational key")
        }
        guard (1...3).contains(ipkEpochKeys.count) else {
            throw CertificateError("\(ipkEpochKeys.count) IPK epoch keys")
        }
        let compressed = try FabricKeys.compressedFabricID(rootPublicKey: root.publicKey, fabricID: node.fabricID)
        self.init(fabricIndex: fabricIndex, fabricID: node.fabricID, nodeID: node.nodeID, rootPublicKey: root.publicKey,
                  rcac: rcac, noc: noc, icac: icac, operationalKey: operationalKey,
                  ipks: try ipkEpochKeys.map { key throws(CryptoError) in
                      try FabricKeys.operationalGroupKey(epochKey: key, compressedFabricID: compressed)
                  })
    }

    public var description: String { "OperationalIdentity(fabric \(fabricIndex), node \(nodeID), redacted)" }
    public var customMirror: Mirror { Mirror(self, children: ["fabricIndex": fabricIndex, "nodeID": nodeID]) }
}

/// The fabric table as CASE sees it.
public protocol OperationalIdentityStore: Sendable {
    /// This node's identities, one per fabric it belongs to.
    func operationalIdentities() -> [OperationalIdentity]
}

/// What a completed CASE session leaves behind so that the peer may resume it.
public struct CASEResumptionRecord: Sendable, Equatable, CustomStringConvertible, CustomReflectable {
    public var resumptionID: [UInt8]
    public var sharedSecret: [UInt8]
    public var fabricIndex: UInt8
    public var peerNodeID: UInt64
    public var peerCASEAuthenticatedTags: [UInt32]

    public init(resumptionID: [UInt8], sharedSecret: [UInt8], fabricIndex: UInt8, peerNodeID: UInt64,
                peerCASEAuthenticatedTags: [UInt32]) {
        self.resumptionID = resumptionID
        self.sharedSecret = sharedSecret
        self.fabricIndex = fabricIndex
        self.peerNodeID = peerNodeID
        self.peerCASEAuthenticatedTags = peerCASEAuthenticatedTags
    }

    public var description: String { "CASEResumptionRecord(fabric \(fabricIndex), peer \(peerNodeID), redacted)" }
    public var customMirror: Mirror { Mirror(self, children: ["fabricIndex": fabricIndex, "peerNodeID": peerNodeID]) }
}

/// Resumption records, one per peer: a new record for the same fabric and peer replaces the old one.
public protocol CASEResumptionStore: Sendable {
    func record(resumptionID: [UInt8]) -> CASEResumptionRecord?
    func save(_ record: CASEResumptionRecord)
}

/// Resumption records in memory (they need not survive a restart: a peer then runs full CASE).
public final class InMemoryCASEResumptionStore: CASEResumptionStore {
    private let records = Locked<[CASEResumptionRecord]>([])
    /// The most records kept; the oldest goes first.
    public let capacity: Int

    public init(capacity: Int = 64) { self.capacity = capacity }

    public func record(resumptionID: [UInt8]) -> CASEResumptionRecord? {
        records.withLock { $0.first { $0.resumptionID == resumptionID } }
    }

    public func save(_ record: CASEResumptionRecord) {
        records.withLock { all in
            all.removeAll { $0.fabricIndex == record.fabricIndex && $0.peerNodeID == record.peerNodeID }
            all.append(record)
            if all.count > capacity { all.removeFirst(all.count - capacity) }
        }
    }

    /// Every record, oldest first.
    var allRecords: [CASEResumptionRecord] { records.withLock { $0 } }

    /// Forgets a fabric's records (the fabric was removed).
    public func removeFabric(_ fabricIndex: UInt8) {
        records.withLock { $0.removeAll { $0.fabricIndex == fabricIndex } }
    }
}

// MARK: - Messages

/// Sigma1 (4.14.2.3).
public struct Sigma1: Sendable, Equatable {
    public var initiatorRandom: [UInt8]
    public var initiatorSessionID: UInt16
    public var destinationID: [UInt8]
    public var initiatorEphemeralPublicKey: [UInt8]
    public var initiatorParameters: SessionParameters?
    public var resumptionID: [UInt8]?
    public var initiatorResumeMIC: [UInt8]?

    public init(initiatorRandom: [UInt8], initiatorSessionID: UInt16, destinationID: [UInt8],
                initiatorEphemeralPublicKey: [UInt8], initiatorParameters: SessionParameters? = nil,
                resumptionID: [UInt8]? = nil, initiatorResumeMIC: [UInt8]? = nil) {
        self.initiatorRandom = initiatorRandom
        self.initiatorSessionID = initiatorSessionID
        self.destinationID = destinationID
        self.initiatorEphemeralPublicKey = initiatorEphemeralPublicKey
        self.initiatorParameters = initiatorParameters
        self.resumptionID = resumptionID
        self.initiatorResumeMIC = initiatorResumeMIC
    }

    public var encoded: [UInt8] {
        TLVElement.structure {
            TLVElement(context: 1, .bytes(initiatorRandom))
            TLVElement(context: 2, .uint(initiatorSessionID))
            TLVElement(context: 3, .bytes(destinationID))
            TLVElement(context: 4, .bytes(initiatorEphemeralPublicKey))
            initiatorParameters?.element(context: 5)
            if let resumptionID { TLVElement(context: 6, .bytes(resumptionID)) }
            if let initiatorResumeMIC { TLVElement(context: 7, .bytes(initiatorResumeMIC)) }
        }.encoded()
    }

    public init(payload: [UInt8]) throws(SessionEstablishmentError) {
        let element = try decodeMessageStructure(payload, "Sigma1")
        self = try readFields("Sigma1") { () throws(TLVFieldError) in
            Sigma1(
                initiatorRandom: try element.field(1).bytes(count: 32),
                initiatorSessionID: try element.field(2).unsigned(),
                destinationID: try element.field(3).bytes(count: 32),
                initiatorEphemeralPublicKey: try element.field(4).bytes(count: 65),
                initiatorParameters: try element.optionalField(5).map { e throws(TLVFieldError) in
                    try SessionParameters(element: e)
                },
                resumptionID: try element.optionalField(6)?.bytes(count: 16),
                initiatorResumeMIC: try element.optionalField(7)?.bytes(count: 16))
        }
        guard (resumptionID == nil) == (initiatorResumeMIC == nil) else {
            throw .malformed("Sigma1 has a resumption id without a MIC, or a MIC without an id")
        }
    }
}

/// Sigma2 (4.14.2.3).
public struct Sigma2: Sendable, Equatable {
    public var responderRandom: [UInt8]
    public var responderSessionID: UInt16
    public var responderEphemeralPublicKey: [UInt8]
    public var encrypted2: [UInt8]
    public var responderParameters: SessionParameters?

    public var encoded: [UInt8] {
        TLVElement.structure {
            TLVElement(context: 1, .bytes(responderRandom))
            TLVElement(context: 2, .uint(responderSessionID))
            TLVElement(context: 3, .bytes(responderEphemeralPublicKey))
            TLVElement(context: 4, .bytes(encrypted2))
            responderParameters?.element(context: 5)
        }.encoded()
    }

    public init(responderRandom: [UInt8], responderSessionID: UInt16, responderEphemeralPublicKey: [UInt8],
                encrypted2: [UInt8], responderParameters: SessionParameters?) {
        self.responderRandom = responderRandom
        self.responderSessionID = responderSessionID
        self.responderEphemeralPublicKey = responderEphemeralPublicKey
        self.encrypted2 = encrypted2
        self.responderParameters = responderParameters
    }

    public init(payload: [UInt8]) throws(SessionEstablishmentError) {
        let element = try decodeMessageStructure(payload, "Sigma2")
        self = try readFields("Sigma2") { () throws(TLVFieldError) in
            Sigma2(
                responderRandom: try element.field(1).bytes(count: 32),
                responderSessionID: try element.field(2).unsigned(),
                responderEphemeralPublicKey: try element.field(3).bytes(count: 65),
                encrypted2: try element.field(4).bytes(),
                responderParameters: try element.optionalField(5).map { e throws(TLVFieldError) in
                    try SessionParameters(element: e)
                })
        }
    }
}

/// Sigma2Resume (4.14.2.3).
public struct Sigma2Resume: Sendable, Equatable {
    public var resumptionID: [UInt8]
    public var sigma2ResumeMIC: [UInt8]
    public var responderSessionID: UInt16
    public var responderParameters: SessionParameters?

    public var encoded: [UInt8] {
        TLVElement.structure {
            TLVElement(context: 1, .bytes(resumptionID))
            TLVElement(context: 2, .bytes(sigma2ResumeMIC))
            TLVElement(context: 3, .uint(responderSessionID))
            responderParameters?.element(context: 4)
        }.encoded()
    }

    public init(resumptionID: [UInt8], sigma2ResumeMIC: [UInt8], responderSessionID: UInt16,
                responderParameters: SessionParameters?) {
        self.resumptionID = resumptionID
        self.sigma2ResumeMIC = sigma2ResumeMIC
        self.responderSessionID = responderSessionID
        self.responderParameters = responderParameters
    }

    public init(payload: [UInt8]) throws(SessionEstablishmentError) {
        let element = try decodeMessageStructure(payload, "Sigma2Resume")
        self = try readFields("Sigma2Resume") { () throws(TLVFieldError) in
            Sigma2Resume(
                resumptionID: try element.field(1).bytes(count: 16),
                sigma2ResumeMIC: try element.field(2).bytes(count: 16),
                responderSessionID: try element.field(3).unsigned(),
                responderParameters: try element.optionalField(4).map { e throws(TLVFieldError) in
                    try SessionParameters(element: e)
                })
        }
    }
}

/// The signed and encrypted parts of Sigma2 and Sigma3, and the key derivations around them (4.14.2.3–4.14.2.6).
public enum CASECrypto {
    public static let sigma2Nonce = Array("NCASE_Sigma2N".utf8)
    public static let sigma3Nonce = Array("NCASE_Sigma3N".utf8)
    public static let resume1Nonce = Array("NCASE_SigmaS1".utf8)
    public static let resume2Nonce = Array("NCASE_SigmaS2".utf8)

    /// TBSData2 / TBSData3: { sender NOC, sender ICAC?, sender ephemeral key, receiver ephemeral key }.
    public static func toBeSigned(noc: [UInt8], icac: [UInt8]?, senderKey: [UInt8], receiverKey: [UInt8]) -> [UInt8] {
        TLVElement.structure {
            TLVElement(context: 1, .bytes(noc))
            if let icac { TLVElement(context: 2, .bytes(icac)) }
            TLVElement(context: 3, .bytes(senderKey))
            TLVElement(context: 4, .bytes(receiverKey))
        }.encoded()
    }

    /// TBEData2 / TBEData3: { NOC, ICAC?, signature, resumption id (Sigma2 only) }.
    public static func toBeEncrypted(noc: [UInt8], icac: [UInt8]?, signature: [UInt8], resumptionID: [UInt8]?)
        -> [UInt8]
    {
        TLVElement.structure {
            TLVElement(context: 1, .bytes(noc))
            if let icac { TLVElement(context: 2, .bytes(icac)) }
            TLVElement(context: 3, .bytes(signature))
            if let resumptionID { TLVElement(context: 4, .bytes(resumptionID)) }
        }.encoded()
    }

    /// Reads TBEData2 / TBEData3.
    public static func readEncryptedData(_ plaintext: [UInt8], withResumptionID: Bool) throws(SessionEstablishmentError)
        -> (noc: [UInt8], icac: [UInt8]?, signature: [UInt8], resumptionID: [UInt8]?)
    {
        let element = try decodeMessageStructure(plaintext, "TBEData")
        return try readFields("TBEData") { () throws(TLVFieldError) in
            (try element.field(1).bytes(), try element.optionalField(2)?.bytes(), try element.field(3).bytes(count: 64),
             withResumptionID ? try element.field(4).bytes(count: 16) : nil)
        }
    }

    /// S2K = HKDF(shared secret, IPK ‖ responder random ‖ responder ephemeral key ‖ SHA-256(Sigma1), "Sigma2").
    public static func sigma2Key(sharedSecret: [UInt8], ipk: [UInt8], responderRandom: [UInt8],
                                 responderEphemeralPublicKey: [UInt8], sigma1: [UInt8]) throws(CryptoError) -> [UInt8] {
        try HKDFSHA256.deriveKey(
            inputKeyMaterial: sharedSecret,
            salt: ipk + responderRandom + responderEphemeralPublicKey + SHA256.hash(sigma1),
            info: Array("Sigma2".utf8), outputByteCount: 16)
    }

    /// S3K = HKDF(shared secret, IPK ‖ SHA-256(Sigma1 ‖ Sigma2), "Sigma3").
    public static func sigma3Key(sharedSecret: [UInt8], ipk: [UInt8], sigma1: [UInt8], sigma2: [UInt8])
        throws(CryptoError)
        -> [UInt8]
    {
        try HKDFSHA256.deriveKey(inputKeyMaterial: sharedSecret, salt: ipk + SHA256.hash(sigma1 + sigma2),
                                 info: Array("Sigma3".utf8), outputByteCount: 16)
    }

    /// The session keys of a full CASE: HKDF(shared secret, IPK ‖ SHA-256(Sigma1 ‖ Sigma2 ‖ Sigma3),
    /// "SessionKeys").
    public static func sessionKeys(sharedSecret: [UInt8], ipk: [UInt8], sigma1: [UInt8], sigma2: [UInt8],
                                   sigma3: [UInt8]) throws(CryptoError) -> SessionKeys {
        try SessionKeys(secret: sharedSecret, salt: ipk + SHA256.hash(sigma1 + sigma2 + sigma3), info: "SessionKeys")
    }

    /// The MIC of a resumption message: the AES-CCM tag over nothing, keyed by HKDF(shared secret, initiator random ‖
    /// resumption id, info).
    public static func resumeMIC(sharedSecret: [UInt8], initiatorRandom: [UInt8], resumptionID: [UInt8], info: String,
                                 nonce: [UInt8]) throws(CryptoError) -> [UInt8] {
        let key = try HKDFSHA256.deriveKey(inputKeyMaterial: sharedSecret, salt: initiatorRandom + resumptionID,
                                           info: Array(info.utf8), outputByteCount: 16)
        return try AESCCM128.seal(key: key, nonce: nonce, plaintext: [], authenticatedData: [])
    }

    /// The session keys of a resumed session: HKDF(shared secret, initiator random ‖ new resumption id,
    /// "SessionResumptionKeys").
    public static func resumptionSessionKeys(sharedSecret: [UInt8], initiatorRandom: [UInt8],
                                             resumptionID: [UInt8]) throws(CryptoError) -> SessionKeys {
        try SessionKeys(secret: sharedSecret, salt: initiatorRandom + resumptionID, info: "SessionResumptionKeys")
    }
}

// MARK: - Responder

/// The node's CASE: answers one Sigma1 at a time, as the fabric identity its destination id names.
public struct CASEResponder: Sendable {
    private struct Pending: Sendable {
        var identity: OperationalIdentity
        /// The IPK the destination id named.
        var ipk: [UInt8]
        var localSessionID: UInt16
        var sigma1: Sigma1
        var sigma1Bytes: [UInt8]
        var sigma2Bytes: [UInt8]
        var ephemeralPublicKey: [UInt8]
        var sharedSecret: [UInt8]
        var resumptionID: [UInt8]
    }

    private struct PendingResume: Sendable {
        var localSessionID: UInt16
        var record: CASEResumptionRecord
        var sigma1: Sigma1
        var newResumptionID: [UInt8]
    }

    private enum State: Sendable {
        case idle
        case awaitingSigma3(Pending)
        case awaitingResumeStatus(PendingResume)
    }

    private let identities: any OperationalIdentityStore
    private let resumptions: any CASEResumptionStore
    private let sessionIDs: SessionIDAllocator
    private let localParameters: SessionParameters?
    private let random: RandomBytes
    private let now: @Sendable () -> UInt32?
    private var state: State = .idle

    /// - Parameters:
    ///   - sessionIDs: gives each attempt the session id this node will use.
    ///   - now: the time in Matter epoch seconds for certificate validity, or nil when unknown.
    public init(identities: any OperationalIdentityStore, resumptions: any CASEResumptionStore,
                sessionIDs: @escaping SessionIDAllocator,
                localParameters: SessionParameters? = .matter14, random: @escaping RandomBytes = systemRandomBytes,
                now: @escaping @Sendable () -> UInt32?) {
        self.identities = identities
        self.resumptions = resumptions
        self.sessionIDs = sessionIDs
        self.localParameters = localParameters
        self.random = random
        self.now = now
    }

    public var isBusy: Bool { if case .idle = state { false } else { true } }

    /// Handles one message of the CASE exchange.
    public mutating func receive(opcode: UInt8, payload: [UInt8]) -> SessionEstablishmentStep {
        // A status report is never answered with one (two peers could otherwise trade them forever).
        if opcode == SecureChannelOpcode.statusReport.rawValue, !isBusy {
            return SessionEstablishmentStep(reply: nil, established: nil, failure: .unexpectedMessage(opcode))
        }
        do {
            return try handle(opcode: opcode, payload: payload)
        } catch .busy {
            return .reply(.status(SessionEstablishmentError.busy.status))
        } catch .peerReported(let status) {
            state = .idle
            return SessionEstablishmentStep(reply: nil, established: nil, failure: .peerReported(status))
        } catch {
            state = .idle
            let answered = opcode != SecureChannelOpcode.statusReport.rawValue
            return SessionEstablishmentStep(
                reply: answered ? .status(error.status) : nil, established: nil, failure: error)
        }
    }

    /// Ends any attempt under way (the exchange closed or timed out).
    public mutating func abort() { state = .idle }

    private mutating func handle(opcode: UInt8, payload: [UInt8]) throws(SessionEstablishmentError)
        -> SessionEstablishmentStep
    {
        switch (SecureChannelOpcode(rawValue: opcode), state) {
        case (.caseSigma1, .idle):
            let sigma1 = try Sigma1(payload: payload)
            guard sigma1.initiatorSessionID != 0 else { throw .malformed("initiator session id 0") }
            guard let localSessionID = sessionIDs(), localSessionID != 0 else { throw .busy }
            if let resumed = try resume(sigma1, localSessionID: localSessionID) { return resumed }
            return try answer(sigma1, bytes: payload, localSessionID: localSessionID)
        case (.caseSigma1, _):
            throw .busy
        case (.caseSigma3, .awaitingSigma3(let pending)):
            return try finish(pending, sigma3Bytes: payload)
        case (.statusReport, .awaitingResumeStatus(let pending)):
            let status = try StatusReport(sessionEstablishmentPayload: payload)
            guard status == .sessionEstablishmentSuccess else { throw .peerReported(status) }
            return try completeResumption(pending)
        case (.statusReport, .awaitingSigma3):
            throw .peerReported(try StatusReport(sessionEstablishmentPayload: payload))
        default:
            throw .unexpectedMessage(opcode)
        }
    }

    /// Sigma1 → Sigma2.
    private mutating func answer(_ sigma1: Sigma1, bytes sigma1Bytes: [UInt8], localSessionID: UInt16)
        throws(SessionEstablishmentError)
        -> SessionEstablishmentStep
    {
        var match: (identity: OperationalIdentity, ipk: [UInt8])?
        search: for identity in identities.operationalIdentities() {
            for ipk in identity.ipks {
                let candidate = FabricKeys.destinationID(
                    ipk: ipk, initiatorRandom: sigma1.initiatorRandom, rootPublicKey: identity.rootPublicKey,
                    fabricID: identity.fabricID, nodeID: identity.nodeID)
                if constantTimeEqual(candidate, sigma1.destinationID) {
                    match = (identity, ipk)
                    break search
                }
            }
        }
        guard let (identity, ipk) = match else { throw .noSharedTrustRoots }
        do {
            let peerKey = try P256.PublicKey(x963Representation: sigma1.initiatorEphemeralPublicKey)
            let ephemeral = try P256.SigningKey()
            let sharedSecret = try ephemeral.sharedSecret(with: peerKey)
            let ephemeralPublic = ephemeral.publicKey.x963Representation
            let responderRandom = try random(32)
            let resumptionID = try random(16)
            let tbs = CASECrypto.toBeSigned(noc: identity.noc, icac: identity.icac, senderKey: ephemeralPublic,
                                            receiverKey: sigma1.initiatorEphemeralPublicKey)
            let signature = try identity.operationalKey.signature(for: tbs).rawRepresentation
            let tbe = CASECrypto.toBeEncrypted(noc: identity.noc, icac: identity.icac, signature: signature,
                                               resumptionID: resumptionID)
            let s2k = try CASECrypto.sigma2Key(sharedSecret: sharedSecret, ipk: ipk, responderRandom: responderRandom,
                                               responderEphemeralPublicKey: ephemeralPublic, sigma1: sigma1Bytes)
            let encrypted2 = try AESCCM128.seal(
                key: s2k, nonce: CASECrypto.sigma2Nonce, plaintext: tbe, authenticatedData: [])
            let sigma2 = Sigma2(responderRandom: responderRandom, responderSessionID: localSessionID,
                                responderEphemeralPublicKey: ephemeralPublic, encrypted2: encrypted2,
                                responderParameters: localParameters).encoded
            state = .awaitingSigma3(Pending(
                identity: identity, ipk: ipk, localSessionID: localSessionID, sigma1: sigma1, sigma1Bytes: sigma1Bytes,
                sigma2Bytes: sigma2,
                ephemeralPublicKey: ephemeralPublic, sharedSecret: sharedSecret, resumptionID: resumptionID))
            return .reply(SecureChannelMessage(.caseSigma2, sigma2))
        } catch {
            // The initiator's ephemeral key is the only outside input here that libcrypto can refuse.
            throw .malformed("initiator ephemeral key or Sigma2 crypto: \(error)")
        }
    }

    /// Sigma3 → StatusReport, and the session.
    private mutating func finish(_ pending: Pending, sigma3Bytes: [UInt8]) throws(SessionEstablishmentError)
        -> SessionEstablishmentStep
    {
        let element = try decodeMessageStructure(sigma3Bytes, "Sigma3")
        let encrypted3 = try readFields("Sigma3") { () throws(TLVFieldError) in try element.field(1).bytes() }
        let identity = pending.identity
        let plaintext: [UInt8]
        do {
            let s3k = try CASECrypto.sigma3Key(sharedSecret: pending.sharedSecret, ipk: pending.ipk,
                                               sigma1: pending.sigma1Bytes, sigma2: pending.sigma2Bytes)
            plaintext = try AESCCM128.open(key: s3k, nonce: CASECrypto.sigma3Nonce, ciphertextAndTag: encrypted3,
                                           authenticatedData: [])
        } catch {
            throw .verificationFailed("Sigma3 does not decrypt")
        }
        let tbe = try CASECrypto.readEncryptedData(plaintext, withResumptionID: false)
        let peer: OperationalPeerIdentity
        do {
            let noc = try MatterCertificate(tlv: tbe.noc)
            let icac = try tbe.icac.map { bytes throws(CertificateError) in try MatterCertificate(tlv: bytes) }
            let rcac = try MatterCertificate(tlv: identity.rcac)
            peer = try CertificateChain.validate(noc: noc, icac: icac, rcac: rcac, time: now())
        } catch {
            throw .invalidCredentials(error.reason)
        }
        guard peer.fabricID == identity.fabricID else { throw .invalidCredentials("peer's NOC is of another fabric") }
        let tbs = CASECrypto.toBeSigned(
            noc: tbe.noc, icac: tbe.icac, senderKey: pending.sigma1.initiatorEphemeralPublicKey,
            receiverKey: pending.ephemeralPublicKey)
        let verified: Bool
        do {
            verified = try P256.PublicKey(x963Representation: peer.publicKey)
                .isValidSignature(try P256.Signature(rawRepresentation: tbe.signature), for: tbs)
        } catch {
            throw .verificationFailed("Sigma3 signature unreadable")
        }
        guard verified else { throw .verificationFailed("Sigma3 signature does not verify") }
        let keys: SessionKeys
        do {
            keys = try CASECrypto.sessionKeys(
                sharedSecret: pending.sharedSecret, ipk: pending.ipk, sigma1: pending.sigma1Bytes,
                sigma2: pending.sigma2Bytes, sigma3: sigma3Bytes)
        } catch {
            throw .crypto(error.description)
        }
        resumptions.save(CASEResumptionRecord(
            resumptionID: pending.resumptionID, sharedSecret: pending.sharedSecret, fabricIndex: identity.fabricIndex,
            peerNodeID: peer.nodeID, peerCASEAuthenticatedTags: peer.caseAuthenticatedTags))
        state = .idle
        let session = EstablishedSession(
            kind: .case(fabricIndex: identity.fabricIndex, peerNodeID: peer.nodeID,
                        peerCASEAuthenticatedTags: peer.caseAuthenticatedTags),
            localSessionID: pending.localSessionID, peerSessionID: pending.sigma1.initiatorSessionID, keys: keys,
            peerParameters: pending.sigma1.initiatorParameters, resumed: false)
        return SessionEstablishmentStep(
            reply: .status(.sessionEstablishmentSuccess), established: session, failure: nil)
    }

    /// Sigma1 with a resumption id this node knows and a MIC that checks → Sigma2Resume; otherwise nil (full CASE).
    private mutating func resume(_ sigma1: Sigma1, localSessionID: UInt16) throws(SessionEstablishmentError)
        -> SessionEstablishmentStep?
    {
        guard let resumptionID = sigma1.resumptionID, let mic = sigma1.initiatorResumeMIC,
              let record = resumptions.record(resumptionID: resumptionID),
              identities.operationalIdentities().contains(where: { $0.fabricIndex == record.fabricIndex })
        else { return nil }
        do {
            let expected = try CASECrypto.resumeMIC(
                sharedSecret: record.sharedSecret, initiatorRandom: sigma1.initiatorRandom, resumptionID: resumptionID,
                info: "Sigma1_Resume", nonce: CASECrypto.resume1Nonce)
            guard constantTimeEqual(expected, mic) else { return nil }
            let newResumptionID = try random(16)
            let resumeMIC = try CASECrypto.resumeMIC(
                sharedSecret: record.sharedSecret, initiatorRandom: sigma1.initiatorRandom,
                resumptionID: newResumptionID,
                info: "Sigma2_Resume", nonce: CASECrypto.resume2Nonce)
            let message = Sigma2Resume(resumptionID: newResumptionID, sigma2ResumeMIC: resumeMIC,
                                       responderSessionID: localSessionID, responderParameters: localParameters)
            state = .awaitingResumeStatus(PendingResume(
                localSessionID: localSessionID, record: record, sigma1: sigma1, newResumptionID: newResumptionID))
            return .reply(SecureChannelMessage(.caseSigma2Resume, message.encoded))
        } catch {
            throw .crypto(error.description)
        }
    }

    private mutating func completeResumption(_ pending: PendingResume) throws(SessionEstablishmentError)
        -> SessionEstablishmentStep
    {
        let keys: SessionKeys
        do {
            keys = try CASECrypto.resumptionSessionKeys(sharedSecret: pending.record.sharedSecret,
                                                        initiatorRandom: pending.sigma1.initiatorRandom,
                                                        resumptionID: pending.newResumptionID)
        } catch {
            throw .crypto(error.description)
        }
        var record = pending.record
        record.resumptionID = pending.newResumptionID
        resumptions.save(record)
        state = .idle
        let session = EstablishedSession(
            kind: .case(fabricIndex: record.fabricIndex, peerNodeID: record.peerNodeID,
                        peerCASEAuthenticatedTags: record.peerCASEAuthenticatedTags),
            localSessionID: pending.localSessionID, peerSessionID: pending.sigma1.initiatorSessionID, keys: keys,
            peerParameters: pending.sigma1.initiatorParameters, resumed: true)
        return SessionEstablishmentStep(reply: nil, established: session, failure: nil)
    }
}

/// Compares secrets without a timing side channel.
func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    return zip(a, b).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
}
