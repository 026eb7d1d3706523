// The KDF, the random bytes and the constant-time comparison the web page's accounts need, all from HearthCrypto
// (libcrypto underneath); hex for the accounts file.
import HearthCrypto

enum WebCrypto {
    /// PBKDF2-HMAC-SHA256 (RFC 8018) of `password`.
    static func pbkdf2SHA256(password: [UInt8], salt: [UInt8], iterations: Int, outputByteCount: Int)
        throws(CryptoError) -> [UInt8]
    {
        try PBKDF2SHA256.deriveKey(
            password: password, salt: salt, iterations: iterations, outputByteCount: outputByteCount)
    }

    /// `count` bytes from libcrypto's CSPRNG.
    static func randomBytes(_ count: Int) throws(CryptoError) -> [UInt8] {
        try SecureRandom.bytes(count)
    }

    /// Whether `a` and `b` are equal, in a time that depends on their lengths only.
    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        HearthCrypto.constantTimeEqual(a, b)
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
