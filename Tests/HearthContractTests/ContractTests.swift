@testable import HearthContract
import HearthEngine
import HearthJSON
import HearthModel
import Testing

@Suite struct RequestParsingTests {
    func parse(_ text: String) -> (JSON, Result<HubRequest, HomeError>) {
        let (t, r) = HubRequest.parse(Array(text.utf8))
        return (t, r)
    }

    func error(_ text: String) -> HomeError? {
        if case .failure(let e) = parse(text).1 { e } else { nil }
    }

    @Test func theDocumentedFormsParse() throws {
        #expect(
            try parse(#"{"transaction":"t1","trait":"onOff","command":"toggle"}"#).1.get()
                == HubRequest(
                    transaction: .string("t1"),
                    action: .command(type: nil, trait: "onOff", name: "toggle", arguments: .object([]))))
        let t2 = try parse(
            #"{"transaction":"t2","type":"DimmableLight","trait":"levelControl","command":"moveToLevel","#
                + #""args":{"level":127,"transitionTime":0}}"#
        ).1.get()
        #expect(
            t2.action
                == .command(
                    type: "DimmableLight", trait: "levelControl", name: "moveToLevel",
                    arguments: .object([("level", .int(127)), ("transitionTime", .int(0))])))
        #expect(
            try parse(#"{"transaction":"t3","trait":"onOff","update":{"onTime":30}}"#).1.get().action
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
            (
                #"{"trait":"onOff","command":"on","colour":1}"#,
                "unknown key 'colour'; a request may have transaction, type, trait, args, command, update, setName, "
                    + "setRoom, setStructure, get"),
            (
                #"{"trait":"onOff"}"#,
                "the request says nothing to do; give one of command, update, setName, setRoom, setStructure, get"
            ),
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
        let e = #expect(throws: HomeError.self) {
            try ValueCoding.value(.string("flip"), as: startUp, what: "onOff.startUpOnOff")
        }
        #expect(e?.status == .constraintError)
        #expect(e?.message == "onOff.startUpOnOff 'flip' is not one of off, on, toggle")
        let options = LevelControlServer.Attribute.options.type
        #expect(
            ValueCoding.json(.int(1), as: options)
                == .object([("executeIfOff", .bool(true)), ("coupleColorTempToLevel", .bool(false))]))
        #expect(try ValueCoding.value(.object([("executeIfOff", .bool(true))]), as: options, what: "x") == .int(1))
        #expect(throws: HomeError.self) {
            try ValueCoding.value(.object([("fast", .bool(true))]), as: options, what: "x")
        }
        #expect(throws: HomeError.self) {
            try ValueCoding.value(.object([("executeIfOff", .int(1))]), as: options, what: "x")
        }
    }

    @Test func fractionsAndStructuresAreTheWrongType() {
        #expect((try? ValueCoding.value(.double(1.5), as: .uint8, what: "x")) == nil)
        let e = #expect(throws: HomeError.self) { try ValueCoding.value(.array([]), as: .uint8, what: "level") }
        #expect(e?.status == .invalidDataType)
        #expect(e?.message == "level must be a single value (uint8), not an array")
    }

    @Test func matterStructsTravelAsObjectsOfTheirFieldsInOrder() throws {
        let limits = ValueType.structure(StructType("HoldTimeLimitsStruct", [
            FieldDescriptor("holdTimeMin", .uint16), FieldDescriptor("holdTimeMax", .uint16),
            FieldDescriptor("holdTimeDefault", .uint16),
        ]))
        let value = Value.structure(["holdTimeDefault": .int(30), "holdTimeMin": .int(1), "holdTimeMax": .int(600)])
        #expect(ValueCoding.json(value, as: limits)
            == .object([("holdTimeMin", .int(1)), ("holdTimeMax", .int(600)), ("holdTimeDefault", .int(30))]))
        #expect(try ValueCoding.value(ValueCoding.json(value, as: limits), as: limits, what: "x") == value)
        let unknown = #expect(throws: HomeError.self) {
            try ValueCoding.value(
                .object([("holdTimeStep", .int(1))]), as: limits, what: "occupancySensing.holdTimeLimits")
        }
        #expect(unknown?.status == .invalidDataType)
        #expect(unknown?.message == "occupancySensing.holdTimeLimits has no field 'holdTimeStep'; the fields of "
            + "HoldTimeLimitsStruct are holdTimeMin, holdTimeMax, holdTimeDefault")
        // A struct that parses is still checked by its type: every field, each in range.
        let partial = try ValueCoding.value(.object([("holdTimeMin", .int(1))]), as: limits, what: "x")
        let missing = #expect(throws: HomeError.self) { try limits.check(partial, nullable: false, what: "x") }
        #expect(missing?.message == "x needs the field 'holdTimeMax' (uint16)")
    }
}

@Suite struct TopicTests {
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

    /// One rule for the prefix, used by the hub's configuration and by `hearth --prefix`.
    @Test func thePrefixRule() {
        for good in ["hearth", "home/hearth", "a/b/c", "hearth-2"] {
            #expect(TopicScheme.problem(withPrefix: good) == nil, "\(good)")
        }
        for (bad, problem) in [("", "it is empty"), ("hearth/", "an empty level"), ("/hearth", "an empty level"),
                               ("a//b", "an empty level"), ("hearth/+", "'+' or '#'"), ("#", "'+' or '#'"),
                               ("a\u{0}b", "NUL"), ("$SYS", "starts with '$'")] {
            #expect(TopicScheme.problem(withPrefix: bad)?.contains(problem) == true, "\(bad)")
        }
        // Found by the `topic` fuzz target: the rule is on bytes, so a combining mark (U+0301) after '/', '+', '#' or
        // '$' — one Character that is none of them — hides nothing.
        for (bad, problem) in [("hearth/+\u{301}", "'+' or '#'"), ("$\u{301}SYS", "starts with '$'"),
                               ("a/\u{301}/", "an empty level")] {
            #expect(TopicScheme.problem(withPrefix: bad)?.contains(problem) == true, "\(bad)")
        }
        for bad in ["x/\u{301}", "si+\u{301}m", "#\u{301}"] {
            #expect(TopicScheme.problem(withLevel: bad) == "it contains '/', '+' or '#'", "\(bad)")
        }
        // The pattern the configuration's schema and reader use says the same (NUL aside).
        let pattern = try! Regex(TopicScheme.prefixPattern).matchingSemantics(.unicodeScalar)
        for sample in ["hearth", "home/hearth", "a/b/c", "hearth-2", "", "hearth/", "/hearth", "a//b", "hearth/+", "#",
                       "$SYS", "a/$b", "+/x", "hearth/+\u{301}", "$\u{301}SYS"] {
            #expect(((try? pattern.wholeMatch(in: sample)) != nil) == (TopicScheme.problem(withPrefix: sample) == nil),
                    "\(sample)")
        }
    }
}

/// `TopicScheme.classify` and `TopicScheme.topic`: one reading and one writing of every topic of the contract.
@Suite struct TopicClassifierTests {
    let scheme = TopicScheme(hub: "attic")

    @Test func everyTopicOfTheContractIsReadAsWhatItIs() {
        let table: [(String, HubTopic)] = [
            ("hearth/attic/status", .status(hub: "attic")),
            ("hearth/attic/heartbeat", .heartbeat(hub: "attic")),
            ("hearth/attic/devices", .summary(hub: "attic")),
            ("hearth/attic/devices/lamp", .document(hub: "attic", device: "lamp")),
            ("hearth/attic/devices/lamp/set", .set(hub: "attic", device: "lamp")),
            ("hearth/attic/devices//set", .setWithoutDevice(hub: "attic")),
            ("hearth/attic/devices/lamp/events", .events(hub: "attic", device: "lamp")),
            ("hearth/attic/responses", .responses(hub: "attic")),
            ("hearth/attic/answers", .answers(hub: "attic")),
            ("hearth/attic/home", .home(hub: "attic")),
            ("hearth/attic/groups", .groups(hub: "attic")),
            ("hearth/attic/discovery-sync", .discoverySync(hub: "attic")),
            ("hearth/groups/7/set", .groupSet(group: 7)),
            // Another hub's topics are read with its id.
            ("hearth/cellar/status", .status(hub: "cellar")),
            ("hearth/cellar/devices/pump/set", .set(hub: "cellar", device: "pump")),
            // A hub named `groups` keeps its topics: only `groups/<number>/set` is a group's.
            ("hearth/groups/devices/x", .document(hub: "groups", device: "x")),
            ("hearth/groups/groups", .groups(hub: "groups")),
        ]
        for (topic, value) in table {
            #expect(scheme.classify(topic) == value, "\(topic)")
            #expect(scheme.topic(value) == topic, "\(value)")
        }
    }

    @Test func whatIsNoTopicOfTheContractIsReadAsNothing() {
        for topic in [
            "", "hearth", "hearth/", "hearth/attic", "hearth/attic/", "hearth/attic/statuses",
            "hearth/attic/status/x", "hearth//status", "hearth//devices/lamp/set", "hearth/attic/devices/",
            "hearth/attic/devices//events", "hearth/attic/devices/lamp/get", "hearth/attic/devices/lamp/set/x",
            "hearthx/attic/status", "home/hearth/attic/status", "hearth/attic/Status",
            "hearth/groups/0/set", "hearth/groups/65536/set", "hearth/groups/007/set", "hearth/groups//set",
            "hearth/groups/1/get"
        ] {
            #expect(scheme.classify(topic) == nil, "\(topic)")
        }
    }

    @Test func aPrefixOfSeveralLevelsIsOnePrefix() {
        let nested = TopicScheme(prefix: "home/hearth", hub: "attic")
        #expect(nested.classify("home/hearth/attic/devices/lamp/set") == .set(hub: "attic", device: "lamp"))
        #expect(nested.classify("home/hearth/groups/65535/set") == .groupSet(group: 65535))
        #expect(nested.classify("hearth/attic/status") == nil)
        #expect(nested.topic(.events(hub: "b", device: "d")) == "home/hearth/b/devices/d/events")
    }

    /// The named topics and filters are the ones the values make.
    @Test func theNamedTopicsAreTheValues() {
        #expect(scheme.status == scheme.topic(.status(hub: "attic")))
        #expect(scheme.heartbeat == "hearth/attic/heartbeat")
        #expect(scheme.devices == scheme.topic(.summary(hub: "attic")))
        #expect(scheme.device("lamp") == scheme.topic(.document(hub: "attic", device: "lamp")))
        #expect(scheme.set("lamp") == scheme.topic(.set(hub: "attic", device: "lamp")))
        #expect(scheme.events("lamp") == "hearth/attic/devices/lamp/events")
        #expect(scheme.responses == scheme.topic(.responses(hub: "attic")))
        #expect(scheme.answers == "hearth/attic/answers")
        #expect(scheme.home == "hearth/attic/home")
        #expect(scheme.groups == "hearth/attic/groups")
        #expect(scheme.discoverySync == "hearth/attic/discovery-sync")
        #expect(scheme.groupSet(12) == scheme.topic(.groupSet(group: 12)))
        #expect(
            [
                scheme.setFilter, scheme.statusFilter, scheme.summaryFilter, scheme.documentFilter, scheme.homeFilter,
                scheme.responsesFilter, scheme.groupsFilter
            ]
                == [
                    "hearth/attic/devices/+/set", "hearth/+/status", "hearth/+/devices", "hearth/+/devices/+",
                    "hearth/+/home",
                    "hearth/+/responses", "hearth/+/groups"
                ])
    }

    /// This hub's id is compared byte for byte, as the broker matches topics: a canonically equivalent spelling
    /// (`é` as `e` and a combining accent) is another hub.
    @Test func thisHubIsItsIdByteForByte() {
        let cafe = TopicScheme(hub: "caf\u{E9}")
        #expect(cafe.isThisHub("caf\u{E9}"))
        #expect(!cafe.isThisHub("cafe\u{301}"))
        #expect(cafe.deviceID(fromSetTopic: "hearth/cafe\u{301}/devices/lamp/set") == nil)
        #expect(cafe.deviceID(fromSetTopic: "hearth/caf\u{E9}/devices/lamp/set") == "lamp")
        #expect(Array(cafe.topic(.status(hub: "cafe\u{301}")).utf8) == Array("hearth/cafe\u{301}/status".utf8))
        #expect(scheme.classify("hearth/attic/devices/lamp/set")?.hub == "attic")
        #expect(scheme.classify("hearth/groups/1/set")?.hub == nil)
    }
}

@Suite struct GroupTopicTests {
    @Test func aGroupTopicIsReadOnlyInItsOneSpelling() {
        let scheme = TopicScheme(prefix: "home/hearth", hub: "a")
        #expect(scheme.groupSet(5) == "home/hearth/groups/5/set")
        #expect(scheme.groupID(fromSetTopic: "home/hearth/groups/5/set") == 5)
        #expect(scheme.groupID(fromSetTopic: "home/hearth/groups/65535/set") == 65535)
        for topic in ["home/hearth/groups/0/set", "home/hearth/groups/65536/set", "home/hearth/groups/007/set",
                      "home/hearth/groups/+1/set", "home/hearth/groups/-1/set", "home/hearth/groups/5/set/x",
                      "home/hearth/groups/5", "hearth/groups/5/set", "home/hearth/a/groups"] {
            #expect(scheme.groupID(fromSetTopic: topic) == nil, "\(topic)")
        }
        #expect(scheme.groups == "home/hearth/a/groups")
    }

    @Test func aSummaryListsWhoRanAndWhoRefused() {
        let summary = HubResponse.groupSummary(
            transaction: .string("g"), group: 1, hub: "a", ran: ["lamp"],
            refused: [("fan", HomeError(.unsupportedCluster, "no levelControl"))])
        #expect(
            summary.text
                == #"{"transaction":"g","group":1,"hub":"a","ok":false,"ran":["lamp"],"refused":[{"device":"fan","#
                    + #""error":{"code":"unimplemented","status":"unsupportedCluster","message":"no levelControl"}}]}"#
        )
    }
}
