// Where the broker is, as people write it: HOST[:PORT], [IPv6]:PORT, or a URL such as
// mqtt://USER:PASSWORD@HOST:PORT (mqtts:// for TLS). The `hearth` CLI's --broker and `Home.connect(broker:)` read it
// here, so both accept and refuse exactly the same text with the same words.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
        let url = Self.urlParts(text)
        scheme = url?.scheme
        username = url?.username
        password = url?.password
        displayText = Self.masked(text, hasPassword: url?.password != nil)
        let shown = displayText
        let usesTLS = tls || url?.scheme == "mqtts" || url?.scheme == "ssl"
        var rest = Substring(text)
        if let url {
            guard ["mqtt", "mqtts", "tcp", "ssl"].contains(url.scheme) else {
                throw ParseError(message: "broker '\(shown)': '\(url.scheme)://' is not supported; "
                    + "use mqtt://HOST:PORT, or mqtts:// for TLS (MQTT over WebSockets is not spoken)")
            }
            guard !url.address.contains("/") else {
                throw ParseError(message: "broker '\(shown)': a broker URL has no path; write mqtt://HOST:PORT")
            }
            rest = url.address
        }
        var portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else {
                throw ParseError(message: "broker '\(shown)': an IPv6 address needs a closing ']'")
            }
            let after = rest[rest.index(after: close)...]
            rest = rest[rest.index(after: rest.startIndex)..<close]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw ParseError(message: "broker '\(shown)': expected ':PORT' after ']'") }
                portText = after.dropFirst()
            }
        } else if let colon = rest.lastIndex(of: ":") {
            guard rest.firstIndex(of: ":") == colon else {
                throw ParseError(message: "broker '\(shown)': write an IPv6 address as [ADDRESS]:PORT")
            }
            portText = rest[rest.index(after: colon)...]
            rest = rest[..<colon]
        }
        guard !rest.isEmpty else { throw ParseError(message: "broker '\(shown)': the host is missing") }
        var port = usesTLS ? 8883 : 1883
        if let portText {
            guard let p = Int(portText), (1...65535).contains(p) else {
                throw ParseError(message: "broker '\(shown)': the port must be a number in 1...65535")
            }
            port = p
        }
        host = String(rest)
        self.port = port
    }

    /// The parts of a broker given as a URL (what Home Assistant and most MQTT tools write): the scheme and
    /// any user name and password; nil when it is given as HOST[:PORT].
    static func urlParts(_ text: String) -> (scheme: String, username: String?, password: String?, address: Substring)? {
        guard let separator = text.firstRange(of: "://") else { return nil }
        let scheme = text[..<separator.lowerBound].lowercased()
        var rest = text[separator.upperBound...]
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        var username: String?, password: String?
        if let at = rest.lastIndex(of: "@") {
            let credentials = rest[..<at]
            if let colon = credentials.firstIndex(of: ":") {
                username = percentDecoded(credentials[..<colon])
                password = percentDecoded(credentials[credentials.index(after: colon)...])
            } else {
                username = percentDecoded(credentials)
            }
            rest = rest[rest.index(after: at)...]
        }
        return (scheme, username, password, rest)
    }

    /// The text with a URL's password replaced by `***`.
    static func masked(_ text: String, hasPassword: Bool) -> String {
        guard hasPassword, let at = text.lastIndex(of: "@"), let separator = text.firstRange(of: "://") else { return text }
        let credentials = text[separator.upperBound..<at]
        guard let colon = credentials.firstIndex(of: ":") else { return text }
        return String(text[..<colon]) + ":***" + String(text[at...])
    }

    /// `%40` → `@` and so on, as URLs escape user names and passwords; invalid escapes stay as written.
    static func percentDecoded(_ text: Substring) -> String {
        var bytes: [UInt8] = []
        var utf8 = text.utf8[...]
        while let b = utf8.popFirst() {
            if b == UInt8(ascii: "%"), utf8.count >= 2,
               let value = UInt8(String(decoding: utf8.prefix(2), as: UTF8.self), radix: 16) {
                bytes.append(value)
                utf8 = utf8.dropFirst(2)
            } else {
                bytes.append(b)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
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
        let line = bytes.split(separator: UInt8(ascii: "\n"), maxSplits: 1, omittingEmptySubsequences: false).first ?? []
        var text = String(decoding: line, as: UTF8.self)
        if text.hasSuffix("\r") { text.removeLast() }
        guard !text.isEmpty else {
            throw HomeError(code: .invalidArgument, status: .failure,
                            message: "the password file '\(path)' is empty; write the password on its first line")
        }
        return text
    }
}
