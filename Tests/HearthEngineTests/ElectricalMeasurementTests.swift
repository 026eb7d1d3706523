import HearthEngine
import HearthModel
import Testing

/// Electrical Power Measurement and Electrical Energy Measurement (docs/clusters/electrical-*-measurement.md) on a
/// plug, on the engine's manual clock: energy is integrated from readings at explicit instants, nothing sleeps.
@Suite struct ElectricalMeasurementTests {
    static let power = TraitConfiguration(.electricalPowerMeasurement, features: ["directCurrent"])
    static let energy = TraitConfiguration(
        .electricalEnergyMeasurement, features: ["importedEnergy", "cumulativeEnergy"])

    func plug(_ traits: [TraitConfiguration] = [power, energy], saved: SavedDevice? = nil) throws -> Rig {
        try Rig(.onOffPlugInUnit, traits: traits, saved: saved)
    }

    /// Feeds one reading into both traits, as the meter binding does.
    func reading(_ rig: Rig, mW: Int?, mV: Int? = nil, mA: Int? = nil, snapshot: Int64 = 60_000) throws {
        let r = ElectricalReading(activePower: mW, voltage: mV, activeCurrent: mA, snapshotInterval: snapshot)
        try rig.home.ingest(rig.device, trait: "electricalPowerMeasurement", .electricalPower(r))
        try rig.home.ingest(rig.device, trait: "electricalEnergyMeasurement", .electricalPower(r))
    }

    func energy(_ rig: Rig) throws -> Int? {
        try rig.read(.electricalEnergyMeasurement, "cumulativeEnergyImported")?.structureValue?["energy"]?.intValue
    }

    func energyEvents(_ rig: Rig) -> [[String: Value]] {
        rig.log.all.compactMap { e -> [String: Value]? in
            if case .event("OnOffPlugInUnit", let trait, "cumulativeEnergyMeasured", let fields) = e.change,
               trait == .electricalEnergyMeasurement { return fields }
            return nil
        }
    }

    // MARK: Power

    @Test func readingsAreNullUntilTheMeterReportsAndNullAgainWhenItCannot() throws {
        let rig = try plug()
        for a in ["activePower", "voltage", "activeCurrent"] {
            #expect(try rig.read(.electricalPowerMeasurement, a) == .null, "\(a) before any reading")
        }
        #expect(try rig.read(.electricalPowerMeasurement, "powerMode") == .int(1))
        #expect(try rig.read(.electricalPowerMeasurement, "numberOfMeasurementTypes") == .int(3))
        try reading(rig, mW: 6000, mV: 12_000, mA: 500)
        #expect(try rig.read(.electricalPowerMeasurement, "activePower") == .int(6000))
        #expect(try rig.read(.electricalPowerMeasurement, "voltage") == .int(12_000))
        #expect(try rig.read(.electricalPowerMeasurement, "activeCurrent") == .int(500))
        try reading(rig, mW: nil)
        #expect(try rig.read(.electricalPowerMeasurement, "activePower") == .null)
        #expect(try rig.read(.electricalPowerMeasurement, "voltage") == .null)
        #expect(rig.log.values("activePower") == [.int(6000), .null])
    }

    @Test func readingsAreReadOnlyAndNeverSaved() throws {
        let rig = try plug()
        try reading(rig, mW: 1000, mV: 5000, mA: 200)
        let write = homeError { try rig.update("electricalPowerMeasurement", ["activePower": .int(5)]) }
        #expect(write?.status == .unsupportedWrite)
        let saved = try rig.home.saved("lamp").attributes["OnOffPlugInUnit"]
        #expect(saved?["electricalPowerMeasurement"] == nil)
    }

    @Test func onlyDirectCurrentIsImplementedAndItIsRequired() throws {
        let ac = homeError {
            _ = try plug([
                TraitConfiguration(.electricalPowerMeasurement, features: ["directCurrent", "alternatingCurrent"])
            ])
        }
        #expect(ac?.status == .constraintError)
        #expect(ac?.message.contains("alternatingCurrent is not implemented") == true)
        let none = homeError { _ = try plug([TraitConfiguration(.electricalPowerMeasurement)]) }
        #expect(none?.message.contains("needs the feature directCurrent") == true)
        let unknown = homeError {
            _ = try plug([TraitConfiguration(.electricalPowerMeasurement, features: ["threePhase"])])
        }
        #expect(unknown?.message.contains("has no feature 'threePhase'") == true)
    }

    @Test func accuracyIsCheckedAgainstTheMeasurementAccuracyRules() throws {
        func accuracy(_ entries: [Value]) -> HomeError? {
            homeError {
                _ = try plug([TraitConfiguration(.electricalPowerMeasurement, features: ["directCurrent"],
                                                 attributes: ["accuracy": .list(entries)])])
            }
        }
        let good = ElectricalMeasurement.accuracy("activePower", measured: true, min: 0, max: 100_000, percentMax: 100)
        #expect(accuracy([good]) == nil)
        #expect(accuracy([])?.message.contains("1 to numberOfMeasurementTypes") == true)
        let voltageOnly = ElectricalMeasurement.accuracy("voltage", measured: true, min: 0, max: 26_000, percentMax: 50)
        #expect(accuracy([voltageOnly])?.message.contains("needs an entry for activePower") == true)
        #expect(accuracy([good, good])?.message.contains("lists activePower twice") == true)
        let frequency = ElectricalMeasurement.accuracy("frequency", measured: true, min: 0, max: 1, percentMax: 1)
        #expect(accuracy([good, frequency])?.message.contains("frequency is not measured here") == true)
        let noBound = ElectricalMeasurement.accuracy("activePower", measured: true, min: 0, max: 10, percentMax: 0)
        #expect(accuracy([noBound])?.message.contains("accuracy[0].accuracyRanges[0] gives no accuracy") == true)
        // Two ranges with a gap between them.
        var gap = good.structureValue!
        gap["accuracyRanges"] = .list([
            .structure(["rangeMin": .int(0), "rangeMax": .int(10), "percentMax": .int(100), "fixedMax": .int(0)]),
            .structure(["rangeMin": .int(12), "rangeMax": .int(100), "percentMax": .int(50), "fixedMax": .int(0)]),
        ])
        let gapError = accuracy([.structure(gap)])
        #expect(gapError?.status == .constraintError)
        #expect(
            gapError?.message.contains("accuracyRanges[1].rangeMin 12 must be one more than the previous rangeMax (11)")
                == true)
        var start = good.structureValue!
        start["minMeasuredValue"] = .int(-5)
        #expect(accuracy([.structure(start)])?.message.contains("rangeMin 0 must equal minMeasuredValue -5") == true)
        // Fixed: never written by a client.
        let rig = try plug()
        let write = homeError { try rig.update("electricalPowerMeasurement", ["accuracy": .list([good])]) }
        #expect(write?.status == .unsupportedWrite)
    }

    // MARK: Energy

    @Test func energyIsTheTrapezoidOfThePowerReadingsOnTheEnginesClock() throws {
        let rig = try plug()
        #expect(try energy(rig) == nil, "null before any reading")
        try reading(rig, mW: 60_000, snapshot: 1_000)  // 60 W
        #expect(try energy(rig) == 0, "the first reading is a snapshot of 0 mWh")
        rig.clock.advance(by: 60_000)
        try reading(rig, mW: 60_000, snapshot: 1_000)  // 60 W for a minute = 1 Wh
        #expect(try energy(rig) == 1000)
        rig.clock.advance(by: 60_000)
        try reading(rig, mW: 0, snapshot: 1_000)  // a ramp down to 0 W: half of it
        #expect(try energy(rig) == 1500)
        let endSystime = try rig.read(.electricalEnergyMeasurement, "cumulativeEnergyImported")?.structureValue?[
            "endSystime"]
        #expect(endSystime == .int(Int(rig.clock.now.milliseconds)))
        #expect(
            energyEvents(rig).map { $0["energyImported"]?.structureValue?["energy"] } == [
                .int(0), .int(1000), .int(1500)
            ])
    }

    @Test func whatIsBelowOneMilliwattHourIsCarriedNotRoundedAway() throws {
        let rig = try plug()
        try reading(rig, mW: 1, snapshot: 1_000)
        // 1 mW for one second is 1/3600 mWh: 3600 such seconds make exactly 1 mWh.
        for _ in 0..<3600 {
            rig.clock.advance(by: 1_000)
            try reading(rig, mW: 1, snapshot: 1_000)
        }
        #expect(try energy(rig) == 1)
    }

    @Test func snapshotsWaitForTheIntervalAndEachComesWithOneEvent() throws {
        let rig = try plug()
        try reading(rig, mW: 36_000)  // 36 W = 10 mWh a second
        for _ in 0..<59 {
            rig.clock.advance(by: 1_000)
            try reading(rig, mW: 36_000)
        }
        #expect(try energy(rig) == 0, "the attribute is a snapshot: not reported again within 60 s")
        #expect(energyEvents(rig).count == 1)
        rig.clock.advance(by: 1_000)
        try reading(rig, mW: 36_000)
        #expect(try energy(rig) == 600)
        #expect(energyEvents(rig).count == 2)
    }

    @Test func noEnergyIsInventedAcrossAGapAndExportIsNotImported() throws {
        let rig = try plug()
        try reading(rig, mW: 3_600_000, snapshot: 1_000)  // 3.6 kW
        try reading(rig, mW: nil, snapshot: 1_000)  // the meter fails …
        rig.clock.advance(by: 3_600_000)
        try reading(rig, mW: 3_600_000, snapshot: 1_000)  // … for an hour: nothing is known about that hour
        #expect(try energy(rig) == 0)
        rig.clock.advance(by: 1_000)
        try reading(rig, mW: -3_600_000, snapshot: 1_000)  // fed backwards: the trapezoid counts only the import
        #expect(try energy(rig) == 500)
        rig.clock.advance(by: 1_000)
        try reading(rig, mW: -3_600_000, snapshot: 1_000)
        #expect(try energy(rig) == 500)
    }

    @Test func theTotalSurvivesARestartAndContinues() throws {
        let clockStart: Int64
        let saved: SavedDevice
        do {
            let rig = try plug()
            try reading(rig, mW: 3_600_000, snapshot: 1_000)
            rig.clock.advance(by: 2_000)
            try reading(rig, mW: 3_600_000, snapshot: 1_000)  // 2 Wh
            #expect(try energy(rig) == 2000)
            saved = try rig.home.saved("lamp")
            clockStart = rig.clock.now.milliseconds
        }
        let stored = saved.attributes["OnOffPlugInUnit"]?["electricalEnergyMeasurement"]?["cumulativeEnergyImported"]
        #expect(stored?.value.structureValue?["energy"] == .int(2000))
        #expect(clockStart > 0)
        // The restarted hub: a new clock (a new boot), the saved total shown from the start until the first reading.
        let rig = try plug(saved: saved)
        #expect(try energy(rig) == 2000)
        #expect(
            try rig.read(.electricalEnergyMeasurement, "cumulativeEnergyImported")?.structureValue?["endSystime"]
                == .int(0))
        try reading(rig, mW: 3_600_000, snapshot: 1_000)
        rig.clock.advance(by: 1_000)
        try reading(rig, mW: 3_600_000, snapshot: 1_000)
        #expect(try energy(rig) == 3000)
        // A configured starting total loses to the saved one.
        let configured = TraitConfiguration(
            .electricalEnergyMeasurement, features: ["importedEnergy", "cumulativeEnergy"],
            attributes: ["cumulativeEnergyImported": .structure(["energy": .int(7), "endSystime": .int(0)])])
        #expect(try energy(try plug([Self.power, configured], saved: saved)) == 2000)
        #expect(try energy(try plug([Self.power, configured])) == 7)
    }

    @Test func aSavedTotalThatIsNotAnEnergyIsSkippedWithAWarning() throws {
        let bad = SavedDevice(attributes: ["OnOffPlugInUnit": ["electricalEnergyMeasurement": [
            "cumulativeEnergyImported": .structure(["energy": .int(-5), "endSystime": .int(0)]),
        ]]])
        let rig = try plug(saved: bad)
        #expect(try energy(rig) == nil)
        #expect(rig.home.restoreWarnings.contains { $0.contains("saved cumulativeEnergyImported skipped") })
    }

    @Test func energyFeaturesAreImportedAndCumulativeOnly() throws {
        let periodic = homeError {
            _ = try plug([TraitConfiguration(.electricalEnergyMeasurement,
                                             features: ["importedEnergy", "cumulativeEnergy", "periodicEnergy"])])
        }
        #expect(periodic?.message.contains("periodicEnergy is not implemented") == true)
        let missing = homeError {
            _ = try plug([TraitConfiguration(.electricalEnergyMeasurement, features: ["importedEnergy"])])
        }
        #expect(missing?.message.contains("needs the features importedEnergy and cumulativeEnergy") == true)
        let wrongType = homeError {
            _ = try plug([
                TraitConfiguration(
                    .electricalEnergyMeasurement, features: ["importedEnergy", "cumulativeEnergy"],
                    attributes: [
                        "accuracy": ElectricalMeasurement.accuracy(
                            "activePower", measured: false, min: 0, max: 10, percentMax: 1)
                    ])
            ])
        }
        #expect(
            wrongType?.message.contains("accuracy.measurementType must be electricalEnergy, not activePower") == true)
    }

    @Test func otherInputsAreRefused() throws {
        let rig = try plug()
        let e = homeError { try rig.home.ingest("lamp", trait: "electricalEnergyMeasurement", .measurement(.int(5))) }
        #expect(e?.status == .invalidCommand)
        let p = homeError { try rig.home.ingest("lamp", trait: "electricalPowerMeasurement", .binaryState(true)) }
        #expect(p?.status == .invalidCommand)
    }
}
