import HearthEngine
@testable import HearthHardware
import HearthHardwareLinux
import HearthLinux
@testable import HearthSimulator
import HearthModel
import Testing
import HearthSync

@Suite("Wall switch binding")
struct WallSwitchTests {
    /// A porch light on a relay and a switch bound to it.
    func rig(_ switchBinding: String) throws -> Rig {
        let rig = try Rig()
        try rig.add("porch", .onOffLight, binding: "{kind: relay, pin: relay-1}")
        try rig.add("hall", .genericSwitch, binding: switchBinding)
        try rig.start()
        return rig
    }

    func events(_ rig: Rig) -> EventLog {
        let log = EventLog()
        rig.home.observe { events in log.append(events) }
        return log
    }

    @Test func bouncesWithinTheWindowGiveOneToggle() throws {
        let rig = try rig("{kind: wallSwitch, pin: wall-switch-1, debounce: 20ms, controls: porch}")
        let log = events(rig)
        let sw = try key(rig, "wall-switch-1")
        // Contact bounce: five flips over 6 ms, then closed.
        for (i, level) in [true, false, true, false, true].enumerated() {
            _ = i
            rig.simulation.act(level ? .press : .release, on: sw)
            rig.advance(by: 1)
        }
        #expect(try rig.isOn("porch") == false)
        rig.advance(by: 18)
        #expect(try rig.isOn("porch") == false, "not yet stable for 20 ms since the last flip")
        rig.advance(by: 1)
        #expect(try rig.isOn("porch") == true)
        #expect(try rig.value("hall", "switch", "currentPosition") == .int(1))
        // Released with bounce: one release, no second toggle.
        rig.simulation.act(.release, on: sw)
        rig.advance(by: 2)
        rig.simulation.act(.press, on: sw)
        rig.advance(by: 2)
        rig.simulation.act(.release, on: sw)
        rig.advance(by: 20)
        #expect(try rig.isOn("porch") == true)
        #expect(try rig.value("hall", "switch", "currentPosition") == .int(0))
        #expect(log.switchEvents == ["initialPress", "shortRelease"])
        #expect(rig.simulation.output(try key(rig, "relay-1"))?.history == [false, true])
    }

    @Test func aGlitchShorterThanTheWindowIsNoChange() throws {
        let rig = try rig("{kind: wallSwitch, pin: wall-switch-1, debounce: 50ms, controls: porch}")
        let sw = try key(rig, "wall-switch-1")
        rig.simulation.act(.press, on: sw)
        rig.advance(by: 10)
        rig.simulation.act(.release, on: sw)
        rig.advance(by: 100)
        #expect(try rig.isOn("porch") == false)
        #expect(try rig.value("hall", "switch", "currentPosition") == .int(0))
    }

    @Test func momentaryButtonTogglesOnEachPress() throws {
        let rig = try rig("{kind: wallSwitch, pin: button-1, mode: momentary, controls: porch}")
        let sw = try key(rig, "button-1")
        var states: [Bool] = []
        for _ in 0..<3 {
            rig.simulation.act(.press, on: sw)
            rig.advance(by: 30)
            rig.simulation.act(.release, on: sw)
            rig.advance(by: 30)
            states.append(try rig.isOn("porch"))
        }
        #expect(states == [true, false, true])
    }

    @Test func latchingRockerTogglesOnEveryFlip() throws {
        let rig = try rig("{kind: wallSwitch, pin: wall-switch-1, mode: latching, controls: porch}")
        let log = events(rig)
        let sw = try key(rig, "wall-switch-1")
        var states: [Bool] = []
        for _ in 0..<3 {
            rig.simulation.act(.flip, on: sw)
            rig.advance(by: 30)
            states.append(try rig.isOn("porch"))
        }
        #expect(states == [true, false, true])
        #expect(log.switchEvents == ["switchLatched", "switchLatched", "switchLatched"])
    }

    @Test func followModeMakesTheLightFollowTheSwitch() throws {
        let rig = try rig("{kind: wallSwitch, pin: wall-switch-1, mode: follow, controls: porch}")
        let sw = try key(rig, "wall-switch-1")
        rig.simulation.act(.flip, on: sw)
        rig.advance(by: 30)
        #expect(try rig.isOn("porch"))
        // The light is switched off from the app; the next flip (to off) keeps it off, the one after turns it on.
        try rig.home.invoke("porch", trait: "onOff", command: "off")
        rig.simulation.act(.flip, on: sw)
        rig.advance(by: 30)
        #expect(try rig.isOn("porch") == false)
        rig.simulation.act(.flip, on: sw)
        rig.advance(by: 30)
        #expect(try rig.isOn("porch"))
    }

    @Test func theSimulatedSwitchTraitPressesThroughTheRealDebounce() throws {
        let rig = try rig("{kind: wallSwitch, pin: button-1, controls: porch}")
        try rig.home.invoke("hall", trait: "dev.hearth.simulatedSwitch", command: "bounce")
        #expect(try rig.isOn("porch") == false, "not before the debounce time")
        rig.advance(by: 20)
        #expect(try rig.isOn("porch"))
        try rig.home.invoke("hall", trait: "dev.hearth.simulatedSwitch", command: "release")
        rig.advance(by: 20)
        try rig.home.invoke("hall", trait: "dev.hearth.simulatedSwitch", command: "press")
        rig.advance(by: 20)
        #expect(try rig.isOn("porch") == false)
        let traits = try rig.home.device("hall").types[0].traits.map(\.descriptor.id.qualifiedName)
        #expect(traits.contains("dev.hearth.simulatedSwitch"))
    }

    @Test func aFailedLineGoesOfflineAndComesBack() throws {
        let rig = try rig("{kind: wallSwitch, pin: wall-switch-1, controls: porch}")
        let sw = try key(rig, "wall-switch-1")
        rig.simulation.failInput(
            key: sw,
            HardwareError(
                LinuxIOError(
                    operation: "poll",
                    context: .gpioLine(chip: "gpiochip0", offset: 8),
                    errno: .noSuchDevice, message: "the GPIO chip was removed")))
        rig.tick()
        #expect(try rig.connectivity("hall", "switch") == SourceConnectivity(.offline, .direct))
        #expect(
            rig.logs.contains(
                "hall GenericSwitch (wallSwitch): offline: wall-switch-1 (line 8 of hearth-sim) stopped "
                    + "delivering events: the GPIO chip was removed"))
        #expect(rig.simulation.input(sw)?.isOpen == false)
        rig.advance(by: 1000)
        #expect(try rig.connectivity("hall", "switch") == .directOnline)
        rig.simulation.act(.press, on: sw)
        rig.advance(by: 20)
        #expect(try rig.isOn("porch"))
    }

    @Test func aBusyLineAtStartIsOfflineWithTheHolder() throws {
        let rig = try Rig()
        try rig.add("hall", .genericSwitch, binding: "{kind: wallSwitch, pin: wall-switch-2}")
        rig.simulation.hold(key: try key(rig, "wall-switch-2"), by: "gpiomon")
        try rig.start()
        #expect(try rig.connectivity("hall", "switch") == SourceConnectivity(.offline, .direct))
        #expect(rig.logs.all.contains { $0.contains("is busy: another program ('gpiomon') holds it") })
    }

    @Test func theDebouncerOnItsOwn() {
        var d = Debouncer(window: 20, level: false)
        d.edge(to: true, at: EngineInstant(milliseconds: 100))
        d.edge(to: false, at: EngineInstant(milliseconds: 103))
        d.edge(to: true, at: EngineInstant(milliseconds: 105))
        #expect(d.deadline == EngineInstant(milliseconds: 125))
        #expect(d.settle(at: EngineInstant(milliseconds: 124)) == nil)
        #expect(d.settle(at: EngineInstant(milliseconds: 125)) == true)
        #expect(d.deadline == nil)
        d.edge(to: false, at: EngineInstant(milliseconds: 200))
        d.edge(to: true, at: EngineInstant(milliseconds: 201))
        #expect(d.settle(at: EngineInstant(milliseconds: 300)) == nil, "back where it started: no change")
    }
}

/// Switch events seen by an observer.
final class EventLog: Sendable {
    private let events = Locked<[HomeEvent]>([])
    func append(_ batch: [HomeEvent]) { events.withLock { $0 += batch } }
    var switchEvents: [String] {
        events.withLock { $0 }.compactMap { e in
            if case .event(_, let trait, let name, _) = e.change, trait == .switchTrait { return name }
            return nil
        }
    }
}
