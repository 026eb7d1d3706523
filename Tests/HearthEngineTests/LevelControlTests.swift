import HearthEngine
import HearthModel
import Testing

@Suite struct LevelControlTests {
    /// A dimmable light that is on at full level, with an empty event log.
    func lit(_ traits: [TraitConfiguration] = []) throws -> Rig {
        let r = try Rig(.dimmableLight, traits: traits)
        try r.invoke("onOff", "on")
        r.log.clear()
        return r
    }

    @Test func aNewLightStartsOffAtFullLevel() throws {
        let r = try Rig()
        #expect(try r.onOff() == false)
        #expect(try r.level() == 254)
        #expect(try r.read(.levelControl, "minLevel") == .int(1))
        #expect(try r.read(.levelControl, "maxLevel") == .int(254))
        #expect(try r.read(.levelControl, "onLevel") == .null)
    }

    @Test func moveToLevelWithoutTransitionAppliesAtOnce() throws {
        let r = try lit()
        try r.invoke("levelControl", "moveToLevel", ["level": .int(127)])
        #expect(try r.level() == 127)
        #expect(r.actuator.last?.level == 127)
        #expect(r.log.values("currentLevel") == [.int(127)])
        #expect(r.home.nextDeadline == nil)
    }

    @Test func transitionsStepAtFiftyPerSecondOnTheClock() throws {
        let r = try lit()
        try r.invoke("levelControl", "moveToLevel", ["level": .int(104), "transitionTime": .int(10)])
        #expect(try r.read(.levelControl, "remainingTime") == .int(10))
        r.advance(20)
        #expect(try r.level() == 251)
        r.advance(480)
        #expect(try r.level() == 179)
        #expect(try r.read(.levelControl, "remainingTime") == .int(5))
        r.advance(500)
        #expect(try r.level() == 104)
        #expect(try r.read(.levelControl, "remainingTime") == .int(0))
        // Every step was rendered: 50 outputs with the level falling 3 per step.
        let levels = r.actuator.outputs.suffix(50).map { Int($0.level!) }
        #expect(levels.count == 50)
        #expect(levels.first == 251)
        #expect(levels.last == 104)
        #expect(zip(levels, levels.dropFirst()).allSatisfy { $0 - $1 == 3 })
    }

    @Test func currentLevelIsReportedAtMostOncePerSecondAndAtTheEnd() throws {
        let r = try lit()
        try r.invoke("levelControl", "moveToLevel", ["level": .int(104), "transitionTime": .int(30)])
        r.advance(3000)
        #expect(r.log.values("currentLevel") == [.int(204), .int(154), .int(104)])
        // RemainingTime: when it goes from 0 above 10, and when it reaches 0.
        #expect(r.log.values("remainingTime") == [.int(30), .int(0)])
    }

    @Test func transitionsUnderOneSecondNeverReportRemainingTime() throws {
        let r = try lit()
        try r.invoke("levelControl", "moveToLevel", ["level": .int(100), "transitionTime": .int(9)])
        r.advance(900)
        #expect(r.log.values("remainingTime") == [])
        #expect(r.log.values("currentLevel") == [.int(100)])
    }

    @Test func nullTransitionTimeUsesOnOffTransitionTime() throws {
        let r = try lit()
        try r.update("levelControl", ["onOffTransitionTime": .int(20)])
        try r.invoke("levelControl", "moveToLevel", ["level": .int(54), "transitionTime": .null])
        r.advance(1000)
        #expect(try r.level() == 154)
        r.advance(1000)
        #expect(try r.level() == 54)
    }

    @Test func levelsOutsideTheLimitsAreClippedAndAbove254Refused() throws {
        let r = try lit()
        try r.invoke("levelControl", "moveToLevel", ["level": .int(0)])
        #expect(try r.level() == 1)
        let e = homeError { try r.invoke("levelControl", "moveToLevel", ["level": .int(255)]) }
        #expect(e?.status == .constraintError)
        #expect(e?.message == "moveToLevel.level 255 is out of range; allowed: 0…254")
        #expect(try r.level() == 1)
    }

    @Test func moveRunsAtItsRateAndStopFreezes() throws {
        let r = try lit()
        try r.invoke("levelControl", "move", ["moveMode": .int(1), "rate": .int(100)])
        #expect(try r.read(.levelControl, "remainingTime") == .int(26))  // 253 levels at 100/s: 2.53 s
        r.advance(1000)
        #expect(try r.level() == 154)
        try r.invoke("levelControl", "stop")
        r.advance(1000)
        #expect(try r.level() == 154)
        #expect(try r.read(.levelControl, "remainingTime") == .int(0))
        #expect(r.home.nextDeadline == nil)
    }

    @Test func moveRateZeroIsInvalidAndNullUsesDefaultMoveRate() throws {
        let r = try lit()
        #expect(homeError { try r.invoke("levelControl", "move", ["moveMode": .int(0), "rate": .int(0)]) }?
            .status == .invalidCommand)
        // No rate and no DefaultMoveRate: as fast as possible.
        try r.invoke("levelControl", "move", ["moveMode": .int(1)])
        #expect(try r.level() == 1)
        try r.update("levelControl", ["defaultMoveRate": .int(50)])
        try r.invoke("levelControl", "move", ["moveMode": .int(0), "rate": .null])
        r.advance(1000)
        #expect(try r.level() == 51)
        #expect(homeError { try r.update("levelControl", ["defaultMoveRate": .int(0)]) }?.status == .constraintError)
    }

    @Test func stepIsClampedWithProportionallyShorterTime() throws {
        let r = try lit()
        try r.invoke("levelControl", "moveToLevel", ["level": .int(250)])
        try r.invoke("levelControl", "step", ["stepMode": .int(0), "stepSize": .int(10), "transitionTime": .int(10)])
        r.advance(300)
        #expect(try r.level() == 253)
        r.advance(100)  // 4 of 10 levels: 0.4 s of the 1 s
        #expect(try r.level() == 254)
        #expect(r.home.nextDeadline == nil)
        #expect(homeError { try r.invoke("levelControl", "step", ["stepMode": .int(1), "stepSize": .int(0)]) }?
            .status == .invalidCommand)
        try r.invoke("levelControl", "step", ["stepMode": .int(1), "stepSize": .int(4)])
        #expect(try r.level() == 250)
    }

    @Test func commandsWithoutOnOffAreIgnoredWhileOffUnlessExecuteIfOff() throws {
        let r = try Rig()
        try r.invoke("levelControl", "moveToLevel", ["level": .int(50)])
        #expect(try r.level() == 254)  // discarded, with success
        try r.invoke(
            "levelControl", "moveToLevel", ["level": .int(50), "optionsMask": .int(1), "optionsOverride": .int(1)])
        #expect(try r.level() == 50)
        #expect(try r.onOff() == false)
        try r.update("levelControl", ["options": .int(1)])
        try r.invoke("levelControl", "moveToLevel", ["level": .int(60)])
        #expect(try r.level() == 60)
        // The mask takes the override's bit instead of the attribute's.
        try r.invoke(
            "levelControl", "moveToLevel", ["level": .int(70), "optionsMask": .int(1), "optionsOverride": .int(0)])
        #expect(try r.level() == 60)
        #expect(r.actuator.last?.isLit == false)
    }

    @Test func withOnOffTurnsOnAboveTheMinimumAndOffAtTheEndAtTheMinimum() throws {
        let r = try Rig()
        try r.invoke("onOff", "offWithEffect", ["effectIdentifier": .int(0), "effectVariant": .int(1)])
        #expect(try r.read(.onOff, "globalSceneControl") == .bool(false))
        try r.invoke("levelControl", "moveToLevelWithOnOff", ["level": .int(100)])
        #expect(try r.onOff() == true)
        #expect(try r.level() == 100)
        #expect(try r.read(.onOff, "globalSceneControl") == .bool(true))
        try r.invoke("levelControl", "moveToLevelWithOnOff", ["level": .int(1), "transitionTime": .int(5)])
        r.advance(480)
        #expect(try r.onOff() == true)
        r.advance(20)
        #expect(try r.onOff() == false)
        #expect(try r.level() == 1)
        try r.invoke("levelControl", "moveWithOnOff", ["moveMode": .int(0), "rate": .int(253)])
        #expect(try r.onOff() == true)
        r.advance(1000)
        try r.invoke("levelControl", "stepWithOnOff", ["stepMode": .int(1), "stepSize": .int(255)])
        #expect(try r.onOff() == false)
    }

    @Test func offFadesDownThenRestoresTheLevelAndOnFadesBackUp() throws {
        let r = try lit()
        try r.invoke("levelControl", "moveToLevel", ["level": .int(201)])
        try r.update("levelControl", ["onOffTransitionTime": .int(10)])
        try r.invoke("onOff", "off")
        #expect(try r.onOff() == false)
        r.advance(500)
        #expect(try r.level() == 101)
        #expect(r.actuator.last?.isLit == true)  // still fading
        r.advance(500)
        #expect(try r.level() == 201)  // OnLevel is null: the level from before the Off
        #expect(r.actuator.last?.isLit == false)
        try r.invoke("onOff", "on")
        #expect(try r.level() == 1)
        r.advance(500)
        #expect(try r.level() == 101)
        r.advance(500)
        #expect(try r.level() == 201)
    }

    @Test func onDuringAnOffFadeGoesBackToTheLevelBeforeTheOff() throws {
        let r = try lit()
        try r.invoke("levelControl", "moveToLevel", ["level": .int(201)])
        try r.update("levelControl", ["onOffTransitionTime": .int(10)])
        try r.invoke("onOff", "off")
        r.advance(500)
        try r.invoke("onOff", "on")
        #expect(try r.level() == 101)  // rises from where the fade was, no dip to the minimum
        r.advance(1000)
        #expect(try r.level() == 201)
        #expect(try r.onOff() == true)
    }

    @Test func onGoesToOnLevelWhenItIsSet() throws {
        let r = try lit()
        try r.update("levelControl", ["onLevel": .int(120), "onTransitionTime": .int(0), "offTransitionTime": .int(0)])
        try r.invoke("onOff", "off")
        #expect(try r.level() == 1)  // OnLevel set: nothing to restore
        try r.invoke("onOff", "on")
        #expect(try r.level() == 120)
        let e = homeError { try r.update("levelControl", ["onLevel": .int(255)]) }
        #expect(e?.status == .constraintError)
        #expect(try r.read(.levelControl, "onLevel") == .int(120))
    }

    @Test func readOnlyAttributesRefuseWrites() throws {
        let r = try lit()
        for name in ["currentLevel", "remainingTime", "minLevel", "maxLevel"] {
            let e = homeError { try r.update("levelControl", [name: .int(5)]) }
            #expect(e?.status == .unsupportedWrite, "\(name)")
            #expect(e?.code == .failedPrecondition)
        }
    }

    /// Matter's reference server checks a command's fields before the options (connectedhomeip,
    /// LevelControlCluster::MoveCommand and ::StepCommand): Rate 0 and StepSize 0 are INVALID_COMMAND whether the
    /// light is on or off, and change nothing. A light that is off ignores the same commands with valid fields.
    @Test(arguments: [false, true]) func rateZeroAndStepSizeZeroAreInvalidOnAndOff(lit: Bool) throws {
        let r = try lit ? self.lit() : Rig()
        let before = (try r.onOff(), try r.level())
        for (command, args): (String, [String: Value]) in [
            ("move", ["moveMode": .int(1), "rate": .int(0)]),
            ("step", ["stepMode": .int(1), "stepSize": .int(0)]),
            ("moveWithOnOff", ["moveMode": .int(0), "rate": .int(0)]),
            ("stepWithOnOff", ["stepMode": .int(0), "stepSize": .int(0)]),
        ] {
            #expect(homeError { try r.invoke("levelControl", command, args) }?.status == .invalidCommand,
                    "\(command), light \(lit ? "on" : "off")")
            #expect((try r.onOff(), try r.level()) == before, "\(command) changed nothing")
        }
        // Valid fields: executed while on, ignored (with success) while off.
        try r.invoke("levelControl", "step", ["stepMode": .int(1), "stepSize": .int(4)])
        #expect(try r.level() == (lit ? 250 : 254))
    }

    @Test func undefinedLevelMakesMoveAndStepFailButMoveToLevelJumps() throws {
        let home = try Home(devices: [DeviceConfiguration(id: "fan", name: "Fan", types: [
            DeviceTypeConfiguration(.onOffPlugInUnit, traits: [TraitConfiguration(.levelControl)]),
        ])], clock: ManualClock())
        #expect(try home.device("fan").trait(.levelControl)?["currentLevel"]?.value == .null)
        let e = homeError { try home.invoke("fan", trait: "levelControl", command: "moveWithOnOff",
                                            arguments: ["moveMode": .int(0), "rate": .int(10)]) }
        #expect(e?.status == .failure)
        #expect(
            homeError {
                try home.invoke(
                    "fan", trait: "levelControl", command: "stepWithOnOff",
                    arguments: ["stepMode": .int(0), "stepSize": .int(10)])
            }?.status == .failure)
        try home.invoke(
            "fan", trait: "levelControl", command: "moveToLevelWithOnOff",
            arguments: ["level": .int(100), "transitionTime": .int(50)])
        #expect(try home.device("fan").trait(.levelControl)?["currentLevel"]?.value == .int(100))
        #expect(try home.device("fan").trait(.onOff)?["onOff"]?.value == .bool(true))
        // Without the Lighting feature there is no RemainingTime or StartUpCurrentLevel.
        #expect(try home.device("fan").trait(.levelControl)?["remainingTime"]?.isSupported == false)
    }

    /// The reference server checks CurrentLevel before the options (LevelControlCluster::MoveCommand and
    /// ::StepCommand): a plug that is off reports its undefined level instead of ignoring the command.
    @Test func anUndefinedLevelFailsBeforeTheOptionsAreProcessed() throws {
        let home = try Home(devices: [DeviceConfiguration(id: "plug", name: "Plug", types: [
            DeviceTypeConfiguration(.onOffPlugInUnit, traits: [TraitConfiguration(.levelControl, features: ["onOff"])]),
        ])], clock: ManualClock())
        #expect(try home.device("plug").trait(.onOff)?["onOff"]?.value == .bool(false))
        for (command, args): (String, [String: Value]) in [("move", ["moveMode": .int(0), "rate": .int(10)]),
                                                            ("step", ["stepMode": .int(0), "stepSize": .int(10)])] {
            #expect(homeError { try home.invoke("plug", trait: "levelControl", command: command, arguments: args) }?
                .status == .failure, "\(command)")
        }
    }

    @Test(arguments: [(Value.null, 100), (.int(0), 1), (.int(200), 200), (.int(254), 254)])
    func startUpCurrentLevel(startUp: Value, expected: Int) throws {
        let saved = SavedDevice(attributes: ["DimmableLight": ["levelControl": [
            "currentLevel": .int(100), "startUpCurrentLevel": SavedValue(startUp),
        ]]])
        #expect(try Rig(saved: saved).level() == expected)
    }

    @Test func savedStateThatNoLongerFitsIsSkippedWithAWarning() throws {
        let saved = SavedDevice(attributes: ["DimmableLight": ["levelControl": [
            "currentLevel": .int(100), "startUpCurrentLevel": .int(255), "onLevel": .string("x"),
        ]]])
        let r = try Rig(saved: saved)
        #expect(try r.level() == 100)
        #expect(r.home.restoreWarnings.count == 2)
    }

    @Test func dyingLightBrightensThenFadesOffThenRecallsTheScene() throws {
        let r = try lit()
        try r.invoke("levelControl", "moveToLevel", ["level": .int(200)])
        try r.invoke("onOff", "offWithEffect", ["effectIdentifier": .int(1), "effectVariant": .int(0)])
        #expect(try r.onOff() == false)
        r.advance(500)
        #expect(try r.level() == 240)
        #expect(r.actuator.last?.isLit == true)
        r.advance(500)
        #expect(try r.level() == 120)
        r.advance(500)
        #expect(r.actuator.last?.isLit == false)
        #expect(try r.level() == 200)
        try r.invoke("onOff", "onWithRecallGlobalScene")
        #expect(try r.onOff() == true)
        #expect(try r.level() == 200)
        #expect(r.actuator.last?.isLit == true)
    }

    @Test func delayedOffSlowFadeHalvesThenFadesOverTwelveSeconds() throws {
        let r = try lit()
        try r.invoke("levelControl", "moveToLevel", ["level": .int(200)])
        try r.invoke("onOff", "offWithEffect", ["effectIdentifier": .int(0), "effectVariant": .int(2)])
        r.advance(800)
        #expect(try r.level() == 100)
        r.advance(6000)
        #expect(try r.level() == 50)
        r.advance(6000)
        #expect(try r.level() == 200)
        #expect(r.actuator.last?.isLit == false)
    }

    @Test func anUndefinedVariantFallsBackToTheDefaultFastFade() throws {
        let r = try lit()
        try r.invoke("onOff", "offWithEffect", ["effectIdentifier": .int(1), "effectVariant": .int(9)])
        r.advance(500)
        #expect(r.actuator.last?.isLit == true)  // dying light variant 0 still running
        r.advance(1000)
        #expect(r.actuator.last?.isLit == false)
    }
}
