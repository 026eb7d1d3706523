#if canImport(Glibc)
import Glibc
#endif
public import HearthCrypto
import HearthConfig

/// The `web:` section: whether and where the hub serves its own page (`docs/web-api.md`). Read here, with the rest of
/// the configuration, so that `check-config` and the schema know it; served by HearthWeb.
public struct WebSettings: Sendable, Equatable {
    /// 8470: not the port of any common hub software (8080 and 8000 are taken by many web tools, 8123 by Home
    /// Assistant, 1880 by Node-RED, 8081 by Zigbee2MQTT's examples, 6052 by ESPHome's dashboard), so a board that
    /// runs one of them beside hearthd starts without a clash.
    public static let defaultPort = 8470

    public var enabled = true
    /// An IPv4 or IPv6 address to bind.
    public var listen = "0.0.0.0"
    public var port = WebSettings.defaultPort
    /// HTTPS instead of HTTP (`web.tls`); nil: plain HTTP.
    public var tls: TLS?

    public init(enabled: Bool = true, listen: String = "0.0.0.0", port: Int = WebSettings.defaultPort) {
        self.enabled = enabled
        self.listen = listen
        self.port = port
    }

    /// Whether `text` is a numeric IPv4 or IPv6 address (no name: the hub binds before any resolver is trusted).
    public static func isAddress(_ text: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1
    }
}

extension WebSettings {
    /// `web.tls`: the page over HTTPS.
    public struct TLS: Sendable, Equatable {
        /// The certificate file (PEM: the certificate, then any intermediates), an absolute path.
        public var certificateFile: String
        /// The private key file (PEM, not encrypted), an absolute path; readable by its owner only.
        public var keyFile: String

        public init(certificateFile: String, keyFile: String) {
            self.certificateFile = certificateFile
            self.keyFile = keyFile
        }

        /// Why the certificate and key cannot be served, naming the key of `web.tls` at fault.
        public struct Problem: Error, Sendable, CustomStringConvertible {
            /// `certificate` or `key`.
            public var key: String
            public var message: String
            public var description: String { "web.tls.\(key): \(message)" }
        }

        /// The TLS context of the certificate and key, read from their files the way the broker's are named
        /// (paths relative to the configuration) and with the key held to the rules of a secret file.
        public func load() -> Result<TLSServerContext, Problem> {
            let certificate: [UInt8]
            switch WebSettings.readPlainFile(certificateFile) {
            case .success(let bytes): certificate = bytes
            case .failure(let problem): return .failure(Problem(key: "certificate", message: problem.message))
            }
            let key: [UInt8]
            switch SecretFile.read(keyFile) {
            case .success(let bytes): key = bytes
            case .failure(let failure): return .failure(Problem(key: "key", message: failure.description))
            }
            do throws(TLSError) {
                return .success(try TLSServerContext(certificatePEM: certificate, keyPEM: key))
            } catch {
                switch error {
                case .certificate: return .failure(Problem(key: "certificate", message: "\(certificateFile): \(error)"))
                case .key, .keyDoesNotMatch: return .failure(Problem(key: "key", message: "\(keyFile): \(error)"))
                case .setup, .connection: return .failure(Problem(key: "certificate", message: "\(error)"))
                }
            }
        }
    }

    struct FileProblem: Error {
        var message: String
    }

    /// A certificate file's bytes (at most 1 MiB), or why not.
    static func readPlainFile(_ path: String) -> Result<[UInt8], FileProblem> {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            return .failure(FileProblem(message: "cannot read \(path): \(String(cString: strerror(errno)))"))
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            return .failure(FileProblem(message: "\(path) is not a regular file"))
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16384)
        while bytes.count <= 1 << 20 {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                return .failure(FileProblem(message: "cannot read \(path): \(String(cString: strerror(errno)))"))
            }
            if n == 0 { return .success(bytes) }
            bytes += chunk[..<n]
        }
        return .failure(FileProblem(message: "\(path) is larger than 1 MiB; a certificate chain is a few kilobytes"))
    }
}

extension HubConfiguration {
    /// `web.tls`: both files named, and loaded now, so that a certificate or key that cannot be served is a problem
    /// at its line (check-config says it; the hub does not start) rather than a failure at the first connection.
    static func readWebTLS(_ t: ConfigMap, directory: String, into web: inout WebSettings) {
        guard let certificate = t.text("certificate", required: true), let key = t.text("key", required: true) else {
            return
        }
        let tls = WebSettings.TLS(certificateFile: absolute(certificate, near: directory),
                                  keyFile: absolute(key, near: directory))
        if case .failure(let problem) = tls.load() { t[problem.key]?.problem(problem.message) }
        web.tls = tls
    }
}
