import HearthConfig
import HearthEngine
@testable import HearthHardware
@testable import HearthSimulator
import HearthModel
import Testing

@Suite("Relay cover binding")
struct CoverTests {
    static let relays: Set<String> = ["blind-up", "blind-down"]
    static func yaml(maxRunTime: String) -> String {
        "{kind: relayCover, up: blind-up, down: blind-down, openTime: 10s, closeTime: 10s, reversePause: 500ms, "
            + "endOverrun: 1s, maxRunTime: \(maxRunTime)}"
    }
    static let yaml = yaml(maxRunTime: "12s")

    static let openSaved = SavedDevice(attributes: ["WindowCovering": ["windowCovering": [
        "currentPositionLiftPercent100ths": .int(0),
    ]]])

    func cover(_ yaml: String = Self.yaml, saved: [String: SavedDevice] = [:], before: (Rig) throws -> Void = { _ in })
        throws -> (Rig, InterlockRecorder)
    {
        let rig = try Rig()
        try before(rig)
        let recorder = rig.recordInterlock(Self.relays)
        try rig.add("blind", .windowCovering, binding: yaml)
        try rig.start(saved: saved)
        return (rig, recorder)
    }

    func invoke(_ rig: Rig, _ command: String, _ args: [String: Value] = [:]) throws {
        try rig.home.invoke("blind", trait: "windowCovering", command: command, arguments: args)
        rig.tick()
    }

    /// Moves the clock 100 ms at a time, as the run loop wakes at each deadline.
    func run(_ rig: Rig, for milliseconds: Int64) {
        var left = milliseconds
        while left > 0 {
            rig.advance(by: min(100, left))
            left -= 100
        }
    }

    func position(_ rig: Rig) throws -> Int? {
        try rig.value("blind", "windowCovering", "currentPositionLiftPercent100ths")?.intValue
    }

    /// Checks the pause: a relay goes on only 500 ms or more after the other one last went off.
    func checkPauses(_ recorder: InterlockRecorder) {
        // When each relay last went on and last went from on to off (a write of off to an off line is no change).
        var lastOn: [String: Int64] = [:], lastOff: [String: Int64] = [:], isOn: Set<String> = []
        for w in recorder.writes {
            let other = w.pin == "blind-up" ? "blind-down" : "blind-up"
            if w.value {
                if let on = lastOn[other], let off = lastOff[other], on >= (lastOn[w.pin] ?? .min) {
                    #expect(w.at - off >= 500, "\(w) only \(w.at - off) ms after \(other) went off")
                }
                if !isOn.contains(w.pin) { lastOn[w.pin] = w.at }
                isOn.insert(w.pin)
            } else if isOn.remove(w.pin) != nil {
                lastOff[w.pin] = w.at
            }
        }
    }

    @Test func anUnknownPositionIsCalibratedAtAnEndAndThenTracked() throws {
        let (rig, recorder) = try cover()
        #expect(try position(rig) == nil)
        #expect(recorder.writes.map(\.description) == ["blind-up=0@0", "blind-down=0@0"])
        try invoke(rig, "goToLiftPercentage", ["liftPercent100thsValue": .int(3000)])
        // A pause after start (whatever a previous run left turning), then fully up to learn where it is.
        #expect(recorder.on.isEmpty)
        #expect(try rig.value("blind", "windowCovering", "operationalStatus") == .int(1 | 1 << 2))
        rig.advance(by: 500)
        #expect(recorder.on == ["blind-up"])
        rig.advance(by: 11_000)
        #expect(try position(rig) == 0)
        // Then down to 30 %, after the pause before reversing.
        #expect(recorder.on.isEmpty)
        rig.advance(by: 500)
        #expect(recorder.on == ["blind-down"])
        rig.advance(by: 3_000)
        #expect(recorder.on.isEmpty)
        #expect(try position(rig) == 3000)
        #expect(try rig.value("blind", "windowCovering", "operationalStatus") == .int(0))
        #expect(try rig.value("blind", "windowCovering", "targetPositionLiftPercent100ths") == .int(3000))
        #expect(recorder.violations.isEmpty)
        checkPauses(recorder)
    }

    @Test func reversingStopsPausesAndRunsTheOtherWay() throws {
        let (rig, recorder) = try cover(saved: ["blind": Self.openSaved])
        #expect(try position(rig) == 0)
        rig.advance(by: 1000)
        try invoke(rig, "downOrClose")
        #expect(recorder.on == ["blind-down"])
        rig.advance(by: 4000)
        #expect(try position(rig) == 4000)
        try invoke(rig, "upOrOpen")
        #expect(recorder.on.isEmpty)
        rig.advance(by: 499)
        #expect(recorder.on.isEmpty)
        rig.advance(by: 1)
        #expect(recorder.on == ["blind-up"])
        rig.advance(by: 1000)
        try invoke(rig, "stopMotion")
        #expect(recorder.on.isEmpty)
        #expect(try position(rig) == 3000)
        #expect(try rig.value("blind", "windowCovering", "targetPositionLiftPercent100ths") == .int(3000))
        #expect(recorder.violations.isEmpty)
        checkPauses(recorder)
    }

    @Test func aRunIsCutOffAtMaxRunTime() throws {
        // The overrun at the end would take the run to 11 s; the cut-off ends it at 10.5 s, at the end.
        let (rig, recorder) = try cover(Self.yaml(maxRunTime: "10.5s"), saved: ["blind": Self.openSaved])
        rig.advance(by: 1000)
        try invoke(rig, "downOrClose")
        for _ in 0..<120 { rig.advance(by: 100) }
        let down = recorder.writes.filter { $0.pin == "blind-down" }
        #expect(down.map(\.value) == [false, true, false])
        #expect(down.count == 3 && down[2].at - down[1].at == 10_500)
        #expect(rig.logs.contains("blind WindowCovering (relayCover): cut off after running 10500 ms"))
        #expect(try position(rig) == 10_000)
        #expect(try rig.value("blind", "windowCovering", "operationalStatus") == .int(0))
        #expect(recorder.violations.isEmpty)
    }

    @Test func rapidCommandsNeverCloseBothRelays() throws {
        let (rig, recorder) = try cover()
        var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next(_ n: UInt64) -> Int {
            seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17
            return Int(seed % n)
        }
        for _ in 0..<400 {
            switch next(4) {
            case 0: try invoke(rig, "upOrOpen")
            case 1: try invoke(rig, "downOrClose")
            case 2: try invoke(rig, "stopMotion")
            default: try invoke(rig, "goToLiftPercentage", ["liftPercent100thsValue": .int(next(10_001))])
            }
            run(rig, for: Int64(next(1500)))
        }
        run(rig, for: 20_000)
        #expect(recorder.violations.isEmpty, "\(recorder.violations.first ?? "")")
        #expect(recorder.on.isEmpty)
        checkPauses(recorder)
        // Every run ended within the cut-off.
        var since: [String: Int64] = [:]
        for w in recorder.writes {
            if w.value { since[w.pin] = w.at } else if let s = since.removeValue(forKey: w.pin) {
                #expect(w.at - s <= 12_000)
            }
        }
    }

    @Test func aRestartWithBothLinesLeftHighStartsWithBothOffAndKeepsThePosition() throws {
        let (first, _) = try cover(saved: ["blind": Self.openSaved])
        first.advance(by: 1000)
        try invoke(first, "downOrClose")
        first.advance(by: 6200)
        let kept = try #require(try position(first))
        #expect(kept == 6200)
        let saved = try first.home.saved("blind")
        #expect(
            saved.attributes["WindowCovering"]?["windowCovering"]?["currentPositionLiftPercent100ths"] == .int(kept))
        // Killed: no stop. The next run finds both lines released high.
        let (rig, recorder) = try cover(saved: ["blind": saved]) { rig in
            for name in ["blind-up", "blind-down"] {
                let pin = try #require(rig.board.pin(named: name))
                let line = try rig.simulation.openOutput(
                    PinAddress(chip: pin.chipLabel, line: .offset(pin.offset), name: name),
                    initialValue: true, activeLow: false, drive: .pushPull)
                try line.release(leaving: true)
            }
        }
        #expect(recorder.writes.map(\.description) == ["blind-up=0@0", "blind-down=0@0"])
        for name in ["blind-up", "blind-down"] { #expect(rig.simulation.output(try key(rig, name))?.value == false) }
        #expect(try position(rig) == kept)
        #expect(try rig.value("blind", "windowCovering", "operationalStatus") == .int(0))
        rig.advance(by: 5000)
        #expect(recorder.on.isEmpty)  // nothing moves until asked
        try invoke(rig, "upOrOpen")
        #expect(recorder.on == ["blind-up"])
        rig.advance(by: 8000)
        #expect(try position(rig) == 0)
        #expect(recorder.violations.isEmpty)
    }

    @Test func travelTimesThatCannotWorkAreProblems() throws {
        let rig = try Rig()
        _ = rig.makeBinding(
            "{kind: relayCover, up: blind-up, down: blind-down, openTime: 20s, maxRunTime: 10s}",
            device: "b", type: "WindowCovering")
        #expect(
            rig.diagnostics.problems.map(\.message).contains { $0.contains("would be cut off before it gets there") })
        let other = try Rig()
        _ = other.makeBinding("{kind: relayCover, up: blind-up, down: blind-up, openTime: 20s}", device: "b",
                              type: "WindowCovering")
        #expect(other.diagnostics.problems.map(\.message).contains { $0.contains("already used") })
        let third = try Rig()
        _ = third.makeBinding("{kind: relayCover, up: blind-up, down: blind-down}", device: "b", type: "WindowCovering")
        #expect(
            third.diagnostics.problems.map(\.message).contains { $0.contains("openTime") },
            "\(third.diagnostics.problems)")
    }
}
