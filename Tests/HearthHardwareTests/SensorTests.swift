import HearthEngine
@testable import HearthHardware
import HearthHardwareLinux
import HearthLinux
@testable import HearthSimulator
import HearthModel
import HearthTestKit
import Testing

@Suite("Humidity and temperature sensors")
struct SensorTests {
    func humidity(_ rig: Rig, _ device: String = "bath") throws -> Value? {
        try rig.value(device, "relativeHumidityMeasurement", "measuredValue")
    }

    @Test func iioProcessedHumidityReachesTheTraitInHundredths() throws {
        let tree = try SysfsTree()
        // The si7020's IIO device under its I2C client, as the kernel lays it out.
        try tree.addIIODevice(0, name: "1-0040", attributes: ["in_humidityrelative_input": "45120"])
        try tree.symlink("/sys/bus/i2c/devices/1-0040", to: "../../../devices/platform/hearth-iio.0")
        let rig = try Rig(sysfs: tree)
        try rig.add("bath", .humiditySensor, binding: "{kind: humiditySensor, sensor: humidity-1, interval: 30s}")
        try rig.start()
        #expect(try humidity(rig) == .int(4512))
        try tree.file("/sys/devices/platform/hearth-iio.0/iio:device0/in_humidityrelative_input", "46007\n")
        rig.advance(by: 29_999)
        #expect(try humidity(rig) == .int(4512))
        rig.advance(by: 1)
        #expect(try humidity(rig) == .int(4601))
    }

    @Test func iioRawTimesScalePlusOffsetForTemperature() throws {
        let tree = try SysfsTree()
        // si7020 style: (raw + offset) × scale = m°C; 26240 → (26240 − 18236) × 2.681274414 ≈ 21460 m°C.
        try tree.addIIODevice(0, name: "1-0040", attributes: [
            "in_temp_raw": "26240", "in_temp_offset": "-18236", "in_temp_scale": "2.681274414",
        ])
        try tree.symlink("/sys/bus/i2c/devices/1-0040", to: "../../../devices/platform/hearth-iio.0")
        let rig = try Rig(sysfs: tree)
        try rig.add("bath", .temperatureSensor, binding: "{kind: temperatureSensor, sensor: humidity-1}")
        try rig.start()
        #expect(try rig.value("bath", "temperatureMeasurement", "measuredValue") == .int(2146))
    }

    @Test func iioAndHwmonByName() throws {
        let tree = try SysfsTree()
        try tree.addIIODevice(3, name: "hdc2010", attributes: ["in_humidityrelative_input": "51250"])
        try tree.addHwmon(1, name: "sht3x", attributes: ["humidity1_input": "38500", "temp1_input": "-4250"])
        let rig = try Rig(sysfs: tree)
        try rig.add("a", .humiditySensor, binding: "{kind: humiditySensor, iio: hdc2010}")
        try rig.add("b", .humiditySensor, binding: "{kind: humiditySensor, hwmon: sht3x}")
        try rig.add("c", .temperatureSensor, binding: "{kind: temperatureSensor, hwmon: sht3x}")
        try rig.start()
        #expect(try humidity(rig, "a") == .int(5125))
        #expect(try humidity(rig, "b") == .int(3850))
        #expect(try rig.value("c", "temperatureMeasurement", "measuredValue") == .int(-425))
    }

    @Test func medianDeltaAndThrottle() throws {
        let rig = try Rig()
        try rig.add("bath", .humiditySensor, binding: """
            {kind: humiditySensor, sensor: humidity-1, interval: 10s, median: 3, deltaThreshold: 0.5, throttle: 2m}
            """)
        let sim = rig.simulation
        sim.setReading(sensor: "humidity-1", .humidity, milli: 50_000)
        try rig.start()
        #expect(try humidity(rig) == .int(5000))
        // A single spike never gets past the median of three.
        sim.setReading(sensor: "humidity-1", .humidity, milli: 90_000)
        rig.advance(by: 10_000)
        sim.setReading(sensor: "humidity-1", .humidity, milli: 50_100)
        rig.advance(by: 10_000)
        #expect(try humidity(rig) == .int(5000))
        // A change below the delta threshold is held.
        sim.setReading(sensor: "humidity-1", .humidity, milli: 50_300)
        rig.advance(by: 10_000)
        rig.advance(by: 10_000)
        #expect(try humidity(rig) == .int(5000))
        // A real change is held by the throttle until two minutes after the last publication…
        sim.setReading(sensor: "humidity-1", .humidity, milli: 60_000)
        for _ in 0..<7 { rig.advance(by: 10_000) }
        #expect(rig.clock.now == EngineInstant(milliseconds: 110_000))
        #expect(try humidity(rig) == .int(5000))
        rig.advance(by: 10_000)
        #expect(try humidity(rig) == .int(6000), "published at the first read two minutes after the last one")
        // …and a client's refresh publishes at once.
        sim.setReading(sensor: "humidity-1", .humidity, milli: 61_000)
        rig.advance(by: 10_000)
        rig.advance(by: 10_000)
        #expect(try humidity(rig) == .int(6000))
        rig.bindings[0].refresh()
        #expect(try humidity(rig) == .int(6100))
    }

    @Test func implausibleReadingsAreDroppedAndLogged() throws {
        let rig = try Rig()
        try rig.add("bath", .humiditySensor, binding: """
            {kind: humiditySensor, sensor: humidity-1, interval: 30s, maxRate: 20, staleAfter: 5}
            """)
        try rig.add("temp", .temperatureSensor, binding: "{kind: temperatureSensor, sensor: humidity-1, interval: 30s}")
        let sim = rig.simulation
        sim.setReading(sensor: "humidity-1", .humidity, milli: 50_000)
        sim.setReading(sensor: "humidity-1", .temperature, milli: 21_000)
        try rig.start()
        #expect(try humidity(rig) == .int(5000))

        // 50 → 75 %RH in 30 s is 50 %RH per minute, beyond maxRate 20.
        sim.setReading(sensor: "humidity-1", .humidity, milli: 75_000)
        rig.advance(by: 30_000)
        sim.setReading(sensor: "humidity-1", .humidity, milli: 120_000)
        sim.setReading(sensor: "humidity-1", .temperature, milli: 150_000)
        rig.advance(by: 30_000)
        sim.setReading(sensor: "humidity-1", .humidity, milli: .nan)
        sim.setReading(sensor: "humidity-1", .temperature, milli: 21_000)
        rig.advance(by: 30_000)
        #expect(try humidity(rig) == .int(5000))
        #expect(try rig.value("temp", "temperatureMeasurement", "measuredValue") == .int(2100))
        #expect(
            rig.logs.contains(
                "bath HumiditySensor (humiditySensor): reading dropped: 120.00 %RH is outside the sensor's range "
                    + "0.00…100.00 %RH"))
        #expect(
            rig.logs.contains(
                "temp TemperatureSensor (temperatureSensor): reading dropped: 150.00 °C is outside the sensor's range "
                    + "-40.00…125.00 °C"))
        #expect(rig.logs.contains("bath HumiditySensor (humiditySensor): reading dropped: the sensor returned nan"))
        #expect(
            rig.logs.contains("reading dropped: a jump of 25.00 %RH in 30.00s exceeds maxRate 20.00 %RH per minute"))
        // A plausible rate is accepted: 50 → 60 %RH over two minutes since the last accepted reading.
        sim.setReading(sensor: "humidity-1", .humidity, milli: 60_000)
        rig.advance(by: 30_000)
        #expect(try humidity(rig) == .int(6000))
        #expect(try rig.connectivity("bath", "relativeHumidityMeasurement") == .directOnline)
    }

    @Test func aStaleSensorGoesOfflineWithANullValueAndRecoversByItself() throws {
        let tree = try SysfsTree()
        let attribute = "/sys/devices/platform/hearth-iio.0/iio:device0/in_humidityrelative_input"
        try tree.addIIODevice(0, name: "1-0040", attributes: ["in_humidityrelative_input": "45000"])
        try tree.symlink("/sys/bus/i2c/devices/1-0040", to: "../../../devices/platform/hearth-iio.0")
        let rig = try Rig(sysfs: tree)
        try rig.add(
            "bath", .humiditySensor, binding: "{kind: humiditySensor, sensor: humidity-1, interval: 30s, staleAfter: 3}"
        )
        try rig.start()
        #expect(try humidity(rig) == .int(4500))

        // The chip stops answering: reads fail with EIO, as an I²C sensor does.
        tree.remove(attribute)
        try tree.symlink(attribute, to: "/proc/self/mem")
        rig.advance(by: 30_000)
        rig.advance(by: 30_000)
        #expect(try humidity(rig) == .int(4500))
        #expect(try rig.connectivity("bath", "relativeHumidityMeasurement") == .directOnline)
        rig.advance(by: 30_000)
        #expect(try humidity(rig) == .null)
        #expect(try rig.connectivity("bath", "relativeHumidityMeasurement") == SourceConnectivity(.offline, .direct))
        #expect(
            rig.logs.all.contains {
                $0.hasPrefix(
                    "bath HumiditySensor (humiditySensor): offline: no plausible reading for 3 intervals (last: "
                        + "reading humidity-1 (si7020 at 0x40 on i2c-1) failed: ")
                    && $0.contains("did not answer")
            })

        tree.remove(attribute)
        try tree.file(attribute, "47250\n")
        rig.advance(by: 30_000)
        #expect(try humidity(rig) == .int(4725))
        #expect(try rig.connectivity("bath", "relativeHumidityMeasurement") == .directOnline)
        #expect(rig.logs.contains("bath HumiditySensor (humiditySensor): back online"))
    }

    @Test func aMissingSensorIsOfflineAndRetriedWithBackoff() throws {
        let tree = try SysfsTree()
        let rig = try Rig(sysfs: tree)
        try rig.add("bath", .humiditySensor, binding: "{kind: humiditySensor, sensor: humidity-1, interval: 30s}")
        try rig.start()
        #expect(try rig.connectivity("bath", "relativeHumidityMeasurement") == SourceConnectivity(.offline, .direct))
        #expect(try humidity(rig) == .null)
        #expect(
            rig.logs.all.contains {
                $0.contains(
                    "offline: opening humidity-1 (si7020 at 0x40 on i2c-1) failed: no si7020 sensor at 0x40 on i2c-1")
            })
        try tree.addIIODevice(0, name: "1-0040", attributes: ["in_humidityrelative_input": "52000"])
        try tree.symlink("/sys/bus/i2c/devices/1-0040", to: "../../../devices/platform/hearth-iio.0")
        rig.advance(by: 1000)
        #expect(try humidity(rig) == .int(5200))
        #expect(try rig.connectivity("bath", "relativeHumidityMeasurement") == .directOnline)
    }

    @Test func theSimulatedSensorDriftsWithinBoundsAndRepeatsWithItsSeed() throws {
        func run() throws -> [Value?] {
            let rig = try Rig()
            try rig.add("bath", .humiditySensor, binding: "{kind: humiditySensor, sensor: humidity-1, interval: 1m}")
            try rig.start()
            var values: [Value?] = []
            for _ in 0..<200 {
                rig.advance(by: 60_000)
                values.append(try humidity(rig))
            }
            return values
        }
        let first = try run()
        #expect(try run() == first)
        let numbers = first.compactMap { $0?.intValue }
        #expect(numbers.count == 200)
        #expect(numbers.allSatisfy { (3970...6970).contains($0) }, "within 15 %RH of the register's 54.7 %")
        #expect(Set(numbers).count > 50, "it moves")
    }
}
