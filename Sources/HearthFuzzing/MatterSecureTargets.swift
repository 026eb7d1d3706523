import HearthCrypto
import HearthMatter

/// Operational certificates as a peer sends them (Matter TLV in CASE and AddNOC) and as a CSR answer or tool gives
/// them (X.509 DER). Input: one byte choosing the form (even: TLV, odd: DER), then the certificate.
///
/// Promises (`MatterCertificate`): refused input throws a `CertificateError`, never crashes; a certificate read from
/// either form converts to the other and reads back as itself (so a signature checked on the rebuilt TBS is the one
/// the issuer made); X.509 is accepted only when rebuilding it from TLV gives exactly the input; checking any
/// certificate as a root never crashes.
enum MatterCertificateTarget {
    static func run(_ bytes: [UInt8]) throws(FuzzFailure) {
        guard let form = bytes.first else { return }
        let body = Array(bytes.dropFirst())
        let certificate: MatterCertificate
        if form & 1 == 0 {
            guard let read = try? MatterCertificate(tlv: body) else { return }
            certificate = read
        } else {
            guard let read = try? MatterCertificate(x509DER: body) else { return }
            certificate = read
            try require(certificate.x509DER == body, "X.509 accepted but rebuilt differently: \(shown(body))")
        }
        let fromDER = try? MatterCertificate(x509DER: certificate.x509DER)
        try require(fromDER == certificate, "X.509 form does not read back as the certificate: \(shown(body))")
        let fromTLV = try? MatterCertificate(tlv: certificate.tlvEncoded)
        try require(fromTLV == certificate, "TLV form does not read back as the certificate: \(shown(body))")
        _ = try? CertificateChain.checkRoot(certificate)
    }
}

/// PASE and CASE responders fed what a commissioner or peer may send. Input: messages, each an opcode byte, a
/// little-endian 16-bit length and that many payload bytes, all given first to a PASE responder and then to a CASE
/// responder of a fabric made for the run.
///
/// Promises (`PASEResponder`, `CASEResponder`, and `CASEInitiator` taking the same messages as a responder's
/// answers): no input establishes a session (that takes the passcode, or a key
/// and certificate of the fabric, neither of which the input can have); every failure is answered with a
/// StatusReport or comes from the peer's own; a failed attempt leaves the responder free for the next one.
enum MatterSecureChannelTarget {
    static let paseVerifier: PASEVerifier = {
        do {
            return try PASEVerifier.compute(
                passcode: 20_202_021, salt: Array("SPAKE2P Key Salt".utf8), iterations: 1000)
        } catch {
            fatalError("PASE verifier: \(error)")
        }
    }()

    struct Identities: OperationalIdentityStore {
        static let shared: Identities = {
            do {
                let key = try P256.SigningKey()
                let name = DistinguishedName([.matter(.matterRCACID, 1)])
                let keyID = Array(SHA256.hash(key.publicKey.x963Representation).prefix(20))
                var root = MatterCertificate(
                    serialNumber: [1], issuer: name, notBefore: 1, notAfter: 0, subject: name,
                    publicKey: key.publicKey.x963Representation,
                    extensions: [.basicConstraints(isCA: true, pathLength: nil), .keyUsage([.keyCertSign, .crlSign]),
                                 .subjectKeyIdentifier(keyID), .authorityKeyIdentifier(keyID)],
                    signature: [UInt8](repeating: 0, count: 64))
                try root.sign(with: key)
                let identity = OperationalIdentity(
                    fabricIndex: 1, fabricID: 1, nodeID: 1, rootPublicKey: key.publicKey.x963Representation,
                    rcac: root.tlvEncoded, noc: root.tlvEncoded, icac: nil, operationalKey: key,
                    ipks: [[UInt8](repeating: 0, count: 16)])
                return Identities(identities: [identity])
            } catch {
                fatalError("fuzz fabric: \(error)")
            }
        }()

        var identities: [OperationalIdentity]
        func operationalIdentities() -> [OperationalIdentity] { identities }
    }

    static func run(_ bytes: [UInt8]) throws(FuzzFailure) {
        var messages: [(UInt8, [UInt8])] = []
        var rest = bytes[...]
        while rest.count >= 3, messages.count < 8 {
            let opcode = rest[rest.startIndex]
            let length = Int(rest[rest.startIndex + 1]) | Int(rest[rest.startIndex + 2]) << 8
            rest = rest.dropFirst(3)
            messages.append((opcode, Array(rest.prefix(length))))
            rest = rest.dropFirst(length)
        }
        var pase = PASEResponder(verifier: paseVerifier, sessionIDs: { 1 })
        var caseResponder = CASEResponder(identities: Identities.shared, resumptions: InMemoryCASEResumptionStore(),
                                          sessionIDs: { 2 }, now: { nil })
        for (opcode, payload) in messages {
            try check(pase.receive(opcode: opcode, payload: payload), busy: pase.isBusy, "PASE", opcode, payload)
            try check(
                caseResponder.receive(opcode: opcode, payload: payload), busy: caseResponder.isBusy, "CASE", opcode,
                payload)
        }
        try initiator(messages)
    }

    /// The CASE initiator (which the node runs to resume subscriptions) fed the same messages as its responder's
    /// answers, once with a resumption record: no session, a failure answered as the responder's are.
    static func initiator(_ messages: [(UInt8, [UInt8])]) throws(FuzzFailure) {
        guard let identity = Identities.shared.identities.first else { return }
        let record = CASEResumptionRecord(resumptionID: [UInt8](repeating: 7, count: 16),
                                          sharedSecret: [UInt8](repeating: 9, count: 32), fabricIndex: 1, peerNodeID: 2,
                                          peerCASEAuthenticatedTags: [])
        for resumption in [nil, record] {
            var initiator = CASEInitiator(identity: identity, peerNodeID: 2, localSessionID: 3, resumption: resumption,
                                          resumptions: InMemoryCASEResumptionStore(), now: { nil })
            guard (try? initiator.start()) != nil else { return }
            for (opcode, payload) in messages {
                try check(
                    initiator.receive(opcode: opcode, payload: payload), busy: false, "CASE initiator", opcode, payload)
            }
        }
    }

    static func check(_ step: SessionEstablishmentStep, busy: Bool, _ name: String, _ opcode: UInt8, _ payload: [UInt8])
        throws(FuzzFailure)
    {
        let what = "\(name) on opcode \(opcode) \(shown(payload))"
        try require(step.established == nil, "\(what) established a session")
        guard let failure = step.failure else { return }
        if case .peerReported = failure {
            try require(step.reply == nil, "\(what) answered the peer's own status report")
        } else if opcode == SecureChannelOpcode.statusReport.rawValue {
            try require(step.reply == nil, "\(what) answered a status report with a message")
        } else {
            try require(step.reply?.opcode == .statusReport, "\(what) failed (\(failure)) without a status report")
        }
        try require(!busy, "\(what) failed (\(failure)) but stays busy")
    }
}
