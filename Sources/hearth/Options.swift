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
        if let problem = TopicScheme.problem(withPrefix: prefix) {
            throw ValidationError("--prefix '\(prefix)' cannot be used: \(problem)")
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

    var usesTLS: Bool { tls || caFile != nil || cert != nil || key != nil || insecure || brokerAddress?.usesTLS == true }

    var timeoutText: String {
        timeout == timeout.rounded() && timeout < 1e9 ? "\(Int(timeout)) s" : "\(timeout) s"
    }

    /// --broker, $HEARTH_BROKER or the default, as given.
    var brokerText: String { broker ?? Self.environment("HEARTH_BROKER") ?? "127.0.0.1" }

    /// The broker, parsed as every Hearth program parses it (nil when it cannot be; `validate()` says why).
    var brokerAddress: MQTTBrokerAddress? { try? MQTTBrokerAddress(parsing: brokerText) }

    /// The broker's host and port, from --broker, $HEARTH_BROKER or the default.
    func endpoint() throws -> (host: String, port: Int) {
        do throws(MQTTBrokerAddress.SyntaxError) {
            let address = try MQTTBrokerAddress(parsing: brokerText)
            return (address.host, address.port(usingTLS: usesTLS))
        } catch {
            throw ValidationError(error.description)
        }
    }

    /// Connection options for the MQTT client.
    func connectOptions() throws -> MQTTConnectOptions {
        let (host, port) = try endpoint()
        var options = MQTTConnectOptions(host: host, port: port)
        options.username = username ?? brokerAddress?.username ?? Self.environment("HEARTH_USERNAME")
        options.password = password ?? brokerAddress?.password ?? Self.environment("HEARTH_PASSWORD")
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
