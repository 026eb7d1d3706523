import HearthConfig

/// `binding: {kind: wallSwitch, pin: wall-switch-1, bias: pull-up, activeLow: true, debounce: 20ms, mode: momentary,
/// controls: porch-light}`
///
/// | key | default | meaning |
/// |---|---|---|
/// | `pin` | — | the board's pin (or `chip:` + `line:`) |
/// | `bias` | `pull-up` | `pull-up`, `pull-down`, `disabled` or `as-is` (keep the firmware's) |
/// | `activeLow` | `true` | closed = wire low (a switch to ground with a pull-up) |
/// | `debounce` | `20ms` | a change counts once the line has been stable this long (0…1s) |
/// | `mode` | `momentary` | `momentary` (a push button: each press toggles), `latching` (a rocker: each flip toggles), `follow` (the light is on while the switch is on) |
/// | `controls` | none | the id of a device (or a list of ids) whose `onOff` the switch works |
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

    static func read(_ reader: BindingReader) -> WallSwitchConfiguration? {
        guard let map = reader.mapping(allowed: ["pin", "chip", "line", "bias", "activeLow", "debounce", "mode",
                                                 "controls"]) else { return nil }
        let pin = reader.pin(map, key: "pin", direction: .input, what: "wall switch")
        let bias = map["bias"].map { v in v.oneOf(biases.map(\.0)).flatMap { b in biases.first { $0.0 == b }?.1 } }
            ?? .pullUp
        let activeLow = map["activeLow"].map { $0.bool } ?? true
        let debounce = reader.milliseconds(map, "debounce", in: .zero ... .seconds(1), default: 20)
        let mode = map["mode"].map { $0.oneOf(Mode.allCases.map(\.rawValue)).flatMap(Mode.init) } ?? .momentary
        var controls: [String]? = []
        if let value = map["controls"], !value.isNull {
            for item in value.listOrSingle {
                if let id = item.string { controls?.append(id) } else { controls = nil }
            }
        }
        if let controls, controls.contains(reader.context.deviceID) {
            map["controls"]?.problem("a switch cannot control its own device '\(reader.context.deviceID)'")
        }
        guard let pin, let bias, let activeLow, let debounce, let mode, let controls else { return nil }
        return WallSwitchConfiguration(pin: pin, bias: bias, activeLow: activeLow, debounce: debounce, mode: mode,
                                       controls: controls)
    }

    /// The Switch trait features this mode needs.
    var switchFeatures: Set<String> {
        mode == .momentary ? ["momentarySwitch", "momentarySwitchRelease"] : ["latchingSwitch"]
    }
}
