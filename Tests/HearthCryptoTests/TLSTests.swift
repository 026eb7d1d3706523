import COpenSSL
import Foundation
import HearthCrypto
import Testing

/// The web page's TLS layer: a certificate and key made for the test by the openssl CLI; each bad one refused with
/// its own error; a handshake and a request and answer in both directions against OpenSSL's own client, the bytes
/// carried by hand between the two memory-buffered ends (no socket).
@Suite final class TLSTests {
    let directory: String

    init() throws {
        directory = NSTemporaryDirectory() + "hearth-tls-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    func openssl(_ arguments: [String]) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        p.arguments = arguments
        p.standardError = FileHandle.nullDevice
        p.standardOutput = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        #expect(p.terminationStatus == 0, "openssl \(arguments.joined(separator: " "))")
    }

    /// A self-signed P-256 certificate for 127.0.0.1 and its key: (certificate, key) PEM.
    func certificate(_ name: String, encryptedKey: Bool = false) throws -> ([UInt8], [UInt8]) {
        let cert = "\(directory)/\(name).crt", key = "\(directory)/\(name).key"
        try openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-days", "2",
                     "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                     "-keyout", key, "-out", cert] + (encryptedKey ? ["-passout", "pass:secret"] : ["-noenc"]))
        return (
            Array(try Data(contentsOf: URL(fileURLWithPath: cert))),
            Array(try Data(contentsOf: URL(fileURLWithPath: key)))
        )
    }

    @Test func badCertificatesAndKeysAreRefusedEachWithItsOwnError() throws {
        let (cert, key) = try certificate("a")
        let (_, otherKey) = try certificate("b")
        let (_, encrypted) = try certificate("c", encryptedKey: true)
        _ = try TLSServerContext(certificatePEM: cert, keyPEM: key)
        #expect {
            _ = try TLSServerContext(certificatePEM: Array("not a certificate".utf8), keyPEM: key)
        } throws: { error in
            guard case .certificate(let reason)? = error as? TLSError else { return false }
            return reason.contains("no start line")
        }
        #expect {
            _ = try TLSServerContext(certificatePEM: cert, keyPEM: otherKey)
        } throws: { error in
            if case .keyDoesNotMatch? = error as? TLSError { return true }
            return false
        }
        #expect {
            _ = try TLSServerContext(certificatePEM: cert, keyPEM: encrypted)
        } throws: { error in
            if case .key? = error as? TLSError { return true }
            return false
        }
        #expect {
            _ = try TLSServerContext(certificatePEM: cert, keyPEM: [])
        } throws: { error in
            if case .key? = error as? TLSError { return true }
            return false
        }
    }

    /// OpenSSL's client over memory BIOs, trusting the test's certificate.
    final class Client {
        let context: OpaquePointer
        let ssl: OpaquePointer
        let input: OpaquePointer
        let output: OpaquePointer

        init(trusting certificate: String) {
            context = SSL_CTX_new(TLS_client_method())!
            SSL_CTX_load_verify_locations(context, certificate, nil)
            SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
            ssl = SSL_new(context)!
            input = BIO_new(BIO_s_mem())!
            output = BIO_new(BIO_s_mem())!
            SSL_set_bio(ssl, input, output)
            SSL_set_connect_state(ssl)
        }

        deinit {
            SSL_free(ssl)
            SSL_CTX_free(context)
        }

        func take() -> [UInt8] {
            var out: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = chunk.withUnsafeMutableBytes { BIO_read(output, $0.baseAddress, Int32($0.count)) }
                if n <= 0 { return out }
                out += chunk[..<Int(n)]
            }
        }

        func give(_ bytes: [UInt8]) {
            guard !bytes.isEmpty else { return }
            _ = bytes.withUnsafeBytes { BIO_write(input, $0.baseAddress, Int32($0.count)) }
        }

        func read() -> [UInt8] {
            var chunk = [UInt8](repeating: 0, count: 4096)
            var n = 0
            guard chunk.withUnsafeMutableBytes({ SSL_read_ex(ssl, $0.baseAddress, $0.count, &n) }) == 1 else {
                return []
            }
            return Array(chunk[..<n])
        }
    }

    @Test func aHandshakeThenARequestAndItsAnswerPassBothWays() throws {
        let (cert, key) = try certificate("server")
        let server = try TLSServerConnection(TLSServerContext(certificatePEM: cert, keyPEM: key))
        let client = Client(trusting: "\(directory)/server.crt")
        // The handshake: a few flights each way, bounded.
        for _ in 0..<10 where SSL_is_init_finished(client.ssl) != 1 || !server.isEstablished {
            _ = SSL_do_handshake(client.ssl)
            try client.take().withUnsafeBytes { try server.receive($0) }
            _ = try server.readPlaintext()
            client.give(server.takeOutput())
        }
        #expect(server.isEstablished && SSL_is_init_finished(client.ssl) == 1)
        #expect(SSL_get_verify_result(client.ssl) == X509_V_OK)

        let request = Array("GET / HTTP/1.1\r\n\r\n".utf8)
        var written = 0
        _ = request.withUnsafeBytes { SSL_write_ex(client.ssl, $0.baseAddress, $0.count, &written) }
        try client.take().withUnsafeBytes { try server.receive($0) }
        let received = try server.readPlaintext()
        #expect(received.bytes == request && !received.closed)
        try Array("HTTP/1.1 200 OK\r\n\r\n".utf8).withUnsafeBytes { try server.send($0) }
        client.give(server.takeOutput())
        #expect(client.read() == Array("HTTP/1.1 200 OK\r\n\r\n".utf8))
        // The client closes: the server reads its close_notify.
        _ = SSL_shutdown(client.ssl)
        try client.take().withUnsafeBytes { try server.receive($0) }
        #expect(try server.readPlaintext().closed)
    }

    @Test func bytesThatAreNotTLSFailTheConnectionWithAReason() throws {
        let (cert, key) = try certificate("plain")
        let server = try TLSServerConnection(TLSServerContext(certificatePEM: cert, keyPEM: key))
        try Array("GET / HTTP/1.1\r\nHost: hub\r\n\r\n".utf8).withUnsafeBytes { try server.receive($0) }
        #expect {
            _ = try server.readPlaintext()
        } throws: { error in
            guard case .connection(let reason)? = error as? TLSError else { return false }
            return !reason.isEmpty
        }
    }
}
