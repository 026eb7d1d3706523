import HearthEngine
import HearthModel
import Testing

@Suite struct HomeTests {
    /// A lamp that is a dimmable light and a humidity sensor, and a wall switch.
    func home(clock: ManualClock = ManualClock(), actuator: RecordingActuator = RecordingActuator()) throws -> Home {
        try Home(devices: [
            DeviceConfiguration(id: "lamp", name: "Lamp", roomID: "kitchen", types: [
                DeviceTypeConfiguration(.dimmableLight, actuator: actuator),
                DeviceTypeConfiguration(.humiditySensor, traits: [
                    TraitConfiguration(.relativeHumidityMeasurement, attributes: [
                        "minMeasuredValue": .int(0), "maxMeasuredValue": .int(10000), "tolerance": .int(300),
                    ]),
                ]),
            ]),
            DeviceConfiguration(id: "hall", name: "Hall switch", types: [
                DeviceTypeConfiguration(.genericSwitch, traits: [
                    TraitConfiguration(.switchTrait, features: ["momentarySwitch", "momentarySwitchRelease"]),
                ]),
            ]),
        ], clock: clock)
    }

    @Test func exactlyOnePrimaryTypeAndBasicInformationOnIt() throws {
        let lamp = try home().device("lamp")
        #expect(lamp.types.map(\.metadata.isPrimaryType) == [true, false])
        #expect(lamp.primaryType?.descriptor.name == "DimmableLight")
        #expect(lamp.types[0].trait(.basicInformation)?["vendorName"]?.value == .string("Hearth"))
        #expect(lamp.types[1].trait(.basicInformation) == nil)
        #expect(lamp.types[0].trait(.basicInformation)?["serialNumber"]?.isSupported == false)
        // Identify is required by every type: added although the configuration left it out.
        #expect(lamp.types.allSatisfy { $0.trait(.identify) != nil })
    }

    @Test func unknownDeviceTypeTraitAndCommandEachHaveTheirError() throws {
        let h = try home()
        let device = homeError { try h.invoke("garage", trait: "onOff", command: "on") }
        #expect(device?.code == .notFound)
        #expect(device?.status == .notFound)
        #expect(device?.message == "no device 'garage'; devices: lamp, hall")
        let type = homeError { try h.invoke("lamp", type: "Fan", trait: "onOff", command: "on") }
        #expect(type?.code == .notFound)
        #expect(type?.status == .unsupportedEndpoint)
        #expect(type?.message == "device 'lamp' has no type 'Fan'; its types are DimmableLight, HumiditySensor")
        let trait = homeError { try h.invoke("lamp", trait: "colorControl", command: "on") }
        #expect(trait?.code == .unimplemented)
        #expect(trait?.status == .unsupportedCluster)
        let typedTrait = homeError { try h.invoke("lamp", type: "HumiditySensor", trait: "onOff", command: "on") }
        #expect(typedTrait?.status == .unsupportedCluster)
        #expect(typedTrait?.message.contains("its traits are relativeHumidityMeasurement, identify") == true)
        let command = homeError { try h.invoke("lamp", trait: "onOff", command: "blink") }
        #expect(command?.status == .unsupportedCommand)
        #expect(command?.message.contains("its commands are off, on, toggle") == true)
        let readOnlyTrait = homeError { try h.invoke("lamp", trait: "relativeHumidityMeasurement", command: "reset") }
        #expect(readOnlyTrait?.message.hasSuffix("it takes no commands") == true)
    }

    @Test func aTraitOnSeveralTypesNeedsTheType() throws {
        let h = try home()
        let e = homeError {
            try h.invoke("lamp", trait: "identify", command: "identify", arguments: ["identifyTime": .int(1)])
        }
        #expect(e?.status == .invalidCommand)
        #expect(e?.code == .invalidArgument)
        #expect(
            e?.message
                == "trait 'identify' is on several types of device 'lamp' (DimmableLight, HumiditySensor); say which "
                    + "with \"type\"")
        try h.invoke(
            "lamp", type: "HumiditySensor", trait: "identify", command: "identify", arguments: ["identifyTime": .int(1)]
        )
    }

    @Test func manufacturerTraitsAreAddressedByTheirQualifiedName() throws {
        let h = try home()
        let e = homeError { try h.invoke("lamp", trait: "com.example.onOff", command: "on") }
        #expect(e?.status == .unsupportedCluster)
        try h.invoke("lamp", trait: "matter.onOff", command: "on")
        #expect(try h.device("lamp").trait(.onOff)?["onOff"]?.value == .bool(true))
    }

    @Test func writesFollowMattersCheckOrderAndApplyAllOrNothing() throws {
        let h = try home()
        let unknown = homeError { try h.update("lamp", trait: "levelControl", attributes: ["brightness": .int(3)]) }
        #expect(unknown?.status == .unsupportedAttribute)
        let readOnly = homeError { try h.update("lamp", trait: "onOff", attributes: ["onOff": .bool(true)]) }
        #expect(readOnly?.status == .unsupportedWrite)
        #expect(readOnly?.message == "onOff.onOff is read-only; writable: onTime, offWaitTime, startUpOnOff")
        let wrongType = homeError { try h.update("lamp", trait: "onOff", attributes: ["onTime": .string("3")]) }
        #expect(wrongType?.status == .invalidDataType)
        let bad = homeError {
            try h.update(
                "lamp", trait: "levelControl", attributes: ["onLevel": .int(100), "onTransitionTime": .int(0xFFFF)])
        }
        #expect(bad?.status == .constraintError)
        #expect(try h.device("lamp").trait(.levelControl)?["onLevel"]?.value == .null)  // nothing applied
        #expect(homeError { try h.update("lamp", trait: "onOff", attributes: [:]) }?.status == .invalidCommand)
        try h.update("lamp", trait: "levelControl", attributes: ["onLevel": .int(100), "onTransitionTime": .int(5)])
        #expect(try h.device("lamp").trait(.levelControl)?["onTransitionTime"]?.value == .int(5))
        try h.update("lamp", trait: "onOff", attributes: ["startUpOnOff": .null])
    }

    @Test func offlineAndUnheardTraitsRefuseCommandsWithUnavailable() throws {
        let h = try home()
        try h.setConnectivity("lamp", trait: "onOff", SourceConnectivity(.offline, .direct))
        let e = homeError { try h.invoke("lamp", trait: "onOff", command: "on") }
        #expect(e?.code == .unavailable)
        #expect(e?.message == "onOff of device 'lamp' is offline; try again when it is online")
        #expect(
            homeError { try h.update("lamp", trait: "onOff", attributes: ["onTime": .int(1)]) }?.code == .unavailable)
        try h.setConnectivity("lamp", trait: "onOff", .notHeardFrom)
        #expect(homeError { try h.invoke("lamp", trait: "onOff", command: "on") }?.message
            == "onOff of device 'lamp' has not been heard from yet; try again when it is online")
        // Unsupported commands still say so first.
        #expect(homeError { try h.invoke("lamp", trait: "onOff", command: "nope") }?.status == .unsupportedCommand)
        try h.setConnectivity("lamp", trait: "onOff", .directOnline)
        try h.invoke("lamp", trait: "onOff", command: "on")
    }

    @Test func connectivityAggregatesOverTypesAndTheDevice() throws {
        let h = try home()
        #expect(try h.device("lamp").sourceConnectivity == .directOnline)
        try h.setConnectivity("lamp", trait: "relativeHumidityMeasurement", SourceConnectivity(.offline, .direct))
        let lamp = try h.device("lamp")
        #expect(lamp.types[1].sourceConnectivity == SourceConnectivity(.partiallyOnline, .direct))
        #expect(lamp.types[0].sourceConnectivity == .directOnline)
        #expect(lamp.sourceConnectivity == SourceConnectivity(.partiallyOnline, .direct))
        try h.setConnectivity(
            "lamp", type: "HumiditySensor", trait: "identify", SourceConnectivity(.online, .localPeer))
        #expect(try h.device("lamp").types[1].sourceConnectivity == SourceConnectivity(.partiallyOnline, .mixed))
    }

    @Test func aHardwareFailureUndoesTheCommand() throws {
        let actuator = RecordingActuator()
        let h = try home(actuator: actuator)
        let log = EventLog(h)
        actuator.fail(true)
        let e = homeError { try h.invoke("lamp", trait: "onOff", command: "on") }
        #expect(e?.code == .internal)
        #expect(e?.status == .failure)
        #expect(try h.device("lamp").trait(.onOff)?["onOff"]?.value == .bool(false))
        #expect(log.all.isEmpty)
        actuator.fail(false)
        try h.invoke("lamp", trait: "onOff", command: "on")
        #expect(actuator.last?.isLit == true)
    }

    @Test func setNameCutsAt60CodePointsAndReturnsTheDevice() throws {
        let h = try home()
        let log = EventLog(h)
        let long = String(repeating: "🏠", count: 61)
        let updated = try h.setName("lamp", long)
        #expect(updated.name == String(repeating: "🏠", count: 60))
        #expect(try h.device("lamp").name == updated.name)
        #expect(log.all == [HomeEvent(deviceID: "lamp", change: .metadata)])
        #expect(try h.setRoom("lamp", nil).roomID == nil)
        #expect(try h.setStructure("lamp", "home").structureID == "home")
        #expect(homeError { try h.setName("nope", "x") }?.code == .notFound)
    }

    @Test func savedStateRestoresUserMetadataAndNonVolatileAttributes() throws {
        let first = try home()
        try first.setName("lamp", "Desk lamp")
        try first.setRoom("lamp", nil)
        try first.invoke("lamp", trait: "onOff", command: "on")
        try first.invoke("lamp", trait: "levelControl", command: "moveToLevel", arguments: ["level": .int(42)])
        try first.update("lamp", trait: "levelControl", attributes: ["onLevel": .int(99)])
        let saved = first.savedState()
        #expect(saved["hall"]?.name == nil)  // never renamed: the configuration's name stays in charge
        #expect(saved["lamp"]?.attributes["DimmableLight"]?["levelControl"]?["remainingTime"] == nil)
        let second = try Home(devices: [
            DeviceConfiguration(id: "lamp", name: "Lamp", roomID: "kitchen",
                                types: [DeviceTypeConfiguration(.dimmableLight)]),
        ], saved: saved, clock: ManualClock())
        let lamp = try second.device("lamp")
        #expect(lamp.name == "Desk lamp")
        #expect(lamp.roomID == nil)
        #expect(lamp.trait(.onOff)?["onOff"]?.value == .bool(true))
        #expect(lamp.trait(.levelControl)?["currentLevel"]?.value == .int(42))
        #expect(lamp.trait(.levelControl)?["onLevel"]?.value == .int(99))
        #expect(second.restoreWarnings.isEmpty)
    }

    @Test func badConfigurationsAreRefusedWithWhereAndWhat() {
        func refuse(_ devices: [DeviceConfiguration]) -> HomeError? {
            homeError { _ = try Home(devices: devices, clock: ManualClock()) }
        }
        let light = DeviceTypeConfiguration(.onOffLight)
        #expect(refuse([DeviceConfiguration(id: "a", name: "A", types: [light]),
                        DeviceConfiguration(id: "a", name: "B", types: [light])])?.message
            == "device id 'a' is used twice; ids must be unique")
        #expect(refuse([DeviceConfiguration(id: "a", name: "A", types: [])])?.message
            == "device 'a' needs at least one device type")
        #expect(refuse([DeviceConfiguration(id: "a", name: "A", types: [
            DeviceTypeConfiguration(.onOffLight, isPrimary: true),
            DeviceTypeConfiguration(.humiditySensor, isPrimary: true),
        ])])?.message == "device 'a' marks 2 types as primary; exactly one may be")
        let wrongTrait = refuse([DeviceConfiguration(id: "a", name: "A", types: [
            DeviceTypeConfiguration(.humiditySensor, traits: [TraitConfiguration(.onOff)]),
        ])])
        #expect(wrongTrait?.status == .unsupportedCluster)
        #expect(wrongTrait?.message.hasPrefix("device 'a' type HumiditySensor cannot have trait onOff") == true)
        let unknownAttribute = refuse([DeviceConfiguration(id: "a", name: "A", types: [
            DeviceTypeConfiguration(.dimmableLight,
                                    traits: [TraitConfiguration(.levelControl, attributes: ["speed": .int(1)])]),
        ])])
        #expect(unknownAttribute?.message.hasPrefix("device 'a' type DimmableLight trait levelControl has no attribute "
            + "'speed'") == true)
        let badValue = refuse([DeviceConfiguration(id: "a", name: "A", types: [
            DeviceTypeConfiguration(.onOffLight, traits: [TraitConfiguration(.basicInformation, attributes: [
                "vendorName": .string(String(repeating: "x", count: 33)),
            ])]),
        ])])
        #expect(badValue?.message == "device 'a' type OnOffLight trait basicInformation: vendorName is 33 bytes long; "
            + "at most 32 are allowed")
        let badFeature = refuse([DeviceConfiguration(id: "a", name: "A", types: [
            DeviceTypeConfiguration(.genericSwitch, traits: [TraitConfiguration(.switchTrait, features: ["rotary"])]),
        ])])
        #expect(badFeature?.message.contains("switch has no feature 'rotary'") == true)
    }

    @Test func measurementsArriveFromHardwareAndGoNullWhenLost() throws {
        let h = try home()
        let log = EventLog(h)
        try h.ingest("lamp", trait: "relativeHumidityMeasurement", .measurement(.int(4512)))
        #expect(try h.device("lamp").trait(.relativeHumidityMeasurement)?["measuredValue"]?.value == .int(4512))
        let e = homeError { try h.ingest("lamp", trait: "relativeHumidityMeasurement", .measurement(.int(10001))) }
        #expect(e?.status == .constraintError)
        try h.ingest("lamp", trait: "relativeHumidityMeasurement", .measurement(.null))
        let reading = try h.device("lamp").trait(.relativeHumidityMeasurement)?["measuredValue"]
        #expect(reading?.isSupported == true)
        #expect(reading?.isNullable == true)
        #expect(reading?.value == .null)
        #expect(log.values("measuredValue") == [.int(4512), .null])
        #expect(
            homeError { try h.ingest("lamp", trait: "onOff", .measurement(.int(1))) }?.status == .unsupportedCluster)
    }

    @Test func momentarySwitchEmitsPressAndRelease() throws {
        let h = try home()
        let log = EventLog(h)
        try h.ingest("hall", trait: "switch", .switchPosition(1))
        try h.ingest("hall", trait: "switch", .switchPosition(1))
        try h.ingest("hall", trait: "switch", .switchPosition(0))
        #expect(log.eventNames() == ["initialPress", "shortRelease"])
        #expect(log.values("currentPosition") == [.int(1), .int(0)])
        #expect(homeError { try h.ingest("hall", trait: "switch", .switchPosition(2)) }?.status == .constraintError)
    }

    @Test func latchingSwitchEmitsLatched() throws {
        let h = try Home(devices: [DeviceConfiguration(id: "rocker", name: "Rocker", types: [
            DeviceTypeConfiguration(.genericSwitch,
                                    traits: [TraitConfiguration(.switchTrait, features: ["latchingSwitch"])]),
        ])], clock: ManualClock())
        let log = EventLog(h)
        try h.ingest("rocker", trait: "switch", .switchPosition(1))
        try h.ingest("rocker", trait: "switch", .switchPosition(0))
        #expect(log.eventNames() == ["switchLatched", "switchLatched"])
    }

    @Test func identifyBlinksEveryHalfSecondAndCountsDown() throws {
        let r = try Rig(.onOffLight)
        try r.invoke("identify", "identify", ["identifyTime": .int(2)])
        #expect(r.actuator.last?.isLit == true)
        r.advance(500)
        #expect(r.actuator.last?.isLit == false)
        r.advance(500)
        #expect(r.actuator.last?.isLit == true)
        #expect(try r.read(.identify, "identifyTime") == .int(1))
        r.advance(1000)
        #expect(try r.read(.identify, "identifyTime") == .int(0))
        #expect(r.actuator.last?.isLit == false)  // back to the OnOff state
        #expect(r.home.nextDeadline == nil)
        try r.update("identify", ["identifyTime": .int(5)])
        r.advance(500)
        try r.update("identify", ["identifyTime": .int(0)])
        #expect(r.actuator.last?.isLit == false)
    }

    @Test(.timeLimit(.minutes(1))) func eventsStreamDeliversChangesInOrder() async throws {
        let h = try home()
        let stream = h.events()
        try h.invoke("lamp", trait: "onOff", command: "on")
        try h.setName("lamp", "Desk")
        var seen: [HomeEvent.Change] = []
        for await event in stream {
            seen.append(event.change)
            if event.change == .metadata { break }
        }
        #expect(seen.first == .attribute(type: "DimmableLight", trait: .onOff, attribute: "onOff", value: .bool(true)))
        #expect(seen.last == .metadata)
    }

    @Test(.timeLimit(.minutes(1))) func runLoopDrivesTransitionsOnTheRealClock() async throws {
        let actuator = RecordingActuator()
        let h = try Home(devices: [DeviceConfiguration(id: "lamp", name: "Lamp", types: [
            DeviceTypeConfiguration(.dimmableLight, actuator: actuator),
        ])])
        let stream = h.events()
        let loop = Task { await h.run() }
        try h.invoke("lamp", trait: "levelControl", command: "moveToLevelWithOnOff",
                     arguments: ["level": .int(10), "transitionTime": .int(2)])
        for await event in stream {
            if case .attribute(_, _, "currentLevel", .int(10)) = event.change { break }
        }
        loop.cancel()
        await loop.value
        h.drainLanes()
        // The first output comes from the command, the last from the final step; steps the loop ran late in one
        // go are written once, newest first, so how many come between depends on how busy the machine is.
        #expect(actuator.outputs.first?.level ?? 0 > 10)
        #expect(actuator.last?.level == 10)
    }
}
