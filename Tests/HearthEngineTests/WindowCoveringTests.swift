import HearthEngine
import HearthModel
import Testing

@Suite("Window Covering")
struct WindowCoveringTests {
    func cover(saved: SavedDevice? = nil) throws -> Rig {
        try Rig(.windowCovering, traits: [TraitConfiguration(.windowCovering, features: ["lift", "positionAwareLift"])],
                saved: saved)
    }

    func read(_ r: Rig, _ name: String) throws -> Value? { try r.read(.windowCovering, name) }
    func report(_ r: Rig, _ values: [String: Value]) throws {
        try r.home.ingest("lamp", trait: "windowCovering", .report(values))
    }

    @Test func commandsRenderTheTargetForTheBinding() throws {
        let r = try cover()
        #expect(try read(r, "currentPositionLiftPercent100ths") == .null)
        #expect(try read(r, "configStatus") == .int(0b1011))
        try r.invoke("windowCovering", "downOrClose")
        #expect(try read(r, "targetPositionLiftPercent100ths") == .int(10000))
        #expect(r.actuator.last?.coverTarget == 10000)
        try r.invoke("windowCovering", "upOrOpen")
        #expect(r.actuator.last?.coverTarget == 0)
        try r.invoke("windowCovering", "goToLiftPercentage", ["liftPercent100thsValue": .int(2500)])
        #expect(r.actuator.last?.coverTarget == 2500)
        #expect(
            homeError { try r.invoke("windowCovering", "goToLiftPercentage", ["liftPercent100thsValue": .int(10001)]) }?
                .status == .constraintError)
        try r.invoke("windowCovering", "stopMotion")
        #expect(r.actuator.last?.coverTarget == nil)
    }

    @Test func reportsMoveThePositionAndEndTheMove() throws {
        let r = try cover()
        try r.invoke("windowCovering", "goToLiftPercentage", ["liftPercent100thsValue": .int(4000)])
        try report(r, ["position": .int(1000), "motion": .int(2), "target": .int(4000)])
        #expect(try read(r, "currentPositionLiftPercent100ths") == .int(1000))
        #expect(try read(r, "currentPositionLiftPercentage") == .int(10))
        #expect(try read(r, "operationalStatus") == .int(2 | 2 << 2))
        // A stop reported for an older target does not end this move.
        try report(r, ["position": .int(1500), "motion": .int(0), "target": .int(9000)])
        #expect(r.actuator.last?.coverTarget == 4000)
        try report(r, ["position": .int(4000), "motion": .int(0), "target": .int(4000)])
        #expect(try read(r, "operationalStatus") == .int(0))
        #expect(try read(r, "targetPositionLiftPercent100ths") == .int(4000))
        #expect(r.actuator.last?.coverTarget == nil)
        // Cut off on the way: the target becomes where it stopped.
        try r.invoke("windowCovering", "downOrClose")
        try report(r, ["position": .int(7000), "motion": .int(0), "target": .int(10000)])
        #expect(try read(r, "targetPositionLiftPercent100ths") == .int(7000))
    }

    @Test func badReportsChangeNothing() throws {
        let r = try cover()
        try report(r, ["position": .int(3000), "motion": .int(0)])
        for bad: [String: Value] in [["position": .int(10001)], ["motion": .int(3)], ["speed": .int(1)],
                                     ["position": .string("x")], ["target": .int(-1)]] {
            #expect(homeError { try report(r, bad) } != nil)
        }
        #expect(homeError { try r.home.ingest("lamp", trait: "windowCovering", .measurement(.int(1))) } != nil)
        #expect(try read(r, "currentPositionLiftPercent100ths") == .int(3000))
        #expect(try read(r, "operationalStatus") == .int(0))
    }

    @Test func maintenanceModeAnswersBusyAndReversalIsRendered() throws {
        let r = try cover()
        try r.update("windowCovering", ["mode": .int(4)])
        #expect(homeError { try r.invoke("windowCovering", "upOrOpen") }?.status == .busy)
        try r.update("windowCovering", ["mode": .int(1)])
        #expect(r.actuator.last?.coverReversed == true)
        #expect(try read(r, "configStatus") == .int(0b1111))
        #expect(homeError { try r.update("windowCovering", ["mode": .int(2)]) } != nil)
    }

    @Test func thePositionSurvivesARestartAndNothingMoves() throws {
        let r = try cover()
        try r.invoke("windowCovering", "downOrClose")
        try report(r, ["position": .int(6200), "motion": .int(2), "target": .int(10000)])
        let again = try cover(saved: try r.home.saved("lamp"))
        #expect(try read(again, "currentPositionLiftPercent100ths") == .int(6200))
        #expect(try read(again, "targetPositionLiftPercent100ths") == .int(6200))
        #expect(try read(again, "operationalStatus") == .int(0))
        #expect(try again.home.output("lamp", type: "WindowCovering").coverTarget == nil)
    }
}
