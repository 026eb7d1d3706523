// `hearthd save-loop`: the state store's save path in a loop, for the power-loss test (hidden from --help).
import ArgumentParser
import HearthEngine
import HearthHub
#if canImport(Glibc)
import Glibc
#endif

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
        if let first = loaded.devices.values.first, let n = first.name.flatMap({ Int($0.split(separator: " ").last ?? "") }) {
            generation = n
        }
        say("loaded \(generation)")
        while true {
            generation += 1
            var home: [String: SavedDevice] = [:]
            for d in 0..<devices {
                home["device-\(d)"] = SavedDevice(
                    name: "generation \(generation)", roomID: "room-\(d % 7)",
                    attributes: ["OnOffLight": ["onOff": ["onOff": .bool(generation % 2 == 0), "startUpOnOff": .int(generation)]]])
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
