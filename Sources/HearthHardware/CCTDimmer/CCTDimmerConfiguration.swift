import HearthConfig
import HearthModel

/// `binding: {kind: cctDimmer, warm: cct-warm, cold: cct-cold, warmMireds: 370, coldMireds: 153, relay: cct-relay,
/// frequency: 1000, gamma: 2.2, minimumDuty: 0, polarity: normal}`
///
/// | key | default | meaning |
/// |---|---|---|
/// | `warm` | — | the board's PWM channel driving the strip's warm-white LEDs |
/// | `cold` | — | the board's PWM channel driving the strip's cold-white LEDs |
/// | `warmMireds` | `370` | the warm white's colour temperature in mireds (1 000 000 / kelvins; 370 ≈ 2700 K):
/// ColorTempPhysicalMaxMireds | | `coldMireds` | `153` | the cold white's, below `warmMireds` (153 ≈ 6500 K):
/// ColorTempPhysicalMinMireds | | `relay` | none | a board pin that powers the strip's driver; off whenever the light
/// is not lit | | `relayActiveLow` | `false` | that relay is energised by a low wire |
/// | `frequency` | `1000` | PWM frequency of both channels in Hz (10…100000) |
/// | `gamma` | `2.2` | perceived brightness curve of the total duty, as the pwmDimmer's |
/// | `minimumDuty` | `0` | the total duty below which the strip stays dark (0…0.5); level 1 starts there |
/// | `polarity` | `normal` | `normal` or `inversed` (a driver stage that inverts), for both channels |
struct CCTDimmerConfiguration: Sendable, Hashable {
    var warm: PWMAddress
    var cold: PWMAddress
    var warmMireds = 370
    var coldMireds = 153
    var relay: PinAddress?
    var relayActiveLow = false
    var frequency = 1000
    var gamma = 2.2
    var minimumDuty = 0.0
    var polarity: PWMOutputPolarity = .normal

    static let miredsRange = 1...0xFEFF

    /// The keys the reader takes and the JSON Schema lists, after `kind`.
    static let keys = [
        ConfigKey(
            "warm", .text, required: true,
            "the board's PWM channel driving the warm-white LEDs (a name from the board file, e.g. cct-warm)"),
        ConfigKey(
            "cold", .text, required: true,
            "the board's PWM channel driving the cold-white LEDs (a name from the board file, e.g. cct-cold)"),
        ConfigKey(
            "warmMireds", .int(miredsRange, unit: " mireds"),
            "the warm white's colour temperature in mireds (1000000 / K; 370 ≈ 2700 K): the light's warmest; default "
                + "370"),
        ConfigKey(
            "coldMireds", .int(miredsRange, unit: " mireds"),
            "the cold white's colour temperature in mireds (153 ≈ 6500 K), below warmMireds: the light's coldest; "
                + "default 153"),
        ConfigKey(
            "relay", .text, "a board pin (output) that powers the strip's driver; off whenever the light is not lit"),
        ConfigKey("relayActiveLow", .bool, "that relay is energised by a low wire; default false"),
        ConfigKey("frequency", .int(10...100_000, unit: " Hz"), "PWM frequency of both channels in Hz; default 1000"),
        ConfigKey("gamma", .number(0.1...5, unit: ""),
                  "total duty = minimumDuty + (1 − minimumDuty)·(level/254)^gamma; default 2.2"),
        ConfigKey("minimumDuty", .number(0...0.5, unit: ""),
                  "the total duty below which the strip stays dark; level 1 starts there; default 0"),
        ConfigKey("polarity", .choice(["normal", "inversed"]),
                  "inversed when the driver stage inverts; default normal"),
    ]

    static func read(_ reader: BindingReader) -> CCTDimmerConfiguration? {
        guard let map = reader.mapping() else { return nil }
        let warm = reader.pwm(map, key: "warm", allowRaw: false)
        let cold = reader.pwm(map, key: "cold", allowRaw: false)
        let relay: PinAddress?? =
            map["relay"] == nil
            ? .some(nil)
            : reader.pin(map, key: "relay", direction: .output, what: "CCT strip's relay", allowRaw: false).map {
                .some($0)
            }
        let warmMireds = map.int("warmMireds") ?? 370
        let coldMireds = map.int("coldMireds") ?? 153
        if coldMireds >= warmMireds {
            (map["coldMireds"] ?? map["warmMireds"] ?? map.owner).problem(
                "coldMireds (\(coldMireds)) must be below warmMireds (\(warmMireds)): mireds are 1000000 / kelvins, so "
                + "the cold white (e.g. 6500 K = 153) has fewer than the warm one (e.g. 2700 K = 370)")
            return nil
        }
        guard let warm, let cold, let relay else { return nil }
        return CCTDimmerConfiguration(
            warm: warm, cold: cold, warmMireds: warmMireds, coldMireds: coldMireds, relay: relay,
            relayActiveLow: map.bool("relayActiveLow") ?? false, frequency: map.int("frequency") ?? 1000,
            gamma: map.double("gamma") ?? 2.2, minimumDuty: map.double("minimumDuty") ?? 0,
            polarity: map.text("polarity").flatMap(PWMOutputPolarity.init) ?? .normal)
    }

    var wiring: String {
        "warm white PWM \(warm), cold white PWM \(cold) at \(frequency) Hz, \(coldMireds)…\(warmMireds) mireds"
            + (relay.map { ", power relay \($0)" + (relayActiveLow ? " (active low)" : "") } ?? "")
    }

    var periodNanoseconds: UInt64 { UInt64(1_000_000_000 / frequency) }
}

extension BindingKind {
    static let cctDimmer = BindingKind(
        "cctDimmer", fits: [.colorTemperatureLight],
        help: "A tunable-white (CCT) LED strip on two PWM channels, warm and cold white (ColorTemperatureLight).",
        keys: CCTDimmerConfiguration.keys, rules: []
    ) { reader in
        CCTDimmerConfiguration.read(reader).map { CCTDimmerBinding($0, context: reader.context) }
    }
}
