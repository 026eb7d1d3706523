import HearthCrypto
import HearthSync
@testable import HearthMatter
import Testing

/// PASE between `PASEResponder` and an initiator written here with HearthCrypto's SPAKE2+ prover.
@Suite struct PASETests {
    static let passcode: UInt32 = 20_202_021
    static let salt = Array("SPAKE2P Key Salt".utf8)
    static let iterations: UInt32 = 1000

    static func responder() throws -> PASEResponder {
        PASEResponder(verifier: try PASEVerifier.compute(passcode: passcode, salt: salt, iterations: iterations),
                      sessionIDs: { 0x1234 })
    }

    /// The initiator's side up to Pake1: the request, the response and the prover.
    struct Initiator {
        var request: PBKDFParamRequest
        var response: PBKDFParamResponse
        var responsePayload: [UInt8]
        var prover: SPAKE2Plus.Prover
    }

    static func start(_ responder: inout PASEResponder, passcode: UInt32 = passcode, hasParameters: Bool = false) throws
        -> Initiator
    {
        let request = PBKDFParamRequest(initiatorRandom: try SecureRandom.bytes(32), initiatorSessionID: 0x5678,
                                        hasPBKDFParameters: hasParameters,
                                        initiatorParameters: SessionParameters(idleInterval: 5000, activeInterval: 300))
        let step = responder.receive(opcode: 0x20, payload: request.encoded)
        let reply = try #require(step.reply)
        #expect(reply.opcode == .pbkdfParamResponse)
        let response = try PBKDFParamResponse(payload: reply.payload)
        let context = SPAKE2Plus.matterContext(pbkdfParamRequest: request.encoded, pbkdfParamResponse: reply.payload)
        let (w0, w1) = try SPAKE2Plus.computeW0W1(passcode: passcode, salt: salt, iterations: Int(iterations))
        return Initiator(request: request, response: response, responsePayload: reply.payload,
                         prover: try SPAKE2Plus.Prover(context: context, w0: w0, w1: w1))
    }

    @Test func rightPasscodeEstablishesASessionBothSidesAgreeOn() throws {
        var responder = try Self.responder()
        var initiator = try Self.start(&responder)
        #expect(initiator.response.iterations == Self.iterations)
        #expect(initiator.response.salt == Self.salt)
        #expect(initiator.response.responderSessionID == 0x1234)
        #expect(initiator.response.initiatorRandom == initiator.request.initiatorRandom)
        #expect(initiator.response.responderParameters == .matter14)

        let pake2 = try #require(
            responder.receive(opcode: 0x22, payload: PAKEMessage.pake1(pA: initiator.prover.pA)).reply)
        #expect(pake2.opcode == .pasePake2)
        let (pB, cB) = try PAKEMessage.readPake2(pake2.payload)
        let cA = try initiator.prover.finish(pB: pB, cB: cB)

        let done = responder.receive(opcode: 0x24, payload: PAKEMessage.pake3(cA: cA))
        #expect(done.reply == SecureChannelMessage(.statusReport, [0, 0, 0, 0, 0, 0, 0, 0]))
        let session = try #require(done.established)
        #expect(session.kind == .pase)
        #expect(session.localSessionID == 0x1234)
        #expect(session.peerSessionID == 0x5678)
        #expect(session.peerParameters == SessionParameters(idleInterval: 5000, activeInterval: 300))
        let ke = try #require(initiator.prover.sharedKey)
        let keys = try HKDFSHA256.deriveKey(
            inputKeyMaterial: ke, salt: [], info: Array("SessionKeys".utf8), outputByteCount: 48)
        #expect(session.keys.initiatorToResponder == Array(keys[0..<16]))
        #expect(session.keys.responderToInitiator == Array(keys[16..<32]))
        #expect(session.keys.attestationChallenge == Array(keys[32..<48]))
        #expect(!responder.isBusy)
        #expect(responder.failedAttempts == 0)
    }

    @Test func wrongPasscodeFailsAtPake3AndLeavesNoSession() throws {
        var responder = try Self.responder()
        var initiator = try Self.start(&responder, passcode: 20_202_022)
        let pake2 = try #require(
            responder.receive(opcode: 0x22, payload: PAKEMessage.pake1(pA: initiator.prover.pA)).reply)
        let (pB, cB) = try PAKEMessage.readPake2(pake2.payload)
        // The initiator sees the mismatch in cB; a hostile one sends a cA anyway.
        #expect(throws: CryptoError.self) { _ = try initiator.prover.finish(pB: pB, cB: cB) }
        let done = responder.receive(opcode: 0x24, payload: PAKEMessage.pake3(cA: try SecureRandom.bytes(32)))
        #expect(done.established == nil)
        #expect(done.reply == .status(.invalidParameter))
        #expect(done.failure == .verificationFailed("cA does not match: wrong passcode"))
        #expect(!responder.isBusy)
        #expect(responder.failedAttempts == 1)
        // The failed attempt is gone: a new one with the right passcode succeeds.
        try completeSuccessfully(&responder)
    }

    @Test func initiatorWithParametersGetsNoneBack() throws {
        var responder = try Self.responder()
        let initiator = try Self.start(&responder, hasParameters: true)
        #expect(initiator.response.iterations == nil)
        #expect(initiator.response.salt == nil)
    }

    @Test func secondRequestDuringAnAttemptIsBusyAndLeavesTheFirstAlone() throws {
        var responder = try Self.responder()
        var first = try Self.start(&responder)
        let other = PBKDFParamRequest(initiatorRandom: [UInt8](repeating: 7, count: 32), initiatorSessionID: 9,
                                      hasPBKDFParameters: false)
        let busy = responder.receive(opcode: 0x20, payload: other.encoded)
        #expect(busy.reply == .status(.busy(waitMilliseconds: 500)))
        #expect(busy.established == nil)
        let pake2 = try #require(responder.receive(opcode: 0x22, payload: PAKEMessage.pake1(pA: first.prover.pA)).reply)
        let (pB, cB) = try PAKEMessage.readPake2(pake2.payload)
        let cA = try first.prover.finish(pB: pB, cB: cB)
        #expect(responder.receive(opcode: 0x24, payload: PAKEMessage.pake3(cA: cA)).established != nil)
    }

    @Test func malformedAndUnexpectedMessagesAreRefusedWithAStatus() throws {
        var responder = try Self.responder()
        let request = PBKDFParamRequest(initiatorRandom: [UInt8](repeating: 1, count: 32), initiatorSessionID: 3,
                                        hasPBKDFParameters: false).encoded
        for length in 0..<request.count {
            let step = responder.receive(opcode: 0x20, payload: Array(request.prefix(length)))
            #expect(step.reply == .status(.invalidParameter))
            #expect(!responder.isBusy)
        }
        let pake3Early = responder.receive(
            opcode: 0x24, payload: PAKEMessage.pake3(cA: [UInt8](repeating: 0, count: 32)))
        #expect(pake3Early.failure == .unexpectedMessage(0x24))
        let nonZeroPasscodeID = PBKDFParamRequest(
            initiatorRandom: [UInt8](repeating: 1, count: 32), initiatorSessionID: 3,
            passcodeID: 1, hasPBKDFParameters: false
        ).encoded
        #expect(responder.receive(opcode: 0x20, payload: nonZeroPasscodeID).reply == .status(.invalidParameter))
        try completeSuccessfully(&responder)
    }

    @Test func eachAttemptGetsItsSessionIDAndAFullTableIsBusy() throws {
        let verifier = try PASEVerifier.compute(passcode: Self.passcode, salt: Self.salt, iterations: Self.iterations)
        let next = Counter()
        var responder = PASEResponder(verifier: verifier, sessionIDs: { next.take() })
        #expect(try Self.start(&responder).response.responderSessionID == 1)
        responder.abort()
        #expect(try Self.start(&responder).response.responderSessionID == 2)
        responder.abort()
        var full = PASEResponder(verifier: verifier, sessionIDs: { nil })
        let request = PBKDFParamRequest(initiatorRandom: [UInt8](repeating: 1, count: 32), initiatorSessionID: 3,
                                        hasPBKDFParameters: false)
        #expect(full.receive(opcode: 0x20, payload: request.encoded).reply == .status(.busy(waitMilliseconds: 500)))
        #expect(!full.isBusy)
    }

    @Test func peerStatusReportEndsTheAttempt() throws {
        var responder = try Self.responder()
        _ = try Self.start(&responder)
        let step = responder.receive(opcode: 0x40, payload: StatusReport.invalidParameter.encoded())
        #expect(step.reply == nil)
        #expect(step.failure == .peerReported(.invalidParameter))
        #expect(!responder.isBusy)
    }

    @Test func verifierRoundTripsAndHidesItself() throws {
        let verifier = try PASEVerifier.compute(passcode: Self.passcode, salt: Self.salt, iterations: Self.iterations)
        #expect(
            try PASEVerifier(serialized: verifier.serialized, salt: Self.salt, iterations: Self.iterations) == verifier)
        #expect(!"\(verifier)".contains(Hex.string(verifier.w0)))
        #expect(throws: SessionEstablishmentError.self) {
            try PASEVerifier(serialized: verifier.serialized, salt: [1, 2, 3], iterations: Self.iterations)
        }
    }

    private func completeSuccessfully(_ responder: inout PASEResponder) throws {
        var initiator = try Self.start(&responder)
        let pake2 = try #require(
            responder.receive(opcode: 0x22, payload: PAKEMessage.pake1(pA: initiator.prover.pA)).reply)
        let (pB, cB) = try PAKEMessage.readPake2(pake2.payload)
        let cA = try initiator.prover.finish(pB: pB, cB: cB)
        #expect(responder.receive(opcode: 0x24, payload: PAKEMessage.pake3(cA: cA)).established != nil)
    }
}

/// Hands out 1, 2, 3…: a session table's allocator in miniature.
final class Counter: Sendable {
    private let value = Locked<UInt16>(0)
    func take() -> UInt16 { value.withLock { $0 += 1; return $0 } }
}
