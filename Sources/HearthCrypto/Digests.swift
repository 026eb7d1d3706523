// Randomness, SHA-256, HMAC-SHA-256, HKDF-SHA-256 and PBKDF2-HMAC-SHA-256 over libcrypto: the hashing and key
// derivation Matter's PASE, CASE and message layer are built from.
import COpenSSL

/// Bytes from OpenSSL's CSPRNG (`RAND_bytes`), for keys, nonces and SPAKE2+/Sigma ephemerals.
public enum SecureRandom {
    /// `count` random bytes; throws if the generator cannot deliver (it never hands back weak bytes).
    public static func bytes(_ count: Int) throws(CryptoError) -> [UInt8] {
        guard count >= 0, count <= Int(Int32.max) else {
            throw CryptoError(operation: "random bytes", reason: "count \(count) out of range")
        }
        var output = [UInt8](repeating: 0, count: count)
        guard count > 0 else { return output }
        clearOpenSSLErrors()
        let result = output.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32(count)) }
        try requireOne(result, "random bytes")
        return output
    }
}

/// SHA-256 (FIPS 180-4).
public enum SHA256 {
    public static let byteCount = 32

    /// The digest of `data`.
    public static func hash(_ data: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: byteCount)
        data.withNonNullBytes { bytes, count in
            digest.withUnsafeMutableBufferPointer { _ = COpenSSL.SHA256(bytes, count, $0.baseAddress) }
        }
        return digest
    }

    /// An incremental SHA-256, for transcript hashes that grow message by message. A value: copies hash on
    /// independently, and `finalize()` leaves it usable, so a transcript can be hashed at several points.
    public struct Hasher: Sendable {
        private var state: DigestState

        public init() throws(CryptoError) { state = try DigestState() }

        public mutating func update(_ data: [UInt8]) throws(CryptoError) {
            if !isKnownUniquelyReferenced(&state) { state = try state.copy() }
            try state.update(data)
        }

        /// The digest of everything given so far.
        public func finalize() throws(CryptoError) -> [UInt8] { try state.copy().finish() }
    }
}

/// An owned `EVP_MD_CTX` running SHA-256. Only mutated through a uniquely referenced `SHA256.Hasher`, read otherwise.
final class DigestState: @unchecked Sendable {
    private let context: OpaquePointer

    init() throws(CryptoError) {
        clearOpenSSLErrors()
        context = try requireHandle(EVP_MD_CTX_new(), "SHA-256 context")
        guard EVP_DigestInit_ex(context, EVP_sha256(), nil) == 1 else {
            let error = CryptoError.openSSL("SHA-256 init")
            EVP_MD_CTX_free(context)
            throw error
        }
    }

    private init(copying other: OpaquePointer) throws(CryptoError) {
        context = try requireHandle(EVP_MD_CTX_new(), "SHA-256 context")
        guard EVP_MD_CTX_copy_ex(context, other) == 1 else {
            let error = CryptoError.openSSL("SHA-256 copy")
            EVP_MD_CTX_free(context)
            throw error
        }
    }

    deinit { EVP_MD_CTX_free(context) }

    func copy() throws(CryptoError) -> DigestState { try DigestState(copying: context) }

    func update(_ data: [UInt8]) throws(CryptoError) {
        clearOpenSSLErrors()
        try data.withNonNullBytes { (bytes, count) throws(CryptoError) in
            try requireOne(EVP_DigestUpdate(context, bytes, count), "SHA-256 update")
        }
    }

    func finish() throws(CryptoError) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: SHA256.byteCount)
        var length: UInt32 = 0
        clearOpenSSLErrors()
        try requireOne(digest.withUnsafeMutableBufferPointer { EVP_DigestFinal_ex(context, $0.baseAddress, &length) },
                       "SHA-256 final")
        return digest
    }
}

/// HMAC with SHA-256 (RFC 2104).
public enum HMACSHA256 {
    public static let byteCount = 32

    public static func authenticationCode(key: [UInt8], data: [UInt8]) -> [UInt8] {
        // HMAC hashes a key longer than the hash's block first (RFC 2104 §2); doing so here for a key beyond an
        // `int` gives the same code without handing OpenSSL a length it cannot take.
        let key = key.count > Int(Int32.max) ? SHA256.hash(key) : key
        var code = [UInt8](repeating: 0, count: byteCount)
        var length: UInt32 = 0
        key.withNonNullBytes { keyBytes, keyCount in
            data.withNonNullBytes { dataBytes, dataCount in
                code.withUnsafeMutableBufferPointer {
                    _ = HMAC(EVP_sha256(), keyBytes, Int32(keyCount), dataBytes, dataCount, $0.baseAddress, &length)
                }
            }
        }
        return code
    }

    /// Whether `code` is the HMAC of `data` under `key`, compared in constant time.
    public static func isValidAuthenticationCode(_ code: [UInt8], key: [UInt8], data: [UInt8]) -> Bool {
        constantTimeEqual(code, authenticationCode(key: key, data: data))
    }
}

/// Compares two byte strings without stopping at the first difference (`CRYPTO_memcmp`).
public func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    return a.withNonNullBytes { aBytes, count in
        b.withNonNullBytes { bBytes, _ in CRYPTO_memcmp(aBytes, bBytes, count) == 0 }
    }
}

/// HKDF with SHA-256 (RFC 5869), extract then expand.
public enum HKDFSHA256 {
    public static func deriveKey(inputKeyMaterial: [UInt8], salt: [UInt8], info: [UInt8],
                                 outputByteCount: Int) throws(CryptoError) -> [UInt8] {
        let operation = "HKDF-SHA256"
        guard outputByteCount > 0, outputByteCount <= 255 * 32 else {
            throw CryptoError(operation: operation, reason: "output length \(outputByteCount) not in 1...8160")
        }
        try requireIntLengths(operation, inputKeyMaterial.count, salt.count, info.count)
        clearOpenSSLErrors()
        let context = try requireHandle(EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, nil), operation)
        defer { EVP_PKEY_CTX_free(context) }
        try requireOne(EVP_PKEY_derive_init(context), operation)
        try requireOne(EVP_PKEY_CTX_set_hkdf_md(context, EVP_sha256()), operation)
        // An absent salt is HashLen zero bytes (RFC 5869 §2.2), which is also what OpenSSL uses when none is set.
        if !salt.isEmpty {
            try salt.withNonNullBytes { (bytes, count) throws(CryptoError) in
                try requireOne(EVP_PKEY_CTX_set1_hkdf_salt(context, bytes, Int32(count)), operation)
            }
        }
        try inputKeyMaterial.withNonNullBytes { (bytes, count) throws(CryptoError) in
            try requireOne(EVP_PKEY_CTX_set1_hkdf_key(context, bytes, Int32(count)), operation)
        }
        if !info.isEmpty {
            try info.withNonNullBytes { (bytes, count) throws(CryptoError) in
                try requireOne(EVP_PKEY_CTX_add1_hkdf_info(context, bytes, Int32(count)), operation)
            }
        }
        var output = [UInt8](repeating: 0, count: outputByteCount)
        var length = outputByteCount
        try requireOne(output.withUnsafeMutableBufferPointer { EVP_PKEY_derive(context, $0.baseAddress, &length) },
                       operation)
        guard length == outputByteCount else {
            throw CryptoError(operation: operation, reason: "derived \(length) bytes, not \(outputByteCount)")
        }
        return output
    }
}

/// PBKDF2 with HMAC-SHA-256 (RFC 8018), as Matter derives SPAKE2+'s w0 and w1 from the passcode.
public enum PBKDF2SHA256 {
    public static func deriveKey(password: [UInt8], salt: [UInt8], iterations: Int,
                                 outputByteCount: Int) throws(CryptoError) -> [UInt8] {
        let operation = "PBKDF2-SHA256"
        guard iterations >= 1, iterations <= Int(Int32.max) else {
            throw CryptoError(operation: operation, reason: "iteration count \(iterations) out of range")
        }
        guard outputByteCount > 0, outputByteCount <= Int(Int32.max) else {
            throw CryptoError(operation: operation, reason: "output length \(outputByteCount) out of range")
        }
        try requireIntLengths(operation, password.count, salt.count)
        var output = [UInt8](repeating: 0, count: outputByteCount)
        clearOpenSSLErrors()
        let result = password.withNonNullBytes { passwordBytes, passwordCount in
            salt.withNonNullBytes { saltBytes, saltCount in
                output.withUnsafeMutableBufferPointer { outputBuffer in
                    passwordBytes.withMemoryRebound(to: CChar.self, capacity: max(passwordCount, 1)) { passwordChars in
                        PKCS5_PBKDF2_HMAC(passwordChars, Int32(passwordCount), saltBytes, Int32(saltCount),
                                          Int32(iterations), EVP_sha256(), Int32(outputByteCount),
                                          outputBuffer.baseAddress)
                    }
                }
            }
        }
        try requireOne(result, operation)
        return output
    }
}
