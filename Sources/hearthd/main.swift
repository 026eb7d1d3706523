// hearthd: the hub service a board runs.
import ArgumentParser
import HearthConfig
import HearthEngine
import HearthHub
import HearthMQTT
import HearthWeb
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
        subcommands: [Run.self, CheckConfig.self, Schema.self, Matter.self, Web.self, SaveLoop.self],
        defaultSubcommand: Run.self)
}

struct Run: AsyncParsableCommand {
    // Every command names itself: a name made from the type's name costs a reflection of it at every start.
    static let configuration = CommandConfiguration(
        commandName: "run", abstract: "Run the hub until SIGTERM or SIGINT.")

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
        HeapTrim.atStart()  // before the configuration's tree is allocated and freed
        let source = HubConfiguration.Source(file: config)
        let level = Logger.Level(rawValue: logLevel ?? source.logLevel ?? "info") ?? .info
        // The console's lines, and the same lines in the ring the web page's log view reads.
        let ring = LogRing()
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return MultiplexLogHandler([handler, RingLogHandler(ring: ring, label: label, level: level)])
        }
        let logger = Logger(label: "hearthd")
        let file = ConfigurationFile(path: config, hardware: hardware)
        let hub: Hub
        switch Hub.assemble(source, overrides: HubDaemon.Overrides(
            stateDirectory: state, broker: broker.flatMap { try? MQTTBrokerAddress(parsing: $0) }),
                            hardware: hardware, logger: logger) {
        case .failure(let failure):
            // A configuration saved from the web page that does not start after all: the last one that did goes back.
            if file.rollBack(logger: logger) { throw ExitCode(HubRestart.exitStatus) }
            throw ExitCode(failure.exitStatus)
        case .success(let h): hub = h
        }
        ring.redact(hub.secrets)
        if hub.web.enabled {
            do {
                try serveWebPage(hub, logger: logger, administration: HubAdministration(
                    configuration: file, restart: hub.restart, logs: ring))
            } catch {
                if file.rollBack(logger: logger) { throw ExitCode(HubRestart.exitStatus) }
                throw error
            }
        }
        file.started(logger: logger)
        let status = await hub.run()
        if status != 0 { throw ExitCode(status) }
    }

    /// Binds the web page's port (one taken is a configuration error: nothing runs) and prints the setup code while
    /// no admin password is set: to the console and the journal only, never over MQTT.
    func serveWebPage(_ hub: Hub, logger: Logger, administration: HubAdministration) throws {
        let options = hub.mqtt.client.options
        let server: WebServer
        do throws(WebStartError) {
            server = try WebServer.start(hub: hub, brokerAddress: "\(options.host):\(options.port)", logger: logger,
                                         administration: administration)
        } catch {
            logger.critical("web: \(error); nothing was started")
            throw ExitCode(HubDaemon.configurationError)
        }
        hub.add(WebService(server: server), named: "web")
        enableBackup(server, hub: hub, pendingMarker: administration.configuration.pendingPath)
        logger.info("web page on \(hub.web.tls == nil ? "http" : "https")://\(hub.web.listen):\(server.port)/")
        do throws(WebAccountsError) {
            if let code = try server.setupCode() {
                administration.logs.redact([code])
                logger.notice("""
                    web: no admin password is set. Open the page and set one with this one-time setup code: \(code) \
                    (`hearthd web setup-code` prints it again)
                    """)
            }
        } catch {
            logger.error("web: \(error)")
        }
    }
}

extension Run {
    /// Backup and restore on the page: this configuration file and the hub's state directory.
    func enableBackup(_ server: WebServer, hub: Hub, pendingMarker: String) {
        server.enableBackup(WebBackup(
            place: BackupPlace(configFile: config, stateDirectory: hub.stateDirectory, hardware: hardware,
                               pendingMarker: pendingMarker),
            restart: { [restart = hub.restart] in restart.request(reason: "a backup was restored from the web page") }))
    }
}

struct CheckConfig: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config",
        abstract: "Check a configuration and print every problem, without starting anything.")

    @Argument(help: "The hub configuration file.")
    var file: String

    func run() throws {
        let report = HubDaemon.checkReport(configFile: file, hardware: hardware)
        for p in report.problems { print(p) }
        for w in report.warnings { print(w) }
        guard report.problems.isEmpty else {
            print(
                "\(report.problems.count) problem(s)"
                    + (report.warnings.isEmpty ? "" : ", \(report.warnings.count) warning(s)"))
            throw ExitCode(HubDaemon.configurationError)
        }
        print("\(file): OK" + (report.warnings.isEmpty ? "" : " (\(report.warnings.count) warning(s))"))
        for line in report.summary { print(line) }
    }
}

struct Matter: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "matter", abstract: "The hub as a Matter node.",
        subcommands: [MatterCode.self, MatterFabrics.self, MatterOpenWindow.self, MatterRemove.self, MatterReset.self])
}

struct MatterCode: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "code",
        abstract: "Print the Matter pairing codes: the manual code, the QR payload and the QR code in text.",
        discussion: "Run it as the hub's user: the codes are kept in the state directory, readable by that user alone.")

    @Option(name: .shortAndLong, help: "The hub configuration file.")
    var config: String = "/etc/hearth/hearth.yaml"

    @Option(help: "The state directory instead of the configuration's stateDirectory.")
    var state: String?

    func run() throws {
        let settings: HubConfiguration
        switch MatterHub.configuration(file: config) {
        case .failure(let error):
            for p in error.problems { print(p) }
            throw ExitCode(HubDaemon.configurationError)
        case .success(let read): settings = read
        }
        do {
            let pairing = try MatterHub.pairing(settings.matter, stateDirectory: state ?? settings.stateDirectory)
            print(pairing.printable())
        } catch {
            print("hearthd: \(error)")
            throw ExitCode(HubDaemon.stateError)
        }
    }
}

struct Web: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "web", abstract: "The web page's accounts, run on the hub itself.",
        subcommands: [SetupCode.self, ResetPassword.self])

    struct Location: ParsableArguments {
        @Option(name: .shortAndLong, help: "The hub configuration file (its hub.stateDirectory holds the accounts).")
        var config: String = "/etc/hearth/hearth.yaml"

        @Option(help: "The state directory, instead of the configuration's.")
        var state: String?

        func accounts() throws -> WebAccounts {
            if let state { return WebAccounts(directory: state) }
            let diagnostics = ConfigDiagnostics()
            guard let configuration = HubConfiguration.load(file: config, diagnostics: diagnostics) else {
                for p in diagnostics.problems { print(p) }
                throw ExitCode(HubDaemon.configurationError)
            }
            return WebAccounts(directory: configuration.stateDirectory)
        }
    }

    struct SetupCode: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "setup-code", abstract: "Print the one-time code that sets the admin password on the web page."
        )
        @OptionGroup var location: Location

        func run() throws {
            let accounts = try location.accounts()
            let hasAdmin: Bool, code: String?
            do throws(WebAccountsError) {
                hasAdmin = try accounts.hasAdmin()
                code = try accounts.writtenSetupCode()
            } catch { print(error); throw ExitCode(1) }
            if hasAdmin {
                print("The admin password is set; `hearthd web reset-password` forgets it and makes a new setup code.")
            } else if let code {
                print(code)
            } else {
                print("No setup code yet: the hub writes one to \(accounts.setupCodeFile) when it starts.")
                throw ExitCode(1)
            }
        }
    }

    struct ResetPassword: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "reset-password",
            abstract: "Forget the web page's admin password and print a new setup code (viewers stay).")
        @OptionGroup var location: Location

        func run() throws {
            let accounts = try location.accounts()
            do throws(WebAccountsError) {
                let code = try accounts.resetAdmin()
                print(
                    "The admin password is forgotten and its sessions end. Set a new one on the page with this setup "
                        + "code:")
                print(code)
            } catch { print(error); throw ExitCode(1) }
        }
    }
}

struct Schema: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schema",
        abstract: "Print the JSON Schema of hearth.yaml (config) or of a board file (board), for editors.",
        discussion: "The same tables the configuration is read with; docs/schema/ holds the printed files.")

    enum Kind: String, ExpressibleByArgument, CaseIterable { case config, board }

    @Argument(help: "config or board")
    var kind: Kind

    func run() {
        print(kind == .config ? ConfigurationSchema.config : ConfigurationSchema.board, terminator: "")
    }
}

// `hearthd save-loop`: the state store's save path in a loop, for the power-loss test (hidden from --help). Here, not
// in a file of its own: a target with main.swift and @main must be one file for SwiftPM to parse it as a library.
/// Saves generation after generation of a home's state through the real `StateStore`, printing `saved N` once
/// each save has returned, until it is killed. `PowerLossTests` SIGKILLs it at random moments and checks that
/// what the next start finds is the last or the one-before-last generation, whole: a test of the save path
/// alone, without a broker or hardware, so 200 rounds cost seconds, not minutes.
struct SaveLoop: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "save-loop", abstract: "Save generations of a state in a loop until killed (power-loss test).",
        shouldDisplay: false)

    @Option(help: "The state directory.")
    var state: String

    @Option(help: "Devices in each generation (the file grows by about 200 bytes a device).")
    var devices: Int = 200

    func validate() throws {
        guard devices > 0 else { throw ValidationError("--devices must be at least 1") }
    }

    func run() throws {
        let store = StateStore(directory: state)
        let loaded = try store.load()
        for warning in loaded.warnings { say("warning \(warning)") }
        // The generation to go on from: the loaded one, whole (every device names the same generation).
        var generation = 0
        if let first = loaded.devices.values.first,
            let n = first.name.flatMap({ Int($0.split(separator: " ").last ?? "") })
        {
            generation = n
        }
        say("loaded \(generation)")
        while true {
            generation += 1
            var home: [String: SavedDevice] = [:]
            for d in 0..<devices {
                home["device-\(d)"] = SavedDevice(
                    name: "generation \(generation)", roomID: "room-\(d % 7)",
                    attributes: [
                        "OnOffLight": ["onOff": ["onOff": .bool(generation % 2 == 0), "startUpOnOff": .int(generation)]]
                    ])
            }
            try store.save(home)
            say("saved \(generation)")
        }
    }

    /// One line to stdout with one write(2): nothing is buffered when the kill comes.
    private func say(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
    }
}

// MARK: - Matter administration

// `hearthd matter fabrics | open-window | remove | reset`: the running hub's node administered through its control
// socket in the state directory (so run as the hub's user); `reset` also works with the hub stopped.

struct MatterLocation: ParsableArguments {
    @Option(name: .shortAndLong, help: "The hub configuration file.")
    var config: String = "/etc/hearth/hearth.yaml"

    @Option(help: "The state directory instead of the configuration's stateDirectory.")
    var state: String?

    func stateDirectory() throws -> String {
        if let state { return state }
        switch MatterHub.configuration(file: config) {
        case .failure(let error):
            for p in error.problems { print(p) }
            throw ExitCode(HubDaemon.configurationError)
        case .success(let read): return read.stateDirectory
        }
    }

    /// Sends a request to the running hub; prints why and exits when it cannot be done.
    func ask(_ request: MatterControlRequest) throws -> MatterControlResponse {
        let path = MatterControlClient.socketPath(stateDirectory: try stateDirectory())
        let response: MatterControlResponse
        do { response = try MatterControlClient.send(request, path: path) } catch {
            print("hearthd: \(error)")
            if case .hubNotRunning = error { throw ExitCode(MatterAdministrationExit.hubNotRunning) }
            throw ExitCode(HubDaemon.stateError)
        }
        if case .error(let message) = response {
            print("hearthd: \(message)")
            throw ExitCode(MatterAdministrationExit.refused)
        }
        return response
    }
}

/// The exit statuses of the administration commands besides success and the configuration's.
enum MatterAdministrationExit {
    /// The hub refused the request (no such fabric, a window already open…).
    static let refused: Int32 = 1
    /// EX_UNAVAILABLE: no hub listens on the state directory's control socket.
    static let hubNotRunning: Int32 = 69
}

struct MatterFabrics: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fabrics", abstract: "List the running hub's Matter fabrics (the ecosystems it is paired with).")

    @OptionGroup var location: MatterLocation

    func run() throws {
        guard case .fabrics(let fabrics) = try location.ask(.fabrics) else { return }
        if fabrics.isEmpty {
            print("The hub has no Matter fabric: pair it with the code `hearthd matter code` prints.")
            return
        }
        print("index  fabric id         vendor  node id           root key          label")
        for f in fabrics {
            let label = String(f.label.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? "?" : Character($0) })
            print(pad("\(f.index)", 5) + "  " + hex(f.fabricID, 16) + "  " + hex(UInt64(f.vendorID), 4) + "    "
                  + hex(f.nodeID, 16) + "  " + pad(f.rootFingerprint, 16) + "  " + label)
        }
    }
}

struct MatterOpenWindow: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "open-window",
        abstract: "Open a commissioning window on the running hub and print its one-time pairing codes.",
        discussion:
            "Another ecosystem pairs the hub with these codes while the window is open; the hub's own code is not used."
    )

    @OptionGroup var location: MatterLocation

    @Option(help: "How long the window stays open, in seconds (180…900).")
    var timeout: Int = MatterAdministration.defaultWindowSeconds

    func run() throws {
        guard case .window(let pairing, let seconds) = try location.ask(.openWindow(timeoutSeconds: timeout)) else {
            return
        }
        print(pairing.printable())
        print("The window closes in \(seconds) seconds, or when a controller has paired.")
    }
}

struct MatterRemove: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove", abstract: "Remove a fabric from the running hub (`hearthd matter fabrics` lists them).")

    @OptionGroup var location: MatterLocation

    @Argument(help: "The fabric's index.")
    var index: UInt8

    func run() throws {
        _ = try location.ask(.remove(index))
        print("Fabric \(index) removed: its controllers no longer reach the hub.")
    }
}

struct MatterReset: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reset",
        abstract: "Forget every Matter fabric, ACL entry and subscription; keep devices, names and the pairing code.",
        discussion: "Runs on the running hub, or on the state directory when the hub is stopped.")

    @OptionGroup var location: MatterLocation

    func run() throws {
        let stateDirectory = try location.stateDirectory()
        let path = MatterControlClient.socketPath(stateDirectory: stateDirectory)
        do {
            let response = try MatterControlClient.send(.reset, path: path)
            if case .error(let message) = response {
                print("hearthd: \(message)")
                throw ExitCode(MatterAdministrationExit.refused)
            }
        } catch MatterControlClient.Failure.hubNotRunning {
            do { try MatterHub.resetStoredFabrics(stateDirectory: stateDirectory) } catch {
                print("hearthd: \(error)")
                throw ExitCode(HubDaemon.stateError)
            }
        } catch let error as MatterControlClient.Failure {
            print("hearthd: \(error)")
            throw ExitCode(HubDaemon.stateError)
        }
        print("Every Matter fabric is forgotten; pair the hub again with the code `hearthd matter code` prints.")
    }
}

private func pad(_ text: String, _ width: Int) -> String {
    text + String(repeating: " ", count: max(0, width - text.count))
}

private func hex(_ value: UInt64, _ digits: Int) -> String {
    let text = String(value, radix: 16, uppercase: true)
    return String(repeating: "0", count: max(0, digits - text.count)) + text
}
