import HearthConfig

/// `binding: {kind: humiditySensor, sensor: humidity-1, interval: 30s, median: 3, deltaThreshold: 0.5, throttle: 5m,
/// maxRate: 20, staleAfter: 3}` (and `kind: temperatureSensor` with the same keys).
///
/// | key | default | meaning |
/// |---|---|---|
/// | `sensor` | — | the board's I2C sensor; or `iio: <IIO device name>`, or `hwmon: <hwmon name>` |
/// | `interval` | `30s` | how often the sensor is read (100ms…24h) |
/// | `median` | `1` | publish the median of the last N plausible readings (1 = no median; up to 15) |
/// | `deltaThreshold` | `0` | publish only changes of at least this much (%RH or °C) |
/// | `throttle` | `0s` | publish at most once per this time (a held-back change goes out at the first read after it) |
/// | `maxRate` | none | a reading that moved more than this per minute (%RH or °C) since the last plausible one is dropped |
/// | `staleAfter` | `3` | after this many intervals without a plausible reading: offline, value null |
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

    static func read(_ reader: BindingReader, quantity: SensorQuantity) -> SensorConfiguration? {
        guard let map = reader.mapping(allowed: ["sensor", "iio", "hwmon", "interval", "median", "deltaThreshold",
                                                 "throttle", "maxRate", "staleAfter"]) else { return nil }
        let unit = quantity == .humidity ? " %RH" : " °C"
        let sensor = reader.sensor(map)
        let interval = reader.milliseconds(map, "interval", in: .milliseconds(100) ... .seconds(86_400), default: 30_000)
        let median = map["median"].map { $0.int(in: 1...15) } ?? 1
        let delta = map["deltaThreshold"].map { $0.double(in: 0...100, unit: unit) } ?? 0
        let throttle = reader.milliseconds(map, "throttle", in: .zero ... .seconds(86_400), default: 0)
        let maxRate: Double?? = map["maxRate"].map { $0.double(in: 0.001...1000, unit: unit + " per minute") } ?? .some(nil)
        let staleAfter = map["staleAfter"].map { $0.int(in: 1...1000, unit: " intervals") } ?? 3
        guard let sensor, let interval, let median, let delta, let throttle, let maxRate, let staleAfter else {
            return nil
        }
        let plausible: ClosedRange<Double>
        switch quantity {
        case .humidity: plausible = 0...100_000
        case .temperature:
            if case .i2c(let s) = sensor { plausible = SensorDrivers.temperatureRange(s.driver) }
            else { plausible = SensorDrivers.temperatureRange(nil) }
        }
        return SensorConfiguration(quantity: quantity, sensor: sensor, interval: interval, median: median,
                                   deltaThreshold: delta * 1000, throttle: throttle, maxRate: maxRate.map { $0 * 1000 },
                                   staleAfter: staleAfter, plausible: plausible)
    }
}
