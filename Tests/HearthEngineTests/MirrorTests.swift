import HearthEngine
import HearthModel
import Testing

@Suite struct MirrorTests {
    /// A bathroom fan on this hub with the humidity sensor of another hub: one composite device.
    func home() throws -> Home {
        try Home(devices: [DeviceConfiguration(id: "bathroom", name: "Bathroom", types: [
            DeviceTypeConfiguration(.onOffPlugInUnit),
            DeviceTypeConfiguration(.humiditySensor, isMirrored: true),
        ])], clock: ManualClock())
    }

    @Test func aMirroredTypeStartsUnheardAndTheDeviceIsPartial() throws {
        let h = try home()
        let d = try h.device("bathroom")
        #expect(d.types[1].sourceConnectivity == .notHeardFrom)
        #expect(d.types[1].trait(.relativeHumidityMeasurement)?["measuredValue"]?.isSupported == false)
        #expect(d.types[1].trait(.basicInformation) == nil)
        #expect(d.sourceConnectivity == SourceConnectivity(.partiallyOnline, .direct))
    }

    @Test func theOwnersValuesAndCommandsAreMirroredWithEvents() throws {
        let h = try home()
        let log = EventLog(h)
        try h.ingest("bathroom", type: "HumiditySensor", trait: "relativeHumidityMeasurement",
                     .mirror(["measuredValue": .int(6120), "minMeasuredValue": .null], commands: []))
        try h.ingest("bathroom", type: "HumiditySensor", trait: "identify",
                     .mirror(["identifyTime": .int(0), "identifyType": .int(1)], commands: ["identify"]))
        for trait in ["relativeHumidityMeasurement", "identify"] {
            try h.setConnectivity(
                "bathroom", type: "HumiditySensor", trait: trait, SourceConnectivity(.online, .localPeer))
        }
        let d = try h.device("bathroom")
        #expect(d.types[1].trait(.relativeHumidityMeasurement)?["measuredValue"]?.value == .int(6120))
        #expect(d.types[1].trait(.relativeHumidityMeasurement)?["minMeasuredValue"]?.value == .null)
        #expect(d.types[1].trait(.relativeHumidityMeasurement)?["tolerance"]?.isSupported == false)
        #expect(d.types[1].trait(.identify)?.supportedCommands == ["identify"])
        #expect(log.values("measuredValue") == [.int(6120)])
        #expect(d.types[1].sourceConnectivity == SourceConnectivity(.online, .localPeer))
        #expect(d.sourceConnectivity == SourceConnectivity(.online, .mixed))
        try h.setConnectivity(
            "bathroom", type: "HumiditySensor", trait: "relativeHumidityMeasurement",
            SourceConnectivity(.offline, .localPeer))
        #expect(try h.device("bathroom").sourceConnectivity == SourceConnectivity(.partiallyOnline, .mixed))
    }

    @Test func aMirrorNeverActsItself() throws {
        let h = try home()
        try h.ingest("bathroom", type: "HumiditySensor", trait: "identify", .mirror([:], commands: ["identify"]))
        try h.setConnectivity(
            "bathroom", type: "HumiditySensor", trait: "identify", SourceConnectivity(.online, .localPeer))
        let e = homeError {
            try h.invoke(
                "bathroom", type: "HumiditySensor", trait: "identify", command: "identify",
                arguments: ["identifyTime": .int(3)])
        }
        #expect(e?.code == .unavailable)
        #expect(homeError { try h.ingest("bathroom", type: "HumiditySensor", trait: "identify", .switchPosition(1)) }?
            .status == .invalidCommand)
    }
}
