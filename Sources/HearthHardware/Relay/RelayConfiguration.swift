import HearthConfig
import HearthModel

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

    /// The keys the reader takes and the JSON Schema lists, after `kind`.
    static let keys = BindingReader.pinKeys(what: "relay", example: "relay-1") + [
        ConfigKey("activeLow", .bool,
                  "true for relay boards energised by a low input (most opto-isolated modules); default false"),
        ConfigKey("drive", .choice(drives.map(\.0)),
                  "push-pull (default), or open-drain / open-source for a load on another supply"),
        ConfigKey("safeState", .choice(["off", "on"]), "what the relay is left at when hearthd stops; default off"),
        ConfigKey("meter", .named("binding.meter", .section(PowerMeterConfiguration.section)),
                  "OnOffPlugInUnit: a power monitor (INA219/INA226) on the relay's load; default none"),
    ]

    var wiring: String {
        var parts = ["\(pin)"]
        if activeLow { parts.append("active low") }
        if let d = Self.drives.first(where: { $0.1 == drive }), drive != .pushPull { parts.append(d.0) }
        if safeState { parts.append("left on when hearthd stops") }
        return parts.joined(separator: ", ")
    }

    static func read(_ reader: BindingReader) -> RelayConfiguration? {
        guard let map = reader.mapping() else { return nil }
        let pin = reader.pin(map, key: "pin", direction: .output, what: "relay")
        let activeLow = map.bool("activeLow") ?? false
        let drive = map.text("drive").flatMap { d in drives.first { $0.0 == d }?.1 } ?? .pushPull
        let safe = map.text("safeState") == "on"
        guard let pin else { return nil }
        return RelayConfiguration(pin: pin, activeLow: activeLow, drive: drive, safeState: safe)
    }
}

extension BindingKind {
    /// A relay, with its power meter when it has a `meter:` (a plug's): both in one binding.
    static let relay = BindingKind(
        "relay", fits: [.onOffLight, .onOffPlugInUnit], help: "A relay on a GPIO output (OnOffLight, OnOffPlugInUnit).",
        keys: RelayConfiguration.keys, rules: BindingReader.pinRules
    ) { reader in
        let context = reader.context
        let relay = RelayConfiguration.read(reader).map { RelayBinding($0, context: context) }
        guard case .mapping(let entries) = reader.config.node.value,
            let meterEntry = entries.first(where: { $0.key == "meter" })
        else { return relay }
        let meterValue = reader.config.child(meterEntry.value, "meter")
        guard context.typeName == DeviceTypeDescriptor.onOffPlugInUnit.name else {
            meterValue.problem("a meter measures a plug's load: it fits an OnOffPlugInUnit, not a \(context.typeName)")
            return nil
        }
        guard let meter = PowerMeterConfiguration.read(meterValue, context: context), let relay else { return nil }
        return CompositeBinding([relay, PowerMeterBinding(meter, context: context)])
    }
}
