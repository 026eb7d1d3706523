import Glibc
import HearthConfig
import HearthEngine
@testable import HearthHardware
@testable import HearthHardwareLinux
import HearthLinux
import HearthSimulator
import HearthModel
import Testing
import HearthSync

// The bindings on real GPIO, IIO and hwmon, run only inside the HIL VM (scripts/hil, boards/qemu-gpio-sim.yaml), whose
// setup records the simulated hardware in /run/hil/ (see Tests/HearthLinuxTests/GPIOSimHILTests.swift). The board
// file is carried in next to the test binary:
//   scripts/hil --add .build-hw/x86_64-unknown-linux-gnu/debug/HearthPackageTests.xctest:/hil/ \
//     --add boards/qemu-gpio-sim.yaml:/hil/boards/ -- \
//     /hil/HearthPackageTests.xctest --testing-library swift-testing --filter HardwareHILTests

let hardwareHILAvailable = access("/run/hil/gpio-lines", F_OK) == 0

@Suite("Bindings on the HIL board", .serialized, .enabled(if: hardwareHILAvailable, "needs the HIL VM (scripts/hil)"),
       .timeLimit(.minutes(2)))
struct HardwareHILTests {
    /// One line of /run/hil/gpio-lines: NAME CHIP_LABEL GPIOCHIP OFFSET DIRECTION USE.
    struct Line {
        var name: String, chipLabel: String, chipName: String, offset: Int
        var simulator: String { "/sys/bus/gpio/devices/\(chipName)/sim_gpio\(offset)" }

        static func named(_ name: String) throws -> Line {
            let text = try #require(readText("/run/hil/gpio-lines"))
            for record in text.split(separator: "\n") {
                let f = record.split(separator: " ").map(String.init)
                if f.count >= 4, f[0] == name, let offset = Int(f[3]) {
                    return Line(name: f[0], chipLabel: f[1], chipName: f[2], offset: offset)
                }
            }
            throw HILFailure("the HIL board has no line \(name)")
        }

        func pull(_ direction: String) throws { try writeText(direction, to: simulator + "/pull") }
        var value: String? { readText(simulator + "/value").map { String($0.filter { !$0.isWhitespace }) } }
    }

    struct HILFailure: Error, CustomStringConvertible {
        var description: String
        init(_ d: String) { description = d }
    }

    static func readText(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = read(fd, &buffer, buffer.count)
        return n < 0 ? nil : String(decoding: buffer[..<n], as: UTF8.self)
    }

    static func writeText(_ text: String, to path: String) throws {
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { throw HILFailure("cannot open \(path): errno \(errno)") }
        defer { close(fd) }
        let bytes = Array(text.utf8)
        guard write(fd, bytes, bytes.count) == bytes.count else { throw HILFailure("cannot write \(path)") }
    }

    func board() throws -> Board {
        let candidates = ["/hil/boards/qemu-gpio-sim.yaml", boardFile("qemu-gpio-sim")]
        let file = try #require(candidates.first { access($0, R_OK) == 0 }, "carry boards/qemu-gpio-sim.yaml in")
        let diagnostics = ConfigDiagnostics()
        let board = Board.load(file: file, diagnostics: diagnostics)
        #expect(diagnostics.problems.isEmpty, "\(diagnostics.problems)")
        return try #require(board)
    }

    /// Samples a gpio-sim value file continuously on its own thread, keeping every distinct value in order.
    final class Watcher: Sendable {
        private let state = Locked<(running: Bool, values: [String])>((true, []))
        private let thread = Locked<pthread_t?>(nil)

        init(_ line: Line) throws {
            let path = line.simulator + "/value"
            let t = try HearthHardwareLinux.Thread.start { [self] in
                while state.withLock({ $0.running }) {
                    guard let v = HardwareHILTests.readText(path).map({ String($0.filter { !$0.isWhitespace }) })
                    else { continue }
                    state.withLock { s in if s.values.last != v { s.values.append(v) } }
                }
            }
            thread.withLock { $0 = t }
            // The first sample is the value from before anything was requested (a bounded wait: an unreadable
            // value file would otherwise spin here for ever, past the suite's time limit).
            let deadline = ContinuousClock.now + .seconds(10)
            while state.withLock({ $0.values.isEmpty }) {
                guard ContinuousClock.now < deadline else {
                    _ = stop()
                    throw HILFailure("no value could be read from \(path) within 10 s")
                }
                sched_yield()
            }
        }

        func stop() -> [String] {
            state.withLock { $0.running = false }
            if let t = thread.withLock({ $0 }) { pthread_join(t, nil) }
            return state.withLock { $0.values }
        }
    }

    @Test func relayFollowsCommandsAndIsRequestedWithoutAGlitch() throws {
        let relay1 = try Line.named("relay-1"), relay2 = try Line.named("relay-2")
        // Before the request the wire floats high; a relay that starts on (active-high) or off (active-low) must keep
        // it high from the first instant.
        try relay1.pull("pull-up")
        try relay2.pull("pull-up")
        let rig = Rig(board: try board())
        rig.hardware = LinuxHardware(consumer: "hearthd-hil")
        let on = try rig.add("porch", .onOffLight, binding: "{kind: relay, pin: relay-1}",
                             traits: [TraitConfiguration(.onOff, attributes: ["startUpOnOff": .int(1)])])
        let low = try rig.add("pump", .onOffPlugInUnit, binding: "{kind: relay, pin: relay-2, activeLow: true}")
        let watch1 = try Watcher(relay1), watch2 = try Watcher(relay2)
        try rig.start()
        let seen1 = watch1.stop(), seen2 = watch2.stop()
        #expect(seen1 == ["1"], "relay-1 (on, active-high) went \(seen1)")
        #expect(seen2 == ["1"], "relay-2 (off, active-low) went \(seen2)")

        try rig.home.invoke("porch", trait: "onOff", command: "off")
        #expect(relay1.value == "0")
        try rig.home.invoke("porch", trait: "onOff", command: "on")
        #expect(relay1.value == "1")
        try rig.home.invoke("pump", trait: "onOff", command: "on")
        #expect(relay2.value == "0", "active-low: on drives the wire low")
        try rig.home.invoke("pump", trait: "onOff", command: "off")
        #expect(relay2.value == "1")
        // gpio-sim shows the pull again once a line is released, so the safe state written just before the
        // release is checked on the simulated board (RelayTests); here, that the lines are given back.
        on?.stop()
        low?.stop()
        let info = try GPIOChip(label: relay1.chipLabel).lineInfo(offset: relay1.offset)
        #expect(!info.isUsed)
        try relay1.pull("pull-down")
        try relay2.pull("pull-down")
    }

    @Test func aLineHeldByAnotherConsumerIsOfflineWithTheHolderNamed() throws {
        let relay3 = try Line.named("relay-3")
        let holder = try GPIOOutputLine(chip: GPIOChip(label: relay3.chipLabel), offset: relay3.offset,
                                        initialValue: false, consumer: "hearth-holder")
        let rig = Rig(board: try board())
        let relay = try #require(
            try rig.add("porch", .onOffLight, binding: "{kind: relay, pin: relay-3}") as? RelayBinding)
        try rig.start()
        #expect(try rig.connectivity("porch", "onOff") == SourceConnectivity(.offline, .direct))
        #expect(
            rig.logs.contains(
                "porch OnOffLight (relay): offline: requesting relay-3 (line 2 of hearth-sim-main) failed: "
                    + "GPIO line \(relay3.offset) on \(relay3.chipName) is busy: another program ('hearth-holder') "
                        + "holds it"))
        let error = #expect(throws: HomeError.self) { try rig.home.invoke("porch", trait: "onOff", command: "on") }
        #expect(error?.code == .unavailable)

        try holder.release(leaving: false)
        let retry = try #require(relay.nextDeadline)
        relay.tick(at: retry)
        #expect(try rig.connectivity("porch", "onOff") == .directOnline)
        try rig.home.invoke("porch", trait: "onOff", command: "on")
        #expect(relay3.value == "1")
        relay.stop()
    }

    @Test func aBouncingWallSwitchTogglesItsLightOnce() async throws {
        let button = try Line.named("wall-switch-1")
        try button.pull("pull-down")
        let rig = Rig(board: try board())
        try rig.add("porch", .onOffLight, binding: "{kind: relay, pin: relay-4}")
        let sw = try #require(
            try rig.add(
                "hall", .genericSwitch,
                binding:
                    "{kind: wallSwitch, pin: wall-switch-1, bias: pull-down, activeLow: false, debounce: 20ms, "
                        + "controls: porch}"))
        // The real clock: edges carry kernel CLOCK_MONOTONIC timestamps.
        var registry = TraitRegistry.standard
        for server in SimulatedHardware.traitServers { registry.register(server) }
        let home = try Home(devices: rig.devices, clock: MonotonicClock(), registry: registry)
        let events = home.events()
        for binding in rig.bindings { binding.start(home: home) }
        let loop = Task { await sw.run() }

        // Press with contact bounce, then a clean release.
        for direction in ["pull-up", "pull-down", "pull-up", "pull-down", "pull-up"] { try button.pull(direction) }
        var toggles = 0, positions: [Int] = []
        var released = false
        for await event in events {
            switch event.change {
            case .attribute(_, let trait, "onOff", .bool(true)) where trait == .onOff && event.deviceID == "porch":
                toggles += 1
                try button.pull("pull-down")
            case .attribute(_, let trait, "currentPosition", .int(let p)) where trait == .switchTrait:
                positions.append(p)
                if p == 0 && toggles > 0 { released = true }
            default: break
            }
            if released { break }
        }
        loop.cancel()
        await loop.value
        #expect(toggles == 1)
        #expect(positions == [1, 0])
        for binding in rig.bindings { binding.stop() }
    }

    /// The home on the real clock (edges carry kernel CLOCK_MONOTONIC timestamps) with its event stream, every binding
    /// started and its run loop going.
    func realClockHome(_ rig: Rig) throws -> (Home, AsyncStream<HomeEvent>, [Task<Void, Never>]) {
        var registry = TraitRegistry.standard
        for server in SimulatedHardware.traitServers { registry.register(server) }
        let home = try Home(devices: rig.devices, clock: MonotonicClock(), registry: registry)
        let events = home.events()
        for binding in rig.bindings { binding.start(home: home) }
        let loops = rig.bindings.map { b in Task { await b.run() } } + [Task { await home.run() }]
        return (home, events, loops)
    }

    @Test func aBouncingReedContactGivesOneStateChangePerMove() async throws {
        let contact = try Line.named("door-contact")
        try contact.pull("pull-up")  // open: the pull-up holds the line high
        let rig = Rig(board: try board())
        rig.hardware = LinuxHardware(consumer: "hearthd-hil")
        try rig.add("front-door", .contactSensor, binding: "{kind: contact, pin: door-contact, debounce: 20ms}")
        let (home, events, loops) = try realClockHome(rig)
        #expect(try home.device("front-door").trait(.booleanState)?["stateValue"]?.value == .bool(false))
        #expect(try GPIOChip(label: contact.chipLabel).lineInfo(offset: contact.offset).bias == .pullUp)

        // The door closes with reed bounce (the line to ground), then opens cleanly.
        for direction in ["pull-down", "pull-up", "pull-down", "pull-up", "pull-down"] { try contact.pull(direction) }
        var changes: [String] = [], values: [Value] = []
        for await event in events {
            switch event.change {
            case .event(_, let trait, let name, let fields) where trait == .booleanState:
                changes.append("\(name) \(fields["stateValue"] ?? .null)")
                if fields["stateValue"] == .bool(true) { try contact.pull("pull-up") }
            case .attribute(_, let trait, "stateValue", let v) where trait == .booleanState:
                values.append(v)
            default: break
            }
            if changes.count == 2 { break }
        }
        for loop in loops { loop.cancel() }
        for loop in loops { await loop.value }
        #expect(changes == ["stateChange true", "stateChange false"])
        #expect(values == [.bool(true), .bool(false)])
        for binding in rig.bindings { binding.stop() }
        #expect(try GPIOChip(label: contact.chipLabel).lineInfo(offset: contact.offset).isUsed == false)
    }

    @Test func aPIRPulseKeepsTheRoomOccupiedForTheHoldTimeAfterItEnds() async throws {
        let motion = try Line.named("motion-sensor")
        try motion.pull("pull-down")
        let rig = Rig(board: try board())
        rig.hardware = LinuxHardware(consumer: "hearthd-hil")
        try rig.add("hall-motion", .occupancySensor, binding: "{kind: pir, pin: motion-sensor}",
                    traits: [TraitConfiguration(.occupancySensing, attributes: ["holdTime": .int(2)])])
        let (home, events, loops) = try realClockHome(rig)
        #expect(try GPIOChip(label: motion.chipLabel).lineInfo(offset: motion.offset).bias == .pullDown)

        try motion.pull("pull-up")  // the module sees someone: its output goes high
        var dropped: EngineInstant?, cleared: EngineInstant?, names: [String] = []
        for await event in events {
            guard case .event(_, let trait, let name, let fields) = event.change, trait == .occupancySensing else {
                continue
            }
            names.append(name)
            if fields["occupancy"] == .int(1) {
                dropped = home.clock.now  // before the pull: the hold cannot have started earlier than this
                try motion.pull("pull-down")
            } else {
                cleared = home.clock.now
                break
            }
        }
        for loop in loops { loop.cancel() }
        for loop in loops { await loop.value }
        #expect(names == ["occupancyChanged", "occupancyChanged"])
        let held = try #require(cleared) - (try #require(dropped))
        // A correctness bound, not a timing one: the room cannot clear before holdTime has passed since the drop.
        #expect(held >= 2000, "cleared \(held) ms after the PIR's output dropped")
        #expect(try home.device("hall-motion").trait(.occupancySensing)?["occupancy"]?.value == .int(0))
        for binding in rig.bindings { binding.stop() }
    }

    /// The plug's meter on the VM's INA219 (ina2xx on i2c-stub, boards/qemu-gpio-sim.yaml's power-1): the binding
    /// finds the hwmon device under the chip's I2C client, writes the configured shunt to the driver, and the traits
    /// get what the driver computes with it.
    @Test func ina219PowerReachesThePlugsMeterTraits() throws {
        let rig = Rig(board: try board())
        rig.hardware = LinuxHardware(consumer: "hearthd-hil")
        try rig.add(
            "plug", .onOffPlugInUnit, binding: "{kind: relay, pin: relay-2, meter: {sensor: power-1, interval: 1s}}")
        try rig.start()
        // The board's registers with the driver's default 10 mΩ shunt: 12 V, 500 mA, 6 W.
        #expect(try rig.value("plug", "electricalPowerMeasurement", "voltage") == .int(12_000))
        #expect(try rig.value("plug", "electricalPowerMeasurement", "activeCurrent") == .int(500))
        #expect(try rig.value("plug", "electricalPowerMeasurement", "activePower") == .int(6000))
        #expect(try rig.connectivity("plug", "electricalPowerMeasurement") == .directOnline)
        for binding in rig.bindings { binding.stop() }

        // A 0.1 Ω shunt, written by the binding: the same registers are a tenth of the current and power.
        let shunted = Rig(board: try board())
        shunted.hardware = LinuxHardware(consumer: "hearthd-hil")
        try shunted.add("plug", .onOffPlugInUnit,
                        binding: "{kind: relay, pin: relay-3, meter: {sensor: power-1, interval: 1s, shunt: 0.1}}")
        try shunted.start()
        #expect(try shunted.value("plug", "electricalPowerMeasurement", "activeCurrent") == .int(50))
        #expect(try shunted.value("plug", "electricalPowerMeasurement", "activePower") == .int(600))
        #expect(try shunted.value("plug", "electricalPowerMeasurement", "voltage") == .int(12_000))
        // Energy on the manual clock from the real readings: 600 mW for 60 s is 10 mWh.
        shunted.advance(by: 60_000)
        #expect(try shunted.value("plug", "electricalEnergyMeasurement", "cumulativeEnergyImported")?
            .structureValue?["energy"] == .int(10))
        for binding in shunted.bindings { binding.stop() }
        let hwmon = try #require(try HwmonDevice.registered(by: "/sys/bus/i2c/devices/0-0041"))
        try hwmon.write(.shuntResistor, 10_000)  // the board's default again
    }

    @Test func si7020HumidityReachesTheTraitInHundredthsOfAPercent() throws {
        let rig = Rig(board: try board())
        try rig.add("bath", .humiditySensor, binding: "{kind: humiditySensor, sensor: humidity-1}")
        try rig.add("bath-t", .temperatureSensor, binding: "{kind: temperatureSensor, sensor: humidity-1}")
        try rig.start()
        // Registers 0x7c80 → 54.79 %RH, 0x6680 → 23.5 °C.
        let humidity = try #require(try rig.value("bath", "relativeHumidityMeasurement", "measuredValue")?.intValue)
        #expect((5400...5550).contains(humidity), "\(humidity)")
        let temperature = try #require(try rig.value("bath-t", "temperatureMeasurement", "measuredValue")?.intValue)
        #expect((2300...2400).contains(temperature), "\(temperature)")
        #expect(try rig.connectivity("bath", "relativeHumidityMeasurement") == .directOnline)
    }
}
