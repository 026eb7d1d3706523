import HearthEngine
@testable import HearthHardware
import HearthHardwareLinux
import HearthLinux
@testable import HearthSimulator
import HearthModel
import HearthTestKit
import Testing

/// Hardware that fails while the hub runs: a sensor that answers EIO for 10 s, a PWM chip that
/// disappears and comes back, a GPIO line another program takes while the hub has let go of it. Each promise: the
/// device goes offline with a reason, the other devices are unaffected (a command on another device completes
/// meanwhile), and it comes back by itself. Time runs on the rig's `ManualClock` in steps, so the detection and
/// recovery times below are the hub's schedule, exact and repeatable (docs/reliability.md has the figures).
/// Detection: a sensor after `staleAfter` polls without a reading; an output by its probe every
/// `outputProbeInterval` (a relay reads its line back, a dimmer writes its duty cycle again) or at its next write.
@Suite("Hardware faults at run time")
struct HardwareFaultTests {
    let offline = SourceConnectivity(.offline, .direct)

    /// Advances the clock in `step` ms steps until `condition` holds (at most `limit` ms); the time it took.
    func advance(_ rig: Rig, step: Int64, limit: Int64, until condition: () throws -> Bool) rethrows -> Int64? {
        var elapsed: Int64 = 0
        while elapsed < limit {
            rig.advance(by: step)
            elapsed += step
            if try condition() { return elapsed }
        }
        return nil
    }

    @Test func aSensorAnsweringEIOFor10SecondsGoesOfflineAndComesBack() throws {
        let tree = try SysfsTree()
        let attribute = "/sys/devices/platform/hearth-iio.0/iio:device0/in_humidityrelative_input"
        try tree.addIIODevice(0, name: "1-0040", attributes: ["in_humidityrelative_input": "45000"])
        try tree.symlink("/sys/bus/i2c/devices/1-0040", to: "../../../devices/platform/hearth-iio.0")
        let rig = try Rig(sysfs: tree, pwmExportAttempts: 1)
        try rig.add(
            "bath", .humiditySensor, binding: "{kind: humiditySensor, sensor: humidity-1, interval: 1s, staleAfter: 3}")
        try rig.add("porch", .onOffLight, binding: "{kind: relay, pin: relay-1}")
        try rig.start()
        let humidity = { try rig.value("bath", "relativeHumidityMeasurement", "measuredValue") }
        #expect(try humidity() == .int(4500))

        // The chip stops answering: every read of the real sysfs reader fails with EIO (/proc/self/mem's first
        // page reads as EIO, as a dead I²C sensor's attribute does).
        tree.remove(attribute)
        try tree.symlink(attribute, to: "/proc/self/mem")
        let detected = try advance(rig, step: 100, limit: 10_000) {
            try rig.connectivity("bath", "relativeHumidityMeasurement") == offline
        }
        #expect(detected == 3000, "offline after staleAfter × interval")
        #expect(try humidity() == .null)
        #expect(
            rig.logs.all.contains {
                $0.hasPrefix(
                    "bath HumiditySensor (humiditySensor): offline: no plausible reading for 3 intervals "
                        + "(last: reading humidity-1 (si7020 at 0x40 on i2c-1) failed: ")
            })
        // Meanwhile another device is commanded and its hardware follows.
        try rig.home.invoke("porch", trait: "onOff", command: "on")
        #expect(rig.simulation.output(try key(rig, "relay-1"))?.value == true)
        #expect(try rig.connectivity("porch", "onOff") == .directOnline)
        // The rest of the 10 s: still offline, one log line for the outage.
        rig.advance(by: 7000)
        #expect(try rig.connectivity("bath", "relativeHumidityMeasurement") == offline)
        #expect(rig.logs.all.filter { $0.contains("bath") && $0.contains("offline:") }.count == 1)

        tree.remove(attribute)
        try tree.file(attribute, "47250\n")
        let recovered = try advance(rig, step: 100, limit: 10_000) {
            try rig.connectivity("bath", "relativeHumidityMeasurement") == .directOnline
        }
        #expect(recovered != nil && recovered! <= 1000, "back at the next poll")
        #expect(try humidity() == .int(4725))
        #expect(rig.logs.contains("bath HumiditySensor (humiditySensor): back online"))
        print(
            "hardware faults: sensor EIO detected after \(detected ?? -1) ms, recovered \(recovered ?? -1) ms after it "
                + "answered again")
    }

    @Test func aPWMChipThatDisappearsTakesItsDimmerOfflineUntilItComesBack() throws {
        let tree = try SysfsTree()
        try tree.addPWMChip(0, channels: 2)
        try tree.addPWMChannel(chip: 0, channel: 0)
        let rig = try Rig(sysfs: tree, pwmExportAttempts: 1)
        try rig.add("lamp", .dimmableLight, binding: "{kind: pwmDimmer, pwm: dimmer-1}")
        try rig.add("porch", .onOffLight, binding: "{kind: relay, pin: relay-1}")
        try rig.start()
        try rig.home.invoke(
            "lamp", trait: "levelControl", command: "moveToLevelWithOnOff",
            arguments: ["level": .int(127), "transitionTime": .int(0)])
        rig.advance(by: 1000)
        let lit = try #require(tree.contents(of: "/sys/class/pwm/pwmchip0/pwm0/duty_cycle"))
        #expect(lit != "0\n")

        // The chip goes away (its driver unbound, the overlay unloaded): the kernel removes the whole directory.
        // Nothing is commanded: the dimmer's probe (its duty cycle written again every 5 s) finds out.
        tree.remove("/sys/class/pwm/pwmchip0")
        tree.remove("/sys/devices/platform/hearth-pwm.0")
        let detected = try advance(rig, step: 100, limit: 10_000) {
            try rig.connectivity("lamp", "levelControl") == offline
        }
        #expect(detected != nil && detected! <= outputProbeInterval, "within one probe interval")
        #expect(try rig.connectivity("lamp", "onOff") == offline)
        #expect(
            rig.logs.all.contains {
                $0.hasPrefix("lamp DimmableLight (pwmDimmer): offline: the dimmer's PWM channel stopped answering: ")
            })
        // Retries find no chip and say so, once.
        rig.advance(by: 1000)
        #expect(
            rig.logs.all.contains {
                $0.hasPrefix(
                    "lamp DimmableLight (pwmDimmer): offline: requesting the dimmer's hardware failed: no PWM chip at ")
            })
        let unavailable = #expect(throws: HomeError.self) {
            try rig.home.invoke("lamp", trait: "onOff", command: "toggle")
        }
        #expect(unavailable?.code == .unavailable)
        try rig.home.invoke("porch", trait: "onOff", command: "on")
        #expect(rig.simulation.output(try key(rig, "relay-1"))?.value == true)
        rig.advance(by: 10_000 - (detected ?? 0) - 1000)  // 10 s without the chip

        // It comes back (and the kernel creates pwm0 when the channel is exported again).
        try tree.addPWMChip(0, channels: 2)
        try tree.addPWMChannel(chip: 0, channel: 0)
        let recovered = try advance(rig, step: 100, limit: 120_000) {
            try rig.connectivity("lamp", "levelControl") == .directOnline
        }
        #expect(recovered != nil && recovered! <= 60_000, "at the next retry; the backoff is capped at a minute")
        #expect(rig.logs.contains("lamp DimmableLight (pwmDimmer): back online"))
        // The light comes back at the level it had (the refused command changed nothing), enabled.
        #expect(tree.contents(of: "/sys/class/pwm/pwmchip0/pwm0/duty_cycle") == lit)
        #expect(tree.contents(of: "/sys/class/pwm/pwmchip0/pwm0/enable") == "1")
        print(
            "hardware faults: PWM chip gone detected after \(detected ?? -1) ms, recovered \(recovered ?? -1) ms after "
                + "it came back")
    }

    /// The line is let go after a write fault (the chip went away) and another program requests it before the hub's
    /// retry does. (On the kernel a line a process holds cannot be taken from it; this is the only way it happens.
    /// The busy message with the holder's name is checked against the real kernel in
    /// `HardwareHILTests.aLineHeldByAnotherConsumerIsOfflineWithTheHolderNamed`.)
    @Test func aGPIOLineTakenByAnotherProgramIsOfflineWithTheHolderNamedUntilFreed() throws {
        let rig = try Rig()
        try rig.add("porch", .onOffLight, binding: "{kind: relay, pin: relay-1}")
        try rig.add("hall", .onOffLight, binding: "{kind: relay, pin: relay-2}")
        try rig.start()
        let line = try key(rig, "relay-1")
        try rig.home.invoke("porch", trait: "onOff", command: "on")

        rig.simulation.failWrites(key: line, HardwareError(LinuxIOError(
            operation: "gpiod_line_set_value", context: .gpioLine(chip: "gpiochip0", offset: 0), errno: .noSuchDevice)))
        #expect(throws: HomeError.self) { try rig.home.invoke("porch", trait: "onOff", command: "off") }
        rig.tick()
        #expect(try rig.connectivity("porch", "onOff") == offline)
        // The chip is back, and another program has the line before the hub's first retry.
        rig.simulation.failWrites(key: line, nil)
        rig.simulation.hold(key: line, by: "gpioset")
        rig.advance(by: 1000)
        #expect(try rig.connectivity("porch", "onOff") == offline)
        #expect(
            rig.logs.contains(
                "porch OnOffLight (relay): offline: requesting relay-1 (line 0 of hearth-sim) failed: "
                    + "GPIO relay-1 (line 0 of hearth-sim) is busy: another program ('gpioset') holds it"))
        try rig.home.invoke("hall", trait: "onOff", command: "on")
        #expect(rig.simulation.output(try key(rig, "relay-2"))?.value == true)
        rig.advance(by: 9000)

        rig.simulation.hold(key: line, by: nil)
        let recovered = try advance(rig, step: 100, limit: 120_000) {
            try rig.connectivity("porch", "onOff") == .directOnline
        }
        #expect(recovered != nil && recovered! <= 60_000)
        #expect(rig.logs.contains("porch OnOffLight (relay): back online"))
        try rig.home.invoke("porch", trait: "onOff", command: "toggle")
        let isOn = try rig.isOn("porch")
        #expect(rig.simulation.output(line)?.value == isOn)
        print(
            "hardware faults: GPIO line taken detected at the first write (0 ms), recovered \(recovered ?? -1) ms "
                + "after it was freed")
    }
}
