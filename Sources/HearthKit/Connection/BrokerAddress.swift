// Where the broker is, as people write it: HOST[:PORT], [IPv6]:PORT, or a URL such as
// mqtt://USER:PASSWORD@HOST:PORT (mqtts:// for TLS). Parsed by HearthMQTT's `MQTTBrokerAddress`, the one parser
// `hearthd --broker`, the `hearth` CLI and `Home.connect(broker:)` share, so all accept and refuse exactly the same
// text with the same words; this adds the default port and a password-free text for messages.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HearthMQTT

/// A broker address, parsed.
public struct BrokerAddress: Sendable, Hashable, CustomStringConvertible {
    /// The text as given, with any password masked (`mqtt://user:***@host`): safe for messages.
    public var displayText: String
    public var host: String
    public var port: Int
    /// The URL's scheme (`mqtt`, `mqtts`, `tcp`, `ssl`), or nil for HOST[:PORT].
    public var scheme: String?
    /// The user name and password written in a URL (percent-decoded).
    public var username: String?
    public var password: String?

    /// Whether the address itself asks for TLS (`mqtts://`, `ssl://`).
    public var requestsTLS: Bool { scheme == "mqtts" || scheme == "ssl" }

    /// `host:port`, with an IPv6 host in brackets.
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Why a broker address cannot be used; `message` names the text and says what to write instead.
    public struct ParseError: Error, Sendable, Hashable, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    /// Parses `text`. Without a port the default is 1883, or 8883 when `tls` is true or the URL is `mqtts://`.
    public init(parsing text: String, tls: Bool = false) throws(ParseError) {
        let parsed: MQTTBrokerAddress
        do throws(MQTTBrokerAddress.SyntaxError) {
            parsed = try MQTTBrokerAddress(parsing: text)
        } catch {
            throw ParseError(message: error.description)
        }
        displayText = MQTTBrokerAddress.masked(text)
        host = parsed.host
        port = parsed.port(usingTLS: tls || parsed.usesTLS)
        scheme = parsed.scheme
        username = parsed.username
        password = parsed.password
    }
}

#if canImport(Glibc)
private let systemRead = Glibc.read
#elseif canImport(Darwin)
private let systemRead = Darwin.read
#endif

/// Reads an MQTT password kept in a file (as `hearthd`'s `passwordFile` does): the first line, without its line end.
/// Plain POSIX reads, since the library does not use Foundation.
enum PasswordFile {
    static func read(_ path: String) throws(HomeError) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let reason = String(cString: strerror(errno))
            throw HomeError(code: .invalidArgument, status: .failure,
                            message: "cannot read the password file '\(path)': \(reason)")
        }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count <= 65_536 {
            let n = buffer.withUnsafeMutableBytes { systemRead(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                let reason = String(cString: strerror(errno))
                throw HomeError(code: .invalidArgument, status: .failure,
                                message: "cannot read the password file '\(path)': \(reason)")
            }
            if n == 0 { break }
            bytes.append(contentsOf: buffer[..<n])
        }
        let line =
            bytes.split(separator: UInt8(ascii: "\n"), maxSplits: 1, omittingEmptySubsequences: false).first ?? []
        var text = String(decoding: line, as: UTF8.self)
        if text.hasSuffix("\r") { text.removeLast() }
        guard !text.isEmpty else {
            throw HomeError(code: .invalidArgument, status: .failure,
                            message: "the password file '\(path)' is empty; write the password on its first line")
        }
        return text
    }
}
