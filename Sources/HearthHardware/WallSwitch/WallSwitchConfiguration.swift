import HearthConfig
import HearthModel

/// `binding: {kind: wallSwitch, pin: wall-switch-1, bias: pull-up, activeLow: true, debounce: 20ms, mode: momentary,
/// controls: porch-light}`
///
/// | key | default | meaning |
/// |---|---|---|
/// | `pin` | — | the board's pin (or `chip:` + `line:`) |
/// | `bias` | `pull-up` | `pull-up`, `pull-down`, `disabled` or `as-is` (keep the firmware's) |
/// | `activeLow` | `true` | closed = wire low (a switch to ground with a pull-up) |
/// | `debounce` | `20ms` | a change counts once the line has been stable this long (0…1s) |
/// | `mode` | `momentary` | `momentary` (a push button: each press toggles), `latching` (a rocker: each flip toggles),
/// `follow` (the light is on while the switch is on) | | `controls` | none | the id of a device (or a list of ids)
/// whose `onOff` the switch works |
struct WallSwitchConfiguration: Sendable, Hashable {
    enum Mode: String, Sendable, Hashable, CaseIterable { case momentary, latching, follow }

    var pin: PinAddress
    var bias: InputBias = .pullUp
    var activeLow = true
    var debounce: Int64 = 20
    var mode: Mode = .momentary
    var controls: [String] = []

    static let biases: [(String, InputBias)] = [("pull-up", .pullUp), ("pull-down", .pullDown), ("disabled", .disabled),
                                               ("as-is", .asIs)]

    /// The keys the reader takes and the JSON Schema lists, after `kind`.
    static let keys = BindingReader.pinKeys(what: "wall switch", example: "wall-switch-1") + [
        ConfigKey("bias", .choice(biases.map(\.0)),
                  "pull-up (default), pull-down, disabled, or as-is (keep the firmware's)"),
        ConfigKey("activeLow", .bool, "closed = wire low (a switch to ground with a pull-up); default true"),
        ConfigKey("debounce", .duration(.zero ... .seconds(1), defaultUnit: "ms"),
                  "a change counts once the line has been stable this long; default 20ms"),
        ConfigKey("mode", .choice(Mode.allCases.map(\.rawValue)),
                  "momentary (a push button: each press toggles; default), latching (a rocker: each flip toggles), "
                  + "follow (the light is on while the switch is on)"),
        ConfigKey("controls", .listOrOne(.text), "a device id (or a list) whose onOff the switch works, locally"),
    ]

    static func read(_ reader: BindingReader) -> WallSwitchConfiguration? {
        guard let map = reader.mapping() else { return nil }
        let pin = reader.pin(map, key: "pin", direction: .input, what: "wall switch")
        let bias = map.text("bias").flatMap { b in biases.first { $0.0 == b }?.1 } ?? .pullUp
        let activeLow = map.bool("activeLow") ?? true
        let debounce = map.duration("debounce").map(BindingReader.milliseconds) ?? 20
        let mode = map.text("mode").flatMap(Mode.init) ?? .momentary
        var controls: [String]? = []
        if let value = map["controls"], !value.isNull {
            for item in value.listOrSingle {
                if let id = item.string { controls?.append(id) } else { controls = nil }
            }
        }
        if let controls, controls.contains(reader.context.deviceID) {
            map["controls"]?.problem("a switch cannot control its own device '\(reader.context.deviceID)'")
        }
        guard let pin, let controls else { return nil }
        return WallSwitchConfiguration(pin: pin, bias: bias, activeLow: activeLow, debounce: debounce, mode: mode,
                                       controls: controls)
    }

    var wiring: String {
        "\(pin), \(mode.rawValue)" + (controls.isEmpty ? "" : ", controls \(controls.joined(separator: ", "))")
    }

    /// The Switch trait features this mode needs.
    var switchFeatures: Set<String> {
        mode == .momentary ? ["momentarySwitch", "momentarySwitchRelease"] : ["latchingSwitch"]
    }
}

extension BindingKind {
    static let wallSwitch = BindingKind(
        "wallSwitch", fits: [.genericSwitch], help: "A wall switch or button on a GPIO input (GenericSwitch).",
        keys: WallSwitchConfiguration.keys, rules: BindingReader.pinRules
    ) { reader in
        WallSwitchConfiguration.read(reader).map { WallSwitchBinding($0, context: reader.context) }
    }
}
