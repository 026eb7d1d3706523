import HearthCrypto

/// The crypto readers of outside input (`HearthCrypto`): DER certificates and CSRs, SEC1 points and public keys,
/// DER ECDSA signatures, a SPAKE2+ verifier answering a prover's share, and CMS signed messages (Certification
/// Declarations). The first byte chooses the reader, the
/// rest is its input. Promises: anything is refused with a `CryptoError` or read into a value that encodes back to
/// what was read (a certificate, CSR or CMS message keeps its bytes, a point or signature re-encodes to one that reads
/// back equal), a certificate's TBS is the part of its bytes the signature covers; a verifier refusing a share can
/// still answer a good one, and a confirmation it did not make never gives a shared key.
enum CryptoTarget {
    static func run(_ bytes: [UInt8]) throws(FuzzFailure) {
        guard let selector = bytes.first else { return }
        let input = Array(bytes.dropFirst())
        switch selector % 6 {
        case 0: try certificate(input)
        case 1: try signingRequest(input)
        case 2: try point(input)
        case 3: try signature(input)
        case 4: try spake2Plus(input)
        default: try signedMessage(input)
        }
    }

    private static func certificate(_ input: [UInt8]) throws(FuzzFailure) {
        guard let certificate = try? X509Certificate(der: input) else { return }
        try require(certificate.der == input, "a certificate does not keep the bytes it was read from")
        try require(certificate.tbsDER.count < input.count && contains(input, certificate.tbsDER),
                    "the TBS (\(certificate.tbsDER.count) bytes) is not inside the certificate")
        try require(certificate.publicKey.x963Representation.count == 65, "a public key not of 65 bytes")
        _ = certificate.isSigned(by: certificate.publicKey)
        _ = try? certificate.rawSignature
    }

    private static func signingRequest(_ input: [UInt8]) throws(FuzzFailure) {
        guard let request = try? CertificateSigningRequest(der: input) else { return }
        try require(request.der == input, "a CSR does not keep the bytes it was read from")
        try require(request.publicKey.x963Representation.count == 65, "a CSR's key is not 65 bytes")
    }

    private static func signedMessage(_ input: [UInt8]) throws(FuzzFailure) {
        guard let message = try? CMSSignedMessage(der: input) else { return }
        try require(message.der == input, "a CMS message does not keep the bytes it was read from")
        try require(contains(input, message.content) && contains(input, message.signerKeyIdentifier),
                    "a CMS message's content or signer is not inside it")
        _ = message.isSigned(by: try verifierKey())
    }

    /// Any valid key will do to run the signature check: L of the test verifier.
    private static func verifierKey() throws(FuzzFailure) -> P256.PublicKey {
        guard let key = try? P256.PublicKey(x963Representation: verifier.L) else { throw FuzzFailure("L is refused") }
        return key
    }

    private static func point(_ input: [UInt8]) throws(FuzzFailure) {
        if let key = try? P256.PublicKey(x963Representation: input) {
            try require(key.x963Representation == input, "a public key does not keep its 65 bytes")
        }
        guard let point = try? P256.Point(sec1: input) else { return }
        try require(!point.isInfinity, "the point at infinity read from outside")
        guard let encoded = try? point.sec1Uncompressed else {
            throw FuzzFailure("a point read from outside has no uncompressed encoding")
        }
        try require(encoded.count == 65 && encoded[0] == 0x04, "an uncompressed encoding of \(encoded.count) bytes")
        try require((try? P256.Point(sec1: encoded)) == point, "a point does not read back from its encoding")
    }

    private static func signature(_ input: [UInt8]) throws(FuzzFailure) {
        if let raw = try? P256.Signature(rawRepresentation: input) {
            try require(raw.rawRepresentation == input, "a raw signature does not keep its bytes")
        }
        guard let signature = try? P256.Signature(derRepresentation: input) else { return }
        guard let der = try? signature.derRepresentation else {
            throw FuzzFailure("a signature read from DER cannot be written as DER")
        }
        try require((try? P256.Signature(derRepresentation: der)) == signature, "a signature does not read back")
    }

    /// connectedhomeip's test verifier (passcode 20202021, salt "SPAKE2P Key Salt", 1,000 iterations), as w0 and L.
    static let verifier: (w0: [UInt8], L: [UInt8]) = (
        decodeHex("b96170aae803346884724fe9a3b287c30330c2a660375d17bb205a8cf1aecb35"),
        decodeHex("0457f8ab79ee253ab6a8e46bb09e543ae422736de501e3db37d441fe344920d095"
                  + "48e4c18240630c4ff4913c53513839b7c07fcc0627a1b8573a149fcd1fa466cf"))

    private static func spake2Plus(_ input: [UInt8]) throws(FuzzFailure) {
        guard var verifier = try? SPAKE2Plus.Verifier(context: [], w0: verifier.w0, L: verifier.L) else {
            throw FuzzFailure("the test verifier is refused")
        }
        let share = Array(input.prefix(65)), confirmation = Array(input.dropFirst(65))
        if let (pB, cB) = try? verifier.respond(to: share) {
            try require(pB.count == 65 && cB.count == 32, "an answer of \(pB.count) and \(cB.count) bytes")
            try require((try? verifier.verify(cA: confirmation)) == nil && verifier.sharedKey == nil,
                        "a confirmation made without the passcode gave a shared key")
        } else {
            // A refused share changes nothing: the verifier still answers a prover's good one.
            guard let generator = try? P256.Point.generator.sec1Uncompressed else {
                throw FuzzFailure("no generator")
            }
            try require((try? verifier.respond(to: generator)) != nil, "a refused share left the verifier unusable")
        }
    }

    private static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, needle.count <= haystack.count else { return needle.isEmpty }
        return (0...(haystack.count - needle.count)).contains {
            haystack[$0..<($0 + needle.count)].elementsEqual(needle)
        }
    }

    private static func decodeHex(_ text: String) -> [UInt8] {
        let digits = Array(text.utf8)
        return stride(from: 0, to: digits.count, by: 2).map { UInt8(value(digits[$0]) << 4 | value(digits[$0 + 1])) }
    }

    private static func value(_ digit: UInt8) -> UInt8 { digit <= UInt8(ascii: "9") ? digit - 48 : digit - 87 }
}
