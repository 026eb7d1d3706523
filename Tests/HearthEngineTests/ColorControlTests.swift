import HearthEngine
import HearthModel
import Testing

/// ColorControl's ColorTemperature feature on a ColorTemperatureLight, on the manual clock
/// (docs/clusters/color-control.md).
@Suite struct ColorControlTests {
    /// A tunable-white light (physical range 153…370 unless configured) that is on, with an empty event log.
    func lit(_ traits: [TraitConfiguration] = []) throws -> Rig {
        let r = try Rig(.colorTemperatureLight, traits: traits)
        try r.invoke("onOff", "on")
        r.log.clear()
        return r
    }

    func mireds(_ r: Rig) throws -> Int? { try r.read(.colorControl, "colorTemperatureMireds")?.intValue }

    static func range(_ lo: Int, _ hi: Int, _ more: [String: Value] = [:]) -> [TraitConfiguration] {
        [TraitConfiguration(.colorControl, attributes: [
            "colorTempPhysicalMinMireds": .int(lo), "colorTempPhysicalMaxMireds": .int(hi),
        ].merging(more) { $1 })]
    }

    @Test func aNewLightStartsAt4000KInColorTemperatureMode() throws {
        let r = try Rig(.colorTemperatureLight)
        #expect(try mireds(r) == 250)
        #expect(try r.read(.colorControl, "colorMode") == .int(2))
        #expect(try r.read(.colorControl, "enhancedColorMode") == .int(2))
        #expect(try r.read(.colorControl, "colorCapabilities") == .int(0x10))
        #expect(try r.read(.colorControl, "featureMap") == .int(0x10))
        #expect(try r.read(.colorControl, "colorTempPhysicalMinMireds") == .int(153))
        #expect(try r.read(.colorControl, "colorTempPhysicalMaxMireds") == .int(370))
        #expect(try r.read(.colorControl, "coupleColorTempToLevelMinMireds") == .int(153))
        #expect(try r.read(.colorControl, "startUpColorTemperatureMireds") == .null)
        #expect(try r.read(.colorControl, "numberOfPrimaries") == .null)
        #expect(try r.read(.colorControl, "remainingTime") == .int(0))
        #expect(try r.home.output("lamp", type: "ColorTemperatureLight").colorTemperatureMireds == 250)
        // A range without 250 starts in its middle.
        #expect(try mireds(Rig(.colorTemperatureLight, traits: Self.range(300, 400))) == 350)
    }

    @Test func moveToColorTemperatureAtOnceAndClippedToThePhysicalRange() throws {
        let r = try lit()
        try r.invoke("colorControl", "moveToColorTemperature", ["colorTemperatureMireds": .int(300)])
        #expect(try mireds(r) == 300)
        #expect(r.actuator.last?.colorTemperatureMireds == 300)
        #expect(r.log.values("colorTemperatureMireds") == [.int(300)])
        try r.invoke("colorControl", "moveToColorTemperature", ["colorTemperatureMireds": .int(1000)])
        #expect(try mireds(r) == 370)
        try r.invoke("colorControl", "moveToColorTemperature", ["colorTemperatureMireds": .int(0)])
        #expect(try mireds(r) == 153)
        #expect(r.home.nextDeadline == nil)
    }

    @Test func transitionsStepOnTheClockAndReportQuietly() throws {
        let r = try lit()
        try r.invoke("colorControl", "moveToColorTemperature",
                     ["colorTemperatureMireds": .int(350), "transitionTime": .int(20)])
        #expect(try r.read(.colorControl, "remainingTime") == .int(20))
        r.advance(20)
        #expect(try mireds(r) == 251)
        r.advance(980)
        #expect(try mireds(r) == 300)
        #expect(try r.read(.colorControl, "remainingTime") == .int(10))
        r.advance(1000)
        #expect(try mireds(r) == 350)
        #expect(try r.read(.colorControl, "remainingTime") == .int(0))
        // Every step reached the hardware; the attribute was reported once a second and at the end.
        let steps = r.actuator.outputs.suffix(100).compactMap(\.colorTemperatureMireds)
        #expect(steps.count == 100)
        #expect(steps.last == 350)
        #expect(r.log.values("colorTemperatureMireds") == [.int(300), .int(350)])
        #expect(r.log.values("remainingTime") == [.int(20), .int(0)])
    }

    @Test func stopMoveStepHoldsTheTemperature() throws {
        let r = try lit()
        try r.invoke("colorControl", "moveToColorTemperature",
                     ["colorTemperatureMireds": .int(350), "transitionTime": .int(20)])
        r.advance(1000)
        try r.invoke("colorControl", "stopMoveStep")
        #expect(try mireds(r) == 300)
        #expect(try r.read(.colorControl, "remainingTime") == .int(0))
        #expect(r.home.nextDeadline == nil)
        r.advance(2000)
        #expect(try mireds(r) == 300)
    }

    @Test func moveColorTemperatureRunsAtItsRateToTheBounds() throws {
        let r = try lit()
        // Up at 50 mireds per second with no bound: to the physical maximum, 370, in 2.4 s.
        try r.invoke("colorControl", "moveColorTemperature", ["moveMode": .int(1), "rate": .int(50)])
        #expect(try r.read(.colorControl, "remainingTime") == .int(24))
        r.advance(1000)
        #expect(try mireds(r) == 300)
        r.advance(1400)
        #expect(try mireds(r) == 370)
        // Down with a lower bound of 200: stops there.
        try r.invoke("colorControl", "moveColorTemperature", ["moveMode": .int(3), "rate": .int(100),
                                                              "colorTemperatureMinimumMireds": .int(200)])
        r.advance(5000)
        #expect(try mireds(r) == 200)
        // A bound beyond the physical limit is the physical limit.
        try r.invoke("colorControl", "moveColorTemperature", ["moveMode": .int(3), "rate": .int(1000),
                                                              "colorTemperatureMinimumMireds": .int(20)])
        r.advance(1000)
        #expect(try mireds(r) == 153)
        // An upper bound already behind the light (Up while above it) does not move it down.
        try r.invoke("colorControl", "moveToColorTemperature", ["colorTemperatureMireds": .int(300)])
        try r.invoke("colorControl", "moveColorTemperature", ["moveMode": .int(1), "rate": .int(10),
                                                              "colorTemperatureMaximumMireds": .int(250)])
        r.advance(1000)
        #expect(try mireds(r) == 300)
    }

    @Test func moveModeStopStopsAMove() throws {
        let r = try lit()
        try r.invoke("colorControl", "moveColorTemperature", ["moveMode": .int(1), "rate": .int(50)])
        r.advance(1000)
        try r.invoke("colorControl", "moveColorTemperature", ["moveMode": .int(0), "rate": .int(0)])
        #expect(try mireds(r) == 300)
        #expect(r.home.nextDeadline == nil)
    }

    @Test func stepColorTemperatureAndItsBounds() throws {
        let r = try lit()
        try r.invoke("colorControl", "stepColorTemperature",
                     ["stepMode": .int(1), "stepSize": .int(40), "transitionTime": .int(10)])
        r.advance(500)
        #expect(try mireds(r) == 270)
        r.advance(500)
        #expect(try mireds(r) == 290)
        try r.invoke("colorControl", "stepColorTemperature", ["stepMode": .int(3), "stepSize": .int(10)])
        #expect(try mireds(r) == 280)
        // Cut short by the upper bound 300: 20 of 100 mireds, so 0.2 s of the 1 s.
        try r.invoke("colorControl", "stepColorTemperature", ["stepMode": .int(1), "stepSize": .int(100),
                                                              "transitionTime": .int(10),
                                                              "colorTemperatureMaximumMireds": .int(300)])
        #expect(try r.read(.colorControl, "remainingTime") == .int(2))
        r.advance(200)
        #expect(try mireds(r) == 300)
        #expect(r.home.nextDeadline == nil)
        // Down past the physical minimum stops at it.
        try r.invoke("colorControl", "stepColorTemperature", ["stepMode": .int(3), "stepSize": .int(1000)])
        #expect(try mireds(r) == 153)
    }

    @Test func badFieldsGiveTheRightStatus() throws {
        let r = try lit()
        let cases: [(String, [String: Value], HomeError.Status)] = [
            ("moveColorTemperature", ["moveMode": .int(1), "rate": .int(0)], .invalidCommand),
            ("moveColorTemperature", ["moveMode": .int(3), "rate": .int(0)], .invalidCommand),
            ("moveColorTemperature", ["moveMode": .int(2), "rate": .int(5)], .constraintError),
            ("moveColorTemperature", ["moveMode": .int(1)], .invalidCommand),
            ("stepColorTemperature", ["stepMode": .int(1), "stepSize": .int(0)], .invalidCommand),
            ("stepColorTemperature", ["stepMode": .int(0), "stepSize": .int(5)], .constraintError),
            ("moveToColorTemperature", ["colorTemperatureMireds": .int(65280)], .constraintError),
            ("moveToColorTemperature", ["colorTemperatureMireds": .int(300), "transitionTime": .int(65535)],
             .constraintError),
            ("moveToColorTemperature", [:], .invalidCommand),
            ("moveToColorTemperature", ["colorTemperatureMireds": .int(300), "optionsMask": .int(2)], .constraintError),
            ("moveToHue", [:], .unsupportedCommand),
        ]
        for (command, args, status) in cases {
            let e = homeError { try r.invoke("colorControl", command, args) }
            #expect(e?.status == status, "\(command) \(args): \(e?.message ?? "no error")")
        }
        #expect(try mireds(r) == 250)
        // Read-only attributes refuse writes; writable ones check their constraints.
        #expect(homeError { try r.update("colorControl", ["colorTemperatureMireds": .int(300)]) }?.status
                == .unsupportedWrite)
        #expect(homeError { try r.update("colorControl", ["colorTempPhysicalMinMireds": .int(100)]) }?.status
                == .unsupportedWrite)
        #expect(homeError { try r.update("colorControl", ["startUpColorTemperatureMireds": .int(0)]) }?.status
                == .constraintError)
        #expect(homeError { try r.update("colorControl", ["startUpColorTemperatureMireds": .int(65280)]) }?.status
                == .constraintError)
        #expect(homeError { try r.update("colorControl", ["options": .int(2)]) }?.status == .constraintError)
    }

    @Test func executeIfOffDecidesWhetherAnOffLightTakesCommands() throws {
        let r = try Rig(.colorTemperatureLight)
        #expect(try r.onOff() == false)
        // Off, ExecuteIfOff clear: discarded with success.
        try r.invoke("colorControl", "moveToColorTemperature", ["colorTemperatureMireds": .int(300)])
        #expect(try mireds(r) == 250)
        // The command's override sets it for this command only.
        try r.invoke("colorControl", "moveToColorTemperature", ["colorTemperatureMireds": .int(300),
                                                                "optionsMask": .int(1), "optionsOverride": .int(1)])
        #expect(try mireds(r) == 300)
        // The Options attribute sets it for every command, unless a command masks it off.
        try r.update("colorControl", ["options": .int(1)])
        try r.invoke("colorControl", "stepColorTemperature", ["stepMode": .int(1), "stepSize": .int(10)])
        #expect(try mireds(r) == 310)
        try r.invoke("colorControl", "stepColorTemperature", ["stepMode": .int(1), "stepSize": .int(10),
                                                              "optionsMask": .int(1), "optionsOverride": .int(0)])
        #expect(try mireds(r) == 310)
        // Bad fields are refused even while off (the fields are checked before the options).
        try r.update("colorControl", ["options": .int(0)])
        #expect(
            homeError { try r.invoke("colorControl", "moveColorTemperature", ["moveMode": .int(1), "rate": .int(0)]) }?
                .status == .invalidCommand)
        // A stop while off without ExecuteIfOff is discarded too.
        try r.invoke(
            "colorControl", "moveToColorTemperature",
            [
                "colorTemperatureMireds": .int(200), "transitionTime": .int(10),
                "optionsMask": .int(1), "optionsOverride": .int(1)
            ])
        r.advance(500)
        try r.invoke("colorControl", "stopMoveStep")
        r.advance(500)
        #expect(try mireds(r) == 200)
    }

    @Test func theTemperatureFollowsTheLevelWhenCoupled() throws {
        let r = try lit(Self.range(153, 370, ["coupleColorTempToLevelMinMireds": .int(200)]))
        // Not coupled: the level leaves the temperature alone.
        try r.invoke("levelControl", "moveToLevel", ["level": .int(1)])
        #expect(try mireds(r) == 250)
        try r.update("levelControl", ["options": .int(2)])  // coupleColorTempToLevel
        try r.invoke("levelControl", "moveToLevel", ["level": .int(254)])
        #expect(try mireds(r) == 200)
        try r.invoke("levelControl", "moveToLevel", ["level": .int(1)])
        #expect(try mireds(r) == 370)
        try r.invoke("levelControl", "moveToLevel", ["level": .int(127)])
        #expect(try mireds(r) == 285)  // 370 − 170·126/253, rounded
        // During a level transition it follows every step, reported quietly.
        r.log.clear()
        try r.invoke("levelControl", "moveToLevel", ["level": .int(254), "transitionTime": .int(20)])
        r.advance(1000)
        let halfway = try #require(try r.level())
        let coupled = 370 - Int((Double(170 * (halfway - 1)) / 253).rounded())
        #expect(try mireds(r) == coupled)
        #expect(r.actuator.last?.colorTemperatureMireds == UInt16(coupled))
        r.advance(1000)
        #expect(try mireds(r) == 200)
        #expect(r.log.values("colorTemperatureMireds").last == .int(200))
        #expect(r.log.values("colorTemperatureMireds").count <= 3)
        // A colour command still works while coupled; the next level change takes the temperature back.
        try r.invoke("colorControl", "moveToColorTemperature", ["colorTemperatureMireds": .int(300)])
        #expect(try mireds(r) == 300)
        try r.invoke("levelControl", "moveToLevel", ["level": .int(1)])
        #expect(try mireds(r) == 370)
        // The coupling is one way: a colour change leaves the level alone.
        #expect(try r.level() == 1)
    }

    @Test func aLevelChangeStopsARunningColourTransitionWhenCoupled() throws {
        let r = try lit()
        try r.update("levelControl", ["options": .int(2)])
        try r.invoke("colorControl", "moveToColorTemperature",
                     ["colorTemperatureMireds": .int(350), "transitionTime": .int(50)])
        r.advance(1000)
        try r.invoke("levelControl", "moveToLevel", ["level": .int(254)])
        #expect(try mireds(r) == 153)
        #expect(try r.read(.colorControl, "remainingTime") == .int(0))
        r.advance(5000)
        #expect(try mireds(r) == 153)
    }

    @Test(arguments: [(Value.null, 300), (.int(180), 180), (.int(500), 300), (.int(100), 300)])
    func startUpColorTemperatureMireds(_ startUp: Value, _ expected: Int) throws {
        let saved = SavedDevice(attributes: ["ColorTemperatureLight": ["colorControl": [
            "colorTemperatureMireds": .int(300), "startUpColorTemperatureMireds": SavedValue(startUp),
        ]]])
        let r = try Rig(.colorTemperatureLight, saved: saved)
        #expect(try mireds(r) == expected)
        #expect(try r.read(.colorControl, "startUpColorTemperatureMireds") == startUp)
        #expect(try r.read(.colorControl, "colorMode") == .int(2))
    }

    @Test func colourSettingsAreSavedAndASavedTemperatureIsClippedToTheRange() throws {
        let r = try lit()
        try r.update("colorControl", ["startUpColorTemperatureMireds": .int(200), "options": .int(1)])
        let attribute = try #require(ColorControlServer.descriptor.attribute(named: "colorTemperatureMireds"))
        #expect(attribute.isNonVolatile)
        #expect(try r.read(.colorControl, "startUpColorTemperatureMireds") == .int(200))
        let saved = SavedDevice(attributes: ["ColorTemperatureLight": ["colorControl": [
            "colorTemperatureMireds": .int(600),
        ]]])
        #expect(try mireds(Rig(.colorTemperatureLight, saved: saved)) == 370)
    }

    @Test func badConfigurationIsRefusedPrecisely() throws {
        let bad: [([TraitConfiguration], String)] = [
            (Self.range(300, 200), "colorTempPhysicalMinMireds (300) must be below colorTempPhysicalMaxMireds (200)"),
            (Self.range(200, 200), "must be below"),
            (Self.range(153, 370, ["coupleColorTempToLevelMinMireds": .int(100)]),
             "coupleColorTempToLevelMinMireds 100 is outside the physical range 153…370"),
            (Self.range(0, 370), "colorTempPhysicalMinMireds"),
            ([TraitConfiguration(.colorControl, attributes: ["colorMode": .int(1)])],
             "colorControl.colorMode is not configurable"),
            ([TraitConfiguration(.colorControl, attributes: ["numberOfPrimaries": .int(2)])],
             "numberOfPrimaries can only be null"),
            ([TraitConfiguration(.colorControl, features: ["xy"])], "colorControl has no feature 'xy'"),
        ]
        for (traits, message) in bad {
            let e = homeError { _ = try Rig(.colorTemperatureLight, traits: traits) }
            #expect(e?.status == .constraintError || e?.status == .unsupportedAttribute, "\(message)")
            #expect(e?.message.contains(message) == true, "\(e?.message ?? "no error") should say \(message)")
        }
        // A range that does not overlap the default one is fine in either order of loading.
        let r = try Rig(.colorTemperatureLight, traits: Self.range(400, 500))
        #expect(try r.read(.colorControl, "coupleColorTempToLevelMinMireds") == .int(400))
    }
}
