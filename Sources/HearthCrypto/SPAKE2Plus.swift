// SPAKE2+ as Matter's PASE uses it (Matter 1.4 §3.10: P256-SHA256-HKDF-HMAC, the key schedule of
// draft-bar-cfrg-spake2plus-01 with RFC 9383's M and N): the verifier (the device, holding w0 and L) and the prover
// (the commissioner, holding w0 and w1). The protocol's steps are written here; every operation in them (points,
// scalars, SHA-256, HKDF, HMAC, PBKDF2) is libcrypto's.
import COpenSSL

public enum SPAKE2Plus {
    /// M and N (RFC 9383 §4, P-256), compressed as published.
    static let mCompressed: [UInt8] = [
        0x02, 0x88, 0x6e, 0x2f, 0x97, 0xac, 0xe4, 0x6e, 0x55, 0xba, 0x9d, 0xd7, 0x24, 0x25, 0x79, 0xf2, 0x99,
        0x3b, 0x64, 0xe1, 0x6e, 0xf3, 0xdc, 0xab, 0x95, 0xaf, 0xd4, 0x97, 0x33, 0x3d, 0x8f, 0xa1, 0x2f,
    ]
    static let nCompressed: [UInt8] = [
        0x03, 0xd8, 0xbb, 0xd6, 0xc6, 0x39, 0xc6, 0x29, 0x37, 0xb0, 0x4d, 0x99, 0x7f, 0x38, 0xc3, 0x77, 0x07,
        0x19, 0xc6, 0x29, 0xd7, 0x01, 0x4d, 0x49, 0xa2, 0x4b, 0x4f, 0x98, 0xba, 0xa1, 0x29, 0x2b, 0x49,
    ]

    static var m: P256.Point { get throws(CryptoError) { try P256.Point(sec1: mCompressed) } }
    static var n: P256.Point { get throws(CryptoError) { try P256.Point(sec1: nCompressed) } }

    /// The prefix of Matter's PASE context.
    public static let matterContextPrefix: [UInt8] = Array("CHIP PAKE V1 Commissioning".utf8)

    /// Matter's PASE context: SHA-256("CHIP PAKE V1 Commissioning" ‖ PBKDFParamRequest ‖ PBKDFParamResponse), the
    /// two messages as sent.
    public static func matterContext(pbkdfParamRequest: [UInt8], pbkdfParamResponse: [UInt8]) -> [UInt8] {
        SHA256.hash(matterContextPrefix + pbkdfParamRequest + pbkdfParamResponse)
    }

    /// w0 and w1 from the setup passcode: PBKDF2-HMAC-SHA256(passcode as 4 little-endian bytes, salt, iterations)
    /// gives 80 bytes, w0s ‖ w1s (40 each), each reduced modulo n.
    public static func computeW0W1(passcode: UInt32, salt: [UInt8],
                                   iterations: Int) throws(CryptoError) -> (w0: P256.Scalar, w1: P256.Scalar) {
        let password: [UInt8] = [UInt8(passcode & 0xFF), UInt8(passcode >> 8 & 0xFF),
                                 UInt8(passcode >> 16 & 0xFF), UInt8(passcode >> 24 & 0xFF)]
        let ws = try PBKDF2SHA256.deriveKey(password: password, salt: salt, iterations: iterations, outputByteCount: 80)
        return (try P256.Scalar(reducing: Array(ws[0..<40])), try P256.Scalar(reducing: Array(ws[40..<80])))
    }

    /// L = w1·G, which the verifier keeps instead of w1.
    public static func computeL(w1: P256.Scalar) throws(CryptoError) -> P256.Point {
        try P256.Point.generator * w1
    }

    /// What a device stores to be commissioned with a passcode: w0 and L (Matter's 97-byte verifier is w0 ‖ L).
    public static func computeVerifier(passcode: UInt32, salt: [UInt8],
                                       iterations: Int) throws(CryptoError) -> (w0: P256.Scalar, L: P256.Point) {
        let (w0, w1) = try computeW0W1(passcode: passcode, salt: salt, iterations: iterations)
        return (w0, try computeL(w1: w1))
    }

    /// The keys both sides derive from the transcript TT.
    struct KeySchedule {
        var ka: [UInt8]
        var ke: [UInt8]
        var kcA: [UInt8]
        var kcB: [UInt8]

        /// TT = for each of context, idProver, idVerifier, M, N, X, Y, Z, V, w0: its length as 8 little-endian
        /// bytes, then the bytes. Ka ‖ Ke = SHA-256(TT); KcA ‖ KcB = HKDF(salt: none, Ka, "ConfirmationKeys").
        init(context: [UInt8], proverIdentity: [UInt8], verifierIdentity: [UInt8], x: [UInt8], y: [UInt8],
             z: [UInt8], v: [UInt8], w0: [UInt8]) throws(CryptoError) {
            var transcript: [UInt8] = []
            for part in [context, proverIdentity, verifierIdentity, try SPAKE2Plus.m.sec1Uncompressed,
                         try SPAKE2Plus.n.sec1Uncompressed, x, y, z, v, w0] {
                var length = UInt64(part.count)
                for _ in 0..<8 {
                    transcript.append(UInt8(length & 0xFF))
                    length >>= 8
                }
                transcript += part
            }
            let hash = SHA256.hash(transcript)
            ka = Array(hash[0..<16])
            ke = Array(hash[16..<32])
            let kc = try HKDFSHA256.deriveKey(inputKeyMaterial: ka, salt: [], info: Array("ConfirmationKeys".utf8),
                                              outputByteCount: 32)
            kcA = Array(kc[0..<16])
            kcB = Array(kc[16..<32])
        }
    }

    /// The device's side: receives pA, answers pB and cB, checks cA, then holds the shared key Ke.
    public struct Verifier: Sendable, CustomStringConvertible, CustomReflectable {
        private let context: [UInt8]
        private let proverIdentity: [UInt8]
        private let verifierIdentity: [UInt8]
        private let w0: P256.Scalar
        private let l: P256.Point
        private let fixedY: P256.Scalar?
        private var expectedCA: [UInt8]?
        private var pendingKe: [UInt8]?
        /// Ke, once the prover's confirmation cA has been checked; nil before.
        public private(set) var sharedKey: [UInt8]?

        /// - Parameters:
        ///   - context: Matter's PASE context (see `matterContext`).
        ///   - w0: 32 bytes, less than n.
        ///   - L: w1·G, 65 bytes uncompressed.
        public init(context: [UInt8], w0: [UInt8], L: [UInt8]) throws(CryptoError) {
            try self.init(context: context, w0: try P256.Scalar(rawRepresentation: w0), L: try P256.Point(sec1: L))
        }

        public init(context: [UInt8], w0: P256.Scalar, L: P256.Point,
                    proverIdentity: [UInt8] = [], verifierIdentity: [UInt8] = []) throws(CryptoError) {
            try self.init(context: context, w0: w0, L: L, proverIdentity: proverIdentity,
                          verifierIdentity: verifierIdentity, y: nil)
        }

        /// With a chosen ephemeral y, for published test vectors only.
        init(context: [UInt8], w0: P256.Scalar, L: P256.Point, proverIdentity: [UInt8], verifierIdentity: [UInt8],
             y: P256.Scalar?) throws(CryptoError) {
            guard !L.isInfinity else { throw CryptoError(operation: "SPAKE2+ verifier", reason: "L is infinity") }
            self.context = context
            self.proverIdentity = proverIdentity
            self.verifierIdentity = verifierIdentity
            self.w0 = w0
            self.l = L
            self.fixedY = y
        }

        /// Answers the prover's share pA (65 bytes) with pB = y·G + w0·N and the confirmation cB = HMAC(KcB, pA).
        /// Throws, changing nothing, if pA is not a valid point or has been answered already.
        public mutating func respond(to pA: [UInt8]) throws(CryptoError) -> (pB: [UInt8], cB: [UInt8]) {
            let operation = "SPAKE2+ respond"
            guard expectedCA == nil else { throw CryptoError(operation: operation, reason: "already responded") }
            guard pA.count == 65 else {
                throw CryptoError(operation: operation, reason: "pA is \(pA.count) bytes, not 65")
            }
            let x = try P256.Point(sec1: pA)
            let y: P256.Scalar
            if let fixedY { y = fixedY } else { y = try P256.Scalar.random() }
            let pB = try (try P256.Point.generator * y) + (try SPAKE2Plus.n * w0)
            // Z = y·(X − w0·M), V = y·L (the cofactor of P-256 is 1).
            let z = try (try x - (try SPAKE2Plus.m * w0)) * y
            let v = try l * y
            guard !z.isInfinity, !v.isInfinity else {
                throw CryptoError(operation: operation, reason: "degenerate share pA")
            }
            let pBBytes = try pB.sec1Uncompressed
            let keys = try KeySchedule(context: context, proverIdentity: proverIdentity,
                                       verifierIdentity: verifierIdentity, x: pA, y: pBBytes,
                                       z: try z.sec1Uncompressed, v: try v.sec1Uncompressed, w0: w0.rawRepresentation)
            expectedCA = HMACSHA256.authenticationCode(key: keys.kcA, data: pBBytes)
            pendingKe = keys.ke
            return (pBBytes, HMACSHA256.authenticationCode(key: keys.kcB, data: pA))
        }

        /// Checks the prover's confirmation cA = HMAC(KcA, pB); on success `sharedKey` becomes Ke.
        public mutating func verify(cA: [UInt8]) throws(CryptoError) {
            guard let expectedCA, let pendingKe else {
                throw CryptoError(operation: "SPAKE2+ verify", reason: "no share answered yet")
            }
            guard constantTimeEqual(cA, expectedCA) else {
                throw CryptoError(operation: "SPAKE2+ verify", reason: "confirmation cA does not match")
            }
            sharedKey = pendingKe
        }

        public var description: String { "SPAKE2Plus.Verifier(redacted)" }
        public var customMirror: Mirror { Mirror(self, children: []) }
    }

    /// The commissioner's side, for tests and tools: sends pA, checks pB and cB, answers cA.
    public struct Prover: Sendable, CustomStringConvertible, CustomReflectable {
        private let context: [UInt8]
        private let proverIdentity: [UInt8]
        private let verifierIdentity: [UInt8]
        private let w0: P256.Scalar
        private let w1: P256.Scalar
        private let x: P256.Scalar
        /// pA = x·G + w0·M, 65 bytes.
        public let pA: [UInt8]
        /// Ke, once the verifier's confirmation cB has been checked; nil before.
        public private(set) var sharedKey: [UInt8]?

        public init(context: [UInt8], w0: P256.Scalar, w1: P256.Scalar,
                    proverIdentity: [UInt8] = [], verifierIdentity: [UInt8] = []) throws(CryptoError) {
            try self.init(context: context, w0: w0, w1: w1, proverIdentity: proverIdentity,
                          verifierIdentity: verifierIdentity, x: try P256.Scalar.random())
        }

        /// With a chosen ephemeral x, for published test vectors only.
        init(context: [UInt8], w0: P256.Scalar, w1: P256.Scalar, proverIdentity: [UInt8], verifierIdentity: [UInt8],
             x: P256.Scalar) throws(CryptoError) {
            self.context = context
            self.proverIdentity = proverIdentity
            self.verifierIdentity = verifierIdentity
            self.w0 = w0
            self.w1 = w1
            self.x = x
            pA = try ((try P256.Point.generator * x) + (try SPAKE2Plus.m * w0)).sec1Uncompressed
        }

        /// Checks the verifier's pB and cB; returns cA = HMAC(KcA, pB) and sets `sharedKey`.
        public mutating func finish(pB: [UInt8], cB: [UInt8]) throws(CryptoError) -> [UInt8] {
            let operation = "SPAKE2+ prover finish"
            guard pB.count == 65 else {
                throw CryptoError(operation: operation, reason: "pB is \(pB.count) bytes, not 65")
            }
            let y = try P256.Point(sec1: pB)
            // Z = x·(Y − w0·N), V = w1·(Y − w0·N).
            let unmasked = try y - (try SPAKE2Plus.n * w0)
            let z = try unmasked * x
            let v = try unmasked * w1
            guard !z.isInfinity, !v.isInfinity else {
                throw CryptoError(operation: operation, reason: "degenerate share pB")
            }
            let keys = try KeySchedule(context: context, proverIdentity: proverIdentity,
                                       verifierIdentity: verifierIdentity, x: pA, y: pB,
                                       z: try z.sec1Uncompressed, v: try v.sec1Uncompressed, w0: w0.rawRepresentation)
            guard HMACSHA256.isValidAuthenticationCode(cB, key: keys.kcB, data: pA) else {
                throw CryptoError(operation: operation, reason: "confirmation cB does not match")
            }
            sharedKey = keys.ke
            return HMACSHA256.authenticationCode(key: keys.kcA, data: pB)
        }

        public var description: String { "SPAKE2Plus.Prover(redacted)" }
        public var customMirror: Mirror { Mirror(self, children: []) }
    }
}
