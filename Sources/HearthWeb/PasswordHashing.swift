// The KDF, the random bytes and the constant-time comparison the web page's accounts need, from libcrypto (no
// primitive written here). A thin wrapper: every failure is a typed `WebCryptoError`.
import COpenSSL

/// A failure inside libcrypto: which operation, and OpenSSL's reason.
struct WebCryptoError: Error, Sendable, CustomStringConvertible {
    var operation: String
    var reason: String
    var description: String { "\(operation) failed: \(reason)" }

    static func last(_ operation: String) -> WebCryptoError {
        let code = ERR_get_error()
        guard code != 0 else { return WebCryptoError(operation: operation, reason: "no reason given") }
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        return WebCryptoError(operation: operation, reason: String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
}

enum WebCrypto {
    /// PBKDF2-HMAC-SHA256 (RFC 8018) of `password`.
    static func pbkdf2SHA256(password: [UInt8], salt: [UInt8], iterations: Int, outputByteCount: Int) throws(WebCryptoError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: outputByteCount)
        let characters = password.map { CChar(bitPattern: $0) }
        let ok = characters.withUnsafeBufferPointer { p in
            salt.withUnsafeBufferPointer { s in
                out.withUnsafeMutableBufferPointer { o in
                    PKCS5_PBKDF2_HMAC(p.baseAddress, Int32(p.count), s.baseAddress, Int32(s.count), Int32(iterations),
                                      EVP_sha256(), Int32(o.count), o.baseAddress)
                }
            }
        }
        guard ok == 1 else { throw WebCryptoError.last("PBKDF2") }
        return out
    }

    /// `count` bytes from libcrypto's CSPRNG.
    static func randomBytes(_ count: Int) throws(WebCryptoError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        let ok = out.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32($0.count)) }
        guard ok == 1 else { throw WebCryptoError.last("RAND_bytes") }
        return out
    }

    /// Whether `a` and `b` are equal, in a time that depends on their lengths only.
    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        guard !a.isEmpty else { return true }
        return a.withUnsafeBytes { x in b.withUnsafeBytes { y in CRYPTO_memcmp(x.baseAddress, y.baseAddress, a.count) == 0 } }
    }
}

/// Lower-case hexadecimal, both ways.
enum Hex {
    static func encode(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for b in bytes { out.append(digits[Int(b >> 4)]); out.append(digits[Int(b & 15)]) }
        return String(decoding: out, as: UTF8.self)
    }

    static func decode(_ text: String) -> [UInt8]? {
        let u = Array(text.utf8)
        guard u.count % 2 == 0 else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            default: nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(u.count / 2)
        var i = 0
        while i < u.count {
            guard let h = nibble(u[i]), let l = nibble(u[i + 1]) else { return nil }
            out.append(h << 4 | l)
            i += 2
        }
        return out
    }
}
