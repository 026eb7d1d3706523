import HearthCrypto
import Testing

/// RFC 6979 A.2.5: the P-256 key and its deterministic ECDSA-SHA-256 signature of "sample".
private let rfc6979PrivateKey = hex("c9afa9d845ba75166b5c215767b1d6934e50c3db36e89b127b8a622b120f6721")
private let rfc6979PublicKey = hex("""
    0460fed4ba255a9d31c961eb74c6356d68c049b8923b61fa6ce669622e60f29fb6\
    7903fe1008b8bc99a41ae9e95628bc64f2f1b20c2d7e9f5177a3c294d4462299
    """)
private let rfc6979SampleSignature = hex("""
    efd48b2aacb6a8fd1140dd9cd45e81d69d2c877b56aaf991c34d0ea84eaf3716\
    f7cb1c942d657c41d436c7a1b6e29f65f3e900dbb9aff4064dc4ab2f843acda8
    """)

@Suite struct P256Tests {
    @Test func publicKeyOfKnownPrivateKey() throws {
        let key = try P256.SigningKey(rawRepresentation: rfc6979PrivateKey)
        #expect(key.publicKey.x963Representation == rfc6979PublicKey)
        #expect(key.rawRepresentation == rfc6979PrivateKey)
    }

    @Test func knownSignatureVerifies() throws {
        let publicKey = try P256.PublicKey(x963Representation: rfc6979PublicKey)
        let signature = try P256.Signature(rawRepresentation: rfc6979SampleSignature)
        #expect(publicKey.isValidSignature(signature, for: Array("sample".utf8)))
        #expect(!publicKey.isValidSignature(signature, for: Array("samplf".utf8)))
        var tampered = rfc6979SampleSignature
        tampered[63] ^= 1
        #expect(!publicKey.isValidSignature(try P256.Signature(rawRepresentation: tampered), for: Array("sample".utf8)))
    }

    @Test func signAndVerifyRoundTrip() throws {
        let key = try P256.SigningKey()
        let message = Array("attestation challenge".utf8)
        let signature = try key.signature(for: message)
        #expect(signature.rawRepresentation.count == 64)
        #expect(key.publicKey.isValidSignature(signature, for: message))
        #expect(!key.publicKey.isValidSignature(signature, for: message + [0]))
        #expect(!(try P256.SigningKey()).publicKey.isValidSignature(signature, for: message))
        // DER and raw forms convert both ways.
        let der = try signature.derRepresentation
        #expect(der.first == 0x30)
        #expect(try P256.Signature(derRepresentation: der) == signature)
    }

    @Test func signatureEncodingsAreChecked() {
        #expect(throws: CryptoError.self) { try P256.Signature(rawRepresentation: [UInt8](repeating: 1, count: 63)) }
        #expect(throws: CryptoError.self) { try P256.Signature(derRepresentation: [0x30, 0x00]) }
        #expect(throws: CryptoError.self) { try P256.Signature(derRepresentation: []) }
        #expect(throws: CryptoError.self) {
            try P256.Signature(derRepresentation: [0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01, 0x00])
        }
    }

    @Test func ecdhAgrees() throws {
        let alice = try P256.SigningKey(), bob = try P256.SigningKey()
        let secret = try alice.sharedSecret(with: bob.publicKey)
        #expect(secret.count == 32)
        #expect(secret == (try bob.sharedSecret(with: alice.publicKey)))
        // The secret is the x coordinate of a·B.
        let product = try bob.publicKey.point * P256.Scalar(rawRepresentation: alice.rawRepresentation)
        #expect(Array(try product.sec1Uncompressed[1...32]) == secret)
    }

    @Test func invalidPublicKeysAreRefused() {
        var offCurve = rfc6979PublicKey
        offCurve[64] ^= 1
        #expect(throws: CryptoError.self) { try P256.PublicKey(x963Representation: offCurve) }
        #expect(throws: CryptoError.self) { try P256.PublicKey(x963Representation: Array(rfc6979PublicKey.prefix(64))) }
        #expect(throws: CryptoError.self) { try P256.PublicKey(x963Representation: [0x00]) }
        var wrongPrefix = rfc6979PublicKey
        wrongPrefix[0] = 0x05
        #expect(throws: CryptoError.self) { try P256.PublicKey(x963Representation: wrongPrefix) }
        // A compressed point whose x is not a field element (not below p).
        #expect(throws: CryptoError.self) { try P256.Point(sec1: [0x02] + [UInt8](repeating: 0xFF, count: 32)) }
    }

    @Test func invalidPrivateKeysAreRefused() {
        #expect(throws: CryptoError.self) { try P256.SigningKey(rawRepresentation: [UInt8](repeating: 0, count: 32)) }
        #expect(throws: CryptoError.self) {
            try P256.SigningKey(rawRepresentation: [UInt8](repeating: 0xff, count: 32))
        }
        #expect(throws: CryptoError.self) { try P256.SigningKey(rawRepresentation: [1]) }
    }

    @Test func secretsAreNotPrinted() throws {
        let key = try P256.SigningKey(rawRepresentation: rfc6979PrivateKey)
        #expect(String(describing: key) == "P256.SigningKey(redacted)")
        #expect(!String(reflecting: key).contains("201"))
        #expect(String(describing: try P256.Scalar.random()) == "P256.Scalar(redacted)")
    }

    @Test func pointAndScalarArithmeticAgree() throws {
        let a = try P256.Scalar.random(), b = try P256.Scalar.random()
        let g = try P256.Point.generator
        #expect(try g * (a + b) == (try g * a) + (try g * b))
        #expect(try (g * a) * b == g * (a * b))
        #expect(try ((g * a) + (-(g * a))).isInfinity)
        #expect(try (g * a) - (g * a) == (try g * (try -a)) + (g * a))
        #expect(throws: CryptoError.self) { try (g * a - g * a).sec1Uncompressed }
        // Reduction modulo n: n itself reduces to zero, n + 1 to one.
        let n = hex("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551")
        #expect(try P256.Scalar(reducing: n).isZero)
        var nPlusOne = n
        nPlusOne[31] += 1
        #expect(try g * P256.Scalar(reducing: nPlusOne) == g)
        #expect(throws: CryptoError.self) { try P256.Scalar(rawRepresentation: n) }
        // A compressed point decodes to the same point as its uncompressed form.
        let p = try g * a
        let uncompressed = try p.sec1Uncompressed
        let compressed = [0x02 | (uncompressed[64] & 1)] + uncompressed[1...32]
        #expect(try P256.Point(sec1: compressed) == p)
    }
}
