// PASE, the responder's side (core specification 4.14.1): PBKDFParamRequest → PBKDFParamResponse, Pake1 → Pake2,
// Pake3 → StatusReport, as a pure state machine over message bodies. The passcode itself is never held: the node
// computes the verifier (w0, L) once and gives only that.
import HearthCrypto

/// What a device keeps to be commissioned with its passcode: the PBKDF parameters and SPAKE2+'s w0 and L.
public struct PASEVerifier: Sendable, Equatable, CustomStringConvertible, CustomReflectable {
    /// w0, 32 bytes.
    public var w0: [UInt8]
    /// L = w1·G, 65 bytes uncompressed.
    public var L: [UInt8]
    /// 16 to 32 bytes.
    public var salt: [UInt8]
    /// 1000 to 100000.
    public var iterations: UInt32

    /// Matter's bounds on the PBKDF parameters (5.1.1.6, 4.14.1.1).
    public static let iterationRange: ClosedRange<UInt32> = 1000...100_000
    public static let saltLengthRange: ClosedRange<Int> = 16...32

    public init(w0: [UInt8], L: [UInt8], salt: [UInt8], iterations: UInt32) throws(SessionEstablishmentError) {
        guard w0.count == 32, L.count == 65, L.first == 0x04 else {
            throw .malformed("verifier is not w0 (32) and L (65)")
        }
        guard Self.saltLengthRange.contains(salt.count) else { throw .malformed("salt of \(salt.count) bytes") }
        guard Self.iterationRange.contains(iterations) else { throw .malformed("\(iterations) PBKDF iterations") }
        self.w0 = w0
        self.L = L
        self.salt = salt
        self.iterations = iterations
    }

    /// Matter's serialized verifier, w0 ‖ L (97 bytes), with the parameters it was computed with.
    public init(serialized: [UInt8], salt: [UInt8], iterations: UInt32) throws(SessionEstablishmentError) {
        guard serialized.count == 97 else { throw .malformed("serialized verifier of \(serialized.count) bytes") }
        try self.init(w0: Array(serialized[0..<32]), L: Array(serialized[32...]), salt: salt, iterations: iterations)
    }

    /// Computes the verifier from the setup passcode (done once, when the passcode is made).
    public static func compute(passcode: UInt32, salt: [UInt8], iterations: UInt32) throws -> PASEVerifier {
        let (w0, L) = try SPAKE2Plus.computeVerifier(passcode: passcode, salt: salt, iterations: Int(iterations))
        return try PASEVerifier(w0: w0.rawRepresentation, L: try L.sec1Uncompressed, salt: salt, iterations: iterations)
    }

    public var serialized: [UInt8] { w0 + L }

    public var description: String { "PASEVerifier(iterations: \(iterations), redacted)" }
    public var customMirror: Mirror { Mirror(self, children: ["iterations": iterations]) }
}

// MARK: - Messages

/// PBKDFParamRequest (4.14.1.2).
public struct PBKDFParamRequest: Sendable, Equatable {
    public var initiatorRandom: [UInt8]
    public var initiatorSessionID: UInt16
    public var passcodeID: UInt16
    public var hasPBKDFParameters: Bool
    public var initiatorParameters: SessionParameters?

    public init(initiatorRandom: [UInt8], initiatorSessionID: UInt16, passcodeID: UInt16 = 0,
                hasPBKDFParameters: Bool, initiatorParameters: SessionParameters? = nil) {
        self.initiatorRandom = initiatorRandom
        self.initiatorSessionID = initiatorSessionID
        self.passcodeID = passcodeID
        self.hasPBKDFParameters = hasPBKDFParameters
        self.initiatorParameters = initiatorParameters
    }

    public var encoded: [UInt8] {
        TLVElement.structure {
            TLVElement(context: 1, .bytes(initiatorRandom))
            TLVElement(context: 2, .uint(initiatorSessionID))
            TLVElement(context: 3, .uint(passcodeID))
            TLVElement(context: 4, .bool(hasPBKDFParameters))
            initiatorParameters?.element(context: 5)
        }.encoded()
    }

    public init(payload: [UInt8]) throws(SessionEstablishmentError) {
        let element = try decodeMessageStructure(payload, "PBKDFParamRequest")
        self = try readFields("PBKDFParamRequest") { () throws(TLVFieldError) in
            PBKDFParamRequest(
                initiatorRandom: try element.field(1).bytes(count: 32),
                initiatorSessionID: try element.field(2).unsigned(),
                passcodeID: try element.field(3).unsigned(),
                hasPBKDFParameters: try element.field(4).bool(),
                initiatorParameters: try element.optionalField(5).map { e throws(TLVFieldError) in
                    try SessionParameters(element: e)
                })
        }
    }
}

/// PBKDFParamResponse (4.14.1.2).
public struct PBKDFParamResponse: Sendable, Equatable {
    public var initiatorRandom: [UInt8]
    public var responderRandom: [UInt8]
    public var responderSessionID: UInt16
    /// Absent when the request said the initiator already has them.
    public var iterations: UInt32?
    public var salt: [UInt8]?
    public var responderParameters: SessionParameters?

    public var encoded: [UInt8] {
        TLVElement.structure {
            TLVElement(context: 1, .bytes(initiatorRandom))
            TLVElement(context: 2, .bytes(responderRandom))
            TLVElement(context: 3, .uint(responderSessionID))
            if let iterations, let salt {
                TLVElement.structure(tag: .context(4)) {
                    TLVElement(context: 1, .uint(iterations))
                    TLVElement(context: 2, .bytes(salt))
                }
            }
            responderParameters?.element(context: 5)
        }.encoded()
    }

    public init(initiatorRandom: [UInt8], responderRandom: [UInt8], responderSessionID: UInt16, iterations: UInt32?,
                salt: [UInt8]?, responderParameters: SessionParameters?) {
        self.initiatorRandom = initiatorRandom
        self.responderRandom = responderRandom
        self.responderSessionID = responderSessionID
        self.iterations = iterations
        self.salt = salt
        self.responderParameters = responderParameters
    }

    public init(payload: [UInt8]) throws(SessionEstablishmentError) {
        let element = try decodeMessageStructure(payload, "PBKDFParamResponse")
        self = try readFields("PBKDFParamResponse") { () throws(TLVFieldError) in
            let parameters = element.optionalField(4)
            return PBKDFParamResponse(
                initiatorRandom: try element.field(1).bytes(count: 32),
                responderRandom: try element.field(2).bytes(count: 32),
                responderSessionID: try element.field(3).unsigned(),
                iterations: try parameters?.field(1).unsigned(UInt32.self),
                salt: try parameters?.field(2).bytes(),
                responderParameters: try element.optionalField(5).map { e throws(TLVFieldError) in
                    try SessionParameters(element: e)
                })
        }
    }
}

/// Pake1 { pA }, Pake2 { pB, cB }, Pake3 { cA } (4.14.1.2).
public enum PAKEMessage {
    public static func pake1(pA: [UInt8]) -> [UInt8] {
        TLVElement.structure { TLVElement(context: 1, .bytes(pA)) }.encoded()
    }

    public static func pake2(pB: [UInt8], cB: [UInt8]) -> [UInt8] {
        TLVElement.structure {
            TLVElement(context: 1, .bytes(pB))
            TLVElement(context: 2, .bytes(cB))
        }.encoded()
    }

    public static func pake3(cA: [UInt8]) -> [UInt8] {
        TLVElement.structure { TLVElement(context: 1, .bytes(cA)) }.encoded()
    }

    public static func readPake1(_ payload: [UInt8]) throws(SessionEstablishmentError) -> [UInt8] {
        let element = try decodeMessageStructure(payload, "Pake1")
        return try readFields("Pake1") { () throws(TLVFieldError) in try element.field(1).bytes(count: 65) }
    }

    public static func readPake2(_ payload: [UInt8]) throws(SessionEstablishmentError) -> (pB: [UInt8], cB: [UInt8]) {
        let element = try decodeMessageStructure(payload, "Pake2")
        return try readFields("Pake2") { () throws(TLVFieldError) in
            (try element.field(1).bytes(count: 65), try element.field(2).bytes(count: 32))
        }
    }

    public static func readPake3(_ payload: [UInt8]) throws(SessionEstablishmentError) -> [UInt8] {
        let element = try decodeMessageStructure(payload, "Pake3")
        return try readFields("Pake3") { () throws(TLVFieldError) in try element.field(1).bytes(count: 32) }
    }
}

// MARK: - Responder

/// The commissionee's PASE: one attempt at a time. Feed it each message of the exchange; it answers and, after a
/// good Pake3, hands over the session. A wrong passcode fails at Pake3 and leaves no session; any failure ends the
/// attempt (the peer must start again with PBKDFParamRequest), as the specification requires.
public struct PASEResponder: Sendable {
    private enum State: Sendable {
        case idle
        case awaitingPake1(request: PBKDFParamRequest, context: [UInt8], localSessionID: UInt16)
        case awaitingPake3(request: PBKDFParamRequest, verifier: SPAKE2Plus.Verifier, localSessionID: UInt16)
    }

    private let verifier: PASEVerifier
    private let sessionIDs: SessionIDAllocator
    private let localParameters: SessionParameters?
    private let random: RandomBytes
    private var state: State = .idle
    /// Attempts that ended in failure since this responder was made (the node closes the window after 20).
    public private(set) var failedAttempts = 0

    /// - Parameters:
    ///   - sessionIDs: gives each attempt the session id this node will use.
    public init(verifier: PASEVerifier, sessionIDs: @escaping SessionIDAllocator,
                localParameters: SessionParameters? = .matter14, random: @escaping RandomBytes = systemRandomBytes) {
        self.verifier = verifier
        self.sessionIDs = sessionIDs
        self.localParameters = localParameters
        self.random = random
    }

    /// True while an attempt is under way (between PBKDFParamRequest and its end).
    public var isBusy: Bool { if case .idle = state { false } else { true } }

    /// Handles one message of the PASE exchange.
    public mutating func receive(opcode: UInt8, payload: [UInt8]) -> SessionEstablishmentStep {
        // A status report is never answered with one (two peers could otherwise trade them forever).
        if opcode == SecureChannelOpcode.statusReport.rawValue, !isBusy {
            return SessionEstablishmentStep(reply: nil, established: nil, failure: .unexpectedMessage(opcode))
        }
        do {
            return try handle(opcode: opcode, payload: payload)
        } catch .busy {
            // Another attempt is under way: refuse this one and leave that one alone.
            return .reply(.status(SessionEstablishmentError.busy.status))
        } catch .peerReported(let status) {
            state = .idle
            failedAttempts += 1
            return SessionEstablishmentStep(reply: nil, established: nil, failure: .peerReported(status))
        } catch {
            state = .idle
            failedAttempts += 1
            let answered = opcode != SecureChannelOpcode.statusReport.rawValue
            return SessionEstablishmentStep(
                reply: answered ? .status(error.status) : nil, established: nil, failure: error)
        }
    }

    /// Ends any attempt under way (the exchange closed or timed out).
    public mutating func abort() {
        if isBusy { failedAttempts += 1 }
        state = .idle
    }

    private mutating func handle(opcode: UInt8, payload: [UInt8]) throws(SessionEstablishmentError)
        -> SessionEstablishmentStep
    {
        switch (SecureChannelOpcode(rawValue: opcode), state) {
        case (.pbkdfParamRequest, .idle):
            let request = try PBKDFParamRequest(payload: payload)
            guard request.passcodeID == 0 else {
                throw .malformed("passcode id \(request.passcodeID), only 0 is defined")
            }
            guard request.initiatorSessionID != 0 else { throw .malformed("initiator session id 0") }
            guard let localSessionID = sessionIDs(), localSessionID != 0 else { throw .busy }
            let response = PBKDFParamResponse(
                initiatorRandom: request.initiatorRandom, responderRandom: try randomBytes(32),
                responderSessionID: localSessionID,
                iterations: request.hasPBKDFParameters ? nil : verifier.iterations,
                salt: request.hasPBKDFParameters ? nil : verifier.salt, responderParameters: localParameters)
            let responsePayload = response.encoded
            let context = SPAKE2Plus.matterContext(pbkdfParamRequest: payload, pbkdfParamResponse: responsePayload)
            state = .awaitingPake1(request: request, context: context, localSessionID: localSessionID)
            return .reply(SecureChannelMessage(.pbkdfParamResponse, responsePayload))
        case (.pbkdfParamRequest, _):
            throw .busy
        case (.pasePake1, .awaitingPake1(let request, let context, let localSessionID)):
            let pA = try PAKEMessage.readPake1(payload)
            var spake: SPAKE2Plus.Verifier
            let pB: [UInt8], cB: [UInt8]
            do {
                spake = try SPAKE2Plus.Verifier(context: context, w0: verifier.w0, L: verifier.L)
                (pB, cB) = try spake.respond(to: pA)
            } catch {
                throw .verificationFailed("pA: \(error.reason)")
            }
            state = .awaitingPake3(request: request, verifier: spake, localSessionID: localSessionID)
            return .reply(SecureChannelMessage(.pasePake2, PAKEMessage.pake2(pB: pB, cB: cB)))
        case (.pasePake3, .awaitingPake3(let request, var spake, let localSessionID)):
            let cA = try PAKEMessage.readPake3(payload)
            do { try spake.verify(cA: cA) } catch { throw .verificationFailed("cA does not match: wrong passcode") }
            guard let ke = spake.sharedKey else { throw .crypto("no shared key after verification") }
            let keys: SessionKeys
            do { keys = try SessionKeys(secret: ke, salt: [], info: "SessionKeys") } catch {
                throw .crypto(error.description)
            }
            state = .idle
            let session = EstablishedSession(
                kind: .pase, localSessionID: localSessionID, peerSessionID: request.initiatorSessionID, keys: keys,
                peerParameters: request.initiatorParameters, resumed: false)
            return SessionEstablishmentStep(
                reply: .status(.sessionEstablishmentSuccess), established: session, failure: nil)
        case (.statusReport, _):
            throw .peerReported(try StatusReport(sessionEstablishmentPayload: payload))
        default:
            throw .unexpectedMessage(opcode)
        }
    }

    private func randomBytes(_ count: Int) throws(SessionEstablishmentError) -> [UInt8] {
        do { return try random(count) } catch { throw .crypto(error.description) }
    }
}
