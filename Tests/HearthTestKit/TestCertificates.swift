// A throw-away PKI for TLS tests, made with the openssl CLI: a CA, a server certificate for 127.0.0.1/localhost,
// and a client certificate. EC P-256 keys, because they are generated in milliseconds even on a Pi.
import Foundation

/// PEM files of a test CA and the certificates it signed. Keys are unencrypted.
public struct TestCertificates: Sendable {
    public let directory: String
    public let caFile: String
    public let caKeyFile: String
    /// Server certificate with subjectAltName IP:127.0.0.1 and DNS:localhost.
    public let serverCertificateFile: String
    public let serverKeyFile: String
    /// Client certificate (CN "hearth-test-client"), for brokers that require one.
    public let clientCertificateFile: String
    public let clientKeyFile: String

    /// Makes a CA and its server and client certificates in `directory` (created if needed).
    /// - Parameter serverAddresses: more IP addresses the server certificate is for (a namespace link's host end).
    public static func make(in directory: String, caName: String = "Hearth Test CA",
                            serverAddresses: [String] = []) throws -> TestCertificates {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        guard let openssl = ChildProcess.locate(["openssl", "/usr/bin/openssl"]) else {
            throw TestFixtureError("openssl not found (Debian: apt-get install openssl)")
        }
        let certificates = TestCertificates(directory: directory)
        let output = "\(directory)/openssl.log"
        let ecKey = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        func run(_ arguments: [String]) throws {
            try ChildProcess.run(openssl, arguments, outputFile: output)
        }

        try run(["req", "-x509"] + ecKey + [
            "-keyout", certificates.caKeyFile, "-out", certificates.caFile, "-days", "2", "-subj", "/CN=\(caName)",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        ])
        for (name, commonName, extensions) in [
            ("server", "localhost",
             "subjectAltName=IP:127.0.0.1,\(serverAddresses.map { "IP:\($0)," }.joined())DNS:localhost\n"
                + "basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"),
            ("client", "hearth-test-client", "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n"),
        ] {
            let request = "\(directory)/\(name).csr"
            let extensionFile = "\(directory)/\(name).ext"
            try extensions.write(toFile: extensionFile, atomically: true, encoding: .utf8)
            try run(["req", "-new"] + ecKey + [
                "-keyout", "\(directory)/\(name).key", "-out", request, "-subj", "/CN=\(commonName)",
            ])
            try run([
                "x509", "-req", "-in", request, "-CA", certificates.caFile, "-CAkey", certificates.caKeyFile,
                "-CAcreateserial", "-out", "\(directory)/\(name).crt", "-days", "2", "-extfile", extensionFile,
            ])
        }
        return certificates
    }

    private init(directory: String) {
        self.directory = directory
        caFile = "\(directory)/ca.crt"
        caKeyFile = "\(directory)/ca.key"
        serverCertificateFile = "\(directory)/server.crt"
        serverKeyFile = "\(directory)/server.key"
        clientCertificateFile = "\(directory)/client.crt"
        clientKeyFile = "\(directory)/client.key"
    }
}
