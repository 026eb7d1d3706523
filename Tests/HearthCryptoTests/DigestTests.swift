import HearthCrypto
import Testing

@Suite struct DigestTests {
    /// FIPS 180-2 appendix B.1 ("abc").
    @Test func sha256OfABC() {
        #expect(
            SHA256.hash(Array("abc".utf8)) == hex("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"))
        #expect(SHA256.hash([]) == hex("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"))
    }

    @Test func incrementalHasherMatchesOneShotAndCanBeFinalizedMidway() throws {
        var hasher = try SHA256.Hasher()
        try hasher.update(Array("a".utf8))
        let copy = hasher
        try hasher.update(Array("bc".utf8))
        #expect(try copy.finalize() == SHA256.hash(Array("a".utf8)))
        #expect(try hasher.finalize() == SHA256.hash(Array("abc".utf8)))
        // Finalizing leaves the hasher usable.
        try hasher.update(Array("d".utf8))
        #expect(try hasher.finalize() == SHA256.hash(Array("abcd".utf8)))
    }

    /// RFC 4231 test case 2.
    @Test func hmacSHA256() {
        let code = HMACSHA256.authenticationCode(
            key: Array("Jefe".utf8), data: Array("what do ya want for nothing?".utf8))
        #expect(code == hex("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"))
        #expect(HMACSHA256.isValidAuthenticationCode(code, key: Array("Jefe".utf8),
                                                     data: Array("what do ya want for nothing?".utf8)))
        #expect(!HMACSHA256.isValidAuthenticationCode(code, key: Array("Jeff".utf8),
                                                      data: Array("what do ya want for nothing?".utf8)))
    }

    /// Vectors v1 and v2 of connectedhomeip's src/crypto/tests/HKDF_SHA256_test_vectors.h (RFC 5869 A.1 and A.2),
    /// and RFC 5869 A.3 (no salt, no info).
    @Test func hkdfSHA256() throws {
        #expect(try HKDFSHA256.deriveKey(
            inputKeyMaterial: [UInt8](repeating: 0x0b, count: 22), salt: hex("000102030405060708090a0b0c"),
            info: hex("f0f1f2f3f4f5f6f7f8f9"), outputByteCount: 42)
            == hex("3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"))
        #expect(try HKDFSHA256.deriveKey(
            inputKeyMaterial: (0x00...0x4f).map { UInt8($0) }, salt: (0x60...0xaf).map { UInt8($0) },
            info: (0xb0...0xff).map { UInt8($0) }, outputByteCount: 82)
            == hex("""
                b11e398dc80327a1c8e7f78c596a49344f012eda2d4efad8a050cc4c19afa97c\
                59045a99cac7827271cb41c65e590e09da3275600c2f09b8\
                367793a9aca3db71cc30c58179ec3e87c14c01d5c1f3434f1d87
                """))
        #expect(try HKDFSHA256.deriveKey(
            inputKeyMaterial: [UInt8](repeating: 0x0b, count: 22), salt: [], info: [], outputByteCount: 42)
            == hex("8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8"))
    }

    @Test func hkdfRefusesImpossibleLengths() {
        #expect(throws: CryptoError.self) {
            try HKDFSHA256.deriveKey(inputKeyMaterial: [1], salt: [], info: [], outputByteCount: 0)
        }
        #expect(throws: CryptoError.self) {
            try HKDFSHA256.deriveKey(inputKeyMaterial: [1], salt: [], info: [], outputByteCount: 255 * 32 + 1)
        }
    }

    /// tcId 1–5 of connectedhomeip's src/crypto/tests/PBKDF2_SHA256_test_vectors.h.
    @Test(arguments: [
        ("password", "saltSALT", 1, "9a87d25e37408fd72f423d2285c7086d3a642a26"),
        ("password", "saltSALT", 2, "a0f30e25e8659c36a09589490d64a6b12e0c383c"),
        ("password", "saltSALT", 5, "861614287714d42975165eb63ea78cce8550713c"),
        ("password", "saltSALT", 3, "3f127837889c4a623d6e8dc88ca33c0123a29f07"),
        ("passwordPASSWORDpassword", "saltSALTsaltSALT", 10, "281aef26fa2ddf5b768201ff3addfc680ada0787c9b4765542"),
    ])
    func pbkdf2SHA256(password: String, salt: String, iterations: Int, expected: String) throws {
        let key = try PBKDF2SHA256.deriveKey(password: Array(password.utf8), salt: Array(salt.utf8),
                                             iterations: iterations, outputByteCount: hex(expected).count)
        #expect(key == hex(expected))
    }

    @Test func pbkdf2RefusesNoIterationsAndNoOutput() {
        #expect(throws: CryptoError.self) {
            try PBKDF2SHA256.deriveKey(password: [1], salt: [2], iterations: 0, outputByteCount: 32)
        }
        #expect(throws: CryptoError.self) {
            try PBKDF2SHA256.deriveKey(password: [1], salt: [2], iterations: 1, outputByteCount: 0)
        }
    }

    @Test func randomBytesAreFreshAndSized() throws {
        let a = try SecureRandom.bytes(32), b = try SecureRandom.bytes(32)
        #expect(a.count == 32 && b.count == 32 && a != b)
        #expect(try SecureRandom.bytes(0).isEmpty)
        #expect(throws: CryptoError.self) { try SecureRandom.bytes(-1) }
    }
}
