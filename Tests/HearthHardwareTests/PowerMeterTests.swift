import Glibc
import HearthConfig
import HearthEngine
@testable import HearthHardware
import HearthHardwareLinux
import HearthLinux
@testable import HearthSimulator
import HearthModel
import HearthTestKit
import Testing

/// A plug's power meter (an INA219/INA226 through the kernel's ina2xx hwmon driver) and 1-Wire thermometers (w1_therm)
/// on sysfs-shaped trees laid out as the kernel lays them out; the simulated board's; their configuration's errors.
/// The kernel has no 1-Wire bus simulator, so the thermometers are tested on trees only (the INA219 also runs in the
/// HIL VM on i2c-stub: HardwareHILTests, tests/hil/power.test.sh).
@Suite("Power meters and 1-Wire thermometers")
struct PowerMeterTests {
    func problems(_ rig: Rig) -> [String] { rig.diagnostics.problems.map(\.description) }

    /// The sim board's power-1 (ina219 at 0x41 on i2c-1) as the kernel shows it: the I2C client with its hwmon device.
    static let client = "/sys/devices/platform/i2c-1/1-0041"
    func addINA219(_ tree: SysfsTree, microwatts: Int = 6_000_000, millivolts: Int = 12_000, milliamps: Int = 500)
        throws
    {
        try tree.file(Self.client + "/name", "ina219\n")
        let hwmon = Self.client + "/hwmon/hwmon2"
        try tree.file(hwmon + "/name", "ina219\n")
        try tree.file(hwmon + "/power1_input", "\(microwatts)\n")
        try tree.file(hwmon + "/in1_input", "\(millivolts)\n")
        try tree.file(hwmon + "/curr1_input", "\(milliamps)\n")
        try tree.file(hwmon + "/shunt_resistor", "10000\n")
        try tree.symlink("/sys/bus/i2c/devices/1-0041", to: "../../../devices/platform/i2c-1/1-0041")
        try tree.symlink("/sys/class/hwmon/hwmon2", to: "../../devices/platform/i2c-1/1-0041/hwmon/hwmon2")
    }

    func power(_ rig: Rig, _ attribute: String) throws -> Value? {
        try rig.value("plug", "electricalPowerMeasurement", attribute)
    }

    func energy(_ rig: Rig) throws -> Int? {
        try rig.value("plug", "electricalEnergyMeasurement", "cumulativeEnergyImported")?.structureValue?["energy"]?
            .intValue
    }

    // MARK: The meter

    @Test func theINA219sReadingsReachThePlugInMatterUnits() throws {
        let tree = try SysfsTree()
        try addINA219(tree, microwatts: 6_000_499, millivolts: 12_004, milliamps: -500)
        let rig = try Rig(sysfs: tree)
        let binding = try rig.add(
            "plug", .onOffPlugInUnit,
            binding: "{kind: relay, pin: relay-2, meter: {sensor: power-1, interval: 2s, shunt: 0.1}}")
        #expect(binding?.wiring.hasSuffix("; meter power-1 (ina219 at 0x41 on i2c-1), read every 2 s") == true)
        try rig.start()
        #expect(try power(rig, "activePower") == .int(6000), "µW → mW, rounded")
        #expect(try power(rig, "voltage") == .int(12_004))
        #expect(try power(rig, "activeCurrent") == .int(-500))
        #expect(try power(rig, "powerMode") == .int(1))
        #expect(tree.contents(of: Self.client + "/hwmon/hwmon2/shunt_resistor") == "100000", "0.1 Ω written in µΩ")
        // The INA219's datasheet accuracy with a 0.1 Ω shunt: 100 µA per current LSB (±3276 mA full scale) and
        // 20 × that per power LSB (65535 × 2 mW = 131070 mW).
        let accuracy = try #require(try power(rig, "accuracy")?.listValue)
        #expect(accuracy.count == 3)
        let activePower = try #require(accuracy.first?.structureValue)
        #expect(activePower["measurementType"] == .int(5))
        #expect(activePower["measured"] == .bool(true))
        #expect(activePower["maxMeasuredValue"] == .int(131_070))
        #expect(activePower["accuracyRanges"] == .list([.structure([
            "rangeMin": .int(0), "rangeMax": .int(131_070), "percentMax": .int(100), "fixedMax": .int(0)])]))
        #expect(accuracy[2].structureValue?["minMeasuredValue"] == .int(-3276))
        // The relay is still the plug's relay.
        try rig.home.invoke("plug", trait: "onOff", command: "on")
        #expect(rig.simulation.output(try key(rig, "relay-2"))?.value == true)

        // Energy: 6 W for 2 s, then 6 W → 3 W over the next 2 s.
        try tree.file(Self.client + "/hwmon/hwmon2/power1_input", "6000000\n")
        rig.advance(by: 2_000)
        try tree.file(Self.client + "/hwmon/hwmon2/power1_input", "3000000\n")
        rig.advance(by: 2_000)
        #expect(try power(rig, "activePower") == .int(3000))
        #expect(try energy(rig) == 0, "the snapshot waits for its 60 s")
        for _ in 0..<28 { rig.advance(by: 2_000) }
        // 2 s × 6 W + 2 s × 4.5 W + 56 s × 3 W = 12 + 9 + 168 J = 189 J = 52.5 mWh.
        #expect(try energy(rig) == 52)
    }

    @Test func aMeterThatStopsAnsweringGoesOfflineAndRecoversByItself() throws {
        let tree = try SysfsTree()
        try addINA219(tree)
        let rig = try Rig(sysfs: tree)
        try rig.add(
            "plug", .onOffPlugInUnit,
            binding: "{kind: relay, pin: relay-2, meter: {sensor: power-1, interval: 1s, staleAfter: 2}}")
        try rig.start()
        #expect(try power(rig, "activePower") == .int(6000))
        // The chip stops answering: reads fail with EIO, as the ina2xx driver's do when the I²C transfer fails.
        let attribute = Self.client + "/hwmon/hwmon2/power1_input"
        tree.remove(attribute)
        try tree.symlink(attribute, to: "/proc/self/mem")
        rig.advance(by: 1_000)
        #expect(
            try rig.connectivity("plug", "electricalPowerMeasurement") == .directOnline, "one failure is not an outage")
        rig.advance(by: 1_000)
        #expect(try power(rig, "activePower") == .null)
        #expect(try power(rig, "voltage") == .null)
        #expect(try rig.connectivity("plug", "electricalPowerMeasurement") == SourceConnectivity(.offline, .direct))
        #expect(try rig.connectivity("plug", "electricalEnergyMeasurement") == SourceConnectivity(.offline, .direct))
        #expect(try rig.connectivity("plug", "onOff") == .directOnline, "the relay does not depend on its meter")
        #expect(
            rig.logs.all.contains {
                $0.hasPrefix(
                    "plug OnOffPlugInUnit (meter): offline: 2 reads in a row failed (last: "
                        + "reading power-1 (ina219 at 0x41 on i2c-1) failed: ") && $0.contains("did not answer")
            })
        #expect(try energy(rig) == 0, "the total is kept while offline")

        tree.remove(attribute)
        try tree.file(attribute, "7000000\n")
        rig.advance(by: 1_000)
        #expect(try power(rig, "activePower") == .int(7000))
        #expect(try rig.connectivity("plug", "electricalPowerMeasurement") == .directOnline)
        #expect(rig.logs.contains("plug OnOffPlugInUnit (meter): back online"))
    }

    @Test func aMissingMeterIsOfflineWithTheFixAndRetried() throws {
        let tree = try SysfsTree()
        let rig = try Rig(sysfs: tree)
        try rig.add("plug", .onOffPlugInUnit, binding: "{kind: relay, pin: relay-2, meter: {sensor: power-1}}")
        try rig.start()
        #expect(try rig.connectivity("plug", "electricalPowerMeasurement") == SourceConnectivity(.offline, .direct))
        #expect(
            rig.logs.all.contains {
                $0.contains(
                    "offline: opening power-1 (ina219 at 0x41 on i2c-1) failed: no ina219 power "
                        + "monitor at 0x41 on i2c-1") && $0.contains("is the ina2xx driver loaded")
            })
        try addINA219(tree)
        rig.advance(by: 1_000)
        #expect(try power(rig, "activePower") == .int(6000))
        #expect(try rig.connectivity("plug", "electricalPowerMeasurement") == .directOnline)
    }

    @Test func byHwmonNameAndOnTheSimulatedBoard() throws {
        let tree = try SysfsTree()
        try tree.addHwmon(
            0, name: "ina226", attributes: ["power1_input": "2500000", "in1_input": "5000", "curr1_input": "500"])
        let rig = try Rig(sysfs: tree)
        try rig.add("plug", .onOffPlugInUnit, binding: "{kind: relay, pin: relay-2, meter: {hwmon: ina226}}")
        try rig.start()
        #expect(try power(rig, "activePower") == .int(2500))
        // The INA226's datasheet: ±0.1 % (10 hundredths of a percent).
        #expect(try power(rig, "accuracy")?.listValue?.first?.structureValue?["accuracyRanges"]?.listValue?.first?
            .structureValue?["percentMax"] == .int(10))

        let sim = try Rig()
        try sim.add("plug", .onOffPlugInUnit, binding: "{kind: relay, pin: relay-2, meter: {sensor: power-1}}")
        try sim.start()
        let watts = try #require(try sim.value("plug", "electricalPowerMeasurement", "activePower")?.intValue)
        #expect((15_000...21_000).contains(watts))
        #expect(try sim.value("plug", "electricalPowerMeasurement", "voltage") == .int(12_000))
        sim.simulation.failReads(
            meter: "power-1", HardwareError(.io, message: "simulated EIO", operation: "read", context: "power-1"))
        for _ in 0..<3 { sim.advance(by: 5_000) }
        #expect(try sim.connectivity("plug", "electricalPowerMeasurement") == SourceConnectivity(.offline, .direct))
        sim.simulation.failReads(meter: "power-1", nil)
        sim.simulation.setReading(
            meter: "power-1", PowerMeterReading(microwatts: 1_000_000, millivolts: 5_000, milliamps: 200))
        sim.advance(by: 5_000)
        #expect(try sim.value("plug", "electricalPowerMeasurement", "activePower") == .int(1000))
        #expect(try sim.connectivity("plug", "electricalPowerMeasurement") == .directOnline)
    }

    @Test func meterConfigurationErrorsSayWhatAndWhere() throws {
        let rig = try Rig()
        #expect(rig.makeBinding("{kind: relay, pin: relay-1, meter: {sensor: power-1}}", device: "porch",
                                type: "OnOffLight") == nil)
        #expect(rig.makeBinding("{kind: relay, pin: relay-2, meter: {sensor: humidity-1}}", device: "plug",
                                type: "OnOffPlugInUnit") == nil)
        #expect(rig.makeBinding("{kind: relay, pin: relay-3, meter: {sensor: power-9}}", device: "plug2",
                                type: "OnOffPlugInUnit") == nil)
        #expect(rig.makeBinding("{kind: relay, pin: relay-4, meter: {hwmon: sht3x, interval: 100ms}}", device: "plug3",
                                type: "OnOffPlugInUnit") == nil)
        #expect(problems(rig).sorted() == [
            "hub.yaml:1:36: meter: a meter measures a plug's load: it fits an OnOffPlugInUnit, not a OnOffLight",
            "hub.yaml:1:45: meter.sensor: 'humidity-1' is a si7020, not a power monitor; a meter is one of ina219, "
                + "ina220, "
                + "ina226, ina230, ina231",
            "hub.yaml:1:45: meter.sensor: the board 'sim' has no sensor 'power-9'; its power monitors are power-1",
            "hub.yaml:1:44: meter.hwmon: 'sht3x' is not a power monitor's hwmon name; use one of ina219, ina220, "
                + "ina226, ina230, ina231",
            "hub.yaml:1:61: meter.interval: 100ms is out of range; allowed: 1.0 seconds … 60.0 seconds",
        ].sorted())
        let other = try Rig()
        #expect(
            other.makeBinding("{kind: humiditySensor, sensor: power-1}", device: "bath", type: "HumiditySensor") == nil)
        #expect(
            problems(other) == [
                "hub.yaml:1:32: sensor: 'power-1' is a ina219 power monitor, not a sensor of this kind "
                    + "(a plug's relay reads it: meter: {sensor: power-1}); sensors: humidity-1"
            ])
    }

    // MARK: 1-Wire thermometers

    func addThermometer(_ tree: SysfsTree, _ id: String, milliCelsius: String) throws {
        try tree.file("/sys/devices/w1_bus_master1/\(id)/temperature", milliCelsius + "\n")
        try tree.symlink("/sys/bus/w1/devices/\(id)", to: "../../../devices/w1_bus_master1/\(id)")
    }

    func temperature(_ rig: Rig, _ device: String = "outside") throws -> Value? {
        try rig.value(device, "temperatureMeasurement", "measuredValue")
    }

    @Test func aDS18B20ByIdOrTheOnlyOne() throws {
        let tree = try SysfsTree()
        try addThermometer(tree, "28-0316a2791aff", milliCelsius: "-3125")
        try tree.directory("/sys/devices/w1_bus_master1/w1_bus_master1")  // the master itself is listed too
        try tree.symlink("/sys/bus/w1/devices/w1_bus_master1", to: "../../../devices/w1_bus_master1")
        let rig = try Rig(sysfs: tree)
        try rig.add(
            "outside", .temperatureSensor, binding: "{kind: temperatureSensor, w1: 28-0316a2791aff, interval: 30s}")
        try rig.add("shed", .temperatureSensor, binding: "{kind: temperatureSensor, w1: only}")
        try rig.start()
        rig.home.drainLanes()  // the first conversion runs on each device's lane
        #expect(try temperature(rig) == .int(-313))
        #expect(try temperature(rig, "shed") == .int(-313))

        try addThermometer(tree, "28-00000b1c2d3e", milliCelsius: "19500")
        let again = try Rig(sysfs: tree)
        try again.add("shed", .temperatureSensor, binding: "{kind: temperatureSensor, w1: only}")
        try again.add("other", .temperatureSensor, binding: "{kind: temperatureSensor, w1: 28-00000b1c2d3e}")
        try again.add("gone", .temperatureSensor, binding: "{kind: temperatureSensor, w1: 28-ffffffffffff}")
        try again.start()
        again.home.drainLanes()
        #expect(try temperature(again, "other") == .int(1950))
        #expect(try again.connectivity("shed", "temperatureMeasurement") == SourceConnectivity(.offline, .direct))
        #expect(
            again.logs.all.contains {
                $0.contains(
                    "shed TemperatureSensor (temperatureSensor): offline: opening the 1-Wire "
                        + "thermometer failed: 2 1-Wire thermometers in ")
                    && $0.contains("(28-00000b1c2d3e, 28-0316a2791aff): name the one to read (w1: <id>)")
            })
        #expect(
            again.logs.all.contains {
                $0.contains(
                    "gone TemperatureSensor (temperatureSensor): offline: opening 1-Wire thermometer "
                        + "28-ffffffffffff failed: no 1-Wire thermometer 28-ffffffffffff in ")
                    && $0.contains("found 28-00000b1c2d3e, 28-0316a2791aff")
            })
    }

    @Test func aThermometerThatFailsItsCRCGoesOfflineAndRecovers() throws {
        let tree = try SysfsTree()
        try addThermometer(tree, "28-0316a2791aff", milliCelsius: "21500")
        let rig = try Rig(sysfs: tree)
        try rig.add(
            "outside", .temperatureSensor, binding: "{kind: temperatureSensor, w1: only, interval: 10s, staleAfter: 1}")
        try rig.start()
        rig.home.drainLanes()
        #expect(try temperature(rig) == .int(2150))
        let attribute = "/sys/devices/w1_bus_master1/28-0316a2791aff/temperature"
        tree.remove(attribute)
        try tree.symlink(attribute, to: "/proc/self/mem")  // reads as EIO, as w1_therm's after a CRC error
        rig.advance(by: 10_000)
        #expect(try temperature(rig) == .null)
        #expect(try rig.connectivity("outside", "temperatureMeasurement") == SourceConnectivity(.offline, .direct))
        #expect(rig.logs.all.contains { $0.contains("1-Wire thermometer 28-0316a2791aff did not answer reading")
            && $0.contains("4.7 kΩ pull-up") })
        tree.remove(attribute)
        try tree.file(attribute, "22000\n")
        rig.advance(by: 10_000)
        #expect(try temperature(rig) == .int(2200))
        #expect(try rig.connectivity("outside", "temperatureMeasurement") == .directOnline)
        // A DS18B20 reads −55 … 125 °C: anything else is dropped (here, with staleAfter 1, at once stale).
        try tree.file(attribute, "130000\n")
        rig.advance(by: 10_000)
        #expect(try temperature(rig) == .null)
        #expect(rig.logs.contains("130.00 °C is outside the sensor's range -55.00…125.00 °C"))
    }

    /// The conversion blocks in the kernel for 750 ms; here a FIFO with no writer blocks the read in the kernel until
    /// the test writes the temperature. Meanwhile another device's command runs to its end on its own lane.
    @Test(.timeLimit(.minutes(1))) func aConversionInProgressHoldsUpNoOtherDevice() async throws {
        let tree = try SysfsTree()
        let attribute = "/sys/devices/w1_bus_master1/28-0316a2791aff/temperature"
        try tree.directory("/sys/devices/w1_bus_master1/28-0316a2791aff")
        try tree.symlink("/sys/bus/w1/devices/28-0316a2791aff", to: "../../../devices/w1_bus_master1/28-0316a2791aff")
        #expect(mkfifo(tree.path(attribute), 0o600) == 0)
        let rig = try Rig(sysfs: tree)
        try rig.add("porch", .onOffLight, binding: "{kind: relay, pin: relay-1}")
        try rig.add("outside", .temperatureSensor, binding: "{kind: temperatureSensor, w1: only}")
        try rig.start()  // returns at once: the first conversion is queued on the thermometer's lane

        // Wait until the read is in the kernel: a FIFO opens for writing without blocking only once a reader has it
        // open.
        let deadline = ContinuousClock.now + .seconds(20)
        var writer: Int32 = -1
        while writer < 0 {
            writer = open(tree.path(attribute), O_WRONLY | O_NONBLOCK | O_CLOEXEC)
            if writer < 0 {
                try #require(errno == ENXIO, "open for writing: errno \(errno)")
                try #require(ContinuousClock.now < deadline, "the thermometer's read never started")
                sched_yield()
            }
        }
        // The thermometer's lane is blocked in read(2). Another device's command goes through on its own lane.
        let ran = await rig.home.onLane(of: "porch") { [home = rig.home!] in
            do { _ = try home.invoke("porch", trait: "onOff", command: "toggle"); return true } catch { return false }
        }
        #expect(ran == true)
        #expect(try rig.isOn("porch"))
        #expect(try temperature(rig) == .null, "still converting")

        let bytes = Array("7250\n".utf8)
        #expect(write(writer, bytes, bytes.count) == bytes.count)
        close(writer)
        rig.home.drainLanes()
        #expect(try temperature(rig) == .int(725))
    }

    @Test func w1ConfigurationErrorsSayWhatAndWhere() throws {
        let rig = try Rig()
        #expect(rig.makeBinding("{kind: temperatureSensor, w1: 28-XYZ}", device: "a", type: "TemperatureSensor") == nil)
        #expect(
            rig.makeBinding(
                "{kind: temperatureSensor, w1: only, sensor: humidity-1}", device: "b", type: "TemperatureSensor")
                == nil)
        #expect(rig.makeBinding("{kind: humiditySensor, w1: only}", device: "c", type: "HumiditySensor") == nil)
        #expect(problems(rig).sorted() == [
            "hub.yaml:1:31: w1: '28-XYZ' is not a 1-Wire id (family-serial in hex, e.g. 28-0316a2791aff); or 'only' "
                + "for "
                + "the one thermometer on the bus",
            "hub.yaml:1:1: give only one of sensor, iio, hwmon and w1 (found sensor and w1)",
            "hub.yaml:1:1: missing 'sensor' (the board's sensor, e.g. one of humidity-1; or 'iio: <device name>' or "
                + "'hwmon: <name>')",
            "hub.yaml:1:24: w1: unknown key 'w1'; allowed: kind, sensor, iio, hwmon, interval, median, deltaThreshold, "
                + "throttle, maxRate, staleAfter",
        ].sorted())
    }

    @Test func theSimulatedBoardHasADS18B20() throws {
        let rig = try Rig()
        try rig.add("outside", .temperatureSensor, binding: "{kind: temperatureSensor, w1: 28-0316a2791aff}")
        try rig.add("any", .temperatureSensor, binding: "{kind: temperatureSensor, w1: only}")
        try rig.add("none", .temperatureSensor, binding: "{kind: temperatureSensor, w1: 28-000000000001}")
        try rig.start()
        rig.home.drainLanes()
        let t = try #require(try temperature(rig)?.intValue)
        #expect((350...1350).contains(t), "8.5 °C ± the drift: \(t)")
        #expect(try temperature(rig, "any")?.intValue != nil)
        #expect(
            rig.logs.all.contains {
                $0.contains("no 1-Wire thermometer 28-000000000001 on the simulated bus: found 28-0316a2791aff")
            })
        let board = try shippedBoard("sim")
        #expect(board.oneWire?.gpio == 4)
        #expect(board.oneWire?.devices.map(\.id) == ["28-0316a2791aff"])
    }
}
