// AES-128 in CCM mode (RFC 3610; Matter's message encryption: 13-byte nonce, 16-byte tag) and in counter mode
// (Matter's privacy encryption of message headers), over libcrypto's EVP ciphers.
import COpenSSL

/// An owned `EVP_CIPHER_CTX`.
private struct CipherContext: ~Copyable {
    let pointer: OpaquePointer

    init(_ operation: String) throws(CryptoError) {
        clearOpenSSLErrors()
        pointer = try requireHandle(EVP_CIPHER_CTX_new(), operation)
    }

    deinit { EVP_CIPHER_CTX_free(pointer) }
}

/// AES-128-CCM with Matter's parameters: a 16-byte key, a 13-byte nonce and a 16-byte tag.
public enum AESCCM128 {
    public static let keyByteCount = 16
    public static let nonceByteCount = 13
    public static let tagByteCount = 16

    /// Encrypts and authenticates: the ciphertext (as long as the plaintext) followed by the 16-byte tag.
    public static func seal(key: [UInt8], nonce: [UInt8], plaintext: [UInt8],
                            authenticatedData: [UInt8]) throws(CryptoError) -> [UInt8] {
        let operation = "AES-CCM seal"
        try checkSizes(operation, key: key, nonce: nonce)
        try requireIntLengths(operation, plaintext.count + tagByteCount, authenticatedData.count)
        let context = try CipherContext(operation)
        let ctx = context.pointer
        try requireOne(EVP_EncryptInit_ex(ctx, EVP_aes_128_ccm(), nil, nil, nil), operation)
        try requireOne(EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_IVLEN, Int32(nonceByteCount), nil), operation)
        try requireOne(EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, Int32(tagByteCount), nil), operation)
        try requireOne(EVP_EncryptInit_ex(ctx, nil, nil, key, nonce), operation)
        var length: Int32 = 0
        // CCM must know the message length before the authenticated data.
        try requireOne(EVP_EncryptUpdate(ctx, nil, &length, nil, Int32(plaintext.count)), operation)
        if !authenticatedData.isEmpty {
            try requireOne(EVP_EncryptUpdate(ctx, nil, &length, authenticatedData, Int32(authenticatedData.count)),
                           operation)
        }
        var output = [UInt8](repeating: 0, count: plaintext.count + tagByteCount)
        try output.withUnsafeMutableBufferPointer { (buffer) throws(CryptoError) in
            try plaintext.withNonNullBytes { (bytes, count) throws(CryptoError) in
                try requireOne(EVP_EncryptUpdate(ctx, buffer.baseAddress, &length, bytes, Int32(count)), operation)
            }
            try requireOne(EVP_EncryptFinal_ex(ctx, buffer.baseAddress! + plaintext.count, &length), operation)
            try requireOne(EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, Int32(tagByteCount),
                                               buffer.baseAddress! + plaintext.count), operation)
        }
        return output
    }

    /// Checks the tag and decrypts; throws (and returns nothing) when the tag does not match.
    public static func open(key: [UInt8], nonce: [UInt8], ciphertextAndTag: [UInt8],
                            authenticatedData: [UInt8]) throws(CryptoError) -> [UInt8] {
        let operation = "AES-CCM open"
        try checkSizes(operation, key: key, nonce: nonce)
        guard ciphertextAndTag.count >= tagByteCount else {
            throw CryptoError(operation: operation, reason: "\(ciphertextAndTag.count) bytes, shorter than the tag")
        }
        try requireIntLengths(operation, ciphertextAndTag.count, authenticatedData.count)
        let ciphertext = Array(ciphertextAndTag.dropLast(tagByteCount))
        var tag = Array(ciphertextAndTag.suffix(tagByteCount))
        let context = try CipherContext(operation)
        let ctx = context.pointer
        try requireOne(EVP_DecryptInit_ex(ctx, EVP_aes_128_ccm(), nil, nil, nil), operation)
        try requireOne(EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_IVLEN, Int32(nonceByteCount), nil), operation)
        try requireOne(EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, Int32(tagByteCount), &tag), operation)
        try requireOne(EVP_DecryptInit_ex(ctx, nil, nil, key, nonce), operation)
        var length: Int32 = 0
        try requireOne(EVP_DecryptUpdate(ctx, nil, &length, nil, Int32(ciphertext.count)), operation)
        if !authenticatedData.isEmpty {
            try requireOne(EVP_DecryptUpdate(ctx, nil, &length, authenticatedData, Int32(authenticatedData.count)),
                           operation)
        }
        var plaintext = [UInt8](repeating: 0, count: max(ciphertext.count, 1))
        let result = plaintext.withUnsafeMutableBufferPointer { buffer in
            ciphertext.withNonNullBytes { bytes, count in
                EVP_DecryptUpdate(ctx, buffer.baseAddress, &length, bytes, Int32(count))
            }
        }
        guard result > 0 else {
            clearOpenSSLErrors()
            throw CryptoError(operation: operation, reason: "authentication tag mismatch")
        }
        return Array(plaintext.prefix(ciphertext.count))
    }

    private static func checkSizes(_ operation: String, key: [UInt8], nonce: [UInt8]) throws(CryptoError) {
        guard key.count == keyByteCount else {
            throw CryptoError(operation: operation, reason: "key is \(key.count) bytes, not \(keyByteCount)")
        }
        guard nonce.count == nonceByteCount else {
            throw CryptoError(operation: operation, reason: "nonce is \(nonce.count) bytes, not \(nonceByteCount)")
        }
    }
}

/// AES-128 in counter mode with CCM's counter blocks for a 13-byte nonce (flags 0x01, the nonce, a 2-byte counter
/// starting at 1): exactly the keystream AES-CCM encrypts its payload with, which is what Matter's privacy
/// encryption of message headers uses. Applying it twice gives the input back.
public enum AESCTR128 {
    public static func apply(key: [UInt8], nonce: [UInt8], data: [UInt8]) throws(CryptoError) -> [UInt8] {
        let operation = "AES-CTR"
        guard key.count == AESCCM128.keyByteCount else {
            throw CryptoError(operation: operation, reason: "key is \(key.count) bytes, not 16")
        }
        guard nonce.count == AESCCM128.nonceByteCount else {
            throw CryptoError(operation: operation, reason: "nonce is \(nonce.count) bytes, not 13")
        }
        guard data.count <= 0xFFFF * 16 else {
            throw CryptoError(operation: operation, reason: "\(data.count) bytes exceed the 2-byte counter")
        }
        let counterBlock: [UInt8] = [0x01] + nonce + [0x00, 0x01]
        let context = try CipherContext(operation)
        let ctx = context.pointer
        try requireOne(EVP_EncryptInit_ex(ctx, EVP_aes_128_ctr(), nil, key, counterBlock), operation)
        var output = [UInt8](repeating: 0, count: data.count + 16)
        var length: Int32 = 0
        var total = 0
        try output.withUnsafeMutableBufferPointer { (buffer) throws(CryptoError) in
            try data.withNonNullBytes { (bytes, count) throws(CryptoError) in
                try requireOne(EVP_EncryptUpdate(ctx, buffer.baseAddress, &length, bytes, Int32(count)), operation)
            }
            total = Int(length)
            try requireOne(EVP_EncryptFinal_ex(ctx, buffer.baseAddress! + total, &length), operation)
            total += Int(length)
        }
        return Array(output.prefix(total))
    }
}
