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
        #expect(
            doc["sourceConnectivity"]
                == .object([("connectivityState", .string("online")), ("dataSourceLocality", .string("direct"))]))
        guard case .array(let types)? = doc["types"] else { Issue.record("no types"); return }
        #expect(types[0]["type"] == .string("DimmableLight"))
        #expect(types[0]["deviceTypeId"] == .int(0x0101))
        #expect(types[0]["isPrimaryType"] == .bool(true))
        let level = types[0]["traits"]?["levelControl"]
        #expect(level?["namespace"] == .string("matter"))
        #expect(level?["clusterId"] == .int(8))
        #expect(level?["attributes"]?["onLevel"] == .null)
        #expect(level?["attributes"]?["currentLevel"] == .int(254))
        #expect(
            level?["attributeInfo"]?["onLevel"]
                == .object([("supported", .bool(true)), ("nullable", .bool(true)), ("writable", .bool(true))]))
        #expect(level?["commands"]?.text.contains("moveToLevelWithOnOff") == true)
        let info = types[0]["traits"]?["basicInformation"]
        #expect(info?["attributes"]?["serialNumber"] == nil)  // not supported: no value at all
        #expect(info?["attributeInfo"]?["serialNumber"]?["supported"] == .bool(false))
        let summary = DeviceDocument.summary(try home.device("lamp"))
        #expect(
            summary["types"]
                == .array([
                    .object([
                        ("type", .string("DimmableLight")), ("deviceTypeId", .int(257)), ("isPrimaryType", .bool(true))
                    ])
                ]))
    }

    @Test func theFastWriterWritesExactlyTheDocument() throws {
        let home = try Home(
            devices: [
                DeviceConfiguration(
                    id: "lamp", name: "Lamp \"q\" \n🏠", roomID: "kitchen",
                    types: [
                        DeviceTypeConfiguration(.dimmableLight), DeviceTypeConfiguration(.humiditySensor)
                    ]),
                DeviceConfiguration(
                    id: "switch", name: "S",
                    types: [
                        DeviceTypeConfiguration(
                            .genericSwitch, traits: [TraitConfiguration(.switchTrait, features: ["latchingSwitch"])])
                    ]),
                // The same trait types as the lamp's (their layouts found once for both), one type secondary here …
                DeviceConfiguration(
                    id: "lamp2", name: "L",
                    types: [
                        DeviceTypeConfiguration(.humiditySensor),
                        DeviceTypeConfiguration(.dimmableLight, isPrimary: true)
                    ]),
                // … and a dimmable light without the lamp's Basic Information (it is not this device's primary type).
                DeviceConfiguration(
                    id: "lamp3", name: "M",
                    types: [
                        DeviceTypeConfiguration(.onOffPlugInUnit),
                        DeviceTypeConfiguration(.dimmableLight, isPrimary: false)
                    ])
            ], clock: ManualClock())
        var writer = DocumentWriter()
        for _ in 0..<2 {  // the second time from the cached parts
            for id in ["lamp", "switch", "lamp2", "lamp3"] {
                #expect(writer.document(try home.view(id)) == DeviceDocument.document(try home.device(id)).bytes)
            }
            try home.invoke(
                "lamp", trait: "levelControl", command: "moveToLevelWithOnOff", arguments: ["level": .int(9)])
            try home.setConnectivity(
                "lamp", type: "HumiditySensor", trait: "relativeHumidityMeasurement",
                SourceConnectivity(.offline, .direct))
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
            #expect(
                writer.document(try home.view("bathroom")) == DeviceDocument.document(try home.device("bathroom")).bytes
            )
        }
        try check()
        try home.ingest("bathroom", type: "HumiditySensor", trait: "identify",
                        .mirror(["identifyTime": .int(0), "identifyType": .int(1)], commands: ["identify"]))
        try home.ingest("bathroom", type: "HumiditySensor", trait: "relativeHumidityMeasurement",
                        .mirror(["measuredValue": .int(6120), "minMeasuredValue": .null], commands: []))
        try check()
        #expect(
            String(decoding: writer.document(try home.view("bathroom")), as: UTF8.self).contains(
                #""commands":["identify"]"#))
        try home.ingest("bathroom", type: "HumiditySensor", trait: "identify", .mirror([:], commands: []))
        try check()
    }

    /// The writer copies each fixed fragment (a type's opening, a trait's opening, keys, `attributeInfo` and
    /// `commands`) from its cache and writes only names, rooms, connectivity and values: for every device type in the
    /// catalogue (the bench's two and every one the tests configure), a device with two types, optional traits and a
    /// mirrored type, the cached document stays the document through renames, room and structure changes,
    /// connectivity changes, commands, and a scene stored and recalled.
    @Test func documentsFromCachedFragmentsAreTheDocumentThroughEveryKindOfChange() throws {
        var devices = Self.oneOfEveryType()
        devices.append(DeviceConfiguration(id: "pair", name: "Pair", roomID: "hall", types: [
            DeviceTypeConfiguration(.onOffPlugInUnit, traits: [TraitConfiguration(.levelControl, features: ["onOff"]),
                                                               TraitConfiguration(.basicInformation)]),
            DeviceTypeConfiguration(.humiditySensor, isMirrored: true),
        ]))
        let home = try Home(devices: devices, clock: ManualClock())
        let ids = devices.map(\.id)
        var writer = DocumentWriter()
        func check(_ when: String) throws {
            for id in ids {
                let cached = writer.document(try home.view(id))
                let document = DeviceDocument.document(try home.device(id)).bytes
                #expect(cached == document, "\(id) \(when)")
            }
        }
        try check("first")
        try check("again, from the cache")
        for id in ids { try home.setName(id, "Renamed \"\(id)\"") }
        try check("after renames")
        for id in ids { try home.setRoom(id, "kitchen") }
        try home.setStructure("pair", "house")
        try check("after room changes")
        try home.setRoom("pair", nil)
        try check("after leaving the room")
        try home.setConnectivity("one-DimmableLight", trait: "onOff", SourceConnectivity(.offline, .direct))
        try home.setConnectivity(
            "one-HumiditySensor", trait: "relativeHumidityMeasurement", SourceConnectivity(.online, .remote))
        try home.ingest("pair", type: "HumiditySensor", trait: "relativeHumidityMeasurement",
                        .mirror(["measuredValue": .int(5000), "minMeasuredValue": .null], commands: []))
        try check("after connectivity changes")
        try home.setConnectivity("one-DimmableLight", trait: "onOff", .directOnline)
        for id in ["one-OnOffLight", "one-DimmableLight", "one-ColorTemperatureLight", "pair"] {
            let type: String? = id == "pair" ? "OnOffPlugInUnit" : nil
            try home.invoke(
                id, type: type, trait: "groups", command: "addGroup",
                arguments: ["groupId": .int(1), "groupName": .string("All")])
            try home.invoke(
                id, type: type, trait: "scenesManagement", command: "storeScene",
                arguments: ["groupId": .int(1), "sceneId": .int(2)])
            try check("after \(id) stored a scene")
            try home.invoke(id, type: type, trait: "onOff", command: "toggle")
            try check("after \(id) toggled (the scene no longer valid)")
            try home.invoke(
                id, type: type, trait: "scenesManagement", command: "recallScene",
                arguments: ["groupId": .int(1), "sceneId": .int(2)])
            try check("after \(id) recalled the scene")
        }
    }

    /// The summary writer against the summary built as a tree, for every kind of device and metadata, with and
    /// without the hub (the whole home's entries), through renames, rooms and connectivity.
    @Test func summariesWrittenFromViewsAreTheSummary() throws {
        var devices = Self.oneOfEveryType()
        devices.append(DeviceConfiguration(id: "pair \"q\"", name: "Pair \"q\" \n🏠", roomID: "hall", types: [
            DeviceTypeConfiguration(.onOffPlugInUnit), DeviceTypeConfiguration(.humiditySensor, isMirrored: true),
        ]))
        let home = try Home(devices: devices, clock: ManualClock())
        func check(_ when: String) throws {
            for id in devices.map(\.id) {
                for hub in [nil, "attic"] {
                    var written: [UInt8] = []
                    SummaryWriter.write(try home.view(id), hub: hub, to: &written)
                    #expect(written == DeviceDocument.summary(try home.device(id), hub: hub).bytes, "\(id) \(when)")
                }
            }
            var all: [JSON] = []
            for id in devices.map(\.id) { all.append(DeviceDocument.summary(try home.device(id))) }
            #expect(SummaryWriter.summaries(of: home) == JSON.array(all).bytes, "the list, \(when)")
        }
        try check("first")
        try home.setName("one-OnOffLight", "Renamed \"x\"")
        try home.setRoom("one-OnOffLight", "kitchen")
        try home.setStructure("pair \"q\"", "house")
        try home.setRoom("pair \"q\"", nil)
        try check("after metadata changes")
        try home.setConnectivity("one-DimmableLight", trait: "onOff", SourceConnectivity(.offline, .direct))
        try home.setConnectivity("pair \"q\"", type: "HumiditySensor", trait: "relativeHumidityMeasurement",
                                 SourceConnectivity(.online, .localPeer))
        try check("after connectivity changes")
    }

    /// A device of every type in the catalogue, with the features a type needs to be configured at all.
    static func oneOfEveryType() -> [DeviceConfiguration] {
        let traits: [String: [TraitConfiguration]] = [
            DeviceTypeDescriptor.genericSwitch.name: [TraitConfiguration(.switchTrait, features: ["momentarySwitch"])],
            DeviceTypeDescriptor.occupancySensor.name: [
                TraitConfiguration(.occupancySensing, features: ["passiveInfrared"])
            ]
        ]
        return DeviceTypeDescriptor.catalogue.map { type in
            DeviceConfiguration(id: "one-\(type.name)", name: type.name, types: [
                DeviceTypeConfiguration(type, traits: traits[type.name] ?? []),
            ])
        }
    }
}
