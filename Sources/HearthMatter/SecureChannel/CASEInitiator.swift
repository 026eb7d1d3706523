// CASE, the initiator's side (core specification 4.14.2): Sigma1 → Sigma2 → Sigma3 → the responder's
// StatusReport, or, with a resumption record for the peer, Sigma1 with a resumption id → Sigma2Resume → this side's
// StatusReport (and back to Sigma2 → Sigma3 when the peer does not know the record). A pure state machine beside the
// responder, sharing its message codecs and key derivations; the node uses it to reach a subscriber again after a
// restart.
import HearthCrypto

/// The node's CASE towards one peer of one of its fabrics.
public struct CASEInitiator: Sendable {
    private struct Sent: Sendable {
        var sigma1: Sigma1
        var sigma1Bytes: [UInt8]
        var ephemeral: P256.SigningKey
    }

    private struct AwaitingStatus: Sendable {
        var session: EstablishedSession
        var record: CASEResumptionRecord
    }

    private enum State: Sendable {
        case idle
        case awaitingSigma2(Sent)
        case awaitingStatus(AwaitingStatus)
        case done
    }

    private let identity: OperationalIdentity
    private let peerNodeID: UInt64
    private let localSessionID: UInt16
    private let resumption: CASEResumptionRecord?
    private let resumptions: any CASEResumptionStore
    private let localParameters: SessionParameters?
    private let random: RandomBytes
    private let now: @Sendable () -> UInt32?
    private var state: State = .idle

    /// - Parameters:
    ///   - identity: this node on the fabric shared with the peer.
    ///   - resumption: the record of an earlier session with the peer, to resume it; nil for a full CASE.
    ///   - resumptions: where the new session's record goes.
    ///   - now: the time in Matter epoch seconds for certificate validity, or nil when unknown.
    public init(identity: OperationalIdentity, peerNodeID: UInt64, localSessionID: UInt16,
                resumption: CASEResumptionRecord?, resumptions: any CASEResumptionStore,
                localParameters: SessionParameters? = .matter14, random: @escaping RandomBytes = systemRandomBytes,
                now: @escaping @Sendable () -> UInt32?) {
        self.identity = identity
        self.peerNodeID = peerNodeID
        self.localSessionID = localSessionID
        self.resumption = resumption.flatMap {
            $0.fabricIndex == identity.fabricIndex && $0.peerNodeID == peerNodeID ? $0 : nil
        }
        self.resumptions = resumptions
        self.localParameters = localParameters
        self.random = random
        self.now = now
    }

    /// The first message: Sigma1 (with the resumption id and its MIC when resuming).
    public mutating func start() throws(SessionEstablishmentError) -> SecureChannelMessage {
        guard case .idle = state else { throw .unexpectedMessage(SecureChannelOpcode.caseSigma1.rawValue) }
        guard let ipk = identity.ipks.first else { throw .invalidCredentials("the fabric has no IPK") }
        do {
            let ephemeral = try P256.SigningKey()
            let initiatorRandom = try random(32)
            var sigma1 = Sigma1(
                initiatorRandom: initiatorRandom, initiatorSessionID: localSessionID,
                destinationID: FabricKeys.destinationID(
                    ipk: ipk, initiatorRandom: initiatorRandom,
                    rootPublicKey: identity.rootPublicKey, fabricID: identity.fabricID,
                    nodeID: peerNodeID),
                initiatorEphemeralPublicKey: ephemeral.publicKey.x963Representation,
                initiatorParameters: localParameters)
            if let resumption {
                sigma1.resumptionID = resumption.resumptionID
                sigma1.initiatorResumeMIC = try CASECrypto.resumeMIC(
                    sharedSecret: resumption.sharedSecret, initiatorRandom: initiatorRandom,
                    resumptionID: resumption.resumptionID, info: "Sigma1_Resume", nonce: CASECrypto.resume1Nonce)
            }
            let bytes = sigma1.encoded
            state = .awaitingSigma2(Sent(sigma1: sigma1, sigma1Bytes: bytes, ephemeral: ephemeral))
            return SecureChannelMessage(.caseSigma1, bytes)
        } catch {
            throw .crypto(error.description)
        }
    }

    /// Handles one message of the responder. The step's `established` is set once the session may be used (after the
    /// responder's StatusReport of a full CASE, or at once on a resumption, whose StatusReport this side sends).
    public mutating func receive(opcode: UInt8, payload: [UInt8]) -> SessionEstablishmentStep {
        do {
            return try handle(opcode: opcode, payload: payload)
        } catch .peerReported(let status) {
            state = .done
            return SessionEstablishmentStep(reply: nil, established: nil, failure: .peerReported(status))
        } catch {
            state = .done
            let answered = opcode != SecureChannelOpcode.statusReport.rawValue
            return SessionEstablishmentStep(
                reply: answered ? .status(error.status) : nil, established: nil, failure: error)
        }
    }

    private mutating func handle(opcode: UInt8, payload: [UInt8]) throws(SessionEstablishmentError)
        -> SessionEstablishmentStep
    {
        switch (SecureChannelOpcode(rawValue: opcode), state) {
        case (.caseSigma2, .awaitingSigma2(let sent)):
            return try answer(Sigma2(payload: payload), bytes: payload, sent: sent)
        case (.caseSigma2Resume, .awaitingSigma2(let sent)):
            return try resumed(Sigma2Resume(payload: payload), sent: sent)
        case (.statusReport, .awaitingStatus(let awaiting)):
            let status = try StatusReport(sessionEstablishmentPayload: payload)
            guard status == .sessionEstablishmentSuccess else { throw .peerReported(status) }
            resumptions.save(awaiting.record)
            state = .done
            return SessionEstablishmentStep(reply: nil, established: awaiting.session, failure: nil)
        case (.statusReport, .awaitingSigma2):
            throw .peerReported(try StatusReport(sessionEstablishmentPayload: payload))
        default:
            throw .unexpectedMessage(opcode)
        }
    }

    /// Sigma2 → Sigma3: the responder is checked to be the peer named (its NOC chains to the fabric's root and names
    /// the fabric and node), and its signature over both ephemeral keys.
    private mutating func answer(_ sigma2: Sigma2, bytes sigma2Bytes: [UInt8], sent: Sent)
        throws(SessionEstablishmentError)
        -> SessionEstablishmentStep
    {
        guard sigma2.responderSessionID != 0 else { throw .malformed("responder session id 0") }
        guard let ipk = identity.ipks.first else { throw .invalidCredentials("the fabric has no IPK") }
        let ownKey = sent.ephemeral.publicKey.x963Representation
        let sharedSecret: [UInt8]
        let plaintext: [UInt8]
        do {
            let peerKey = try P256.PublicKey(x963Representation: sigma2.responderEphemeralPublicKey)
            sharedSecret = try sent.ephemeral.sharedSecret(with: peerKey)
        } catch {
            throw .malformed("responder ephemeral key: \(error)")
        }
        do {
            let s2k = try CASECrypto.sigma2Key(
                sharedSecret: sharedSecret, ipk: ipk, responderRandom: sigma2.responderRandom,
                responderEphemeralPublicKey: sigma2.responderEphemeralPublicKey,
                sigma1: sent.sigma1Bytes)
            plaintext = try AESCCM128.open(key: s2k, nonce: CASECrypto.sigma2Nonce, ciphertextAndTag: sigma2.encrypted2,
                                           authenticatedData: [])
        } catch {
            throw .verificationFailed("Sigma2 does not decrypt")
        }
        let tbe = try CASECrypto.readEncryptedData(plaintext, withResumptionID: true)
        let peer: OperationalPeerIdentity
        do {
            let noc = try MatterCertificate(tlv: tbe.noc)
            let icac = try tbe.icac.map { bytes throws(CertificateError) in try MatterCertificate(tlv: bytes) }
            peer = try CertificateChain.validate(noc: noc, icac: icac, rcac: try MatterCertificate(tlv: identity.rcac),
                                                 time: now())
        } catch {
            throw .invalidCredentials(error.reason)
        }
        guard peer.fabricID == identity.fabricID else {
            throw .invalidCredentials("responder's NOC is of another fabric")
        }
        guard peer.nodeID == peerNodeID else {
            throw .invalidCredentials("responder is node \(peer.nodeID), not the node \(peerNodeID) asked for")
        }
        let tbs2 = CASECrypto.toBeSigned(noc: tbe.noc, icac: tbe.icac, senderKey: sigma2.responderEphemeralPublicKey,
                                         receiverKey: ownKey)
        let verified: Bool
        do {
            verified = try P256.PublicKey(x963Representation: peer.publicKey)
                .isValidSignature(try P256.Signature(rawRepresentation: tbe.signature), for: tbs2)
        } catch {
            throw .verificationFailed("Sigma2 signature unreadable")
        }
        guard verified else { throw .verificationFailed("Sigma2 signature does not verify") }
        do {
            let tbs3 = CASECrypto.toBeSigned(noc: identity.noc, icac: identity.icac, senderKey: ownKey,
                                             receiverKey: sigma2.responderEphemeralPublicKey)
            let signature = try identity.operationalKey.signature(for: tbs3).rawRepresentation
            let tbe3 = CASECrypto.toBeEncrypted(
                noc: identity.noc, icac: identity.icac, signature: signature, resumptionID: nil)
            let s3k = try CASECrypto.sigma3Key(
                sharedSecret: sharedSecret, ipk: ipk, sigma1: sent.sigma1Bytes, sigma2: sigma2Bytes)
            let encrypted3 = try AESCCM128.seal(
                key: s3k, nonce: CASECrypto.sigma3Nonce, plaintext: tbe3, authenticatedData: [])
            let sigma3 = TLVElement.structure { TLVElement(context: 1, .bytes(encrypted3)) }.encoded()
            let keys = try CASECrypto.sessionKeys(sharedSecret: sharedSecret, ipk: ipk, sigma1: sent.sigma1Bytes,
                                                  sigma2: sigma2Bytes, sigma3: sigma3)
            let session = EstablishedSession(
                kind: .case(fabricIndex: identity.fabricIndex, peerNodeID: peer.nodeID,
                            peerCASEAuthenticatedTags: peer.caseAuthenticatedTags),
                localSessionID: localSessionID, peerSessionID: sigma2.responderSessionID, keys: keys,
                peerParameters: sigma2.responderParameters, resumed: false)
            let record = CASEResumptionRecord(
                resumptionID: tbe.resumptionID ?? [], sharedSecret: sharedSecret, fabricIndex: identity.fabricIndex,
                peerNodeID: peer.nodeID, peerCASEAuthenticatedTags: peer.caseAuthenticatedTags)
            state = .awaitingStatus(AwaitingStatus(session: session, record: record))
            return .reply(SecureChannelMessage(.caseSigma3, sigma3))
        } catch {
            throw .crypto(error.description)
        }
    }

    /// Sigma2Resume → this side's StatusReport, and the session.
    private mutating func resumed(_ message: Sigma2Resume, sent: Sent) throws(SessionEstablishmentError)
        -> SessionEstablishmentStep
    {
        guard let resumption else { throw .unexpectedMessage(SecureChannelOpcode.caseSigma2Resume.rawValue) }
        guard message.responderSessionID != 0 else { throw .malformed("responder session id 0") }
        let expected: [UInt8]
        let keys: SessionKeys
        do {
            expected = try CASECrypto.resumeMIC(
                sharedSecret: resumption.sharedSecret, initiatorRandom: sent.sigma1.initiatorRandom,
                resumptionID: message.resumptionID, info: "Sigma2_Resume", nonce: CASECrypto.resume2Nonce)
            keys = try CASECrypto.resumptionSessionKeys(sharedSecret: resumption.sharedSecret,
                                                        initiatorRandom: sent.sigma1.initiatorRandom,
                                                        resumptionID: message.resumptionID)
        } catch {
            throw .crypto(error.description)
        }
        guard constantTimeEqual(expected, message.sigma2ResumeMIC) else {
            throw .verificationFailed("Sigma2Resume MIC does not verify")
        }
        var record = resumption
        record.resumptionID = message.resumptionID
        resumptions.save(record)
        state = .done
        let session = EstablishedSession(
            kind: .case(fabricIndex: record.fabricIndex, peerNodeID: record.peerNodeID,
                        peerCASEAuthenticatedTags: record.peerCASEAuthenticatedTags),
            localSessionID: localSessionID, peerSessionID: message.responderSessionID, keys: keys,
            peerParameters: message.responderParameters, resumed: true)
        return SessionEstablishmentStep(
            reply: .status(.sessionEstablishmentSuccess), established: session, failure: nil)
    }
}

extension InMemoryCASEResumptionStore {
    /// The record of the last session with a peer, to resume it as the initiator.
    public func record(fabricIndex: UInt8, peerNodeID: UInt64) -> CASEResumptionRecord? {
        allRecords.last { $0.fabricIndex == fabricIndex && $0.peerNodeID == peerNodeID }
    }
}

extension SessionEstablishmentError {
    /// When the responder answered BUSY: how long (ms) it asked the initiator to wait before trying again (its
    /// minimum wait, or the specification's usual 500 ms when it named none). Nil for any other failure.
    public var busyWaitMilliseconds: Int64? {
        guard case .peerReported(let status) = self, status.generalCode == GeneralStatusCode.busy.rawValue,
              status.protocolCode == SecureChannelStatusCode.busy.rawValue else { return nil }
        guard status.protocolData.count >= 2 else { return Int64(StatusReport.busyWaitMilliseconds) }
        return Int64(status.protocolData[0]) | Int64(status.protocolData[1]) << 8
    }
}
