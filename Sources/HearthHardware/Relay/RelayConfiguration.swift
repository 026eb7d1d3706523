import HearthConfig

/// `binding: {kind: relay, pin: relay-1, activeLow: false, drive: push-pull, safeState: off}`
///
/// | key | default | meaning |
/// |---|---|---|
/// | `pin` | — | the board's pin (or `chip:` + `line:`) |
/// | `activeLow` | `false` | the relay is energised by a low wire (most opto-isolated relay boards) |
/// | `drive` | `push-pull` | `push-pull`, `open-drain` or `open-source` |
/// | `safeState` | `off` | what the relay is left at when hearthd stops: `off` or `on` |
struct RelayConfiguration: Sendable, Hashable {
    var pin: PinAddress
    var activeLow = false
    var drive: OutputDrive = .pushPull
    var safeState = false

    static let drives: [(String, OutputDrive)] = [("push-pull", .pushPull), ("open-drain", .openDrain),
                                                 ("open-source", .openSource)]

    static func read(_ reader: BindingReader) -> RelayConfiguration? {
        guard let map = reader.mapping(allowed: ["pin", "chip", "line", "activeLow", "drive", "safeState"]) else {
            return nil
        }
        let pin = reader.pin(map, key: "pin", direction: .output, what: "relay")
        let activeLow = map["activeLow"].map { $0.bool } ?? false
        let drive = map["drive"].map { v in v.oneOf(drives.map(\.0)).flatMap { d in drives.first { $0.0 == d }?.1 } }
            ?? .pushPull
        let safe = map["safeState"].map { $0.oneOf(["off", "on"]).map { $0 == "on" } } ?? false
        guard let pin, let activeLow, let drive, let safe else { return nil }
        return RelayConfiguration(pin: pin, activeLow: activeLow, drive: drive, safeState: safe)
    }
}
