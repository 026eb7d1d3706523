import HearthConfig
import HearthEngine
@testable import HearthHardware
@testable import HearthSimulator
import HearthModel
import Testing

@Suite("Relay and PWM fan bindings")
struct FanBindingTests {
    static let taps: Set<String> = ["fan-low", "fan-medium", "fan-high"]

    func fan(_ yaml: String = "{kind: relayFan, low: fan-low, medium: fan-medium, high: fan-high, switchPause: 300ms}")
        throws -> (Rig, InterlockRecorder)
    {
        let rig = try Rig()
        let recorder = rig.recordInterlock(Self.taps)
        try rig.add("fan", .fan, binding: yaml)
        try rig.start()
        return (rig, recorder)
    }

    func mode(_ rig: Rig, _ mode: Int) throws {
        try rig.home.update("fan", trait: "fanControl", attributes: ["fanMode": .int(mode)])
    }

    @Test func tapsAreRequestedOffAndTheFanHasOneSpeedPerTap() throws {
        let (rig, recorder) = try fan()
        #expect(recorder.writes.map(\.description) == ["fan-low=0@0", "fan-medium=0@0", "fan-high=0@0"])
        #expect(try rig.value("fan", "fanControl", "speedMax") == .int(3))
        #expect(try rig.value("fan", "fanControl", "fanModeSequence") == .int(0))
        let two = try Rig()
        try two.add("fan", .fan, binding: "{kind: relayFan, low: fan-low, high: fan-high}")
        try two.start()
        #expect(try two.value("fan", "fanControl", "fanModeSequence") == .int(1))
    }

    @Test func aChangeOfSpeedIsBreakBeforeMake() throws {
        let (rig, recorder) = try fan()
        rig.advance(by: 1000)
        try mode(rig, 1)
        #expect(recorder.on == ["fan-low"])  // off long enough: at once
        rig.advance(by: 5000)
        try mode(rig, 3)
        // The low tap is off at once; the high one waits out the pause with every tap off.
        #expect(recorder.on.isEmpty)
        rig.advance(by: 299)
        #expect(recorder.on.isEmpty)
        rig.advance(by: 1)
        #expect(recorder.on == ["fan-high"])
        let last = recorder.writes.suffix(2).map(\.description)
        #expect(last == ["fan-low=0@6000", "fan-high=1@6300"])
        try mode(rig, 0)
        #expect(recorder.on.isEmpty)
        #expect(recorder.violations.isEmpty, "\(recorder.violations)")
    }

    @Test func rapidChangesNeverCloseTwoTaps() throws {
        let (rig, recorder) = try fan()
        rig.advance(by: 1000)
        // Modes and speeds every 0…400 ms, in a fixed pseudo-random order.
        var seed: UInt64 = 0x2545_F491_4F6C_DD1D
        func next(_ n: UInt64) -> Int {
            seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17
            return Int(seed % n)
        }
        for _ in 0..<300 {
            if next(2) == 0 { try mode(rig, [0, 1, 2, 3, 4][next(5)]) } else {
                try rig.home.update("fan", trait: "fanControl", attributes: ["percentSetting": .int(next(101))])
            }
            rig.advance(by: Int64(next(400)))
        }
        rig.advance(by: 1000)
        #expect(recorder.violations.isEmpty, "\(recorder.violations.first ?? "")")
        // Every tap went on only after the pause since the last one went off.
        var lastOff: Int64 = 0
        for w in recorder.writes {
            if w.value { #expect(w.at - lastOff >= 300, "\(w) came \(w.at - lastOff) ms after a tap went off") } else {
                lastOff = w.at
            }
        }
        // What runs in the end is the speed the fan reports.
        let speed = try #require(try rig.value("fan", "fanControl", "speedCurrent")?.intValue)
        #expect(recorder.on == (speed == 0 ? [] : [["fan-low", "fan-medium", "fan-high"][speed - 1]]))
    }

    @Test func aRestartWithATapLeftOnWaitsAPauseBeforeTheNext() throws {
        let rig = try Rig()
        // What a killed run left: the high tap's line released high.
        let sim = rig.simulation
        let high = try #require(rig.board.pin(named: "fan-high"))
        let left = try sim.openOutput(PinAddress(chip: high.chipLabel, line: .offset(high.offset), name: "fan-high"),
                                      initialValue: true, activeLow: false, drive: .pushPull)
        try left.release(leaving: true)
        let recorder = rig.recordInterlock(Self.taps)
        try rig.add("fan", .fan, binding: "{kind: relayFan, low: fan-low, medium: fan-medium, high: fan-high}",
                    traits: [TraitConfiguration(.fanControl, attributes: ["percentSetting": .int(10)])])
        try rig.start()
        #expect(try rig.value("fan", "fanControl", "fanMode") == .int(1))
        #expect(sim.output(try key(rig, "fan-high"))?.value == false)
        #expect(recorder.on.isEmpty)
        rig.advance(by: 300)
        #expect(recorder.on == ["fan-low"])
        #expect(recorder.violations.isEmpty)
    }

    @Test func aPWMFanRunsItsPercentage() throws {
        let rig = try Rig()
        let binding = try #require(
            try rig.add("desk-fan", .fan, binding: "{kind: pwmFan, pwm: fan-pwm, minimumDuty: 0.2}"))
        try rig.start()
        let fan = try #require(binding as? PWMFanBinding)
        #expect(fan.configuration.dutyCycle(percent: 0) == 0)
        #expect(fan.configuration.dutyCycle(percent: 100) == 40_000)
        #expect(fan.configuration.dutyCycle(percent: 50) == 24_000)
        try rig.home.update("desk-fan", trait: "fanControl", attributes: ["percentSetting": .int(50)])
        #expect(fan.dutyCycle(for: try rig.home.output("desk-fan", type: "Fan")) == 24_000)
        #expect(try rig.connectivity("desk-fan", "fanControl") == .directOnline)
    }

    @Test func tapConfigurationsThatCannotWorkAreProblems() throws {
        let rig = try Rig()
        _ = rig.makeBinding("{kind: relayFan, medium: fan-medium, high: fan-high}", device: "f", type: "Fan")
        #expect(
            rig.diagnostics.problems.map(\.message).contains {
                $0.contains("a fan with a medium tap has a low one too")
            })
        let other = try Rig()
        _ = other.makeBinding("{kind: relayFan, low: fan-low}", device: "f", type: "Fan")
        #expect(
            other.diagnostics.problems.map(\.message).contains { $0.contains("high") }, "\(other.diagnostics.problems)")
    }
}
