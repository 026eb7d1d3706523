import HearthConfig
import HearthModel

/// A two-state sensor on a GPIO input:
/// `binding: {kind: contact, pin: door-contact, bias: pull-up, activeLow: true, debounce: 20ms}` (ContactSensor: a reed
/// switch or any dry contact to ground) and
/// `binding: {kind: pir, pin: motion-sensor, bias: pull-down, activeLow: false, debounce: 20ms}` (OccupancySensor: a
/// PIR module's output).
///
/// | key | default (contact / pir) | meaning |
/// |---|---|---|
/// | `pin` | — | the board's pin (or `chip:` + `line:`) |
/// | `bias` | `pull-up` / `pull-down` | `pull-up`, `pull-down`, `disabled` or `as-is` (keep the firmware's) |
/// | `activeLow` | `true` / `false` | closed (contact) or motion (pir) = wire low |
/// | `debounce` | `20ms` | a change counts once the line has been stable this long (0…1s) |
struct BinarySensorConfiguration: Sendable, Hashable {
    enum Kind: String, Sendable, Hashable, CaseIterable {
        case contact, pir

        /// The trait the sensor reports to.
        var trait: TraitID { self == .contact ? .booleanState : .occupancySensing }
        /// The device type it drives.
        var deviceType: DeviceTypeDescriptor { self == .contact ? .contactSensor : .occupancySensor }
        /// A contact switches the line to ground against the pull-up; a PIR module drives it high on motion, and the
        /// pull-down keeps an unplugged module from reading as motion.
        var defaultBias: InputBias { self == .contact ? .pullUp : .pullDown }
        var defaultActiveLow: Bool { self == .contact }
        var what: String { self == .contact ? "door contact" : "PIR motion sensor" }
        var examplePin: String { self == .contact ? "door-contact" : "motion-sensor" }
    }

    var kind: Kind
    var pin: PinAddress
    var bias: InputBias
    var activeLow: Bool
    var debounce: Int64 = 20

    /// The keys the reader takes and the JSON Schema lists, after `kind`.
    static func keys(_ kind: Kind) -> [ConfigKey] {
        let biasName = WallSwitchConfiguration.biases.first { $0.1 == kind.defaultBias }?.0 ?? ""
        return BindingReader.pinKeys(what: kind.what, example: kind.examplePin) + [
            ConfigKey("bias", .choice(WallSwitchConfiguration.biases.map(\.0)),
                      "pull-up, pull-down, disabled, or as-is (keep the firmware's); default \(biasName)"),
            ConfigKey("activeLow", .bool, kind == .contact
                      ? "closed = wire low (a contact to ground with a pull-up); default true"
                      : "motion = wire low (a module with an inverted output); default false"),
            ConfigKey("debounce", .duration(.zero ... .seconds(1), defaultUnit: "ms"),
                      "a change counts once the line has been stable this long; default 20ms"),
        ]
    }

    static func read(_ reader: BindingReader, kind: Kind) -> BinarySensorConfiguration? {
        guard let map = reader.mapping() else { return nil }
        let pin = reader.pin(map, key: "pin", direction: .input, what: kind.what)
        let bias =
            map.text("bias").flatMap { b in WallSwitchConfiguration.biases.first { $0.0 == b }?.1 } ?? kind.defaultBias
        let activeLow = map.bool("activeLow") ?? kind.defaultActiveLow
        let debounce = map.duration("debounce").map(BindingReader.milliseconds) ?? 20
        guard let pin else { return nil }
        return BinarySensorConfiguration(kind: kind, pin: pin, bias: bias, activeLow: activeLow, debounce: debounce)
    }

    var wiring: String {
        "\(pin)" + (activeLow ? ", active low" : "") + (debounce == 20 ? "" : ", debounce \(debounce) ms")
    }

    /// The trait features the sensor needs: a PIR module senses by passive infrared.
    var features: [TraitID: Set<String>] { kind == .pir ? [.occupancySensing: ["passiveInfrared"]] : [:] }
}

extension BindingKind {
    static let contact = binarySensor(
        .contact,
        help: "A door or window contact (reed switch) on a GPIO input (ContactSensor): stateValue true while closed.")
    static let pir = binarySensor(
        .pir,
        help:
            "A PIR motion sensor's output on a GPIO input (OccupancySensor): occupied while it detects, then holdTime.")

    private static func binarySensor(_ kind: BinarySensorConfiguration.Kind, help: String) -> BindingKind {
        BindingKind(kind.rawValue, fits: [kind.deviceType], help: help, keys: BinarySensorConfiguration.keys(kind),
                    rules: BindingReader.pinRules) { reader in
            BinarySensorConfiguration.read(reader, kind: kind).map { BinarySensorBinding($0, context: reader.context) }
        }
    }
}
