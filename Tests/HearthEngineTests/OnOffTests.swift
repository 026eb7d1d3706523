import HearthEngine
import HearthModel
import Testing

@Suite struct OnOffTests {
    @Test func onOffToggle() throws {
        let r = try Rig(.onOffLight)
        #expect(try r.onOff() == false)
        try r.invoke("onOff", "on")
        #expect(try r.onOff() == true)
        #expect(r.actuator.last?.isLit == true)
        try r.invoke("onOff", "toggle")
        #expect(try r.onOff() == false)
        try r.invoke("onOff", "toggle")
        try r.invoke("onOff", "off")
        #expect(try r.onOff() == false)
        #expect(r.actuator.last?.isLit == false)
        #expect(r.log.values("onOff") == [.bool(true), .bool(false), .bool(true), .bool(false)])
    }

    @Test func offSetsOnTimeToZeroAndOnClearsOffWaitTimeWhenOnTimeIsZero() throws {
        let r = try Rig(.onOffLight)
        try r.update("onOff", ["onTime": .int(0), "offWaitTime": .int(50)])
        try r.invoke("onOff", "on")
        #expect(try r.read(.onOff, "offWaitTime") == .int(0))
        try r.update("onOff", ["onTime": .int(0xFFFF)])  // forever: no countdown
        try r.invoke("onOff", "off")
        #expect(try r.read(.onOff, "onTime") == .int(0))
    }

    @Test func offOnlyDoesNotSupportOnOrToggle() throws {
        let home = try Home(devices: [DeviceConfiguration(id: "fan", name: "Fan", types: [
            DeviceTypeConfiguration(.onOffPlugInUnit, traits: [TraitConfiguration(.onOff, features: ["offOnly"])]),
        ])], clock: ManualClock())
        let e = homeError { try home.invoke("fan", trait: "onOff", command: "toggle") }
        #expect(e?.status == .unsupportedCommand)
        #expect(e?.code == .unimplemented)
        #expect(homeError { try home.invoke("fan", trait: "onOff", command: "off") } == nil)
        #expect(try home.device("fan").trait(.onOff)?.supportedCommands == ["off"])
        #expect(try home.device("fan").trait(.onOff)?["onTime"]?.isSupported == false)
    }

    @Test func lightingAndOffOnlyCannotBeCombined() {
        let e = homeError { _ = try Home(devices: [DeviceConfiguration(id: "x", name: "X", types: [
            DeviceTypeConfiguration(.onOffLight, traits: [TraitConfiguration(.onOff, features: ["offOnly"])]),
        ])]) }
        #expect(e?.status == .constraintError)
        #expect(e?.message.contains("lighting and offOnly") == true)
    }

    @Test func onWithTimedOffCountsDownInTenthsThenTurnsOff() throws {
        let r = try Rig(.onOffLight)
        try r.invoke("onOff", "onWithTimedOff", ["onTime": .int(3), "offWaitTime": .int(2)])
        #expect(try r.onOff() == true)
        #expect(try r.read(.onOff, "onTime") == .int(3))
        #expect(try r.read(.onOff, "offWaitTime") == .int(2))
        r.advance(100)
        #expect(try r.read(.onOff, "onTime") == .int(2))
        r.advance(99)
        #expect(try r.read(.onOff, "onTime") == .int(2))
        r.advance(1)
        #expect(try r.read(.onOff, "onTime") == .int(1))
        r.advance(100)
        // OnTime reached 0: OffWaitTime is cleared and the light is off.
        #expect(try r.onOff() == false)
        #expect(try r.read(.onOff, "onTime") == .int(0))
        #expect(try r.read(.onOff, "offWaitTime") == .int(0))
        #expect(r.home.nextDeadline == nil)
    }

    @Test func acceptOnlyWhenOnDiscardsWhileOff() throws {
        let r = try Rig(.onOffLight)
        try r.invoke("onOff", "onWithTimedOff", ["onOffControl": .int(1), "onTime": .int(10), "offWaitTime": .int(0)])
        #expect(try r.onOff() == false)
        #expect(try r.read(.onOff, "onTime") == .int(0))
        try r.invoke("onOff", "on")
        try r.invoke("onOff", "onWithTimedOff", ["onOffControl": .int(1), "onTime": .int(10), "offWaitTime": .int(0)])
        #expect(try r.read(.onOff, "onTime") == .int(10))
    }

    @Test func delayedOffGuardKeepsTheLightOffAndOnlyShrinks() throws {
        let r = try Rig(.onOffLight)
        try r.invoke("onOff", "onWithTimedOff", ["onTime": .int(100), "offWaitTime": .int(30)])
        try r.invoke("onOff", "off")  // zeroes OnTime, keeps OffWaitTime: the guard starts
        #expect(try r.read(.onOff, "onTime") == .int(0))
        #expect(try r.read(.onOff, "offWaitTime") == .int(30))
        r.advance(500)
        #expect(try r.read(.onOff, "offWaitTime") == .int(25))
        try r.invoke("onOff", "onWithTimedOff", ["onTime": .int(100), "offWaitTime": .int(40)])
        #expect(try r.onOff() == false)
        #expect(try r.read(.onOff, "offWaitTime") == .int(25))
        try r.invoke("onOff", "onWithTimedOff", ["onTime": .int(100), "offWaitTime": .int(10)])
        #expect(try r.read(.onOff, "offWaitTime") == .int(10))
        r.advance(1000)
        #expect(try r.read(.onOff, "offWaitTime") == .int(0))
        try r.invoke("onOff", "onWithTimedOff", ["onTime": .int(5), "offWaitTime": .int(0)])
        #expect(try r.onOff() == true)
    }

    @Test func onWithTimedOffKeepsTheLongerOnTime() throws {
        let r = try Rig(.onOffLight)
        try r.invoke("onOff", "onWithTimedOff", ["onTime": .int(50), "offWaitTime": .int(0)])
        try r.invoke("onOff", "onWithTimedOff", ["onTime": .int(20), "offWaitTime": .int(0)])
        #expect(try r.read(.onOff, "onTime") == .int(50))
    }

    @Test func timedFieldsAboveFFFEAreConstraintErrors() throws {
        let r = try Rig(.onOffLight)
        let e = homeError { try r.invoke("onOff", "onWithTimedOff", ["onTime": .int(0xFFFF), "offWaitTime": .int(0)]) }
        #expect(e?.status == .constraintError)
        #expect(try r.onOff() == false)
    }

    @Test func writingOnTimeWhileOnStartsTheCountdown() throws {
        let r = try Rig(.onOffLight)
        try r.invoke("onOff", "on")
        try r.update("onOff", ["onTime": .int(30)])
        r.advance(2900)
        #expect(try r.onOff() == true)
        r.advance(100)
        #expect(try r.onOff() == false)
    }

    @Test func offWithEffectStoresTheSceneAndOnlyOnce() throws {
        let r = try Rig(.onOffLight)
        try r.invoke("onOff", "on")
        #expect(try r.read(.onOff, "globalSceneControl") == .bool(true))
        try r.invoke("onOff", "offWithEffect", ["effectIdentifier": .int(0), "effectVariant": .int(1)])
        #expect(try r.onOff() == false)
        #expect(try r.read(.onOff, "globalSceneControl") == .bool(false))
        // GlobalSceneControl is false: a second OffWithEffect is a plain Off.
        try r.invoke("onOff", "offWithEffect", ["effectIdentifier": .int(1)])
        #expect(try r.read(.onOff, "globalSceneControl") == .bool(false))
        try r.invoke("onOff", "onWithRecallGlobalScene")
        #expect(try r.onOff() == true)
        #expect(try r.read(.onOff, "globalSceneControl") == .bool(true))
        // Already in force: discarded with success.
        try r.invoke("onOff", "off")
        try r.update("onOff", ["onTime": .int(0)])
        #expect(try r.read(.onOff, "globalSceneControl") == .bool(true))
        try r.invoke("onOff", "onWithRecallGlobalScene")
        #expect(try r.onOff() == false)
    }

    @Test func unknownEffectIsAConstraintError() throws {
        let r = try Rig(.onOffLight)
        let e = homeError { try r.invoke("onOff", "offWithEffect", ["effectIdentifier": .int(7)]) }
        #expect(e?.status == .constraintError)
    }

    @Test(arguments: [
        (Value.int(0), true, false), (.int(0), false, false),
        (.int(1), false, true), (.int(1), true, true),
        (.int(2), false, true), (.int(2), true, false),
        (.null, false, false), (.null, true, true),
    ])
    func startUpOnOff(startUp: Value, previous: Bool, expected: Bool) throws {
        let saved = SavedDevice(attributes: ["OnOffLight": ["onOff": [
            "onOff": .bool(previous), "startUpOnOff": SavedValue(startUp),
        ]]])
        let r = try Rig(.onOffLight, saved: saved)
        #expect(try r.onOff() == expected)
        #expect(try r.home.output("lamp", type: "OnOffLight").onOff == expected)
    }

    @Test func startUpOnOffFromTheConfigurationIsOverriddenByASavedWrite() throws {
        let traits = [TraitConfiguration(.onOff, attributes: ["startUpOnOff": .int(1)])]
        #expect(try Rig(.onOffLight, traits: traits).onOff() == true)
        let saved = SavedDevice(attributes: ["OnOffLight": ["onOff": ["startUpOnOff": .int(0), "onOff": .bool(true)]]])
        #expect(try Rig(.onOffLight, traits: traits, saved: saved).onOff() == false)
    }
}
