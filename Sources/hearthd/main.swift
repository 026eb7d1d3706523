// hearthd: the hub service a board runs.
import ArgumentParser
import HearthConfig
import HearthHub
import HearthMQTT
import Logging
#if canImport(Glibc)
import Glibc
#endif

let hardware = BoardHardware()

@main
struct HearthDaemon: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hearthd",
        abstract: "The Hearth hub: binds a board's hardware to smart-home devices and publishes them over MQTT.",
        subcommands: [Run.self, CheckConfig.self, Schema.self, SaveLoop.self],
        defaultSubcommand: Run.self)
}

struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the hub until SIGTERM or SIGINT.")

    @Option(name: .shortAndLong, help: "The hub configuration file.")
    var config: String = "/etc/hearth/hearth.yaml"

    @Option(help: "Keep state in this directory instead of the configuration's stateDirectory.")
    var state: String?

    @Option(help: ArgumentHelp(
        "Use this broker instead of the configuration's: HOST[:PORT] ([ADDRESS]:PORT for IPv6) or "
            + "mqtt://[USER[:PASSWORD]@]HOST[:PORT] (mqtts:// for TLS), as `hearth --broker` takes it.",
        valueName: "broker"))
    var broker: String?

    @Option(help: "trace, debug, info, notice, warning, error or critical (default: the configuration's, else info).")
    var logLevel: String?

    func validate() throws {
        if let broker {
            do throws(MQTTBrokerAddress.SyntaxError) {
                _ = try MQTTBrokerAddress(parsing: broker)
            } catch {
                throw ValidationError("--broker: \(error)")
            }
        }
        if let logLevel, Logger.Level(rawValue: logLevel) == nil {
            throw ValidationError("--log-level must be one of \(HubConfiguration.logLevels.joined(separator: ", "))")
        }
    }

    func run() async throws {
        let diagnostics = ConfigDiagnostics()
        let configured = HubConfiguration.load(file: config, diagnostics: diagnostics)?.logLevel
        let level = Logger.Level(rawValue: logLevel ?? configured ?? "info") ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "hearthd")
        let status = await HubDaemon.run(
            configFile: config,
            overrides: HubDaemon.Overrides(stateDirectory: state,
                                           broker: broker.flatMap { try? MQTTBrokerAddress(parsing: $0) }),
            hardware: hardware, logger: logger)
        if status != 0 { throw ExitCode(status) }
    }
}

struct CheckConfig: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config", abstract: "Check a configuration and print every problem, without starting anything.")

    @Argument(help: "The hub configuration file.")
    var file: String

    func run() throws {
        let report = HubDaemon.checkReport(configFile: file, hardware: hardware)
        for p in report.problems { print(p) }
        for w in report.warnings { print(w) }
        guard report.problems.isEmpty else {
            print("\(report.problems.count) problem(s)" + (report.warnings.isEmpty ? "" : ", \(report.warnings.count) warning(s)"))
            throw ExitCode(HubDaemon.configurationError)
        }
        print("\(file): OK" + (report.warnings.isEmpty ? "" : " (\(report.warnings.count) warning(s))"))
        for line in report.summary { print(line) }
    }
}

struct Schema: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the JSON Schema of hearth.yaml (config) or of a board file (board), for editors.",
        discussion: "The same tables the configuration is read with; docs/schema/ holds the printed files.")

    enum Kind: String, ExpressibleByArgument, CaseIterable { case config, board }

    @Argument(help: "config or board")
    var kind: Kind

    func run() {
        print(kind == .config ? ConfigurationSchema.config : ConfigurationSchema.board, terminator: "")
    }
}
