// The bridge every wrapper in this target uses to reach OpenSSL 3's libcrypto: turning OpenSSL's error queue into a
// `CryptoError`, and lending byte arrays to C.
//
// Why libcrypto and not swift-crypto: Matter needs AES-CCM and public P-256 point and scalar arithmetic (SPAKE2+
// computes y·G + w0·N and friends), and swift-crypto has neither. libcrypto has all of it (AES-CCM, EC_POINT/BN,
// ECDSA, ECDH, HKDF, PBKDF2, X.509 and PKCS#10), and one library for everything is simpler to ship: libssl3 is on every
// Raspberry Pi OS and libmosquitto already links it. Nothing cryptographic is written by hand here; the wrappers only
// own OpenSSL's handles (each freed where it is made) and say precisely what failed.
import COpenSSL

extension CryptoError {
    /// The error for a failed libcrypto call: `operation` is ours, the reason is the oldest entry on OpenSSL's error
    /// queue for this thread (which is emptied, so the next failure does not inherit it).
    static func openSSL(_ operation: String) -> CryptoError {
        var reasons: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            reasons.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return CryptoError(operation: operation, reason: reasons.first ?? "OpenSSL gave no reason")
    }
}

/// Throws `CryptoError.openSSL(operation)` unless libcrypto reported success (1).
@inline(__always)
func requireOne(_ result: Int32, _ operation: String) throws(CryptoError) {
    if result != 1 { throw CryptoError.openSSL(operation) }
}

/// Throws `CryptoError.openSSL(operation)` when libcrypto returned no handle.
@inline(__always)
func requireHandle<T>(_ handle: T?, _ operation: String) throws(CryptoError) -> T {
    guard let handle else { throw CryptoError.openSSL(operation) }
    return handle
}

/// Clears this thread's OpenSSL error queue, so a failure reports its own reason and not a stale one.
@inline(__always)
func clearOpenSSLErrors() { ERR_clear_error() }

/// A fixed byte the C side can point at when an array is empty: OpenSSL treats a null pointer as "not given" in
/// places (AES-CCM's final call, HMAC's key), where an empty input means "given, zero bytes".
nonisolated(unsafe) private let emptyInputByte = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)

extension Array where Element == UInt8 {
    /// Lends the bytes to C with a pointer that is never null, even for an empty array.
    func withNonNullBytes<R, E: Error>(_ body: (UnsafePointer<UInt8>, Int) throws(E) -> R) throws(E) -> R {
        if isEmpty { return try body(UnsafePointer(emptyInputByte), 0) }
        let result: Result<R, E> = withUnsafeBufferPointer { buffer in
            do throws(E) { return .success(try body(buffer.baseAddress!, buffer.count)) } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }
}

/// Throws unless every count fits the `int` lengths OpenSSL's older functions take.
func requireIntLengths(_ operation: String, _ counts: Int...) throws(CryptoError) {
    for count in counts where count > Int(Int32.max) {
        throw CryptoError(operation: operation, reason: "input of \(count) bytes is too long")
    }
}

/// Encodes an OpenSSL object to DER with one of its `i2d_*` functions (asked first for the length, then to write).
func derEncoded(_ operation: String, _ encode: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?) -> Int32)
    throws(CryptoError) -> [UInt8]
{
    let length = encode(nil)
    guard length > 0 else { throw CryptoError.openSSL(operation) }
    var output = [UInt8](repeating: 0, count: Int(length))
    let written = output.withUnsafeMutableBufferPointer { buffer -> Int32 in
        var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
        return encode(&cursor)
    }
    guard written == length else { throw CryptoError.openSSL(operation) }
    return output
}

/// Decodes DER with one of OpenSSL's `d2i_*` functions, refusing trailing bytes after the object.
func derDecoded<T>(
    _ operation: String, _ der: [UInt8], _ decode: (UnsafeMutablePointer<UnsafePointer<UInt8>?>, Int) -> T?,
    free: (T) -> Void
) throws(CryptoError) -> T {
    clearOpenSSLErrors()
    guard !der.isEmpty else { throw CryptoError(operation: operation, reason: "empty input") }
    let result: (T?, Int) = der.withUnsafeBufferPointer { buffer in
        var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
        let object = decode(&cursor, buffer.count)
        let consumed = cursor.map { $0 - buffer.baseAddress! } ?? 0
        return (object, consumed)
    }
    guard let object = result.0 else { throw CryptoError.openSSL(operation) }
    guard result.1 == der.count else {
        free(object)
        throw CryptoError(operation: operation, reason: "\(der.count - result.1) bytes after the DER object")
    }
    return object
}
