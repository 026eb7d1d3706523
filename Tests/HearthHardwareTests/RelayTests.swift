import HearthEngine
@testable import HearthHardware
import HearthHardwareLinux
import HearthLinux
@testable import HearthSimulator
import HearthModel
import Testing

@Suite("Relay binding")
struct RelayTests {
    @Test func followsCommandsAndStartsInItsStartUpState() throws {
        let rig = try Rig()
        try rig.add("porch", .onOffLight, binding: "{kind: relay, pin: relay-1}",
                    traits: [TraitConfiguration(.onOff, attributes: ["startUpOnOff": .int(1)])])
        try rig.start()
        let line = try key(rig, "relay-1")
        // Requested already on: the first value the line ever had is the start-up state, so it never glitches.
        #expect(rig.simulation.output(line)?.history == [true])
        try rig.home.invoke("porch", trait: "onOff", command: "off")
        #expect(rig.simulation.output(line)?.value == false)
        try rig.home.invoke("porch", trait: "onOff", command: "toggle")
        #expect(rig.simulation.output(line)?.value == true)
        #expect(rig.simulation.output(line)?.history == [true, false, true])
        #expect(try rig.connectivity("porch", "onOff") == .directOnline)
    }

    @Test func activeLowDrivesTheWireLowWhenOnAndStopLeavesTheSafeState() throws {
        let rig = try Rig()
        let relay = try rig.add(
            "pump", .onOffPlugInUnit,
            binding: "{kind: relay, pin: relay-2, activeLow: true, drive: open-drain, safeState: off}")
        try rig.start()
        let line = try key(rig, "relay-2")
        #expect(rig.simulation.output(line)?.history == [false])
        #expect(rig.simulation.output(line)?.wire == true)
        #expect(rig.simulation.output(line)?.drive == .openDrain)
        try rig.home.invoke("pump", trait: "onOff", command: "on")
        #expect(rig.simulation.output(line)?.value == true)
        #expect(rig.simulation.output(line)?.wire == false)
        relay?.stop()
        #expect(rig.simulation.output(line)?.isHeld == false)
        #expect(rig.simulation.output(line)?.value == false)
        #expect(rig.simulation.output(line)?.wire == true)
    }

    @Test func aSafeStateOfOnIsHonoured() throws {
        let rig = try Rig()
        let relay = try rig.add("fan", .onOffPlugInUnit, binding: "{kind: relay, pin: relay-3, safeState: on}")
        try rig.start()
        relay?.stop()
        #expect(rig.simulation.output(try key(rig, "relay-3"))?.history == [false, true])
    }

    @Test func identifyBlinksTheRelay() throws {
        let rig = try Rig()
        try rig.add("porch", .onOffLight, binding: "{kind: relay, pin: relay-1}")
        try rig.start()
        let line = try key(rig, "relay-1")
        try rig.home.invoke("porch", trait: "identify", command: "identify", arguments: ["identifyTime": .int(2)])
        #expect(rig.simulation.output(line)?.value == true)
        rig.advance(by: 500)
        #expect(rig.simulation.output(line)?.value == false)
        rig.advance(by: 500)
        #expect(rig.simulation.output(line)?.value == true)
        rig.advance(by: 500)
        #expect(rig.simulation.output(line)?.value == false)
        rig.advance(by: 1000)
        #expect(rig.simulation.output(line)?.value == false)
        // Once a second the blink is lit; the end of identify leaves it as it was (off), written once.
        #expect(rig.simulation.output(line)?.history == [false, true, false, true, false])
    }

    @Test func aBusyLineTakesOnOffOfflineUntilItIsFree() throws {
        let rig = try Rig()
        try rig.add("porch", .onOffLight, binding: "{kind: relay, pin: relay-1}")
        let line = try key(rig, "relay-1")
        rig.simulation.hold(key: line, by: "gpioset")
        try rig.start()
        #expect(try rig.connectivity("porch", "onOff") == SourceConnectivity(.offline, .direct))
        #expect(
            rig.logs.contains(
                "porch OnOffLight (relay): offline: requesting relay-1 (line 0 of hearth-sim) failed: "
                    + "GPIO relay-1 (line 0 of hearth-sim) is busy: another program ('gpioset') holds it"))
        let error = #expect(throws: HomeError.self) { try rig.home.invoke("porch", trait: "onOff", command: "on") }
        #expect(error?.code == .unavailable)

        // Retries back off 1 s, 2 s, 4 s … while the line stays busy.
        rig.advance(by: 999)
        #expect(rig.bindings[0].nextDeadline == EngineInstant(milliseconds: 1000))
        rig.advance(by: 1)
        #expect(rig.bindings[0].nextDeadline == EngineInstant(milliseconds: 3000))
        rig.advance(by: 2000)
        #expect(rig.bindings[0].nextDeadline == EngineInstant(milliseconds: 7000))

        rig.simulation.hold(key: line, by: nil)
        rig.advance(by: 4000)
        #expect(try rig.connectivity("porch", "onOff") == .directOnline)
        #expect(rig.logs.contains("porch OnOffLight (relay): back online"))
        try rig.home.invoke("porch", trait: "onOff", command: "on")
        #expect(rig.simulation.output(line)?.value == true)
    }

    @Test func backoffIsCapped() {
        var backoff = Backoff()
        let delays = (0..<10).map { _ in backoff.next() }
        #expect(delays == [1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000, 60000, 60000])
        backoff.reset()
        #expect(backoff.next() == 1000)
    }

    @Test func aWriteFaultFailsTheCommandThenRecovers() throws {
        let rig = try Rig()
        try rig.add("porch", .onOffLight, binding: "{kind: relay, pin: relay-1}")
        try rig.add("hall", .onOffLight, binding: "{kind: relay, pin: relay-2}")
        try rig.start()
        let line = try key(rig, "relay-1")
        rig.simulation.failWrites(
            key: line,
            HardwareError(
                LinuxIOError(
                    operation: "gpiod_line_set_value",
                    context: .gpioLine(chip: "gpiochip0", offset: 0),
                    errno: .noSuchDevice)))
        let error = #expect(throws: HomeError.self) { try rig.home.invoke("porch", trait: "onOff", command: "on") }
        #expect(error?.code == .internal)
        #expect(
            error?.message.hasPrefix("relay relay-1 (line 0 of hearth-sim): the device behind gpiochip0 line 0 is gone")
                == true)
        #expect(try rig.isOn("porch") == false)  // the command was undone
        rig.tick()
        #expect(try rig.connectivity("porch", "onOff") == SourceConnectivity(.offline, .direct))
        // The rest keeps working.
        try rig.home.invoke("hall", trait: "onOff", command: "on")
        #expect(rig.simulation.output(try key(rig, "relay-2"))?.value == true)

        rig.simulation.failWrites(key: line, nil)
        rig.advance(by: 1000)
        #expect(try rig.connectivity("porch", "onOff") == .directOnline)
        try rig.home.invoke("porch", trait: "onOff", command: "on")
        #expect(rig.simulation.output(line)?.value == true)
    }
}
