import HearthContract
import HearthEngine
@testable import HearthHub
import HearthJSON
import HearthModel
import Testing

@Suite struct DocumentTests {
    @Test func aDeviceDocumentCarriesTypesTraitsValuesAndAttributeInfo() throws {
        let home = try Home(devices: [DeviceConfiguration(id: "lamp", name: "Lamp", roomID: "kitchen", types: [
            DeviceTypeConfiguration(.dimmableLight),
        ])], clock: ManualClock())
        let doc = DeviceDocument.document(try home.device("lamp"))
        #expect(doc["id"] == .string("lamp"))
        #expect(doc["roomId"] == .string("kitchen"))
        #expect(doc["structureId"] == .null)
        #expect(doc["sourceConnectivity"] == .object([("connectivityState", .string("online")), ("dataSourceLocality", .string("direct"))]))
        guard case .array(let types)? = doc["types"] else { Issue.record("no types"); return }
        #expect(types[0]["type"] == .string("DimmableLight"))
        #expect(types[0]["deviceTypeId"] == .int(0x0101))
        #expect(types[0]["isPrimaryType"] == .bool(true))
        let level = types[0]["traits"]?["levelControl"]
        #expect(level?["namespace"] == .string("matter"))
        #expect(level?["clusterId"] == .int(8))
        #expect(level?["attributes"]?["onLevel"] == .null)
        #expect(level?["attributes"]?["currentLevel"] == .int(254))
        #expect(level?["attributeInfo"]?["onLevel"] == .object([("supported", .bool(true)), ("nullable", .bool(true)), ("writable", .bool(true))]))
        #expect(level?["commands"]?.text.contains("moveToLevelWithOnOff") == true)
        let info = types[0]["traits"]?["basicInformation"]
        #expect(info?["attributes"]?["serialNumber"] == nil)  // not supported: no value at all
        #expect(info?["attributeInfo"]?["serialNumber"]?["supported"] == .bool(false))
        let summary = DeviceDocument.summary(try home.device("lamp"))
        #expect(summary["types"] == .array([.object([("type", .string("DimmableLight")), ("deviceTypeId", .int(257)), ("isPrimaryType", .bool(true))])]))
    }

    @Test func theFastWriterWritesExactlyTheDocument() throws {
        let home = try Home(devices: [
            DeviceConfiguration(id: "lamp", name: "Lamp \"q\" \n🏠", roomID: "kitchen", types: [
                DeviceTypeConfiguration(.dimmableLight), DeviceTypeConfiguration(.humiditySensor),
            ]),
            DeviceConfiguration(id: "switch", name: "S", types: [
                DeviceTypeConfiguration(.genericSwitch, traits: [TraitConfiguration(.switchTrait, features: ["latchingSwitch"])]),
            ]),
        ], clock: ManualClock())
        var writer = DocumentWriter()
        for _ in 0..<2 {  // the second time from the cached parts
            for id in ["lamp", "switch"] {
                #expect(writer.document(try home.view(id)) == DeviceDocument.document(try home.device(id)).bytes)
            }
            try home.invoke("lamp", trait: "levelControl", command: "moveToLevelWithOnOff", arguments: ["level": .int(9)])
            try home.setConnectivity("lamp", type: "HumiditySensor", trait: "relativeHumidityMeasurement", SourceConnectivity(.offline, .direct))
        }
        try home.setName("lamp", "Lamp 2")
        #expect(writer.document(try home.view("lamp")) == DeviceDocument.document(try home.device("lamp")).bytes)
    }

    /// A mirrored trait learns its supported attributes and commands from its owner, after its first document.
    @Test func theFastWriterFollowsWhatAMirrorLearnsLate() throws {
        let home = try Home(devices: [DeviceConfiguration(id: "bathroom", name: "Bathroom", types: [
            DeviceTypeConfiguration(.onOffPlugInUnit), DeviceTypeConfiguration(.humiditySensor, isMirrored: true),
        ])], clock: ManualClock())
        var writer = DocumentWriter()
        func check() throws {
            #expect(writer.document(try home.view("bathroom")) == DeviceDocument.document(try home.device("bathroom")).bytes)
        }
        try check()
        try home.ingest("bathroom", type: "HumiditySensor", trait: "identify",
                        .mirror(["identifyTime": .int(0), "identifyType": .int(1)], commands: ["identify"]))
        try home.ingest("bathroom", type: "HumiditySensor", trait: "relativeHumidityMeasurement",
                        .mirror(["measuredValue": .int(6120), "minMeasuredValue": .null], commands: []))
        try check()
        #expect(String(decoding: writer.document(try home.view("bathroom")), as: UTF8.self).contains(#""commands":["identify"]"#))
        try home.ingest("bathroom", type: "HumiditySensor", trait: "identify", .mirror([:], commands: []))
        try check()
    }
}
