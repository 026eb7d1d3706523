import HearthConfig

/// `binding: {kind: relay, pin: relay-1, activeLow: false, drive: push-pull, safeState: off}`
///
/// | key | default | meaning |
/// |---|---|---|
/// | `pin` | — | the board's pin (or `chip:` + `line:`) |
/// | `activeLow` | `false` | the relay is energised by a low wire (most opto-isolated relay boards) |
/// | `drive` | `push-pull` | `push-pull`, `open-drain` or `open-source` |
/// | `safeState` | `off` | what the relay is left at when hearthd stops: `off` or `on` |
/// | `meter` | none | a power monitor on the relay's load (`PowerMeterConfiguration`): OnOffPlugInUnit only |
struct RelayConfiguration: Sendable, Hashable {
    var pin: PinAddress
    var activeLow = false
    var drive: OutputDrive = .pushPull
    var safeState = false

    static let drives: [(String, OutputDrive)] = [("push-pull", .pushPull), ("open-drain", .openDrain),
                                                 ("open-source", .openSource)]

    /// The keys the reader takes and the JSON Schema lists.
    static let section = BindingKinds.section("relay", help: "A relay on a GPIO output (OnOffLight, OnOffPlugInUnit).",
        BindingKinds.pinKeys(what: "relay", example: "relay-1") + [
        ConfigKey("activeLow", .bool, "true for relay boards energised by a low input (most opto-isolated modules); default false"),
        ConfigKey("drive", .choice(drives.map(\.0)), "push-pull (default), or open-drain / open-source for a load on another supply"),
        ConfigKey("safeState", .choice(["off", "on"]), "what the relay is left at when hearthd stops; default off"),
        ConfigKey("meter", .named("binding.meter", .section(PowerMeterConfiguration.section)),
                  "OnOffPlugInUnit: a power monitor (INA219/INA226) on the relay's load; default none"),
    ], rules: BindingKinds.pinRules)

    var wiring: String {
        var parts = ["\(pin)"]
        if activeLow { parts.append("active low") }
        if let d = Self.drives.first(where: { $0.1 == drive }), drive != .pushPull { parts.append(d.0) }
        if safeState { parts.append("left on when hearthd stops") }
        return parts.joined(separator: ", ")
    }

    static func read(_ reader: BindingReader) -> RelayConfiguration? {
        guard let map = reader.mapping(section) else { return nil }
        let pin = reader.pin(map, key: "pin", direction: .output, what: "relay")
        let activeLow = map.bool("activeLow") ?? false
        let drive = map.text("drive").flatMap { d in drives.first { $0.0 == d }?.1 } ?? .pushPull
        let safe = map.text("safeState") == "on"
        guard let pin else { return nil }
        return RelayConfiguration(pin: pin, activeLow: activeLow, drive: drive, safeState: safe)
    }
}
