/// A broker address as people and other MQTT tools write it, parsed one way for every Hearth program (`hearth
/// --broker`, `hearthd run --broker`):
///
/// - `HOST` or `HOST:PORT`; an IPv6 address in brackets, `[ADDRESS]` or `[ADDRESS]:PORT` (a bare IPv6 address
///   is refused: its last group would read as a port);
/// - a URL, `mqtt://[USER[:PASSWORD]@]HOST[:PORT][/]`, with `mqtts://` for TLS (`tcp://` and `ssl://` are
///   accepted as their aliases), user name and password percent-decoded as URLs escape them.
///
/// Written by hand: the URL types at hand (Foundation's) are not available to the daemon, and this is the small
/// subset brokers use. A password is never part of an error's text.
public struct MQTTBrokerAddress: Sendable, Hashable {
    /// The host name or address, without brackets.
    public var host: String
    /// The port, when one was given; see ``port(usingTLS:)``.
    public var port: Int?
    /// `mqtt`, `mqtts`, `tcp` or `ssl` (lowercased) when written as a URL.
    public var scheme: String?
    public var username: String?
    public var password: String?

    /// Whether the address itself asks for TLS (`mqtts://`, `ssl://`).
    public var usesTLS: Bool { scheme == "mqtts" || scheme == "ssl" }

    /// The port given, else MQTT's registered one: 8883 with TLS, 1883 without.
    public func port(usingTLS tls: Bool) -> Int { port ?? (tls ? 8883 : 1883) }

    /// A problem with an address, naming the address as given (password masked) and the fix.
    public struct SyntaxError: Error, Sendable, Hashable, CustomStringConvertible {
        /// The address as given, with any password replaced by `***`.
        public var address: String
        public var problem: String
        public var description: String { "broker '\(address)': \(problem)" }
    }

    public init(host: String, port: Int? = nil, scheme: String? = nil, username: String? = nil,
                password: String? = nil) {
        self.host = host
        self.port = port
        self.scheme = scheme
        self.username = username
        self.password = password
    }

    public init(parsing text: String) throws(SyntaxError) {
        let shown = Self.masked(text)
        func refuse(_ problem: String) -> SyntaxError { SyntaxError(address: shown, problem: problem) }
        var address = Substring(text)
        if let separator = text.firstRange(of: "://") {
            let scheme = text[..<separator.lowerBound].lowercased()
            guard ["mqtt", "mqtts", "tcp", "ssl"].contains(scheme) else {
                throw refuse("'\(scheme)://' is not supported; use mqtt://HOST:PORT, or mqtts:// for TLS "
                             + "(MQTT over WebSockets is not spoken)")
            }
            self.scheme = scheme
            var rest = text[separator.upperBound...]
            if rest.hasSuffix("/") { rest = rest.dropLast() }
            if let at = rest.lastIndex(of: "@") {
                let credentials = rest[..<at]
                if let colon = credentials.firstIndex(of: ":") {
                    username = Self.percentDecoded(credentials[..<colon])
                    password = Self.percentDecoded(credentials[credentials.index(after: colon)...])
                } else {
                    username = Self.percentDecoded(credentials)
                }
                rest = rest[rest.index(after: at)...]
            }
            guard !rest.contains("/") else { throw refuse("a broker URL has no path; write mqtt://HOST:PORT") }
            address = rest
        }
        var portText: Substring?
        if address.hasPrefix("[") {
            guard let close = address.firstIndex(of: "]") else { throw refuse("an IPv6 address needs a closing ']'") }
            let rest = address[address.index(after: close)...]
            address = address[address.index(after: address.startIndex)..<close]
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else { throw refuse("expected ':PORT' after ']'") }
                portText = rest.dropFirst()
            }
        } else if let colon = address.lastIndex(of: ":") {
            guard address.firstIndex(of: ":") == colon else {
                throw refuse("write an IPv6 address as [ADDRESS]:PORT")
            }
            portText = address[address.index(after: colon)...]
            address = address[..<colon]
        }
        guard !address.isEmpty else { throw refuse("the host is missing") }
        if let portText {
            guard let p = Int(portText), (1...65535).contains(p) else {
                throw refuse("the port must be a number in 1...65535")
            }
            port = p
        }
        host = String(address)
    }

    /// `text` with the password of a URL replaced by `***`, for messages and logs.
    public static func masked(_ text: String) -> String {
        guard let separator = text.firstRange(of: "://"), let at = text.lastIndex(of: "@"),
              at > separator.upperBound else { return text }
        let credentials = text[separator.upperBound..<at]
        guard let colon = credentials.firstIndex(of: ":") else { return text }
        return String(text[..<colon]) + ":***" + String(text[at...])
    }

    /// `%40` → `@` and so on; an invalid escape stays as written.
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
