import HearthConfig
import HearthContract
import HearthEngine
import HearthHardware
import HearthHub
import HearthJSON
import HearthModel
import HearthSimulator
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// A hub configuration through `hearthd check-config`'s path (`HubDaemon.plan`): libyaml, the YAML composer,
/// the configuration reader, the board, the bindings on the simulated board, the engine's check. The input is
/// `hearth.yaml`, beside it `boards/sim.yaml` (the repository's simulated board) and a `secrets.yaml`.
///
/// Promises (`docs/configuration.md`): problems carry a place in the file; no message ever shows a secret's value;
/// a configuration with no problem starts — its ids and prefix make valid topics (checked on bytes, as the broker
/// sees them), its ids are unique, and the engine builds its devices.
enum ConfigTarget {
    /// The values in the fixture's `secrets.yaml`; distinctive, so that finding one in a message means it leaked.
    static let secrets = ["mqtt_user": "fuzz-user-Kq3v", "mqtt_password": "fuzz-pass-Zx8w", "token": "fuzz-token-Jm2p"]

    static let directory: String = {
        let dir = Workspace.makeDirectory("config")
        _ = Workspace.makeDirectory("config/boards")
        guard let board = Workspace.read(repository + "/boards/sim.yaml") else {
            fatalError(
                "cannot read \(repository)/boards/sim.yaml: the fuzz targets run from the repository they were built in"
            )
        }
        Workspace.write("config/boards/sim.yaml", board, mode: 0o644)
        let text = secrets.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)\n" }.joined()
        Workspace.write("config/secrets.yaml", Array(text.utf8), mode: 0o600)
        return dir
    }()

    /// The repository this file was built from (`#filePath` is Sources/HearthFuzzing/ConfigTarget.swift).
    static let repository: String = {
        var parts = String(#filePath).split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)
        return parts.joined(separator: "/")
    }()

    /// Bindings log their faults; nothing of that is checked here.
    static let quiet = Logger(label: "hearth-fuzz", factory: { _ in SwiftLogNoOpLogHandler() })

    static func run(_ bytes: [UInt8]) throws(FuzzFailure) {
        let file = directory + "/hearth.yaml"
        Workspace.write("config/hearth.yaml", bytes, mode: 0o644)
        let hardware = BoardHardware()
        let diagnostics = ConfigDiagnostics()
        let result = HubDaemon.plan(configFile: file, hardware: hardware, logger: quiet, diagnostics: diagnostics)
        let lineCount = yamlLines(bytes)
        let leaks = secrets.values.filter { !contains(bytes, Array($0.utf8)) }

        for p in diagnostics.problems + diagnostics.warnings {
            try require(!p.message.isEmpty, "a problem without a message at \(p.file):\(p.line)")
            if p.file == file {
                try require(
                    p.line >= 0 && p.line <= lineCount + 1,
                    "a problem on line \(p.line) of a \(lineCount)-line file: \(p)")
            }
            for s in leaks { try require(!p.description.contains(s), "a message shows a secret's value: \(p)") }
        }

        guard case .success(let plan) = result else { return }
        try require(diagnostics.problems.isEmpty, "planned despite problems")
        for line in HubDaemon.summary(of: plan) {
            for s in leaks { try require(!line.contains(s), "check-config's summary shows a secret's value: \(line)") }
        }
        let c = plan.config
        try require(TopicTarget.isValidLevel(c.hubID), "accepted the hub id '\(shown(c.hubID))'")
        try require(TopicTarget.isValidPrefix(c.prefix), "accepted the prefix '\(shown(c.prefix))'")
        // Other hubs' ids and devices become topics too (requests forwarded to them, mirrors of their documents).
        for hub in c.peers.map(\.hub) + c.mirrors.map(\.peerHub) + c.bindings.map(\.hub) {
            try require(TopicTarget.isValidLevel(hub), "accepted the peer hub id '\(shown(hub))'")
        }
        for device in c.mirrors.map(\.peerDevice) + c.bindings.map(\.device) {
            try require(TopicTarget.isValidLevel(device), "accepted '\(shown(device))' as another hub's device id")
        }
        var ids: Set<[UInt8]> = []
        for d in plan.devices {
            try require(TopicTarget.isValidLevel(d.id), "accepted the device id '\(shown(d.id))'")
            try require(ids.insert(Array(d.id.utf8)).inserted, "accepted the device id '\(shown(d.id))' twice")
        }
        let home: Home
        do throws(HomeError) {
            home = try Home(devices: plan.devices, clock: ManualClock(), registry: HubDaemon.registry(hardware))
        } catch {
            throw FuzzFailure("check-config accepts a configuration the hub cannot start: \(error)")
        }
        var checker = HomeFixture.Checker()
        try checker.check(home)
    }

    /// How many lines a YAML reader sees: libyaml breaks lines at LF, CR, CR LF, and the 1.1 breaks NEL, LS and PS.
    static func yamlLines(_ bytes: [UInt8]) -> Int {
        var lines = 1
        var i = 0
        while i < bytes.count {
            switch bytes[i] {
            case 0x0A: lines += 1
            case 0x0D: lines += 1; if i + 1 < bytes.count, bytes[i + 1] == 0x0A { i += 1 }
            case 0xC2 where i + 1 < bytes.count && bytes[i + 1] == 0x85: lines += 1; i += 1
            case 0xE2
            where i + 2 < bytes.count && bytes[i + 1] == 0x80 && (bytes[i + 2] == 0xA8 || bytes[i + 2] == 0xA9):
                lines += 1; i += 2
            default: break
            }
            i += 1
        }
        return lines
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard needle.count <= haystack.count else { return false }
        return (0...(haystack.count - needle.count)).contains {
            haystack[$0..<($0 + needle.count)].elementsEqual(needle)
        }
    }
}

/// A board file (`boards/*.yaml`, `Board.read`).
///
/// Promises (`Board`, docs/hardware.md): a board is returned exactly when there is no problem; on a returned board,
/// names are unique across lines, PWM channels and sensors, chip labels are unique, every line is on a listed chip
/// below its line count, and its backend can be made (the simulated one, for a simulated board).
enum BoardTarget {
    static func run(_ bytes: [UInt8]) throws(FuzzFailure) {
        let file = Workspace.makeDirectory("board") + "/board.yaml"
        Workspace.write("board/board.yaml", bytes, mode: 0o644)
        let diagnostics = ConfigDiagnostics()
        let board = Board.load(file: file, diagnostics: diagnostics)
        let lineCount = ConfigTarget.yamlLines(bytes)
        for p in diagnostics.problems + diagnostics.warnings {
            try require(!p.message.isEmpty && p.line >= 0 && p.line <= lineCount + 1, "a problem without a place: \(p)")
        }
        try require(
            (board == nil) == !diagnostics.problems.isEmpty,
            board == nil ? "no board and no problem" : "a board was returned with problems: \(diagnostics.problems)")
        guard let board else { return }
        var names: Set<String> = []
        for name in board.pins.map(\.name) + board.pwmChannels.map(\.name) + board.sensors.map(\.name) {
            try require(names.insert(name).inserted, "the name '\(shown(name))' is used twice on the board")
        }
        try require(Set(board.gpioChips.map(\.label)).count == board.gpioChips.count, "a chip label is listed twice")
        for pin in board.pins {
            guard let chip = board.gpioChips.first(where: { $0.label == pin.chipLabel }) else {
                throw FuzzFailure("line '\(pin.name)' is on no listed chip")
            }
            try require(
                pin.offset >= 0 && pin.offset < chip.lineCount,
                "line '\(pin.name)' at \(pin.offset) of \(chip.lineCount)")
        }
        if board.isSimulated { _ = SimulatedHardware(board: board, seed: board.seed) }
    }
}
