import ArgumentParser
import HearthKit
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

    @Option(
        name: .customLong("ca-file"),
        help: ArgumentHelp(
            "PEM file of the certificate authorities to trust for the broker's certificate (turns TLS on).",
            valueName: "file"))
    var caFile: String?

    @Option(name: .long, help: ArgumentHelp("PEM client certificate, for brokers that ask for one (with --key).",
                                            valueName: "file"))
    var cert: String?

    @Option(name: .long, help: ArgumentHelp("PEM private key of --cert (unencrypted).", valueName: "file"))
    var key: String?

    @Option(name: .customLong("password-file"), help: ArgumentHelp(
        "A file whose first line is the MQTT password (as hearthd's passwordFile).", valueName: "file"))
    var passwordFile: String?

    @Flag(
        name: .long,
        help: "TLS: accept a broker certificate whose host name does not match (like mosquitto_pub --insecure).")
    var insecure = false

    @Option(
        name: .long,
        help: ArgumentHelp("How long to wait for the broker and the hub, in seconds.", valueName: "seconds"))
    var timeout: Double = 5

    @Flag(name: .long, help: "Print the hub's raw JSON (documents, responses) instead of text, for scripts.")
    var json = false

    func validate() throws {
        guard timeout > 0, timeout <= 86_400 else { throw ValidationError("--timeout must be more than 0 seconds") }
        if cert != nil && key == nil { throw ValidationError("--cert needs --key") }
        if key != nil && cert == nil { throw ValidationError("--key needs --cert") }
        if let problem = Home.problem(withPrefix: prefix) {
            throw ValidationError("--prefix '\(prefix)' cannot be used: \(problem)")
        }
        if let hub = resolvedHub, let problem = Home.problem(withID: hub) {
            throw ValidationError("hub id '\(hub)' cannot be used: \(problem)")
        }
        if password != nil && passwordFile != nil {
            throw ValidationError("give --password or --password-file, not both")
        }
        _ = try address()
    }

    static func environment(_ name: String) -> String? {
        guard let value = getenv(name) else { return nil }
        let text = String(cString: value)
        return text.isEmpty ? nil : text
    }

    var resolvedHub: String? { hub ?? Self.environment("HEARTH_HUB") }

    /// TLS asked for by a flag (the broker's URL may ask for it too: `mqtts://`).
    var tlsFlags: Bool { tls || caFile != nil || cert != nil || key != nil || insecure }

    var usesTLS: Bool { tlsFlags || ((try? BrokerAddress(parsing: brokerText))?.requestsTLS ?? false) }

    var timeoutText: String {
        timeout == timeout.rounded() && timeout < 1e9 ? "\(Int(timeout)) s" : "\(timeout) s"
    }

    /// --broker, $HEARTH_BROKER or the default, as given.
    var brokerText: String { broker ?? Self.environment("HEARTH_BROKER") ?? "127.0.0.1" }

    /// The broker, parsed by HearthKit (the same rules and words as `Home.connect(broker:)`).
    func address() throws -> BrokerAddress {
        do throws(BrokerAddress.ParseError) {
            return try BrokerAddress(parsing: brokerText, tls: tlsFlags)
        } catch {
            throw ValidationError(error.message)
        }
    }

    /// How HearthKit connects: credentials from the flags, else the broker URL, else the environment.
    func homeOptions() throws -> Home.Options {
        let address = try address()
        let username = username ?? address.username ?? Self.environment("HEARTH_USERNAME")
        let password = password ?? address.password ?? (passwordFile == nil ? Self.environment("HEARTH_PASSWORD") : nil)
        let tls = usesTLS ? Home.TLSOptions(caFile: caFile, certificateFile: cert, keyFile: key,
                                            skipsHostnameVerification: insecure) : nil
        return Home.Options(broker: brokerText, prefix: prefix, username: username, password: password,
                            passwordFile: passwordFile, tls: tls,
                            timeout: .milliseconds(Int64((timeout * 1000).rounded())))
    }

    var brokerDescription: String {
        guard let address = try? address() else { return broker ?? "?" }
        return address.description
    }
}
