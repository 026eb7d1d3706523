import HearthConfig
import HearthEngine
import HearthModel

/// A relay's `meter:` (an OnOffPlugInUnit with power metering): `binding: {kind: relay, pin: relay-2, meter: {sensor:
/// power-1, interval: 5s, snapshotInterval: 60s, shunt: 0.1, staleAfter: 3}}`.
///
/// | key | default | meaning |
/// |---|---|---|
/// | `sensor` | — | the board's INA219/INA226 (a name from the board file); or `hwmon: <hwmon name>` |
/// | `interval` | `5s` | how often it is read (1 s … 60 s: the spec's reporting bounds) |
/// | `snapshotInterval` | `60s` | how often the cumulative energy is published and saved (1 s … 60 s) |
/// | `shunt` | the driver's | the shunt resistor in Ω, written to the driver's `shunt_resistor` |
/// | `staleAfter` | `3` | after this many failed reads in a row: offline, readings null |
struct PowerMeterConfiguration: Sendable, Hashable {
    var meter: SensorAddress
    /// The chip's driver name (`ina219`), for the datasheet's accuracy.
    var chip: String
    var interval: Int64 = 5_000
    var snapshotInterval: Int64 = 60_000
    var shuntMicroohms: Int?
    var staleAfter = 3

    static let section = ConfigSection([
        ConfigKey("sensor", .text,
                  "the board's power monitor (a name from the board file, e.g. power-1: an INA219/INA226)"),
        ConfigKey("hwmon", .text, "instead of sensor: the monitor's hwmon name (ina219, ina226, …)"),
        ConfigKey("interval", .duration(.seconds(1) ... .seconds(60), defaultUnit: "ms"),
                  "how often it is read; default 5s"),
        ConfigKey("snapshotInterval", .duration(.seconds(1) ... .seconds(60), defaultUnit: "ms"),
                  "how often the cumulative energy is published and saved; default 60s"),
        ConfigKey("shunt", .number(0.000_1...10, unit: " Ω"),
                  "the shunt resistor in ohms, written to the driver (shunt_resistor); default: the driver's (10 mΩ, "
                      + "or the device tree's)"),
        ConfigKey("staleAfter", .int(1...1000, unit: " reads"),
                  "after this many failed reads in a row: offline and null; default 3"),
    ], help: "A power monitor on the plug's load (ElectricalPowerMeasurement, ElectricalEnergyMeasurement).",
       rules: [.atLeastOne("sensor", "hwmon"), .atMostOne("sensor", "hwmon")])

    var wiring: String { "meter \(meter), read every \(interval / 1000) s" }

    static func read(_ value: ConfigValue, context: BindingContext) -> PowerMeterConfiguration? {
        guard let map = value.mapping(section) else { return nil }
        let interval = map.duration("interval").map(BindingReader.milliseconds) ?? 5_000
        let snapshot = map.duration("snapshotInterval").map(BindingReader.milliseconds) ?? 60_000
        let shunt = map.double("shunt").map { Int(($0 * 1_000_000).rounded()) }
        let staleAfter = map.int("staleAfter") ?? 3
        let meter: SensorAddress, chip: String
        if let sensorValue = map["sensor"] {
            guard let name = sensorValue.string else { return nil }
            let board = context.board
            guard let sensor = board.sensor(named: name) else {
                let names = board.sensors.filter { SensorDrivers.powerMeters.contains($0.driver) }.map(\.name)
                sensorValue.problem(
                    "the board '\(board.name)' has no sensor '\(name)'; "
                        + (names.isEmpty
                            ? "it names no power monitors (add an ina219 or ina226 under i2c.buses[].devices)"
                            : "its power monitors are \(names.joined(separator: ", "))"))
                return nil
            }
            guard SensorDrivers.powerMeters.contains(sensor.driver) else {
                sensorValue.problem("'\(name)' is a \(sensor.driver), not a power monitor; a meter is one of "
                                    + SensorDrivers.powerMeters.joined(separator: ", "))
                return nil
            }
            meter = .i2c(sensor)
            chip = sensor.driver
        } else if let hwmonValue = map["hwmon"], let name = hwmonValue.string {
            guard SensorDrivers.powerMeters.contains(name) else {
                hwmonValue.problem("'\(name)' is not a power monitor's hwmon name; use one of "
                                   + SensorDrivers.powerMeters.joined(separator: ", "))
                return nil
            }
            meter = .hwmon(name)
            chip = name
        } else {
            return nil  // the section's rule said what is missing
        }
        return PowerMeterConfiguration(meter: meter, chip: chip, interval: interval, snapshotInterval: snapshot,
                                       shuntMicroohms: shunt, staleAfter: staleAfter)
    }

    // MARK: The chips' datasheets

    /// What one INA2xx family reports and how accurately (the datasheets' figures over temperature, the chip alone).
    struct Chip {
        /// The driver's divisor from shunt voltage to current (ina2xx.c `shunt_div`) and its power LSB factor.
        var shuntDivisor: Int
        var powerFactor: Int
        var maxMillivolts: Int
        /// Hundredths of a percent.
        var currentPercent: Int
        var voltagePercent: Int
    }

    var chipData: Chip {
        switch chip {
        case "ina226", "ina230", "ina231":
            Chip(shuntDivisor: 400, powerFactor: 25, maxMillivolts: 36_000, currentPercent: 10, voltagePercent: 10)
        default:  // ina219, ina220
            Chip(shuntDivisor: 100, powerFactor: 20, maxMillivolts: 26_000, currentPercent: 100, voltagePercent: 50)
        }
    }

    /// The accuracy attributes for the plug's traits: the chip's figures over what the driver can report with this
    /// shunt (its current LSB is 10⁹ / shunt_div / shunt µA, full scale 32767 LSB; power 65535 × power LSB).
    var accuracyAttributes: [TraitID: [String: Value]] {
        let c = chipData
        let shunt = shuntMicroohms ?? 10_000
        let currentLSB = max(1, (1_000_000_000 / c.shuntDivisor + shunt / 2) / shunt)  // µA
        let maxMilliamps = 32_767 * currentLSB / 1000
        let maxMilliwatts = 65_535 * c.powerFactor * currentLSB / 1000
        let power = Value.list([
            ElectricalMeasurement.accuracy("activePower", measured: true, min: 0, max: maxMilliwatts,
                                           percentMax: c.currentPercent),
            ElectricalMeasurement.accuracy("voltage", measured: true, min: 0, max: c.maxMillivolts,
                                           percentMax: c.voltagePercent),
            ElectricalMeasurement.accuracy("activeCurrent", measured: true, min: -maxMilliamps, max: maxMilliamps,
                                           percentMax: c.currentPercent),
        ])
        let energy = ElectricalMeasurement.accuracy("electricalEnergy", measured: false, min: 0,
                                                    max: ElectricalMeasurement.int64Limit, percentMax: c.currentPercent)
        return [.electricalPowerMeasurement: ["accuracy": power], .electricalEnergyMeasurement: ["accuracy": energy]]
    }

    static let features: [TraitID: Set<String>] = [
        .electricalPowerMeasurement: ["directCurrent"],
        .electricalEnergyMeasurement: ["importedEnergy", "cumulativeEnergy"],
    ]
}
