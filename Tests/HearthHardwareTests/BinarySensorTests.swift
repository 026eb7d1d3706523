import HearthConfig
import HearthEngine
@testable import HearthHardware
@testable import HearthSimulator
import HearthModel
import Testing
import HearthSync

/// The door contact (`kind: contact`) and the PIR (`kind: pir`) bindings on the simulated board and a manual clock:
/// the wall switch's debounce and fault handling (DebouncedInput) under Matter's Boolean State and Occupancy Sensing.
@Suite("Door contact and PIR bindings")
struct BinarySensorTests {
    /// Trait events and attribute changes seen by an observer.
    final class Changes: Sendable {
        private let events = Locked<[HomeEvent]>([])
        init(_ rig: Rig) { rig.home.observe { [self] batch in events.withLock { $0 += batch } } }
        var traitEvents: [String] {
            events.withLock { $0 }.compactMap { e in
                if case .event(_, _, let name, let fields) = e.change {
                    return name + fields.sorted { $0.key < $1.key }.map { " \($0.key)=\($0.value)" }.joined()
                }
                return nil
            }
        }
    }

    func contactRig(_ binding: String = "{kind: contact, pin: door-contact}") throws -> Rig {
        let rig = try Rig()
        try rig.add("front-door", .contactSensor, binding: binding)
        try rig.start()
        return rig
    }

    func pirRig(_ binding: String = "{kind: pir, pin: motion-sensor}", holdTime: Int = 10) throws -> Rig {
        let rig = try Rig()
        try rig.add("hall-motion", .occupancySensor, binding: binding,
                    traits: [TraitConfiguration(.occupancySensing, attributes: ["holdTime": .int(holdTime)])])
        try rig.start()
        return rig
    }

    func stateValue(_ rig: Rig) throws -> Value? { try rig.value("front-door", "booleanState", "stateValue") }
    func occupancy(_ rig: Rig) throws -> Value? { try rig.value("hall-motion", "occupancySensing", "occupancy") }

    @Test func aBouncingReedContactGivesOneStateChange() throws {
        let rig = try contactRig("{kind: contact, pin: door-contact, debounce: 20ms}")
        let changes = Changes(rig)
        let line = try key(rig, "door-contact")
        #expect(try stateValue(rig) == .bool(false), "open at start")
        #expect(try rig.connectivity("front-door", "booleanState") == .directOnline)
        // The door closes: the reed bounces four times within 4 ms, then stays closed.
        for level in [true, false, true, false, true] {
            rig.simulation.act(level ? .press : .release, on: line)
            rig.advance(by: 1)
        }
        rig.advance(by: 18)
        #expect(try stateValue(rig) == .bool(false), "not yet stable for 20 ms")
        rig.advance(by: 1)
        #expect(try stateValue(rig) == .bool(true), "closed: in contact")
        // A 5 ms glitch (a slammed door shaking) is no change.
        rig.simulation.act(.release, on: line)
        rig.advance(by: 5)
        rig.simulation.act(.press, on: line)
        rig.advance(by: 50)
        #expect(try stateValue(rig) == .bool(true))
        // The door opens.
        rig.simulation.act(.release, on: line)
        rig.advance(by: 20)
        #expect(try stateValue(rig) == .bool(false))
        #expect(changes.traitEvents == ["stateChange stateValue=true", "stateChange stateValue=false"])
    }

    @Test func aContactClosedAtStartIsReportedWithoutAnEvent() throws {
        let rig = try Rig()
        rig.simulation.setInputLevel(true, key: try key(rig, "door-contact"))
        try rig.add("front-door", .contactSensor, binding: "{kind: contact, pin: door-contact}")
        try rig.start()
        #expect(try stateValue(rig) == .bool(true))
        let changes = Changes(rig)
        rig.simulation.act(.release, on: try key(rig, "door-contact"))
        rig.advance(by: 20)
        #expect(changes.traitEvents == ["stateChange stateValue=false"])
    }

    @Test func theContactIsRequestedActiveLowWithThePullUpAndThePIRWithThePullDown() throws {
        let rig = try Rig()
        let contact = try #require(
            try rig.add("front-door", .contactSensor, binding: "{kind: contact, pin: door-contact}")
                as? BinarySensorBinding)
        let pir = try #require(
            try rig.add("hall-motion", .occupancySensor, binding: "{kind: pir, pin: motion-sensor}")
                as? BinarySensorBinding)
        #expect(contact.configuration.bias == .pullUp && contact.configuration.activeLow)
        #expect(pir.configuration.bias == .pullDown && !pir.configuration.activeLow)
        #expect(pir.requiredFeatures == [.occupancySensing: ["passiveInfrared"]])
        let custom = try #require(
            rig.makeBinding(
                "{kind: pir, pin: wall-switch-1, bias: disabled, activeLow: true, debounce: 0}",
                device: "m2", type: "OccupancySensor") as? BinarySensorBinding)
        #expect(
            custom.configuration.bias == .disabled && custom.configuration.activeLow
                && custom.configuration.debounce == 0)
        try rig.start()
        #expect(try rig.value("hall-motion", "occupancySensing", "occupancySensorType") == .int(0), "pir")
        #expect(try rig.value("hall-motion", "occupancySensing", "occupancySensorTypeBitmap") == .int(1), "{pir}")
    }

    @Test func thePIRHoldsOccupancyForHoldTimeAfterItsOutputDrops() throws {
        let rig = try pirRig(holdTime: 30)
        let changes = Changes(rig)
        let line = try key(rig, "motion-sensor")
        rig.simulation.act(.press, on: line)  // motion: the module drives its output high
        rig.advance(by: 20)
        #expect(try occupancy(rig) == .int(1))
        rig.advance(by: 2_500)
        rig.simulation.act(.release, on: line)  // the module's own 2.5 s pulse ends
        rig.advance(by: 20)
        #expect(try occupancy(rig) == .int(1), "held")
        rig.advance(by: 29_980)
        #expect(try occupancy(rig) == .int(1), "29.98 s after the debounced drop")
        rig.advance(by: 20)
        #expect(try occupancy(rig) == .int(0), "30 s after the debounced drop")
        #expect(changes.traitEvents == ["occupancyChanged occupancy=1", "occupancyChanged occupancy=0"])
    }

    @Test func aPIRGlitchShorterThanTheDebounceIsNoOccupancy() throws {
        let rig = try pirRig("{kind: pir, pin: motion-sensor, debounce: 50ms}")
        let line = try key(rig, "motion-sensor")
        rig.simulation.act(.press, on: line)
        rig.advance(by: 10)
        rig.simulation.act(.release, on: line)
        rig.advance(by: 100)
        #expect(try occupancy(rig) == .int(0))
    }

    @Test func aClientsHoldTimeWriteAppliesToTheRunningCountdown() throws {
        let rig = try pirRig(holdTime: 120)
        let line = try key(rig, "motion-sensor")
        rig.simulation.act(.press, on: line)
        rig.advance(by: 20)
        rig.simulation.act(.release, on: line)
        rig.advance(by: 20)
        rig.advance(by: 60_000)
        #expect(try occupancy(rig) == .int(1))
        let refused = #expect(throws: HomeError.self) {
            try rig.home.update("hall-motion", trait: "occupancySensing", attributes: ["holdTime": .int(0)])
        }
        #expect(refused?.status == .constraintError)
        #expect(try rig.value("hall-motion", "occupancySensing", "holdTime") == .int(120))
        try rig.home.update("hall-motion", trait: "occupancySensing", attributes: ["holdTime": .int(45)])
        #expect(try occupancy(rig) == .int(0), "45 s after the drop has passed")
    }

    @Test func theSimulatedSwitchTraitMovesTheContactAndThePIRThroughTheRealDebounce() throws {
        let rig = try Rig()
        try rig.add("front-door", .contactSensor, binding: "{kind: contact, pin: door-contact}")
        try rig.add("hall-motion", .occupancySensor, binding: "{kind: pir, pin: motion-sensor}")
        try rig.start()
        try rig.home.invoke("front-door", trait: "dev.hearth.simulatedSwitch", command: "bounce")
        try rig.home.invoke("hall-motion", trait: "dev.hearth.simulatedSwitch", command: "press")
        #expect(try stateValue(rig) == .bool(false), "not before the debounce time")
        rig.advance(by: 20)
        #expect(try stateValue(rig) == .bool(true))
        #expect(try occupancy(rig) == .int(1))
        let traits = try rig.home.device("hall-motion").types[0].traits.map(\.descriptor.id.qualifiedName)
        #expect(traits.contains("dev.hearth.simulatedSwitch"))
    }

    @Test func aFailedContactLineGoesOfflineAndComesBackWithItsState() throws {
        let rig = try contactRig()
        let line = try key(rig, "door-contact")
        rig.simulation.failInput(
            key: line,
            HardwareError(
                .gone, message: "the GPIO chip was removed", operation: "poll",
                context: "gpiochip0"))
        rig.tick()
        #expect(try rig.connectivity("front-door", "booleanState") == SourceConnectivity(.offline, .direct))
        #expect(rig.logs.contains("front-door ContactSensor (contact): offline: door-contact (line 11 of hearth-sim) "
            + "stopped delivering events: the GPIO chip was removed"))
        rig.simulation.setInputLevel(true, key: line)  // the door was closed meanwhile
        rig.advance(by: 1000)
        #expect(try rig.connectivity("front-door", "booleanState") == .directOnline)
        #expect(try stateValue(rig) == .bool(true))
        #expect(rig.logs.contains("front-door ContactSensor (contact): back online"))
    }

    @Test func configurationProblemsAreNamed() throws {
        let rig = try Rig()
        #expect(rig.makeBinding("{kind: contact, pin: relay-1}", device: "door", type: "ContactSensor") == nil)
        #expect(rig.makeBinding("{kind: pir, pin: motion-sensor}", device: "door2", type: "ContactSensor") == nil)
        #expect(rig.makeBinding("{kind: contact}", device: "door3", type: "ContactSensor") == nil)
        #expect(
            rig.makeBinding(
                "{kind: pir, pin: motion-sensor, debounce: 2s, bias: up}", device: "m", type: "OccupancySensor") == nil)
        let problems = rig.diagnostics.problems.map(\.description)
        #expect(problems.count == 5, "\(problems)")
        #expect(
            problems.contains {
                $0.contains("'relay-1' is an output on the board 'sim', but a door contact needs an input")
            })
        #expect(
            problems.contains {
                $0.contains(
                    "a pir binding does not fit a ContactSensor (it fits OccupancySensor); "
                        + "for ContactSensor use kind: contact")
            })
        #expect(problems.contains { $0.contains("missing 'pin' (the board pin of the door contact") })
        #expect(problems.contains { $0.contains("debounce") })
        #expect(problems.contains { $0.contains("bias") && $0.contains("pull-up, pull-down, disabled, as-is") })
    }
}
