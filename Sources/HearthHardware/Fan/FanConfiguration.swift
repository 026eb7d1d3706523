import HearthConfig
import HearthModel

/// `binding: {kind: pwmFan, pwm: fan-1, frequency: 25000, minimumDuty: 0.2}`: a fan whose speed a PWM channel sets
/// (a 4-wire fan's control input, or a MOSFET on a DC fan).
///
/// | key | default | meaning |
/// |---|---|---|
/// | `pwm` | — | the board's PWM channel (or `pwmChip:` + `pwmChannel:`) |
/// | `frequency` | `25000` | PWM frequency in Hz (10…100000); 4-wire fans expect 25 kHz |
/// | `minimumDuty` | `0` | the duty below which the fan stalls (0…0.9); 1 % starts there |
/// | `polarity` | `normal` | `normal` or `inversed` |
struct PWMFanConfiguration: Sendable, Hashable {
    var pwm: PWMAddress
    var frequency = 25_000
    var minimumDuty = 0.0
    var polarity: PWMOutputPolarity = .normal

    static let keys = BindingReader.pwmKeys + [
        ConfigKey("frequency", .int(10...100_000, unit: " Hz"), "PWM frequency in Hz; default 25000 (4-wire fans)"),
        ConfigKey("minimumDuty", .number(0...0.9, unit: ""),
                  "the duty below which the fan stalls; 1 % starts there; default 0"),
        ConfigKey("polarity", .choice(["normal", "inversed"]),
                  "inversed when the driver stage inverts; default normal"),
    ]

    static func read(_ reader: BindingReader) -> PWMFanConfiguration? {
        guard let map = reader.mapping() else { return nil }
        let pwm = reader.pwm(map, key: "pwm")
        let frequency = map.int("frequency") ?? 25_000
        let minimumDuty = map.double("minimumDuty") ?? 0
        let polarity = map.text("polarity").flatMap(PWMOutputPolarity.init) ?? .normal
        guard let pwm else { return nil }
        return PWMFanConfiguration(pwm: pwm, frequency: frequency, minimumDuty: minimumDuty, polarity: polarity)
    }

    var wiring: String { "PWM \(pwm) at \(frequency) Hz" }
    var periodNanoseconds: UInt64 { UInt64(1_000_000_000 / frequency) }

    /// The duty cycle for a percentage: off at 0, else from `minimumDuty` up to the full period.
    func dutyCycle(percent: Int) -> UInt64 {
        guard percent > 0 else { return 0 }
        let fraction = minimumDuty + (1 - minimumDuty) * Double(min(100, percent)) / 100
        return min(periodNanoseconds, UInt64((Double(periodNanoseconds) * fraction).rounded()))
    }
}

/// `binding: {kind: relayFan, low: fan-low, medium: fan-medium, high: fan-high, activeLow: false, switchPause: 300ms}`:
/// a fan whose motor has speed taps, one relay each; the fan has as many speeds as taps are given (`high` alone: one
/// speed; `low` and `high`: two; all three: three).
///
/// | key | default | meaning |
/// |---|---|---|
/// | `low`, `medium`, `high` | — | the board pin of each tap's relay; `high` is required, `medium` needs `low` |
/// | `activeLow` | `false` | the relays are energised by a low wire |
/// | `switchPause` | `300ms` | between one tap off and the next on (break before make) |
struct RelayFanConfiguration: Sendable, Hashable {
    /// The taps from the slowest: speed 1 is `taps[0]`.
    var taps: [PinAddress]
    var activeLow = false
    var switchPause: Int64 = 300

    static let keys: [ConfigKey] = [
        ConfigKey("low", .text, "the board pin of the low-speed tap's relay"),
        ConfigKey("medium", .text, "the board pin of the medium-speed tap's relay (with low and high)"),
        ConfigKey("high", .text, required: true, "the board pin of the high-speed tap's relay"),
        ConfigKey("activeLow", .bool, "the relays are energised by a low wire; default false"),
        ConfigKey("switchPause", .duration(.zero ... .seconds(5), defaultUnit: "ms"),
                  "between one tap's relay off and the next one's on; default 300ms"),
    ]

    static func read(_ reader: BindingReader) -> RelayFanConfiguration? {
        guard let map = reader.mapping() else { return nil }
        // Every problem is recorded before giving up, so that one pass lists them all.
        var failed = false
        if map["medium"] != nil && map["low"] == nil {
            map.owner.problem("a fan with a medium tap has a low one too: give 'low' (or leave out 'medium')")
            failed = true
        }
        if map.text("high", required: true) == nil { failed = true }
        var taps: [PinAddress] = []
        for key in ["low", "medium", "high"] where map[key] != nil {
            if let pin = reader.pin(map, key: key, direction: .output, what: "fan's \(key) tap", allowRaw: false) {
                taps.append(pin)
            } else {
                failed = true
            }
        }
        let pause = map.duration("switchPause").map(BindingReader.milliseconds) ?? 300
        guard !failed, map["high"] != nil else { return nil }
        return RelayFanConfiguration(taps: taps, activeLow: map.bool("activeLow") ?? false, switchPause: pause)
    }

    var wiring: String {
        let names = taps.count == 3 ? ["low", "medium", "high"] : taps.count == 2 ? ["low", "high"] : ["high"]
        return zip(names, taps).map { "\($0) \($1)" }.joined(separator: ", ") + (activeLow ? ", active low" : "")
            + ", \(switchPause) ms between taps"
    }
}

extension BindingKind {
    static let pwmFan = BindingKind(
        "pwmFan", fits: [.fan], help: "A fan whose speed a PWM channel sets (Fan).",
        keys: PWMFanConfiguration.keys, rules: BindingReader.pwmRules
    ) { reader in
        PWMFanConfiguration.read(reader).map { PWMFanBinding($0, context: reader.context) }
    }

    static let relayFan = BindingKind(
        "relayFan", fits: [.fan],
        help: "A fan with one to three speed taps, a relay each, never two on together (Fan).",
        keys: RelayFanConfiguration.keys, rules: []
    ) { reader in
        RelayFanConfiguration.read(reader).map { RelayFanBinding($0, context: reader.context) }
    }
}
