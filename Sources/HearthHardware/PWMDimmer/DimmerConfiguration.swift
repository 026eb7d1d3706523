import HearthConfig

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

    static func read(_ reader: BindingReader) -> DimmerConfiguration? {
        guard let map = reader.mapping(allowed: ["pwm", "pwmChip", "pwmChannel", "relay", "relayActiveLow", "frequency",
                                                 "gamma", "minimumDuty", "polarity"]) else { return nil }
        let pwm = reader.pwm(map, key: "pwm")
        let relay: PinAddress?? = map["relay"] == nil ? .some(nil)
            : reader.pin(map, key: "relay", direction: .output, what: "dimmer's relay", allowRaw: false).map { .some($0) }
        let relayActiveLow = map["relayActiveLow"].map { $0.bool } ?? false
        let frequency = map["frequency"].map { $0.int(in: 10...100_000, unit: " Hz") } ?? 1000
        let gamma = map["gamma"].map { $0.double(in: 0.1...5) } ?? 2.2
        let minimumDuty = map["minimumDuty"].map { $0.double(in: 0...0.5) } ?? 0
        let polarity = map["polarity"].map { $0.oneOf(["normal", "inversed"]).flatMap(PWMOutputPolarity.init) } ?? .normal
        guard let pwm, let relay, let relayActiveLow, let frequency, let gamma, let minimumDuty, let polarity else {
            return nil
        }
        return DimmerConfiguration(pwm: pwm, relay: relay, relayActiveLow: relayActiveLow, frequency: frequency,
                                   gamma: gamma, minimumDuty: minimumDuty, polarity: polarity)
    }

    var periodNanoseconds: UInt64 { UInt64(1_000_000_000 / frequency) }
}
