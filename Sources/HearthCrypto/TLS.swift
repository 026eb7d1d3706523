// TLS for the hub's web page, through OpenSSL's libssl (the library libcrypto comes with, which libmosquitto links
// for the broker's TLS): a server's certificate and key (`TLSServerContext`), and one connection's TLS over memory
// BIOs (`TLSServerConnection`), so that the caller moves the bytes (the web server's NIO handler) and OpenSSL never
// touches a socket. Each handle is owned and freed here; every failure is a `TLSError` with OpenSSL's reason.
import COpenSSL

/// Why TLS could not be set up or went wrong on a connection.
public enum TLSError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The certificate file holds no PEM certificate OpenSSL reads (or a chain certificate after it is bad).
    case certificate(String)
    /// The key file holds no PEM private key OpenSSL reads (an encrypted key is refused: no one types its passphrase).
    case key(String)
    /// The key is not the certificate's.
    case keyDoesNotMatch(String)
    /// The TLS library refused to set up (out of memory, a call failed).
    case setup(String)
    /// The handshake or a record failed: the client's hello is not TLS, no common version or cipher, a bad record.
    case connection(String)

    public var description: String {
        switch self {
        case .certificate(let reason): return "the certificate cannot be read: \(reason)"
        case .key(let reason): return "the key cannot be read: \(reason)"
        case .keyDoesNotMatch(let reason): return "the key is not the certificate's: \(reason)"
        case .setup(let reason): return "TLS cannot be set up: \(reason)"
        case .connection(let reason): return "TLS failed: \(reason)"
        }
    }

    /// OpenSSL's oldest queued reason, the queue emptied.
    static func reason() -> String { CryptoError.openSSL("").reason }
}

/// A TLS server's certificate (with its chain) and key, checked to belong together; TLS 1.2 or newer. Immutable once
/// made, so connections on any thread share it (OpenSSL's `SSL_CTX` is safe to share once configured).
public final class TLSServerContext: @unchecked Sendable {
    let context: OpaquePointer

    /// - Parameters:
    ///   - certificatePEM: the server's certificate, then any intermediate certificates, in PEM.
    ///   - keyPEM: its unencrypted private key in PEM.
    public init(certificatePEM: [UInt8], keyPEM: [UInt8]) throws(TLSError) {
        ERR_clear_error()
        guard let context = SSL_CTX_new(TLS_server_method()) else { throw .setup(TLSError.reason()) }
        self.context = context
        guard hearth_ssl_ctx_set_min_tls12(context) == 1 else { throw .setup(TLSError.reason()) }
        var loaded = 0
        let certificateFailure: String? = certificatePEM.withUnsafeBytes { raw -> String? in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return TLSError.reason() }
            defer { BIO_free(bio) }
            while let x509 = PEM_read_bio_X509(bio, nil, nil, nil) {
                if loaded == 0 {
                    defer { X509_free(x509) }
                    guard SSL_CTX_use_certificate(context, x509) == 1 else { return TLSError.reason() }
                } else if hearth_ssl_ctx_add_chain_certificate(context, x509) != 1 {
                    X509_free(x509)
                    return TLSError.reason()
                }
                loaded += 1
            }
            // The loop ends at the first block that is not a certificate: after at least one, that is the end.
            let end = TLSError.reason()
            return loaded == 0 ? end : nil
        }
        if let certificateFailure { throw .certificate(certificateFailure) }
        let keyFailure: String? = keyPEM.withUnsafeBytes { raw -> String? in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return TLSError.reason() }
            defer { BIO_free(bio) }
            // No passphrase callback: an encrypted key fails here instead of prompting on the console.
            guard let key = PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in 0 }, nil) else {
                return TLSError.reason()
            }
            defer { EVP_PKEY_free(key) }
            return SSL_CTX_use_PrivateKey(context, key) == 1 ? nil : TLSError.reason()
        }
        if let keyFailure {
            throw keyFailure.contains("values mismatch") || keyFailure.contains("key values mismatch")
                ? .keyDoesNotMatch(keyFailure) : .key(keyFailure)
        }
        guard SSL_CTX_check_private_key(context) == 1 else { throw .keyDoesNotMatch(TLSError.reason()) }
    }

    deinit { SSL_CTX_free(context) }
}

/// One connection's server side of TLS over memory buffers: the caller hands in what arrived from the network
/// (`receive`), takes out the plaintext it decrypts (`readPlaintext`), hands in plaintext to send (`send`), and sends
/// what is to go out (`takeOutput`: handshake messages, records, the closing alert). Used on one thread at a time.
public final class TLSServerConnection {
    private let ssl: OpaquePointer
    /// Owned by `ssl` (`SSL_set_bio`), freed with it.
    private let input: OpaquePointer
    private let output: OpaquePointer

    public init(_ context: TLSServerContext) throws(TLSError) {
        ERR_clear_error()
        guard let ssl = SSL_new(context.context) else { throw .setup(TLSError.reason()) }
        guard let input = BIO_new(BIO_s_mem()) else {
            SSL_free(ssl)
            throw .setup(TLSError.reason())
        }
        guard let output = BIO_new(BIO_s_mem()) else {
            BIO_free(input)
            SSL_free(ssl)
            throw .setup(TLSError.reason())
        }
        // An empty input buffer means "wait for more", not end of file.
        _ = hearth_bio_set_mem_eof_return(input, -1)
        SSL_set_bio(ssl, input, output)
        SSL_set_accept_state(ssl)
        self.ssl = ssl
        self.input = input
        self.output = output
    }

    deinit { SSL_free(ssl) }

    /// Whether the handshake is done (plaintext can be sent).
    public var isEstablished: Bool { SSL_is_init_finished(ssl) == 1 }

    /// Bytes that arrived from the client.
    public func receive(_ bytes: UnsafeRawBufferPointer) throws(TLSError) {
        var offset = 0
        while offset < bytes.count {
            let n = BIO_write(input, bytes.baseAddress! + offset, Int32(min(bytes.count - offset, Int(Int32.max))))
            guard n > 0 else { throw .setup("cannot buffer what arrived: \(TLSError.reason())") }
            offset += Int(n)
        }
    }

    /// What the client's records decrypt to so far (empty while the handshake runs or a record is incomplete), and
    /// whether the client has closed TLS (its close_notify).
    public func readPlaintext() throws(TLSError) -> (bytes: [UInt8], closed: Bool) {
        ERR_clear_error()
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16384)
        while true {
            var read = 0
            let ok = chunk.withUnsafeMutableBytes { SSL_read_ex(ssl, $0.baseAddress, $0.count, &read) }
            if ok == 1 {
                out += chunk[..<read]
                continue
            }
            switch SSL_get_error(ssl, ok) {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE: return (out, false)
            case SSL_ERROR_ZERO_RETURN: return (out, true)
            default: throw .connection(TLSError.reason())
            }
        }
    }

    /// Encrypts `plaintext` into records (taken with `takeOutput`). Only once established: an HTTP server answers
    /// after a request, which arrives after the handshake.
    public func send(_ plaintext: UnsafeRawBufferPointer) throws(TLSError) {
        ERR_clear_error()
        var offset = 0
        while offset < plaintext.count {
            var written = 0
            let ok = SSL_write_ex(ssl, plaintext.baseAddress! + offset, plaintext.count - offset, &written)
            guard ok == 1 else {
                let code = SSL_get_error(ssl, ok)
                throw .connection(
                    code == SSL_ERROR_WANT_READ ? "a write before the handshake ended" : TLSError.reason())
            }
            offset += written
        }
    }

    /// Starts TLS's closing (a close_notify alert, taken with `takeOutput`).
    public func close() {
        ERR_clear_error()
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
    }

    /// What is to be sent to the client, emptied from the buffer.
    public func takeOutput() -> [UInt8] {
        let pending = hearth_bio_pending(output)
        guard pending > 0 else { return [] }
        var bytes = [UInt8](repeating: 0, count: Int(pending))
        let n = bytes.withUnsafeMutableBytes { BIO_read(output, $0.baseAddress, Int32($0.count)) }
        return n > 0 ? Array(bytes[..<Int(n)]) : []
    }
}
