import HearthConfig
import HearthModel

/// `binding: {kind: pwmDimmer, pwm: dimmer-1, relay: dimmer-relay, frequency: 1000, gamma: 2.2, minimumDuty: 0.02,
/// polarity: normal}`
///
/// | key | default | meaning |
/// |---|---|---|
/// | `pwm` | — | the board's PWM channel (or `pwmChip:` + `pwmChannel:`) |
/// | `relay` | none | a board pin that powers the load; off whenever the light is not lit |
/// | `relayActiveLow` | `false` | that relay is energised by a low wire |
/// | `frequency` | `1000` | PWM frequency in Hz (10…100000) |
/// | `gamma` | `2.2` | perceived brightness curve: duty = minimumDuty + (1 − minimumDuty)·(level/254)^gamma |
/// | `minimumDuty` | `0` | the duty below which the lamp stays dark (0…0.5); level 1 starts there |
/// | `polarity` | `normal` | `normal` or `inversed` (a driver stage that inverts) |
struct DimmerConfiguration: Sendable, Hashable {
    var pwm: PWMAddress
    var relay: PinAddress?
    var relayActiveLow = false
    var frequency = 1000
    var gamma = 2.2
    var minimumDuty = 0.0
    var polarity: PWMOutputPolarity = .normal

    /// The keys the reader takes and the JSON Schema lists, after `kind`.
    static let keys = BindingReader.pwmKeys + [
        ConfigKey("relay", .text,
                  "a board pin (output) that powers the lamp's driver; off whenever the light is not lit"),
        ConfigKey("relayActiveLow", .bool, "that relay is energised by a low wire; default false"),
        ConfigKey("frequency", .int(10...100_000, unit: " Hz"), "PWM frequency in Hz; default 1000"),
        ConfigKey("gamma", .number(0.1...5, unit: ""),
                  "duty = minimumDuty + (1 − minimumDuty)·(level/254)^gamma; default 2.2"),
        ConfigKey("minimumDuty", .number(0...0.5, unit: ""),
                  "the duty below which the lamp stays dark; level 1 starts there; default 0"),
        ConfigKey("polarity", .choice(["normal", "inversed"]),
                  "inversed when the driver stage inverts; default normal"),
    ]

    static func read(_ reader: BindingReader) -> DimmerConfiguration? {
        guard let map = reader.mapping() else { return nil }
        let pwm = reader.pwm(map, key: "pwm")
        let relay: PinAddress?? =
            map["relay"] == nil
            ? .some(nil)
            : reader.pin(map, key: "relay", direction: .output, what: "dimmer's relay", allowRaw: false).map {
                .some($0)
            }
        let relayActiveLow = map.bool("relayActiveLow") ?? false
        let frequency = map.int("frequency") ?? 1000
        let gamma = map.double("gamma") ?? 2.2
        let minimumDuty = map.double("minimumDuty") ?? 0
        let polarity = map.text("polarity").flatMap(PWMOutputPolarity.init) ?? .normal
        guard let pwm, let relay else { return nil }
        return DimmerConfiguration(pwm: pwm, relay: relay, relayActiveLow: relayActiveLow, frequency: frequency,
                                   gamma: gamma, minimumDuty: minimumDuty, polarity: polarity)
    }

    var wiring: String {
        "PWM \(pwm) at \(frequency) Hz"
            + (relay.map { ", power relay \($0)" + (relayActiveLow ? " (active low)" : "") } ?? "")
    }

    var periodNanoseconds: UInt64 { UInt64(1_000_000_000 / frequency) }
}

extension BindingKind {
    static let pwmDimmer = BindingKind(
        "pwmDimmer", fits: [.dimmableLight],
        help: "A PWM dimmer, optionally with a relay that powers its driver (DimmableLight).",
        keys: DimmerConfiguration.keys, rules: BindingReader.pwmRules
    ) { reader in
        DimmerConfiguration.read(reader).map { DimmerBinding($0, context: reader.context) }
    }
}
