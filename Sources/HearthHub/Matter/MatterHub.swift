// The hub as a Matter node: its pairing values (made at the first start and kept in `<stateDirectory>/matter/`, a
// directory only the hub's user may enter), the node's storage beside them, BasicInformation from the hub's
// configuration, the UDP port and the interfaces it announces on, and the service that runs the node. While the
// node has no fabric, the pairing codes are printed to the console (and so the journal): the only place the passcode
// goes. `hearthd matter code` reads the same file.

#if canImport(Glibc)
import Glibc
#endif
public import HearthConfig
import HearthCrypto
import HearthEngine
import HearthMatter
import HearthMatterBridge
import HearthSync
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle

/// A hub's pairing values: the passcode and the discriminator a commissioner needs.
public struct MatterPairing: Sendable, Equatable {
    public var passcode: UInt32
    public var discriminator: UInt16
    /// The test vendor and product ids of a development device.
    public static let vendorID: UInt16 = 0xFFF1
    public static let productID: UInt16 = 0x8000

    public init(passcode: UInt32, discriminator: UInt16) {
        self.passcode = passcode
        self.discriminator = discriminator
    }

    var payload: SetupPayload {
        SetupPayload(
            vendorID: Self.vendorID, productID: Self.productID, discriminator: discriminator, passcode: passcode)
    }

    /// The manual pairing code grouped as people read it: 4-3-4 digits.
    public var manualCode: String {
        let digits = Array(payload.manualPairingCode)
        guard digits.count == 11 else { return String(digits) }
        return String(digits[0..<4]) + "-" + String(digits[4..<7]) + "-" + String(digits[7...])
    }

    /// The QR code's payload, `MT:…`.
    public var qrPayload: String { payload.qrCode }

    /// What the hub prints while it can be paired: the manual code, the QR payload and the QR drawn in text.
    public func printable() -> String {
        var text = """
            Matter: pair this hub with the manual code \(manualCode) or the QR code \(qrPayload)
            (a development device: vendor 0x\(String(Self.vendorID, radix: 16, uppercase: true)), \
            product 0x\(String(Self.productID, radix: 16, uppercase: true)))
            """
        if let symbol = try? QRCodeSymbol(encoding: qrPayload) { text += "\n" + symbol.terminalText() }
        return text
    }

    /// The file's text: one `key value` per line.
    var fileText: String { "passcode \(passcode)\ndiscriminator \(discriminator)\n" }

    init?(fileText: String) {
        var passcode: UInt32?, discriminator: UInt16?
        for line in fileText.split(separator: "\n") {
            let parts = line.split(separator: " ")
            guard parts.count == 2 else { continue }
            if parts[0] == "passcode" { passcode = UInt32(parts[1]) }
            if parts[0] == "discriminator" { discriminator = UInt16(parts[1]) }
        }
        guard let passcode, SetupPasscode.isValid(passcode), let discriminator,
            discriminator <= SetupDiscriminator.maximum
        else { return nil }
        self.init(passcode: passcode, discriminator: discriminator)
    }
}

/// Where a hub keeps its Matter state, and reading and making it.
public enum MatterHub {
    /// Why the Matter state could not be used.
    public struct StateError: Error, Sendable, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    /// The configuration as far as `hearthd matter code` needs it (the state directory and the `matter:` section).
    public static func configuration(file: String) -> Result<HubConfiguration, ConfigError> {
        let diagnostics = ConfigDiagnostics()
        let source = HubConfiguration.Source(file: file, diagnostics: diagnostics)
        guard let root = source.root, let config = HubConfiguration.readPartially(root, diagnostics: diagnostics),
              diagnostics.problems.isEmpty else {
            return .failure(ConfigError(diagnostics.problems))
        }
        return .success(config)
    }

    /// `<stateDirectory>/matter`.
    public static func directory(stateDirectory: String) -> String { stateDirectory + "/matter" }

    /// The pairing values: the configuration's when it gives them, else the file's, else new random ones written
    /// to the file (mode 0600, its directory 0700).
    public static func pairing(_ settings: MatterSettings, stateDirectory: String) throws(StateError) -> MatterPairing {
        let directory = directory(stateDirectory: stateDirectory)
        try makePrivateDirectory(directory)
        let file = directory + "/pairing"
        var pairing: MatterPairing
        if let text = try readFile(file) {
            guard let stored = MatterPairing(fileText: text) else {
                throw StateError(
                    message: "\(file) does not hold a valid passcode and discriminator: repair or remove it")
            }
            pairing = stored
        } else {
            do {
                pairing = MatterPairing(passcode: try SetupPasscode.random(from: SecureRandom.bytes),
                                        discriminator: try SetupDiscriminator.random(from: SecureRandom.bytes))
            } catch {
                throw StateError(message: "no random pairing values: \(error)")
            }
            try writePrivateFile(file, pairing.fileText)
        }
        if let passcode = settings.passcode { pairing.passcode = UInt32(passcode) }
        if let discriminator = settings.discriminator { pairing.discriminator = UInt16(discriminator) }
        return pairing
    }

    /// The node's service for a hub, ready to run; nil with the reason logged when its state cannot be used.
    static func service(_ config: HubConfiguration, home: Home, door: any BridgeDoor, logger: Logger) -> MatterService?
    {
        let pairing: MatterPairing
        do { pairing = try Self.pairing(config.matter, stateDirectory: config.stateDirectory) } catch {
            logger.critical("matter: \(error)")
            return nil
        }
        let storage = FileNodeStorage(directory: directory(stateDirectory: config.stateDirectory))
        // The hub's own clock, so that the node's times are on the engine's timeline. A real one (the daemon's home
        // runs on CLOCK_MONOTONIC), as the node's timers run on its event loop.
        let clock = home.clock
        let interfaces = config.matter.interfaces.isEmpty ? nonLoopbackInterfaces() : config.matter.interfaces
        let core: MatterNodeCore
        do {
            let attestation = try DeviceAttestation.development(storage: storage)
            let basic = BasicInformationConfiguration(
                vendorName: "Hearth", vendorID: MatterPairing.vendorID, productName: "Hearth hub",
                productID: MatterPairing.productID, serialNumber: String(config.hubID.prefix(32)),
                uniqueID: String(("hearth-" + config.hubID).prefix(32)), productLabel: String(config.hubID.prefix(64)))
            let configuration = MatterNodeConfiguration(
                basicInformation: basic, networkInterfaces: { interfaceInfo(interfaces) },
                initialDataVersion: UInt32.random(in: 0...UInt32.max))
            let started = clock.now
            core = try MatterNodeCore(configuration: configuration, storage: storage, keys: P256OperationalKeyFactory(),
                                      verifier: MatterCertificateVerifier(), attestation: attestation,
                                      started: started, now: { clock.now })
        } catch {
            logger.critical(
                """
                matter: the node's state in \(directory(stateDirectory: config.stateDirectory)) cannot be used: \(error)
                """)
            return nil
        }
        // Every device of the hub on the node, as a bridge (docs/matter.md, "The bridge").
        let bridge: MatterBridge
        var peers: PeerBridge?
        do {
            let numbers = try EndpointNumbers(storage: storage)
            bridge = MatterBridge(home: home, door: door, dataModel: core.dataModel, numbers: numbers,
                                  hubID: config.hubID, log: { logger.notice("\($0)") })
            try bridge.start()
            // The peers' devices too (docs/matter.md, "Bridging the home"), numbered from the same table.
            if config.matter.bridge == .home {
                peers = PeerBridge(registry: home.registry, door: door, dataModel: core.dataModel, numbers: numbers,
                                   log: { logger.notice("\($0)") })
            }
        } catch {
            logger.critical("matter: the bridge's endpoint numbers cannot be kept: \(error)")
            return nil
        }
        let verifier: PASEVerifier
        do {
            verifier = try PASEVerifier.compute(
                passcode: pairing.passcode, salt: try SecureRandom.bytes(32), iterations: 1000)
        } catch {
            logger.critical("matter: the PASE verifier cannot be made: \(error)")
            return nil
        }
        var addresses: [SocketAddress] = []
        if let any6 = try? SocketAddress(ipAddress: "::", port: config.matter.port) { addresses.append(any6) }
        var generator = SystemRandomNumberGenerator()
        let options = MatterNodeOptions(
            addresses: addresses, announceInterfaces: interfaces,
            hostLabel: MatterServiceNames.randomHostLabel(using: &generator), port: UInt16(config.matter.port),
            discriminator: pairing.discriminator, verifier: verifier, vendorID: MatterPairing.vendorID,
            productID: MatterPairing.productID, deviceName: String(config.hubID.prefix(32)))
        let node = MatterNode(core: core, options: options, eventLoop: MultiThreadedEventLoopGroup.singleton.next(),
                              clock: clock, log: { logger.notice("\($0)") })
        return MatterService(node: node, bridge: bridge, peers: peers, pairing: pairing, logger: logger,
                             controlSocket: MatterControlClient.socketPath(stateDirectory: config.stateDirectory))
    }

    /// Every interface with an address but loopback, by name.
    static func nonLoopbackInterfaces() -> [String] {
        var names: [String] = []
        for device in (try? System.enumerateDevices()) ?? [] where device.address != nil && device.name != "lo" {
            if !names.contains(device.name) { names.append(device.name) }
        }
        return names
    }

    /// The interfaces as GeneralDiagnostics shows them: name, up or not, MAC address.
    static func interfaceInfo(_ names: [String]) -> [NetworkInterfaceInfo] {
        names.map { name in
            let mac = (try? readFile("/sys/class/net/\(name)/address")).flatMap { $0 }.map { text in
                text.split(separator: ":").compactMap { UInt8($0.prefix(2), radix: 16) }
            } ?? []
            let state = (try? readFile("/sys/class/net/\(name)/operstate")).flatMap { $0 } ?? ""
            return NetworkInterfaceInfo(name: name, isOperational: !state.hasPrefix("down"),
                                        hardwareAddress: mac.count == 6 ? mac : [])
        }
    }

    // MARK: Files

    static func makePrivateDirectory(_ path: String) throws(StateError) {
        var partial = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            partial += "/" + component
            if mkdir(partial, partial == path ? 0o700 : 0o750) != 0 && errno != EEXIST {
                throw StateError(message: "cannot create \(partial): \(String(cString: strerror(errno)))")
            }
        }
        // Made earlier with other modes, or by another tool: only the hub may enter it.
        if chmod(path, 0o700) != 0 {
            throw StateError(message: "cannot restrict \(path): \(String(cString: strerror(errno)))")
        }
    }

    static func readFile(_ path: String) throws(StateError) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw StateError(message: "cannot read \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            bytes += buffer[..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func writePrivateFile(_ path: String, _ text: String) throws(StateError) {
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        if fd < 0 { throw StateError(message: "cannot create \(temporary): \(String(cString: strerror(errno)))") }
        let bytes = Array(text.utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd) == 0
        close(fd)
        guard written == bytes.count, synced, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw StateError(message: "cannot write \(path): \(String(cString: strerror(errno)))")
        }
    }
}

/// Runs the hub's Matter node from start to shutdown, printing the pairing codes while it has no fabric.
struct MatterService: Service {
    let node: MatterNode
    let bridge: MatterBridge
    /// The peers' devices on the bridge, with `matter.bridge: home`.
    let peers: PeerBridge?
    let pairing: MatterPairing
    let logger: Logger
    /// Where `hearthd matter …` reaches the running hub.
    let controlSocket: String

    /// What the hub's owner may do to the node (the control socket and the web page use it).
    var administration: MatterAdministration { MatterAdministration(node: node, logger: logger) }

    func run() async throws {
        do {
            try await node.start()
        } catch {
            logger.critical(
                """
                matter: \(error): another program holds the port, or the interface is missing; set matter.port, \
                matter.interfaces or matter.enabled: false
                """)
            throw error
        }
        logger.info(
            """
            matter: listening on UDP port \(node.options.port), announcing on \
            \(node.options.announceInterfaces.joined(separator: ", "))
            """)
        if !node.isCommissioned {
            // The console and the journal only: never MQTT, never a file others read.
            let bytes = Array((pairing.printable() + "\n").utf8)
            _ = bytes.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
        }
        let control: MatterControlServer?
        do { control = try await MatterControlServer.start(path: controlSocket, administration: administration) } catch
        {
            logger.error(
                "matter: \(error): `hearthd matter fabrics`, `open-window`, `remove` and `reset` cannot reach this hub")
            control = nil
        }
        try? await gracefulShutdown()
        await control?.stop()
        bridge.stop()
        await node.stop()
    }
}
