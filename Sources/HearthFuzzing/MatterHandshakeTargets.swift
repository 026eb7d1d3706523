import HearthCrypto
import HearthMatter

// Targets aimed at one message of a handshake at a time: the messages before it are a genuine initiator's, so the
// input reaches the checks of a later step (a Pake3, a Sigma3, a resumption) that a whole-exchange target rarely gets
// past the first message to. Input: a step byte, a form byte, then the form's bytes: form 0 sends them as the
// step's payload; form 1 sends the genuine initiator's message for that step with edits — (position, value) pairs
// XORed in, a last odd byte cutting the message to that length — so the fuzzer starts from messages that decode.

/// The payload a step sends: the input itself, or the genuine message with the input's edits.
func editedPayload(genuine: [UInt8], form: UInt8, _ rest: ArraySlice<UInt8>) -> [UInt8] {
    guard form & 1 == 1 else { return Array(rest) }
    var message = genuine
    var edits = rest
    while edits.count >= 2, !message.isEmpty {
        let position = Int(edits[edits.startIndex]) % message.count
        message[position] ^= edits[edits.startIndex + 1]
        edits = edits.dropFirst(2)
    }
    if let cut = edits.first { message = Array(message.prefix(Int(cut))) }
    return message
}

/// PASE as a commissioner runs it, one message fuzzed: step 0 PBKDFParamRequest, 1 Pake1, 2 Pake3.
///
/// Promises (`PASEResponder`): a Pake3 establishes a session only when it is the genuine one (the passcode's proof);
/// a PBKDFParamRequest the responder accepts still leads, with the right passcode, to a session; every refusal is
/// answered with a StatusReport and leaves the responder idle; and whatever came, the same responder then takes a
/// genuine commissioner's whole PASE (a refused message changes nothing the next attempt depends on).
enum MatterPASETarget {
    static let passcode: UInt32 = 20_202_021
    static let salt = Array("SPAKE2P Key Salt".utf8)
    static let iterations: UInt32 = 1000
    static let secrets: (verifier: PASEVerifier, w0: P256.Scalar, w1: P256.Scalar) = {
        do {
            let (w0, w1) = try SPAKE2Plus.computeW0W1(passcode: passcode, salt: salt, iterations: Int(iterations))
            return (try PASEVerifier.compute(passcode: passcode, salt: salt, iterations: iterations), w0, w1)
        } catch {
            fatalError("PASE verifier: \(error)")
        }
    }()
    static let request = PBKDFParamRequest(
        initiatorRandom: [UInt8](repeating: 0x49, count: 32), initiatorSessionID: 0x4242, hasPBKDFParameters: false)

    static func run(_ bytes: [UInt8]) throws(FuzzFailure) {
        guard bytes.count >= 2 else { return }
        let step = bytes[0] % 3, form = bytes[1]
        let rest = bytes.dropFirst(2)
        var responder = PASEResponder(verifier: secrets.verifier, sessionIDs: { 7 })
        try attempt(&responder, fuzzing: step, form: form, rest)
        if responder.isBusy { responder.abort() }
        // The same responder, a genuine commissioner.
        let clean = try attempt(&responder, fuzzing: nil, form: 1, [])
        try require(clean, "a genuine PASE failed after \(shown(bytes))")
    }

    /// Runs PASE with the message of `step` (if any) from the input; returns whether a session was established.
    @discardableResult
    static func attempt(_ responder: inout PASEResponder, fuzzing step: UInt8?, form: UInt8, _ rest: ArraySlice<UInt8>)
        throws(FuzzFailure) -> Bool
    {
        func send(_ opcode: SecureChannelOpcode, _ genuine: [UInt8], at index: UInt8) throws(FuzzFailure)
            -> (SessionEstablishmentStep, sent: [UInt8])
        {
            let payload = step == index ? editedPayload(genuine: genuine, form: form, rest) : genuine
            let result = responder.receive(opcode: opcode.rawValue, payload: payload)
            let what = "PASE \(opcode) \(shown(payload))"
            if let failure = result.failure {
                try require(
                    result.reply?.opcode == .statusReport, "\(what) failed (\(failure)) without a status report")
                try require(!responder.isBusy, "\(what) failed (\(failure)) but the responder stays busy")
            }
            return (result, payload)
        }

        let (first, sentRequest) = try send(.pbkdfParamRequest, request.encoded, at: 0)
        guard first.failure == nil else { return false }
        guard let response = first.reply, response.opcode == .pbkdfParamResponse else {
            throw FuzzFailure("PBKDFParamRequest answered \(first.reply.map { "\($0.opcode)" } ?? "nothing")")
        }
        let context = SPAKE2Plus.matterContext(pbkdfParamRequest: sentRequest, pbkdfParamResponse: response.payload)
        var prover: SPAKE2Plus.Prover
        do { prover = try SPAKE2Plus.Prover(context: context, w0: secrets.w0, w1: secrets.w1) } catch {
            throw FuzzFailure("the prover: \(error)")
        }
        let genuinePake1 = PAKEMessage.pake1(pA: prover.pA)
        let (second, sentPake1) = try send(.pasePake1, genuinePake1, at: 1)
        guard second.failure == nil else { return false }
        guard let pake2 = second.reply, pake2.opcode == .pasePake2 else {
            throw FuzzFailure("Pake1 answered \(second.reply.map { "\($0.opcode)" } ?? "nothing")")
        }
        let cA: [UInt8]
        do {
            let (pB, cB) = try PAKEMessage.readPake2(pake2.payload)
            cA = try prover.finish(pB: pB, cB: cB)
        } catch {
            // Pake2 answers another pA than the prover's: a commissioner stops here.
            try require(sentPake1 != genuinePake1, "Pake2 to the genuine Pake1 does not verify: \(error)")
            return false
        }
        let genuinePake3 = PAKEMessage.pake3(cA: cA)
        let (third, sentPake3) = try send(.pasePake3, genuinePake3, at: 2)
        if third.established != nil {
            try require(
                sentPake3 == genuinePake3, "a Pake3 that is not the proof established a session: \(shown(sentPake3))")
            try require(third.reply?.opcode == .statusReport, "an established PASE session was not acknowledged")
            try require(!responder.isBusy, "the responder stays busy after establishing")
            return true
        }
        try require(
            sentPake3 != genuinePake3, "the genuine Pake3 was refused: \(third.failure.map { "\($0)" } ?? "no answer")")
        return false
    }
}

/// CASE as a controller runs it, one message fuzzed: step 0 Sigma1, 1 Sigma1 asking to resume a session the node
/// remembers, 2 Sigma3 after a genuine Sigma1. The node's fabric is `MatterSecureChannelTarget`'s.
///
/// Promises (`CASEResponder`): Sigma3 never establishes a session (that needs a NOC of the fabric and the key of the
/// Sigma2 just sent); a Sigma1 never establishes one by itself, and is answered Sigma2Resume only with the remembered
/// session's resumption id and a MIC its secret makes; every refusal is answered with a StatusReport and leaves the
/// responder idle; a refused message leaves the remembered session in the store; and the same responder then resumes
/// it for a genuine controller, as the remembered session's peer.
enum MatterCASETarget {
    static let resumptionID = [UInt8](repeating: 0x52, count: 16)
    static let sharedSecret = [UInt8](repeating: 0x53, count: 32)
    static let peerNodeID: UInt64 = 0x1122
    static let initiatorRandom = [UInt8](repeating: 0x11, count: 32)
    static let ephemeral: P256.SigningKey = {
        do { return try P256.SigningKey() } catch { fatalError("ephemeral key: \(error)") }
    }()

    static func genuineSigma1(resuming: Bool) throws(FuzzFailure) -> [UInt8] {
        guard let identity = MatterSecureChannelTarget.Identities.shared.identities.first, let ipk = identity.ipks.first
        else {
            throw FuzzFailure("the fuzz fabric has no identity")
        }
        let destination = FabricKeys.destinationID(
            ipk: ipk, initiatorRandom: initiatorRandom, rootPublicKey: identity.rootPublicKey,
            fabricID: identity.fabricID,
            nodeID: identity.nodeID)
        var message = Sigma1(
            initiatorRandom: initiatorRandom, initiatorSessionID: 0x0BEE, destinationID: destination,
            initiatorEphemeralPublicKey: ephemeral.publicKey.x963Representation)
        if resuming {
            message.resumptionID = resumptionID
            do {
                message.initiatorResumeMIC = try CASECrypto.resumeMIC(
                    sharedSecret: sharedSecret, initiatorRandom: initiatorRandom, resumptionID: resumptionID,
                    info: "Sigma1_Resume", nonce: CASECrypto.resume1Nonce)
            } catch {
                throw FuzzFailure("resume MIC: \(error)")
            }
        }
        return message.encoded
    }

    static func run(_ bytes: [UInt8]) throws(FuzzFailure) {
        guard bytes.count >= 2 else { return }
        let step = bytes[0] % 3, form = bytes[1]
        let rest = bytes.dropFirst(2)
        let store = InMemoryCASEResumptionStore()
        store.save(
            CASEResumptionRecord(
                resumptionID: resumptionID, sharedSecret: sharedSecret, fabricIndex: 1,
                peerNodeID: peerNodeID, peerCASEAuthenticatedTags: []))
        var responder = CASEResponder(
            identities: MatterSecureChannelTarget.Identities.shared, resumptions: store,
            sessionIDs: { 2 }, now: { nil })

        func check(_ result: SessionEstablishmentStep, _ what: String) throws(FuzzFailure) {
            if let failure = result.failure {
                try require(
                    result.reply?.opcode == .statusReport, "\(what) failed (\(failure)) without a status report")
                try require(!responder.isBusy, "\(what) failed (\(failure)) but the responder stays busy")
            }
        }

        var refused = false
        switch step {
        case 0, 1:
            let payload = editedPayload(genuine: try genuineSigma1(resuming: step == 1), form: form, rest)
            let result = responder.receive(opcode: SecureChannelOpcode.caseSigma1.rawValue, payload: payload)
            let what = "CASE Sigma1 \(shown(payload))"
            try require(result.established == nil, "\(what) established a session at once")
            try check(result, what)
            refused = result.failure != nil
            if result.reply?.opcode == .caseSigma2Resume {
                // Resumption accepted: only for the remembered id, with the MIC its secret makes for this random.
                let sent = try? Sigma1(payload: payload)
                let expected = sent.flatMap { sent in
                    try? CASECrypto.resumeMIC(
                        sharedSecret: sharedSecret, initiatorRandom: sent.initiatorRandom,
                        resumptionID: resumptionID, info: "Sigma1_Resume", nonce: CASECrypto.resume1Nonce)
                }
                try require(
                    sent?.resumptionID == resumptionID && expected != nil && sent?.initiatorResumeMIC == expected,
                    "\(what) was answered Sigma2Resume without the remembered id and its MIC")
            }
        default:
            let sigma2 = responder.receive(
                opcode: SecureChannelOpcode.caseSigma1.rawValue,
                payload: try genuineSigma1(resuming: false))
            guard sigma2.reply?.opcode == .caseSigma2 else {
                throw FuzzFailure("the genuine Sigma1 answered \(sigma2.reply.map { "\($0.opcode)" } ?? "nothing")")
            }
            // What the fuzzer starts from is only shaped like a Sigma3: no input holds a valid signature.
            let shape = TLVElement.structure { TLVElement(context: 1, .bytes([UInt8](repeating: 0x33, count: 120))) }
                .encoded()
            let payload = editedPayload(genuine: shape, form: form, rest)
            let result = responder.receive(opcode: SecureChannelOpcode.caseSigma3.rawValue, payload: payload)
            let what = "CASE Sigma3 \(shown(payload))"
            try require(result.established == nil, "\(what) established a session")
            try check(result, what)
            refused = result.failure != nil
        }
        if refused {
            try require(
                store.record(resumptionID: resumptionID) != nil, "a refused message lost the remembered session")
        }
        // The same responder resumes the remembered session for a genuine controller: Sigma1, Sigma2Resume, and the
        // controller's SessionEstablishmentSuccess.
        if responder.isBusy { responder.abort() }
        let resume = responder.receive(
            opcode: SecureChannelOpcode.caseSigma1.rawValue, payload: try genuineSigma1(resuming: true))
        try require(
            resume.reply?.opcode == .caseSigma2Resume,
            "a genuine resumption was not accepted after \(shown(bytes)): "
                + (resume.failure.map { "\($0)" } ?? "full CASE"))
        let done = responder.receive(
            opcode: SecureChannelOpcode.statusReport.rawValue,
            payload: StatusReport.sessionEstablishmentSuccess.encoded())
        try require(
            done.established?.resumed == true
                && done.established?.kind
                    == .case(
                        fabricIndex: 1, peerNodeID: peerNodeID, peerCASEAuthenticatedTags: []),
            "a genuine resumption did not establish the remembered session after \(shown(bytes))")
    }
}
