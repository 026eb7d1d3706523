import HearthEngine
import HearthModel
import Testing

/// Boolean State (docs/clusters/boolean-state.md) and Occupancy Sensing (docs/clusters/occupancy-sensing.md) on the
/// engine's manual clock: nothing here sleeps.
@Suite struct SensorTraitTests {
    // MARK: Boolean State

    func contact() throws -> Rig { try Rig(.contactSensor) }

    func state(_ rig: Rig, _ value: Bool) throws {
        try rig.home.ingest(rig.device, trait: "booleanState", .binaryState(value))
    }

    @Test func stateValueFollowsTheContactAndEachChangeIsOneStateChangeEvent() throws {
        let rig = try contact()
        #expect(try rig.read(.booleanState, "stateValue") == .bool(false))
        try state(rig, true)  // the first reading: the state is known now, nobody saw it change
        #expect(try rig.read(.booleanState, "stateValue") == .bool(true))
        #expect(rig.log.eventNames().isEmpty)
        try state(rig, false)
        try state(rig, false)  // no change, no event
        try state(rig, true)
        #expect(rig.log.values("stateValue") == [.bool(true), .bool(false), .bool(true)])
        let events = rig.log.all.compactMap { e -> [String: Value]? in
            if case .event(let type, let trait, "stateChange", let fields) = e.change, type == "ContactSensor",
               trait == .booleanState { return fields }
            return nil
        }
        #expect(events == [["stateValue": .bool(false)], ["stateValue": .bool(true)]])
    }

    @Test func stateValueIsReadOnlyAndNeverConfiguredOrRestored() throws {
        let rig = try contact()
        let write = homeError { try rig.update("booleanState", ["stateValue": .bool(true)]) }
        #expect(write?.status == .unsupportedWrite)
        #expect(try rig.read(.booleanState, "stateValue") == .bool(false))
        // A configured value is no reading: the hardware says what the state is.
        let configured = try Rig(
            .contactSensor, traits: [TraitConfiguration(.booleanState, attributes: ["stateValue": .bool(true)])])
        #expect(try configured.read(.booleanState, "stateValue") == .bool(false))
        #expect(try configured.home.saved("lamp").attributes["ContactSensor"]?["booleanState"] == nil)
    }

    @Test func booleanStateTakesNoOtherInputAndNoFeature() throws {
        let rig = try contact()
        #expect(
            homeError { try rig.home.ingest("lamp", trait: "booleanState", .switchPosition(1)) }?.status
                == .invalidCommand)
        let features = homeError {
            _ = try Rig(.contactSensor, traits: [TraitConfiguration(.booleanState, features: ["latching"])])
        }
        #expect(features?.status == .constraintError)
        #expect(features?.message.contains("booleanState has no feature 'latching'") == true)
    }

    // MARK: Occupancy Sensing

    func occupancy(
        _ attributes: [String: Value] = [:], features: Set<String> = ["passiveInfrared"],
        saved: SavedDevice? = nil
    ) throws -> Rig {
        try Rig(
            .occupancySensor,
            traits: [TraitConfiguration(.occupancySensing, features: features, attributes: attributes)],
            saved: saved)
    }

    func detect(_ rig: Rig, _ value: Bool) throws {
        try rig.home.ingest(rig.device, trait: "occupancySensing", .binaryState(value))
    }

    func occupied(_ rig: Rig) throws -> Bool { try rig.read(.occupancySensing, "occupancy") == .int(1) }

    @Test func theHoldTimeKeepsItOccupiedAfterTheSignalDrops() throws {
        let rig = try occupancy(["holdTime": .int(10)])
        try detect(rig, false)  // first reading: nobody there
        try detect(rig, true)
        #expect(try occupied(rig))
        rig.advance(3000)
        try detect(rig, false)  // the PIR output drops after 3 s
        #expect(try occupied(rig), "held for holdTime")
        rig.advance(9980)
        #expect(try occupied(rig), "9.98 s after the drop")
        rig.advance(20)
        #expect(try occupied(rig) == false, "10 s after the drop")
        #expect(rig.log.eventNames() == ["occupancyChanged", "occupancyChanged"])
        #expect(rig.log.values("occupancy") == [.int(1), .int(0)])
    }

    @Test func aDetectionWithinTheHoldTimeMakesOneOccupiedPeriod() throws {
        let rig = try occupancy(["holdTime": .int(10)])
        try detect(rig, true)  // first reading, someone is there: no event
        try detect(rig, false)
        rig.advance(6000)
        try detect(rig, true)  // a second trigger before the hold time is up
        rig.advance(5000)
        #expect(try occupied(rig))
        try detect(rig, false)
        rig.advance(9980)
        #expect(try occupied(rig))
        rig.advance(20)
        #expect(try occupied(rig) == false)
        #expect(rig.log.values("occupancy") == [.int(1), .int(0)])
        #expect(rig.log.eventNames() == ["occupancyChanged"], "the first reading gives no event, the end one")
        let fields = rig.log.all.compactMap { e -> [String: Value]? in
            if case .event(_, _, "occupancyChanged", let f) = e.change { return f }
            return nil
        }
        #expect(fields == [["occupancy": .int(0)]])
    }

    @Test func holdTimeIsWritableWithinItsLimitsAndRefusedOutsideWithNothingChanged() throws {
        let limits: Value = .structure(["holdTimeMin": .int(5), "holdTimeMax": .int(600), "holdTimeDefault": .int(60)])
        let rig = try occupancy(["holdTimeLimits": limits])
        #expect(try rig.read(.occupancySensing, "holdTime") == .int(60), "the limits' default")
        #expect(try rig.read(.occupancySensing, "holdTimeLimits") == limits)
        try rig.update("occupancySensing", ["holdTime": .int(5)])
        try rig.update("occupancySensing", ["holdTime": .int(600)])
        #expect(try rig.read(.occupancySensing, "holdTime") == .int(600))
        rig.log.clear()
        for bad in [0, 4, 601, 65535] {
            let error = homeError { try rig.update("occupancySensing", ["holdTime": .int(bad)]) }
            #expect(error?.status == .constraintError, "\(bad)")
            #expect(error?.code == .invalidArgument)
            #expect(error?.message == "holdTime \(bad) is out of range; allowed: 5…600 (holdTimeLimits)")
        }
        let negative = homeError { try rig.update("occupancySensing", ["holdTime": .int(-1)]) }
        #expect(negative?.status == .constraintError)
        #expect(
            homeError { try rig.update("occupancySensing", ["holdTime": .string("long")]) }?.status == .invalidDataType)
        #expect(try rig.read(.occupancySensing, "holdTime") == .int(600))
        #expect(rig.log.all.isEmpty, "a refused write changes nothing and reports nothing")
        // Kept across restarts (Matter's N quality).
        #expect(try rig.home.saved("lamp").attributes["OccupancySensor"]?["occupancySensing"]?["holdTime"] == .int(600))
    }

    @Test func theOtherAttributesAreReadOnly() throws {
        let rig = try occupancy()
        for name in ["occupancy", "occupancySensorType", "occupancySensorTypeBitmap", "holdTimeLimits"] {
            let value: Value = name == "holdTimeLimits"
                ? .structure(["holdTimeMin": .int(1), "holdTimeMax": .int(10), "holdTimeDefault": .int(1)]) : .int(1)
            #expect(
                homeError { try rig.update("occupancySensing", [name: value]) }?.status == .unsupportedWrite, "\(name)")
        }
    }

    @Test func aShorterHoldTimeWrittenDuringTheCountdownEndsItFromWhenTheSignalDropped() throws {
        let rig = try occupancy(["holdTime": .int(60)])
        try detect(rig, true)
        try detect(rig, false)
        rig.advance(20_000)
        try rig.update("occupancySensing", ["holdTime": .int(30)])
        #expect(try occupied(rig), "30 s after the drop is still ahead")
        rig.advance(9_980)
        #expect(try occupied(rig))
        rig.advance(20)
        #expect(try occupied(rig) == false, "30 s after the drop")

        try detect(rig, true)
        try detect(rig, false)
        rig.advance(20_000)
        try rig.update("occupancySensing", ["holdTime": .int(10)])
        #expect(try occupied(rig) == false, "10 s after the drop has passed: unoccupied at once")
        #expect(rig.log.values("occupancy") == [.int(1), .int(0), .int(1), .int(0)])
        #expect(rig.log.eventNames() == ["occupancyChanged", "occupancyChanged", "occupancyChanged"])
    }

    @Test func aLongerHoldTimeWrittenDuringTheCountdownExtendsIt() throws {
        let rig = try occupancy(["holdTime": .int(10)])
        try detect(rig, true)
        try detect(rig, false)
        rig.advance(5_000)
        try rig.update("occupancySensing", ["holdTime": .int(20)])
        rig.advance(14_980)
        #expect(try occupied(rig))
        rig.advance(20)
        #expect(try occupied(rig) == false)
    }

    @Test func holdTimeLimitsAreConfiguredAndChecked() throws {
        func limits(_ min: Int, _ max: Int, _ def: Int) -> Value {
            .structure(["holdTimeMin": .int(min), "holdTimeMax": .int(max), "holdTimeDefault": .int(def)])
        }
        #expect(try occupancy().read(.occupancySensing, "holdTimeLimits") == limits(1, 65535, 30))
        // A configured holdTime is checked against the configured limits, whichever is read first.
        #expect(try occupancy(["holdTime": .int(900), "holdTimeLimits": limits(10, 1800, 60)])
            .read(.occupancySensing, "holdTime") == .int(900))
        let outside = homeError { _ = try occupancy(["holdTime": .int(5), "holdTimeLimits": limits(10, 1800, 60)]) }
        #expect(outside?.status == .constraintError)
        #expect(outside?.message.contains("holdTime 5 is out of range; allowed: 10…1800") == true)
        let inverted = homeError { _ = try occupancy(["holdTimeLimits": limits(100, 50, 60)]) }
        #expect(inverted?.message.contains("holdTimeMax (50) is below holdTimeMin (100)") == true)
        let defaultOutside = homeError { _ = try occupancy(["holdTimeLimits": limits(10, 60, 5)]) }
        #expect(
            defaultOutside?.message.contains("holdTimeDefault 5 is outside holdTimeMin…holdTimeMax (10…60)") == true)
        let smallMax = homeError { _ = try occupancy(["holdTimeLimits": limits(1, 9, 5)]) }
        #expect(smallMax?.status == .constraintError, "Matter: HoldTimeMax is at least 10")
        let zeroMin = homeError { _ = try occupancy(["holdTimeLimits": limits(0, 60, 5)]) }
        #expect(zeroMin?.status == .constraintError, "Matter: HoldTimeMin is at least 1")
        let missing = homeError {
            _ = try occupancy(["holdTimeLimits": .structure(["holdTimeMin": .int(1), "holdTimeMax": .int(60)])])
        }
        #expect(missing?.status == .invalidDataType)
        #expect(missing?.message.contains("needs the field 'holdTimeDefault'") == true)
    }

    @Test func aSavedHoldTimeOutsideNewLimitsIsSkippedWithAWarning() throws {
        let saved = SavedDevice(attributes: ["OccupancySensor": ["occupancySensing": ["holdTime": .int(3000)]]])
        let limits: Value = .structure(["holdTimeMin": .int(1), "holdTimeMax": .int(600), "holdTimeDefault": .int(45)])
        let rig = try occupancy(["holdTimeLimits": limits], saved: saved)
        #expect(try rig.read(.occupancySensing, "holdTime") == .int(45))
        #expect(
            rig.home.restoreWarnings.contains { $0.contains("saved holdTime skipped: holdTime 3000 is out of range") })
        let kept = try occupancy(
            saved: SavedDevice(attributes: ["OccupancySensor": ["occupancySensing": ["holdTime": .int(90)]]]))
        #expect(try kept.read(.occupancySensing, "holdTime") == .int(90))
    }

    @Test(arguments: [
        (["passiveInfrared"], "pir", ["pir"]),
        (["ultrasonic"], "ultrasonic", ["ultrasonic"]),
        (["passiveInfrared", "ultrasonic"], "pirAndUltrasonic", ["pir", "ultrasonic"]),
        (["physicalContact"], "physicalContact", ["physicalContact"]),
        (["physicalContact", "passiveInfrared"], "pir", ["pir", "physicalContact"]),
        (["physicalContact", "ultrasonic"], "ultrasonic", ["ultrasonic", "physicalContact"]),
        (["radar"], "pir", ["pir"]),
    ] as [([String], String, [String])])
    func theDeprecatedSensorTypesFollowTheFeatures(features: [String], type: String, bits: [String]) throws {
        let rig = try occupancy(features: Set(features))
        let e = OccupancySensingServer.sensorTypeEnum, b = OccupancySensingServer.sensorTypeBitmap
        #expect(try rig.read(.occupancySensing, "occupancySensorType") == .int(e.value(named: type)!))
        let mask = bits.reduce(0) { m, name in m | (1 << b.bits.first { $0.name == name }!.bit) }
        #expect(try rig.read(.occupancySensing, "occupancySensorTypeBitmap") == .int(mask))
    }

    @Test func featuresAreCheckedAndTheSensorTypesCannotContradictThem() throws {
        let none = homeError { _ = try occupancy(features: []) }
        #expect(none?.message.contains("occupancySensing needs at least one sensing feature") == true)
        let unknown = homeError { _ = try occupancy(features: ["sonar"]) }
        #expect(unknown?.message.contains("occupancySensing has no feature 'sonar'") == true)
        let contradiction = homeError { _ = try occupancy(["occupancySensorType": .int(1)]) }
        #expect(contradiction?.message.contains("occupancySensorType follows the trait's features") == true)
        #expect(
            try occupancy(["occupancySensorType": .int(0)]).read(.occupancySensing, "occupancySensorType") == .int(0))
    }
}
