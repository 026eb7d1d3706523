import HearthEngine
import HearthModel
import Testing

@Suite("Fan Control")
struct FanControlTests {
    func fan(_ features: Set<String> = [], speedMax: Int? = nil, saved: SavedDevice? = nil) throws -> Rig {
        try Rig(.fan, traits: [TraitConfiguration(.fanControl, features: features,
                                                  attributes: speedMax.map { ["speedMax": .int($0)] } ?? [:])],
                saved: saved)
    }

    func values(_ r: Rig) throws -> [Value?] {
        try ["fanMode", "percentSetting", "percentCurrent"].map { try r.read(.fanControl, $0) }
    }

    @Test func modesSetThePercentageAndThePercentageTheMode() throws {
        let r = try fan()
        #expect(try values(r) == [.int(0), .int(0), .int(0)])
        #expect(try r.read(.fanControl, "fanModeSequence") == .int(0))  // Off/Low/Medium/High
        #expect(try r.read(.fanControl, "speedMax") == nil)
        for (mode, percent) in [(1, 33), (2, 66), (3, 100), (0, 0)] {
            try r.update("fanControl", ["fanMode": .int(mode)])
            #expect(try values(r) == [.int(mode), .int(percent), .int(percent)])
            #expect(r.actuator.last?.fanPercent == UInt8(percent))
        }
        for (percent, mode) in [(1, 1), (33, 1), (34, 2), (66, 2), (67, 3), (100, 3), (0, 0)] {
            try r.update("fanControl", ["percentSetting": .int(percent)])
            #expect(try values(r) == [.int(mode), .int(percent), .int(percent)])
        }
        // On is the top speed and reads as High.
        try r.update("fanControl", ["fanMode": .int(4)])
        #expect(try values(r) == [.int(3), .int(100), .int(100)])
    }

    @Test func aFanWithoutAControllerHasNoAuto() throws {
        let r = try fan()
        #expect(homeError { try r.update("fanControl", ["fanMode": .int(5)]) }?.status == .constraintError)
        #expect(homeError { try r.update("fanControl", ["percentSetting": .null]) }?.status == .invalidInState)
        #expect(homeError { try r.update("fanControl", ["percentSetting": .int(101)]) }?.status == .constraintError)
        #expect(homeError { try r.update("fanControl", ["percentCurrent": .int(10)]) } != nil)
        #expect(try values(r) == [.int(0), .int(0), .int(0)])
    }

    @Test func autoHandsTheSpeedToItsController() throws {
        let r = try fan(["auto"])
        #expect(try r.read(.fanControl, "fanModeSequence") == .int(2))
        try r.update("fanControl", ["fanMode": .int(5)])
        #expect(try r.read(.fanControl, "percentSetting") == .null)
        try r.home.ingest("lamp", trait: "fanControl", .report(["percentCurrent": .int(40)]))
        #expect(try r.read(.fanControl, "percentCurrent") == .int(40))
        #expect(r.actuator.last?.fanPercent == 40)
        // A bad report changes nothing.
        #expect(
            homeError { try r.home.ingest("lamp", trait: "fanControl", .report(["percentCurrent": .int(140)])) } != nil)
        #expect(try r.read(.fanControl, "percentCurrent") == .int(40))
        try r.update("fanControl", ["percentSetting": .int(50)])
        #expect(try values(r) == [.int(2), .int(50), .int(50)])
        #expect(homeError { try r.home.ingest("lamp", trait: "fanControl", .report(["percentCurrent": .int(10)])) }?
            .status == .invalidInState)
    }

    @Test func speedsOfAFanOnTaps() throws {
        for (taps, sequence, modes) in [
            (3, 0, [1: (1, 33), 2: (2, 66), 3: (3, 100)]), (2, 1, [1: (1, 50), 3: (2, 100)]),
            (1, 5, [3: (1, 100)])
        ] {
            let r = try fan(["multiSpeed"], speedMax: taps)
            #expect(try r.read(.fanControl, "fanModeSequence") == .int(sequence))
            for (mode, (speed, percent)) in modes {
                try r.update("fanControl", ["fanMode": .int(mode)])
                #expect(try r.read(.fanControl, "speedSetting") == .int(speed))
                #expect(try r.read(.fanControl, "speedCurrent") == .int(speed))
                #expect(try r.read(.fanControl, "percentSetting") == .int(percent))
                #expect(r.actuator.last?.fanSpeed == UInt8(speed))
            }
            try r.update("fanControl", ["speedSetting": .int(1)])
            #expect(try r.read(.fanControl, "fanMode") == .int(taps == 1 ? 3 : 1))
            #expect(
                homeError { try r.update("fanControl", ["speedSetting": .int(taps + 1)]) }?.status == .constraintError)
            // A percentage runs the tap it falls in.
            try r.update("fanControl", ["percentSetting": .int(10)])
            #expect(try r.read(.fanControl, "speedCurrent") == .int(1))
            if taps == 2 {
                #expect(homeError { try r.update("fanControl", ["fanMode": .int(2)]) }?.status == .constraintError)
            }
        }
    }

    @Test func theSettingSurvivesARestart() throws {
        let r = try fan(["multiSpeed"], speedMax: 3)
        try r.update("fanControl", ["fanMode": .int(2)])
        let saved = try r.home.saved("lamp")
        let again = try fan(["multiSpeed"], speedMax: 3, saved: saved)
        #expect(try again.read(.fanControl, "fanMode") == .int(2))
        #expect(try again.read(.fanControl, "speedCurrent") == .int(2))
        #expect(try again.home.output("lamp", type: "Fan").fanSpeed == 2)
    }
}
