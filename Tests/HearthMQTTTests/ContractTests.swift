import HearthEngine
import HearthModel
@testable import HearthMQTT
import Testing

@Suite struct JSONTests {
    func fails(_ text: String) -> JSONParseError? {
        do { _ = try JSON.parse(text); return nil } catch { return error }
    }

    @Test func parsesEveryKind() throws {
        let j = try JSON.parse(#" { "a": [1, -2, 3.5, 1e3, true, false, null], "b": {"c": "d"} } "#)
        #expect(j["a"] == .array([.int(1), .int(-2), .double(3.5), .double(1000), .bool(true), .bool(false), .null]))
        #expect(j["b"]?["c"] == .string("d"))
    }

    @Test func stringsUnescapeIncludingSurrogatePairs() throws {
        #expect(try JSON.parse(#""a\"b\\c\/\n\t\u00e9\ud83c\udfe0""#) == .string("a\"b\\c/\n\té🏠"))
        #expect(fails(#""\ud83c""#)?.message == "unpaired surrogate in \\u escape")
        #expect(fails(#""\q""#) != nil)
    }

    @Test func refusesWhatIsNotStrictJSON() {
        #expect(fails("{\"a\":1,\"a\":2}")?.message == "the key 'a' appears twice")
        #expect(fails("{\"a\":1} x")?.message == "unexpected data after the JSON value")
        #expect(fails("{'a':1}") != nil)
        #expect(fails("[1,]") != nil)
        #expect(fails("01") != nil)
        #expect(fails("1.") != nil)
        #expect(fails("\"a\u{1}\"") != nil)
        #expect(fails("") != nil)
        #expect(fails(String(repeating: "[", count: 40) + String(repeating: "]", count: 40))?.message
            == "JSON nested deeper than 32 levels")
    }

    @Test func invalidUTF8InAStringIsRefused() {
        let bytes: [UInt8] = Array("{\"a\":\"".utf8) + [0xC3, 0x28] + Array("\"}".utf8)
        #expect(throws: JSONParseError.self) { try JSON.parse(bytes) }
    }

    @Test func serialisesAndRoundTrips() throws {
        let j = JSON.object([("s", .string("q\"\\\n\u{1}é")), ("n", .int(-3)), ("a", .array([.null, .bool(true)]))])
        #expect(j.text == #"{"s":"q\"\\\n\u0001é","n":-3,"a":[null,true]}"#)
        #expect(try JSON.parse(j.text) == j)
    }
}

@Suite struct RequestParsingTests {
    func parse(_ text: String) -> (JSON, Result<HubRequest, HomeError>) {
        let (t, r) = HubRequest.parse(Array(text.utf8))
        return (t, r)
    }

    func error(_ text: String) -> HomeError? {
        if case .failure(let e) = parse(text).1 { e } else { nil }
    }

    @Test func theDocumentedFormsParse() throws {
        #expect(try parse(#"{"transaction":"t1","trait":"onOff","command":"toggle"}"#).1.get()
            == HubRequest(transaction: .string("t1"), action: .command(type: nil, trait: "onOff", name: "toggle", arguments: .object([]))))
        let t2 = try parse(#"{"transaction":"t2","type":"DimmableLight","trait":"levelControl","command":"moveToLevel","args":{"level":127,"transitionTime":0}}"#).1.get()
        #expect(t2.action == .command(type: "DimmableLight", trait: "levelControl", name: "moveToLevel",
                                      arguments: .object([("level", .int(127)), ("transitionTime", .int(0))])))
        #expect(try parse(#"{"transaction":"t3","trait":"onOff","update":{"onTime":30}}"#).1.get().action
            == .update(type: nil, trait: "onOff", attributes: .object([("onTime", .int(30))])))
        #expect(try parse(#"{"transaction":"t4","setName":"Kitchen lamp"}"#).1.get().action == .setName("Kitchen lamp"))
        #expect(try parse(#"{"setRoom":null}"#).1.get().action == .setRoom(nil))
        #expect(try parse(#"{"setStructure":"home"}"#).1.get().action == .setStructure("home"))
        #expect(try parse(#"{"transaction":7,"get":true}"#).1.get().transaction == .int(7))
    }

    @Test func theTransactionSurvivesAnError() {
        let (t, r) = parse(#"{"transaction":"t9","trait":"onOff"}"#)
        #expect(t == .string("t9"))
        if case .failure(let e) = r { #expect(e.status == .invalidCommand) } else { Issue.record("parsed") }
    }

    @Test func everyMalformedRequestIsInvalidCommandWithAMessageNamingTheField() {
        let cases: [(String, String)] = [
            ("{", "the request is not valid JSON: unexpected end of JSON in an object at byte 1"),
            ("[1]", "the request must be a JSON object, not an array"),
            (#"{"trait":"onOff","command":"on","colour":1}"#,
             "unknown key 'colour'; a request may have transaction, type, trait, args, command, update, setName, setRoom, setStructure, get"),
            (#"{"trait":"onOff"}"#, "the request says nothing to do; give one of command, update, setName, setRoom, setStructure, get"),
            (#"{"setName":"a","get":true}"#, "the request gives setName and get; give only one"),
            (#"{"command":"on"}"#, "command needs \"trait\" (e.g. \"onOff\")"),
            (#"{"trait":3,"command":"on"}"#, "trait must be a string, not a number"),
            (#"{"trait":"onOff","command":"on","args":[1]}"#, "args must be an object, not an array"),
            (#"{"trait":"onOff","update":{}}"#, "update names no attribute to write"),
            (#"{"setName":"x","trait":"onOff"}"#, "'trait' does not go with setName"),
            (#"{"setName":5}"#, "setName must be a string, not a number"),
            (#"{"get":false}"#, "get must be true"),
            (#"{"transaction":{},"get":true}"#, "transaction must be a string or a number, not an object"),
        ]
        for (text, message) in cases {
            let e = error(text)
            #expect(e?.status == .invalidCommand, "\(text)")
            #expect(e?.code == .invalidArgument, "\(text)")
            #expect(e?.message == message, "\(text)")
        }
    }

    @Test func oversizedRequestsAreResourceExhausted() {
        let big = "{\"setName\":\"" + String(repeating: "x", count: 70_000) + "\"}"
        let e = error(big)
        #expect(e?.status == .resourceExhausted)
        #expect(e?.code == .resourceExhausted)
    }
}

@Suite struct ValueCodingTests {
    @Test func enumsAndBitmapsTravelByName() throws {
        let startUp = OnOffServer.Attribute.startUpOnOff.type
        #expect(ValueCoding.json(.int(2), as: startUp) == .string("toggle"))
        #expect(try ValueCoding.value(.string("toggle"), as: startUp, what: "x") == .int(2))
        #expect(try ValueCoding.value(.int(1), as: startUp, what: "x") == .int(1))
        let e = #expect(throws: HomeError.self) { try ValueCoding.value(.string("flip"), as: startUp, what: "onOff.startUpOnOff") }
        #expect(e?.status == .constraintError)
        #expect(e?.message == "onOff.startUpOnOff 'flip' is not one of off, on, toggle")
        let options = LevelControlServer.Attribute.options.type
        #expect(ValueCoding.json(.int(1), as: options) == .object([("executeIfOff", .bool(true)), ("coupleColorTempToLevel", .bool(false))]))
        #expect(try ValueCoding.value(.object([("executeIfOff", .bool(true))]), as: options, what: "x") == .int(1))
        #expect(throws: HomeError.self) { try ValueCoding.value(.object([("fast", .bool(true))]), as: options, what: "x") }
        #expect(throws: HomeError.self) { try ValueCoding.value(.object([("executeIfOff", .int(1))]), as: options, what: "x") }
    }

    @Test func fractionsAndStructuresAreTheWrongType() {
        #expect((try? ValueCoding.value(.double(1.5), as: .uint8, what: "x")) == nil)
        let e = #expect(throws: HomeError.self) { try ValueCoding.value(.array([]), as: .uint8, what: "level") }
        #expect(e?.status == .invalidDataType)
        #expect(e?.message == "level must be a single value (uint8), not an array")
    }
}

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

    @Test func topicsFollowTheContract() {
        let t = TopicScheme(hub: "attic")
        #expect(t.status == "hearth/attic/status")
        #expect(t.devices == "hearth/attic/devices")
        #expect(t.device("lamp") == "hearth/attic/devices/lamp")
        #expect(t.set("lamp") == "hearth/attic/devices/lamp/set")
        #expect(t.responses == "hearth/attic/responses")
        #expect(t.deviceID(fromSetTopic: "hearth/attic/devices/lamp/set") == "lamp")
        #expect(t.deviceID(fromSetTopic: "hearth/attic/devices//set") == nil)
        #expect(t.deviceID(fromSetTopic: "hearth/other/devices/lamp/set") == nil)
        #expect(t.deviceID(fromSetTopic: "hearth/attic/devices/lamp/set/more") == nil)
        #expect(t.deviceID(fromSetTopic: "hearthx/attic/devices/lamp/set") == nil)
        let nested = TopicScheme(prefix: "home/hearth", hub: "attic")
        #expect(nested.deviceID(fromSetTopic: "home/hearth/attic/devices/lamp/set") == "lamp")
        #expect(nested.deviceID(fromSetTopic: "home/attic/devices/lamp/set") == nil)
        #expect(TopicScheme.problem(withLevel: "a/b") != nil)
        #expect(TopicScheme.problem(withLevel: "lamp-1") == nil)
    }
}
