import HearthContract
import HearthJSON
import ArgumentParser
import HearthMQTT
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The options every subcommand takes: where the broker is, how to log in, which hub, how long to wait.
struct GlobalOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp(
        "The MQTT broker as HOST[:PORT] (IPv6 as [ADDR]:PORT) or as a URL, mqtt://[USER[:PASSWORD]@]HOST[:PORT] "
            + "(mqtts:// for TLS); default $HEARTH_BROKER, else 127.0.0.1:1883 (8883 with TLS).",
        valueName: "host:port"))
    var broker: String?

    @Option(name: .long, help: ArgumentHelp(
        "The hub's id; default $HEARTH_HUB, else the only hub online under the prefix.", valueName: "id"))
    var hub: String?

    @Option(name: .long, help: ArgumentHelp("The topic prefix the hubs publish under.", valueName: "prefix"))
    var prefix: String = "hearth"

    @Option(name: .long, help: ArgumentHelp("MQTT user name; default $HEARTH_USERNAME.", valueName: "name"))
    var username: String?

    @Option(name: .long, help: ArgumentHelp(
        "MQTT password; default $HEARTH_PASSWORD (safer: other users can see command lines).",
        valueName: "password"))
    var password: String?

    @Flag(name: .long, help: "Use TLS, trusting the system's certificate authorities (implied by the options below).")
    var tls = false

    @Option(name: .customLong("ca-file"), help: ArgumentHelp(
        "PEM file of the certificate authorities to trust for the broker's certificate (turns TLS on).", valueName: "file"))
    var caFile: String?

    @Option(name: .long, help: ArgumentHelp("PEM client certificate, for brokers that ask for one (with --key).",
                                            valueName: "file"))
    var cert: String?

    @Option(name: .long, help: ArgumentHelp("PEM private key of --cert (unencrypted).", valueName: "file"))
    var key: String?

    @Flag(name: .long, help: "TLS: accept a broker certificate whose host name does not match (like mosquitto_pub --insecure).")
    var insecure = false

    @Option(name: .long, help: ArgumentHelp("How long to wait for the broker and the hub, in seconds.", valueName: "seconds"))
    var timeout: Double = 5

    @Flag(name: .long, help: "Print the hub's raw JSON (documents, responses) instead of text, for scripts.")
    var json = false

    func validate() throws {
        guard timeout > 0, timeout <= 86_400 else { throw ValidationError("--timeout must be more than 0 seconds") }
        if cert != nil && key == nil { throw ValidationError("--cert needs --key") }
        if key != nil && cert == nil { throw ValidationError("--key needs --cert") }
        if prefix.split(separator: "/", omittingEmptySubsequences: false).contains(where: \.isEmpty)
            || prefix.contains(where: { $0 == "+" || $0 == "#" }) || prefix.utf8.contains(0) {
            throw ValidationError("--prefix '\(prefix)' must be topic levels separated by '/', none empty, without '+' or '#'")
        }
        if let hub = resolvedHub, let problem = TopicScheme.problem(withLevel: hub) {
            throw ValidationError("hub id '\(hub)' cannot be used: \(problem)")
        }
        _ = try endpoint()
    }

    static func environment(_ name: String) -> String? {
        guard let value = getenv(name) else { return nil }
        let text = String(cString: value)
        return text.isEmpty ? nil : text
    }

    var resolvedHub: String? { hub ?? Self.environment("HEARTH_HUB") }

    var usesTLS: Bool { tls || caFile != nil || cert != nil || key != nil || insecure || brokerURL?.scheme == "mqtts" }

    var timeoutText: String {
        timeout == timeout.rounded() && timeout < 1e9 ? "\(Int(timeout)) s" : "\(timeout) s"
    }

    /// --broker, $HEARTH_BROKER or the default, as given.
    var brokerText: String { broker ?? Self.environment("HEARTH_BROKER") ?? "127.0.0.1" }

    /// The broker as given, for messages: a password in a URL is masked.
    var displayedBrokerText: String {
        guard let url = brokerURL, url.password != nil, let at = brokerText.lastIndex(of: "@"),
              let separator = brokerText.firstRange(of: "://") else { return brokerText }
        let credentials = brokerText[separator.upperBound..<at]
        guard let colon = credentials.firstIndex(of: ":") else { return brokerText }
        return String(brokerText[..<colon]) + ":***" + String(brokerText[at...])
    }

    /// The parts of a broker given as a URL (what Home Assistant and most MQTT tools write): the scheme and
    /// any user name and password; nil when it is given as HOST[:PORT].
    var brokerURL: (scheme: String, username: String?, password: String?, address: Substring)? {
        let text = brokerText
        guard let separator = text.firstRange(of: "://") else { return nil }
        let scheme = text[..<separator.lowerBound].lowercased()
        var rest = text[separator.upperBound...]
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        var username: String?, password: String?
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
        return (scheme, username, password, rest)
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

    /// The broker's host and port, from --broker, $HEARTH_BROKER or the default.
    func endpoint() throws -> (host: String, port: Int) {
        let defaultPort = usesTLS ? 8883 : 1883
        let text = displayedBrokerText
        var host = Substring(text)
        if let url = brokerURL {
            guard url.scheme == "mqtt" || url.scheme == "mqtts" || url.scheme == "tcp" || url.scheme == "ssl" else {
                throw ValidationError("broker '\(text)': '\(url.scheme)://' is not supported; "
                                      + "use mqtt://HOST:PORT, or mqtts:// for TLS (MQTT over WebSockets is not spoken)")
            }
            guard !url.address.contains("/") else {
                throw ValidationError("broker '\(text)': a broker URL has no path; write mqtt://HOST:PORT")
            }
            host = url.address
        }
        var portText: Substring?
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else {
                throw ValidationError("broker '\(text)': an IPv6 address needs a closing ']'")
            }
            let rest = host[host.index(after: close)...]
            host = host[host.index(after: host.startIndex)..<close]
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else { throw ValidationError("broker '\(text)': expected ':PORT' after ']'") }
                portText = rest.dropFirst()
            }
        } else if let colon = host.lastIndex(of: ":") {
            guard host.firstIndex(of: ":") == colon else {
                throw ValidationError("broker '\(text)': write an IPv6 address as [ADDRESS]:PORT")
            }
            portText = host[host.index(after: colon)...]
            host = host[..<colon]
        }
        guard !host.isEmpty else { throw ValidationError("broker '\(text)': the host is missing") }
        var port = defaultPort
        if let portText {
            guard let p = Int(portText), (1...65535).contains(p) else {
                throw ValidationError("broker '\(text)': the port must be a number in 1...65535")
            }
            port = p
        }
        return (String(host), port)
    }

    /// Connection options for the MQTT client.
    func connectOptions() throws -> MQTTConnectOptions {
        let (host, port) = try endpoint()
        var options = MQTTConnectOptions(host: host, port: port)
        options.username = username ?? brokerURL?.username ?? Self.environment("HEARTH_USERNAME")
        options.password = password ?? brokerURL?.password ?? Self.environment("HEARTH_PASSWORD")
        if usesTLS {
            options.tls = MQTTConnectOptions.TLS(caFile: caFile, certificateFile: cert, keyFile: key, verifyPeer: true,
                                                 skipsHostnameVerification: insecure)
        }
        return options
    }

    var brokerDescription: String {
        guard let (host, port) = try? endpoint() else { return broker ?? "?" }
        return host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}
