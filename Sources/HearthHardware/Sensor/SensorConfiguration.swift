import HearthConfig
import HearthModel

/// `binding: {kind: humiditySensor, sensor: humidity-1, interval: 30s, median: 3, deltaThreshold: 0.5, throttle: 5m,
/// maxRate: 20, staleAfter: 3}` (and `kind: temperatureSensor` with the same keys).
///
/// | key | default | meaning |
/// |---|---|---|
/// | `sensor` | — | the board's I2C sensor; or `iio: <IIO device name>`, `hwmon: <hwmon name>`, or (temperature) `w1:
/// <id>` / `w1: only` | | `interval` | `30s` | how often the sensor is read (100ms…24h) |
/// | `median` | `1` | publish the median of the last N plausible readings (1 = no median; up to 15) |
/// | `deltaThreshold` | `0` | publish only changes of at least this much (%RH or °C) |
/// | `throttle` | `0s` | publish at most once per this time (a held-back change goes out at the first read after it) |
/// | `maxRate` | none | a reading that moved more than this per minute (%RH or °C) since the last plausible one is
/// dropped | | `staleAfter` | `3` | after this many intervals without a plausible reading: offline, value null |
struct SensorConfiguration: Sendable, Hashable {
    var quantity: SensorQuantity
    var sensor: SensorAddress
    var interval: Int64 = 30_000
    var median = 1
    /// In milli-units (m%RH, m°C).
    var deltaThreshold = 0.0
    var throttle: Int64 = 0
    /// In milli-units per minute.
    var maxRate: Double?
    var staleAfter = 3
    /// Readings outside are implausible (milli-units).
    var plausible: ClosedRange<Double>

    /// The keys the reader takes and the JSON Schema lists after `kind` (`humiditySensor` or `temperatureSensor`).
    static func keys(_ quantity: SensorQuantity) -> [ConfigKey] {
        let unit = quantity == .humidity ? " %RH" : " °C"
        return [
            ConfigKey("sensor", .text, "the board's I2C sensor (a name from the board file, e.g. humidity-1)"),
            ConfigKey("iio", .text, "instead of sensor: an IIO device's name"),
            ConfigKey("hwmon", .text, "instead of sensor: a hwmon device's name"),
        ] + (quantity == .temperature ? [
            ConfigKey("w1", .text, "instead of sensor: a 1-Wire thermometer (DS18B20) by its id, e.g. 28-0316a2791aff, "
                      + "or 'only' for the one on the bus"),
        ] : []) + [
            ConfigKey("interval", .duration(.milliseconds(100) ... .seconds(86_400), defaultUnit: "ms"),
                      "how often it is read; default 30s"),
            ConfigKey("median", .int(1...15, unit: ""),
                      "publish the median of the last N plausible readings; default 1"),
            ConfigKey("deltaThreshold", .number(0...100, unit: unit),
                      "publish only changes of at least this (\(unit.dropFirst())); default 0"),
            ConfigKey("throttle", .duration(.zero ... .seconds(86_400), defaultUnit: "ms"),
                      "publish at most once per this time; default 0s"),
            ConfigKey("maxRate", .number(0.001...1000, unit: unit + " per minute"),
                      "a reading that moved faster than this (\(unit.dropFirst()) per minute) is dropped; "
                        + "default none"),
            ConfigKey("staleAfter", .int(1...1000, unit: " intervals"),
                      "after this many intervals without a plausible reading: offline and null; default 3"),
        ]
    }

    /// Exactly one place to read from: a DS18B20 (`w1`) is a thermometer, so only a temperature sensor has it.
    static func rules(_ quantity: SensorQuantity) -> [ConfigRule] {
        quantity == .temperature
            ? [.atLeastOne("sensor", "iio", "hwmon", "w1"), .atMostOne("sensor", "iio", "hwmon", "w1")]
            : [.atLeastOne("sensor", "iio", "hwmon"), .atMostOne("sensor", "iio", "hwmon")]
    }

    /// Whether a read blocks for long (a DS18B20's 750 ms conversion), so even the first one belongs on the lane.
    var readsSlowly: Bool { if case .oneWire = sensor { true } else { false } }

    var wiring: String {
        let seconds = Double(interval) / 1000
        return "\(sensor), read every " + (seconds == seconds.rounded() ? "\(Int(seconds)) s" : "\(seconds) s")
    }

    static func read(_ reader: BindingReader, quantity: SensorQuantity) -> SensorConfiguration? {
        guard let map = reader.mapping() else { return nil }
        let sensor = reader.sensor(map)
        let interval = map.duration("interval").map(BindingReader.milliseconds) ?? 30_000
        let median = map.int("median") ?? 1
        let delta = map.double("deltaThreshold") ?? 0
        let throttle = map.duration("throttle").map(BindingReader.milliseconds) ?? 0
        let maxRate = map.double("maxRate")
        let staleAfter = map.int("staleAfter") ?? 3
        guard let sensor else { return nil }
        let plausible: ClosedRange<Double>
        switch quantity {
        case .humidity: plausible = 0...100_000
        case .temperature:
            switch sensor {
            case .i2c(let s): plausible = SensorDrivers.temperatureRange(s.driver)
            case .oneWire: plausible = SensorDrivers.temperatureRange("w1_therm")
            default: plausible = SensorDrivers.temperatureRange(nil)
            }
        }
        return SensorConfiguration(quantity: quantity, sensor: sensor, interval: interval, median: median,
                                   deltaThreshold: delta * 1000, throttle: throttle, maxRate: maxRate.map { $0 * 1000 },
                                   staleAfter: staleAfter, plausible: plausible)
    }
}

extension BindingKind {
    static let humiditySensor = sensor(
        .humidity, fits: .humiditySensor, help: "A relative-humidity sensor (HumiditySensor).")
    static let temperatureSensor = sensor(
        .temperature, fits: .temperatureSensor,
        help: "A temperature sensor (TemperatureSensor).")

    private static func sensor(_ quantity: SensorQuantity, fits type: DeviceTypeDescriptor, help: String) -> BindingKind
    {
        BindingKind(
            quantity == .humidity ? "humiditySensor" : "temperatureSensor", fits: [type], help: help,
            keys: SensorConfiguration.keys(quantity), rules: SensorConfiguration.rules(quantity)
        ) { reader in
            SensorConfiguration.read(reader, quantity: quantity).map { SensorBinding($0, context: reader.context) }
        }
    }
}
