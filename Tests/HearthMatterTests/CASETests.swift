import HearthCrypto
@testable import HearthMatter
import Testing

/// A fabric made in the test: a root, an optional intermediate, and NOCs signed with HearthCrypto's P-256 keys.
struct TestFabric {
    var fabricID: UInt64
    var rootKey: P256.SigningKey
    var rcac: MatterCertificate
    var icacKey: P256.SigningKey?
    var icac: MatterCertificate?
    var ipk: [UInt8]

    static let notBefore: UInt32 = 700_000_000

    init(fabricID: UInt64, withICAC: Bool = false, rcacID: UInt64 = 1) throws {
        self.fabricID = fabricID
        rootKey = try P256.SigningKey()
        let rootName = DistinguishedName([.matter(.matterRCACID, rcacID), .matter(.matterFabricID, fabricID)])
        rcac = try Self.certificate(serial: 1, issuer: rootName, subject: rootName, publicKey: rootKey.publicKey,
                                    issuerKeyID: nil, ca: true, signer: rootKey)
        if withICAC {
            let key = try P256.SigningKey()
            let name = DistinguishedName([.matter(.matterICACID, 2), .matter(.matterFabricID, fabricID)])
            icac = try Self.certificate(serial: 2, issuer: rootName, subject: name, publicKey: key.publicKey,
                                        issuerKeyID: rcac.subjectKeyIdentifier, ca: true, signer: rootKey)
            icacKey = key
        }
        let compressed = try FabricKeys.compressedFabricID(
            rootPublicKey: rootKey.publicKey.x963Representation, fabricID: fabricID)
        ipk = try FabricKeys.operationalGroupKey(
            epochKey: [UInt8](repeating: 0x42, count: 16), compressedFabricID: compressed)
    }

    /// A NOC for `nodeID`, signed by the intermediate when there is one.
    func noc(nodeID: UInt64, key: P256.SigningKey, tags: [UInt32] = []) throws -> MatterCertificate {
        let issuer = icac ?? rcac
        let subject = DistinguishedName([.matter(.matterNodeID, nodeID), .matter(.matterFabricID, fabricID)]
            + tags.map { .matter(.matterCASEAuthenticatedTag, UInt64($0)) })
        return try Self.certificate(serial: 3, issuer: issuer.subject, subject: subject, publicKey: key.publicKey,
                                    issuerKeyID: issuer.subjectKeyIdentifier, ca: false, signer: icacKey ?? rootKey)
    }

    func identity(fabricIndex: UInt8, nodeID: UInt64, key: P256.SigningKey) throws -> OperationalIdentity {
        OperationalIdentity(
            fabricIndex: fabricIndex, fabricID: fabricID, nodeID: nodeID,
            rootPublicKey: rootKey.publicKey.x963Representation, rcac: rcac.tlvEncoded,
            noc: try noc(nodeID: nodeID, key: key).tlvEncoded, icac: icac?.tlvEncoded, operationalKey: key,
            ipks: [[UInt8](repeating: 0x17, count: 16), ipk])
    }

    static func certificate(
        serial: UInt8, issuer: DistinguishedName, subject: DistinguishedName, publicKey: P256.PublicKey,
        issuerKeyID: [UInt8]?, ca: Bool, signer: P256.SigningKey
    ) throws -> MatterCertificate {
        let keyID = Array(SHA256.hash(publicKey.x963Representation).prefix(20))
        var extensions: [CertificateExtension] = [
            .basicConstraints(isCA: ca, pathLength: nil),
            .keyUsage(ca ? [.keyCertSign, .crlSign] : .digitalSignature),
        ]
        if !ca { extensions.append(.extendedKeyUsage([.clientAuth, .serverAuth])) }
        extensions += [.subjectKeyIdentifier(keyID), .authorityKeyIdentifier(issuerKeyID ?? keyID)]
        var certificate = MatterCertificate(
            serialNumber: [serial], issuer: issuer, notBefore: notBefore, notAfter: 0, subject: subject,
            publicKey: publicKey.x963Representation, extensions: extensions, signature: [UInt8](repeating: 0, count: 64)
        )
        try certificate.sign(with: signer)
        return certificate
    }
}

struct FixedIdentities: OperationalIdentityStore {
    var identities: [OperationalIdentity]
    func operationalIdentities() -> [OperationalIdentity] { identities }
}

/// A CASE initiator written from the specification, with the same primitives, to drive `CASEResponder`.
struct TestCASEInitiator {
    var fabric: TestFabric
    var nodeID: UInt64
    var key: P256.SigningKey
    var noc: MatterCertificate
    var responderNodeID: UInt64
    var ephemeral: P256.SigningKey
    var random: [UInt8]
    var sigma1: [UInt8] = []
    var sigma2: [UInt8] = []
    var sharedSecret: [UInt8] = []
    var resumptionID: [UInt8] = []

    init(fabric: TestFabric, nodeID: UInt64, responderNodeID: UInt64, noc: MatterCertificate? = nil) throws {
        self.fabric = fabric
        self.nodeID = nodeID
        self.responderNodeID = responderNodeID
        key = try P256.SigningKey()
        self.noc = try noc ?? fabric.noc(nodeID: nodeID, key: key)
        ephemeral = try P256.SigningKey()
        random = try SecureRandom.bytes(32)
    }

    mutating func makeSigma1(destinationID: [UInt8]? = nil, resume: (id: [UInt8], secret: [UInt8])? = nil) throws
        -> [UInt8]
    {
        let destination = destinationID ?? FabricKeys.destinationID(
            ipk: fabric.ipk, initiatorRandom: random, rootPublicKey: fabric.rootKey.publicKey.x963Representation,
            fabricID: fabric.fabricID, nodeID: responderNodeID)
        var message = Sigma1(initiatorRandom: random, initiatorSessionID: 0x0BEE, destinationID: destination,
                             initiatorEphemeralPublicKey: ephemeral.publicKey.x963Representation,
                             initiatorParameters: SessionParameters(idleInterval: 800))
        if let resume {
            message.resumptionID = resume.id
            message.initiatorResumeMIC = try CASECrypto.resumeMIC(
                sharedSecret: resume.secret, initiatorRandom: random, resumptionID: resume.id, info: "Sigma1_Resume",
                nonce: CASECrypto.resume1Nonce)
        }
        sigma1 = message.encoded
        return sigma1
    }

    /// Checks Sigma2 as an initiator must (decryption, the responder's chain, its signature); returns Sigma3.
    mutating func answer(sigma2 payload: [UInt8], signWith signer: P256.SigningKey? = nil) throws -> [UInt8] {
        sigma2 = payload
        let message = try Sigma2(payload: payload)
        sharedSecret = try ephemeral.sharedSecret(
            with: try P256.PublicKey(x963Representation: message.responderEphemeralPublicKey))
        let s2k = try CASECrypto.sigma2Key(
            sharedSecret: sharedSecret, ipk: fabric.ipk, responderRandom: message.responderRandom,
            responderEphemeralPublicKey: message.responderEphemeralPublicKey, sigma1: sigma1)
        let tbe2 = try AESCCM128.open(key: s2k, nonce: CASECrypto.sigma2Nonce, ciphertextAndTag: message.encrypted2,
                                      authenticatedData: [])
        let data = try CASECrypto.readEncryptedData(tbe2, withResumptionID: true)
        let responder = try CertificateChain.validate(
            noc: try MatterCertificate(tlv: data.noc), icac: try data.icac.map { try MatterCertificate(tlv: $0) },
            rcac: fabric.rcac, time: nil)
        #expect(responder.nodeID == responderNodeID)
        let tbs2 = CASECrypto.toBeSigned(noc: data.noc, icac: data.icac, senderKey: message.responderEphemeralPublicKey,
                                         receiverKey: ephemeral.publicKey.x963Representation)
        #expect(try P256.PublicKey(x963Representation: responder.publicKey)
            .isValidSignature(try P256.Signature(rawRepresentation: data.signature), for: tbs2))
        resumptionID = try #require(data.resumptionID)

        let tbs3 = CASECrypto.toBeSigned(noc: noc.tlvEncoded, icac: fabric.icac?.tlvEncoded,
                                         senderKey: ephemeral.publicKey.x963Representation,
                                         receiverKey: message.responderEphemeralPublicKey)
        let signature = try (signer ?? key).signature(for: tbs3).rawRepresentation
        let tbe3 = CASECrypto.toBeEncrypted(noc: noc.tlvEncoded, icac: fabric.icac?.tlvEncoded, signature: signature,
                                            resumptionID: nil)
        let s3k = try CASECrypto.sigma3Key(sharedSecret: sharedSecret, ipk: fabric.ipk, sigma1: sigma1, sigma2: sigma2)
        let encrypted3 = try AESCCM128.seal(
            key: s3k, nonce: CASECrypto.sigma3Nonce, plaintext: tbe3, authenticatedData: [])
        return TLVElement.structure { TLVElement(context: 1, .bytes(encrypted3)) }.encoded()
    }
}

@Suite struct CASETests {
    static let responderNodeID: UInt64 = 0x1111
    static let initiatorNodeID: UInt64 = 0x2222

    struct Setup {
        var fabric: TestFabric
        var responder: CASEResponder
        var resumptions: InMemoryCASEResumptionStore
    }

    static func setup(withICAC: Bool = false) throws -> Setup {
        let fabric = try TestFabric(fabricID: 0xFAB1, withICAC: withICAC)
        let identity = try fabric.identity(fabricIndex: 1, nodeID: responderNodeID, key: try P256.SigningKey())
        let other = try TestFabric(fabricID: 0xFAB2).identity(
            fabricIndex: 2, nodeID: 0x3333, key: try P256.SigningKey())
        let resumptions = InMemoryCASEResumptionStore()
        let responder = CASEResponder(
            identities: FixedIdentities(identities: [other, identity]), resumptions: resumptions,
            sessionIDs: { 0x0101 }, now: { nil })
        return Setup(fabric: fabric, responder: responder, resumptions: resumptions)
    }

    @Test(arguments: [false, true])
    func fullCASEEstablishesTheSessionBothSidesDerive(withICAC: Bool) throws {
        var setup = try Self.setup(withICAC: withICAC)
        var initiator = try TestCASEInitiator(fabric: setup.fabric, nodeID: Self.initiatorNodeID,
                                              responderNodeID: Self.responderNodeID)
        let sigma2 = try #require(setup.responder.receive(opcode: 0x30, payload: try initiator.makeSigma1()).reply)
        #expect(sigma2.opcode == .caseSigma2)
        let sigma3 = try initiator.answer(sigma2: sigma2.payload)
        let done = setup.responder.receive(opcode: 0x32, payload: sigma3)
        #expect(done.reply == .status(.sessionEstablishmentSuccess))
        let session = try #require(done.established)
        #expect(session.kind == .case(fabricIndex: 1, peerNodeID: Self.initiatorNodeID, peerCASEAuthenticatedTags: []))
        #expect(session.peerSessionID == 0x0BEE)
        #expect(session.localSessionID == 0x0101)
        #expect(!session.resumed)
        #expect(session.peerParameters == SessionParameters(idleInterval: 800))
        let expected = try CASECrypto.sessionKeys(sharedSecret: initiator.sharedSecret, ipk: setup.fabric.ipk,
                                                  sigma1: initiator.sigma1, sigma2: initiator.sigma2, sigma3: sigma3)
        #expect(session.keys == expected)
        #expect(setup.resumptions.record(resumptionID: initiator.resumptionID)?.peerNodeID == Self.initiatorNodeID)
        #expect(!setup.responder.isBusy)
    }

    @Test func identityFromAddNOCMaterialChecksTheChainAndDerivesTheIPK() throws {
        let fabric = try TestFabric(fabricID: 0xFAB1, withICAC: true)
        let key = try P256.SigningKey()
        let noc = try fabric.noc(nodeID: Self.responderNodeID, key: key).tlvEncoded
        let identity = try OperationalIdentity(
            fabricIndex: 3, rcac: fabric.rcac.tlvEncoded, noc: noc, icac: fabric.icac?.tlvEncoded, operationalKey: key,
            ipkEpochKeys: [[UInt8](repeating: 0x42, count: 16)], time: nil)
        #expect(identity.nodeID == Self.responderNodeID)
        #expect(identity.fabricID == 0xFAB1)
        #expect(identity.ipks == [fabric.ipk])
        #expect(identity.rootPublicKey == fabric.rootKey.publicKey.x963Representation)
        // A NOC for another key, or without the ICAC that issued it, is refused.
        #expect(throws: CertificateError.self) {
            try OperationalIdentity(
                fabricIndex: 3, rcac: fabric.rcac.tlvEncoded, noc: noc, icac: fabric.icac?.tlvEncoded,
                operationalKey: try P256.SigningKey(), ipkEpochKeys: [[UInt8](repeating: 0x42, count: 16)],
                time: nil)
        }
        #expect(throws: CertificateError.self) {
            try OperationalIdentity(
                fabricIndex: 3, rcac: fabric.rcac.tlvEncoded, noc: noc, icac: nil, operationalKey: key,
                ipkEpochKeys: [[UInt8](repeating: 0x42, count: 16)], time: nil)
        }
    }

    @Test func resumptionSkipsSigma2AndDerivesResumptionKeys() throws {
        var setup = try Self.setup()
        var first = try TestCASEInitiator(fabric: setup.fabric, nodeID: Self.initiatorNodeID,
                                          responderNodeID: Self.responderNodeID)
        let sigma2 = try #require(setup.responder.receive(opcode: 0x30, payload: try first.makeSigma1()).reply)
        _ = setup.responder.receive(opcode: 0x32, payload: try first.answer(sigma2: sigma2.payload))

        var again = first
        again.random = try SecureRandom.bytes(32)
        let sigma1 = try again.makeSigma1(resume: (first.resumptionID, first.sharedSecret))
        let reply = try #require(setup.responder.receive(opcode: 0x30, payload: sigma1).reply)
        #expect(reply.opcode == .caseSigma2Resume)
        let resume = try Sigma2Resume(payload: reply.payload)
        #expect(resume.responderSessionID == 0x0101)
        let mic = try CASECrypto.resumeMIC(sharedSecret: first.sharedSecret, initiatorRandom: again.random,
                                           resumptionID: resume.resumptionID, info: "Sigma2_Resume",
                                           nonce: CASECrypto.resume2Nonce)
        #expect(mic == resume.sigma2ResumeMIC)
        let done = setup.responder.receive(opcode: 0x40, payload: StatusReport.sessionEstablishmentSuccess.encoded())
        let session = try #require(done.established)
        #expect(session.resumed)
        #expect(session.kind == .case(fabricIndex: 1, peerNodeID: Self.initiatorNodeID, peerCASEAuthenticatedTags: []))
        #expect(session.keys == (try CASECrypto.resumptionSessionKeys(
            sharedSecret: first.sharedSecret, initiatorRandom: again.random, resumptionID: resume.resumptionID)))
        // The old resumption id is spent; the new one resumes next time.
        #expect(setup.resumptions.record(resumptionID: first.resumptionID) == nil)
        #expect(setup.resumptions.record(resumptionID: resume.resumptionID) != nil)
    }

    @Test func resumptionWithABadMICFallsBackToFullCASE() throws {
        var setup = try Self.setup()
        var first = try TestCASEInitiator(fabric: setup.fabric, nodeID: Self.initiatorNodeID,
                                          responderNodeID: Self.responderNodeID)
        let sigma2 = try #require(setup.responder.receive(opcode: 0x30, payload: try first.makeSigma1()).reply)
        _ = setup.responder.receive(opcode: 0x32, payload: try first.answer(sigma2: sigma2.payload))
        var again = first
        again.random = try SecureRandom.bytes(32)
        let sigma1 = try again.makeSigma1(resume: (first.resumptionID, [UInt8](repeating: 9, count: 32)))
        #expect(setup.responder.receive(opcode: 0x30, payload: sigma1).reply?.opcode == .caseSigma2)
    }

    @Test func unknownDestinationHasNoSharedTrustRoots() throws {
        var setup = try Self.setup()
        var initiator = try TestCASEInitiator(
            fabric: setup.fabric, nodeID: Self.initiatorNodeID, responderNodeID: 0x9999)
        let step = setup.responder.receive(opcode: 0x30, payload: try initiator.makeSigma1())
        #expect(step.reply == .status(.noSharedTrustRoots))
        #expect(step.failure == .noSharedTrustRoots)
        #expect(!setup.responder.isBusy)
    }

    @Test func initiatorOfAnotherRootIsRefusedAndLeavesNoSession() throws {
        var setup = try Self.setup()
        let stranger = try TestFabric(fabricID: 0xFAB1)
        let strangerKey = try P256.SigningKey()
        var initiator = try TestCASEInitiator(fabric: setup.fabric, nodeID: Self.initiatorNodeID,
                                              responderNodeID: Self.responderNodeID,
                                              noc: try stranger.noc(nodeID: Self.initiatorNodeID, key: strangerKey))
        let sigma2 = try #require(setup.responder.receive(opcode: 0x30, payload: try initiator.makeSigma1()).reply)
        let done = setup.responder.receive(
            opcode: 0x32, payload: try initiator.answer(sigma2: sigma2.payload, signWith: strangerKey))
        #expect(done.established == nil)
        #expect(done.reply == .status(.invalidParameter))
        guard case .invalidCredentials = done.failure else {
            Issue.record("expected invalid credentials, got \(String(describing: done.failure))")
            return
        }
    }

    @Test func sigma3SignedWithAnotherKeyIsRefused() throws {
        var setup = try Self.setup()
        var initiator = try TestCASEInitiator(fabric: setup.fabric, nodeID: Self.initiatorNodeID,
                                              responderNodeID: Self.responderNodeID)
        let sigma2 = try #require(setup.responder.receive(opcode: 0x30, payload: try initiator.makeSigma1()).reply)
        let done = setup.responder.receive(
            opcode: 0x32,
            payload: try initiator.answer(sigma2: sigma2.payload, signWith: try P256.SigningKey()))
        #expect(done.established == nil)
        #expect(done.failure == .verificationFailed("Sigma3 signature does not verify"))
    }

    @Test func malformedSigmaMessagesAreRefusedWithoutCrashing() throws {
        var setup = try Self.setup()
        var initiator = try TestCASEInitiator(fabric: setup.fabric, nodeID: Self.initiatorNodeID,
                                              responderNodeID: Self.responderNodeID)
        let sigma1 = try initiator.makeSigma1()
        for length in 0..<sigma1.count {
            let step = setup.responder.receive(opcode: 0x30, payload: Array(sigma1.prefix(length)))
            #expect(step.established == nil)
            #expect(!setup.responder.isBusy)
        }
        // An ephemeral key that is not on the curve.
        var bad = try Sigma1(payload: sigma1)
        bad.initiatorEphemeralPublicKey = [0x04] + [UInt8](repeating: 1, count: 64)
        #expect(setup.responder.receive(opcode: 0x30, payload: bad.encoded).reply == .status(.invalidParameter))
        // Sigma3 garbage after a good Sigma2.
        _ = try #require(setup.responder.receive(opcode: 0x30, payload: sigma1).reply)
        let garbage = TLVElement.structure { TLVElement(context: 1, .bytes([UInt8](repeating: 5, count: 100))) }
            .encoded()
        let done = setup.responder.receive(opcode: 0x32, payload: garbage)
        #expect(done.failure == .verificationFailed("Sigma3 does not decrypt"))
        #expect(!setup.responder.isBusy)
    }
}
