import HearthContract
import HearthEngine
@testable import HearthHub
import HearthJSON
import HearthMQTT
import HearthModel
import HearthTestKit
import Testing

/// Hub "a" on a manual clock, with a recording outbox instead of a broker: what the peer types publish is
/// recorded, and peers speak by handing messages to the router as the MQTT client would.
struct PeerRig {
    let clock = ManualClock()
    let home: Home
    let router: PeerRouter
    let sent = Recorder<PeerOutbox.Message>()
    let logs = Recorder<String>()

    init(bindings: [PeerBinding] = [], peers: [PeerConfiguration] = [PeerConfiguration(hub: "b")],
         heartbeat: Heartbeat? = nil) throws {
        home = try Home(
            devices: [
                DeviceConfiguration(id: "lamp", name: "Lamp", types: [DeviceTypeConfiguration(.dimmableLight)]),
                DeviceConfiguration(
                    id: "hall-switch", name: "Hall switch",
                    types: [
                        DeviceTypeConfiguration(
                            .genericSwitch, traits: [TraitConfiguration(.switchTrait, features: ["momentarySwitch"])])
                    ])
            ], clock: clock)
        let sent = sent, logs = logs
        router = PeerRouter(home: home, topics: TopicScheme(hub: "a"), peers: peers,
                            bindings: bindings, timeout: .seconds(3), heartbeat: heartbeat, clock: clock,
                            outbox: PeerOutbox(publish: { sent.append($0) }), log: { logs.append($0) })
    }

    /// Hub `hub` says it is `status` and that it has `devices`.
    func peer(_ hub: String, _ status: String, devices: [String] = []) {
        let summary = JSON.array(devices.map { .object([("id", .string($0))]) })
        _ = router.handle(MQTTMessage(topic: "hearth/\(hub)/devices", payload: summary.bytes, retain: true))
        _ = router.handle(MQTTMessage(topic: "hearth/\(hub)/status", payload: Array(status.utf8), retain: true))
    }

    /// A client's request to hub a for `device`, forwarded as the hub would; returns what `forward` returns.
    func forward(_ body: String, device: String, transaction: String = "t1") throws -> HomeError? {
        let (json, parsed) = HubRequest.parse(Array(#"{"transaction":"\#(transaction)",\#(body)}"#.utf8))
        let request = try parsed.get()
        let target = try #require(router.target(of: request, device: device))
        return router.forward(target.request, transaction: json, device: device, to: target.owner,
                              ownerDevice: target.device, responseTopic: "client/inbox", correlationData: [7])
    }

    func messages(on topic: String) -> [JSON] {
        sent.all.filter { $0.topic == topic }.compactMap { try? JSON.parse($0.payload) }
    }

    /// The responses hub a published to clients.
    var responses: [JSON] { messages(on: "hearth/a/responses") }
}

@Suite struct PeerForwarderTests {
    @Test(.timeLimit(.minutes(1))) func aForwardedRequestGoesToTheOwnerAndItsAnswerIsRelayed() throws {
        let rig = try PeerRig()
        rig.peer("b", "online", devices: ["porch"])
        #expect(try rig.forward(#""trait":"onOff","command":"on""#, device: "porch") == nil)
        let out = rig.messages(on: "hearth/b/devices/porch/set")
        #expect(out.map(\.text) == [#"{"transaction":"a-1","trait":"onOff","command":"on","forwardedBy":"a"}"#])
        // With where the owner may answer the client itself (the client gave a response topic).
        let set = try #require(rig.sent.all.first { $0.topic == "hearth/b/devices/porch/set" })
        #expect(set.responseTopic == "hearth/a/answers")
        #expect(
            set.userProperties == [
                MQTTUserProperty(
                    "hearth-reply-to",
                    #"{"topic":"client/inbox","transaction":"t1","device":"porch","correlationData":"07"}"#)
            ])

        // Only the hub it was sent to may answer it.
        _ = rig.router.handle(
            MQTTMessage(topic: "hearth/c/responses", payload: Array(#"{"transaction":"a-1","ok":false}"#.utf8)))
        #expect(rig.responses.isEmpty)
        _ = rig.router.handle(MQTTMessage(topic: "hearth/b/responses",
                                          payload: Array(#"{"transaction":"a-1","device":"porch","ok":true}"#.utf8)))
        #expect(rig.responses.map(\.text) == [#"{"transaction":"t1","device":"porch","ok":true}"#])
        // Relayed (the owner did not say it answered the client): to the client first, then on `responses`.
        #expect(rig.sent.all.suffix(2).map(\.topic) == ["client/inbox", "hearth/a/responses"])
        #expect(rig.sent.all.suffix(2).first?.correlationData == [7])
        #expect(rig.router.forwarder.waitingCount == 0)
    }

    /// An owner that answered the client itself says so on this hub's `answers`: the answer is published on
    /// `responses` (for whoever watches this hub) and not relayed; without the property, it is relayed.
    @Test func anAnswerTheOwnerGaveTheClientIsNotRelayed() throws {
        let rig = try PeerRig()
        rig.peer("b", "online", devices: ["porch"])
        #expect(try rig.forward(#""trait":"onOff","command":"on""#, device: "porch", transaction: "t1") == nil)
        #expect(try rig.forward(#""trait":"onOff","command":"off""#, device: "porch", transaction: "t2") == nil)
        let answer = { (id: String) in Array(#"{"transaction":"\#(id)","device":"porch","ok":true}"#.utf8) }
        _ = rig.router.handle(MQTTMessage(topic: "hearth/a/answers", payload: answer("a-1"),
                                          userProperties: [MQTTUserProperty("hearth-replied", "client")]))
        #expect(rig.responses.map { $0["transaction"] } == [.string("t1")])
        #expect(!rig.sent.all.contains { $0.topic == "client/inbox" })
        // Any other value of the property, or none (an owner of an earlier version): relayed.
        _ = rig.router.handle(MQTTMessage(topic: "hearth/a/answers", payload: answer("a-2"),
                                          userProperties: [MQTTUserProperty("hearth-replied", "nobody")]))
        #expect(rig.responses.map { $0["transaction"] } == [.string("t1"), .string("t2")])
        #expect(rig.sent.all.filter { $0.topic == "client/inbox" }.count == 1)
        #expect(rig.router.forwarder.waitingCount == 0)
    }

    /// A client without a response topic (MQTT 3.1.1, or one that watches `responses`): no instruction is sent.
    @Test func withoutAResponseTopicTheOwnerIsNotAskedToAnswerTheClient() throws {
        let rig = try PeerRig()
        rig.peer("b", "online", devices: ["porch"])
        let (json, parsed) = HubRequest.parse(Array(#"{"transaction":"t1","trait":"onOff","command":"on"}"#.utf8))
        let target = try #require(rig.router.target(of: try parsed.get(), device: "porch"))
        #expect(rig.router.forward(target.request, transaction: json, device: "porch", to: target.owner,
                                   ownerDevice: target.device, responseTopic: nil, correlationData: nil) == nil)
        let set = try #require(rig.sent.all.first { $0.topic == "hearth/b/devices/porch/set" })
        #expect(set.userProperties.isEmpty)
    }

    @Test func theInstructionSurvivesItsEncodingAndAMalformedOneIsIgnored() throws {
        let reply = DirectReply(
            topic: "x/y", correlationData: [0, 0xab, 0xff], transaction: .object([("n", .string("1"))]),
            device: "porch")
        #expect(DirectReply(MQTTMessage(topic: "t", payload: [], userProperties: [reply.encoded])) == reply)
        let noCorrelation = DirectReply(topic: "x/y", correlationData: nil, transaction: .null, device: "d")
        #expect(
            DirectReply(MQTTMessage(topic: "t", payload: [], userProperties: [noCorrelation.encoded])) == noCorrelation)
        for bad in [
            #"{"topic":"x","device":"d"}"#, #"{"topic":"","transaction":1,"device":"d"}"#,
            #"{"topic":"x","transaction":1,"device":2}"#,
            #"{"topic":"x","transaction":1,"device":"d","correlationData":"0g"}"#,
            #"{"topic":"x","transaction":1,"device":"d","correlationData":"abc"}"#,
            #"{"topic":"x","transaction":1,"device":"d","correlationData":7}"#, "not json", "[]"
        ] {
            #expect(
                DirectReply(
                    MQTTMessage(topic: "t", payload: [], userProperties: [MQTTUserProperty("hearth-reply-to", bad)]))
                    == nil,
                "\(bad)")
        }
        #expect(DirectReply(MQTTMessage(topic: "t", payload: [])) == nil)
    }

    /// Found by the `peer` fuzz target: an owner whose answer left out `device` had it relayed without one.
    @Test func aRelayedAnswerAlwaysCarriesTheClientsTransactionAndDevice() throws {
        let rig = try PeerRig()
        rig.peer("b", "online", devices: ["porch"])
        #expect(try rig.forward(#""trait":"onOff","command":"on""#, device: "porch", transaction: "t7") == nil)
        _ = rig.router.handle(
            MQTTMessage(topic: "hearth/b/responses", payload: Array(#"{"ok":true,"transaction":"a-1"}"#.utf8)))
        #expect(rig.responses.map(\.text) == [#"{"transaction":"t7","device":"porch","ok":true}"#])
    }

    @Test(.timeLimit(.minutes(1))) func aRequestNobodyAnswersTimesOutOnTheEngineClock() async throws {
        let rig = try PeerRig()
        rig.peer("b", "online", devices: ["porch"])
        let runner = Task { await rig.router.run() }
        defer { runner.cancel() }
        #expect(try rig.forward(#""trait":"onOff","command":"on""#, device: "porch") == nil)

        // A millisecond before the deadline nothing has expired, whenever the loop looks.
        rig.clock.advance(by: 2_999)
        rig.router.forwarder.expireDue()
        #expect(rig.responses.isEmpty)
        #expect(rig.router.forwarder.waitingCount == 1)

        // At the deadline the loop, asleep on the manual clock, answers the client.
        rig.clock.advance(by: 1)
        #expect(await eventually { !rig.responses.isEmpty })
        let response = try #require(rig.responses.first)
        #expect(response["transaction"] == .string("t1"))
        #expect(response["device"] == .string("porch"))
        #expect(response["error"]?["code"] == .string("deadlineExceeded"))
        #expect(response["error"]?["status"] == .string("timeout"))
        // The request may have run: the message says so, so that a client reads the state before sending it again.
        #expect(
            response["error"]?["message"]
                == .string(
                    "hub 'b' did not answer within 3.0 seconds: the request may have "
                        + "run there (its answer may have been lost on the way back); read "
                        + "the device's state before sending it again"))
        #expect(rig.router.forwarder.waitingCount == 0)

        // An answer after the deadline is ignored: the client has had its one response.
        _ = rig.router.handle(
            MQTTMessage(topic: "hearth/b/responses", payload: Array(#"{"transaction":"a-1","ok":true}"#.utf8)))
        #expect(rig.responses.count == 1)
    }

    @Test(.timeLimit(.minutes(1))) func anOwnerGoingOfflineFailsItsRequestsAtOnce() throws {
        let rig = try PeerRig()
        rig.peer("b", "online", devices: ["porch"])
        #expect(try rig.forward(#""trait":"onOff","command":"on""#, device: "porch", transaction: "t1") == nil)
        #expect(try rig.forward(#""trait":"onOff","command":"off""#, device: "porch", transaction: "t2") == nil)

        // b's will: both waiting clients are answered on the spot, with no time passing at all.
        _ = rig.router.handle(MQTTMessage(topic: "hearth/b/status", payload: Array("offline".utf8), retain: true))
        #expect(Set(rig.responses.compactMap { $0["transaction"]?.text }) == [#""t1""#, #""t2""#])
        // Both were sent and may have run: their outcome is unknown, not "nothing ran".
        #expect(rig.responses.allSatisfy { $0["error"]?["code"] == .string("deadlineExceeded") })
        #expect(
            rig.responses.first?["error"]?["message"]
                == .string(
                    "hub 'b' went offline before it answered: the request "
                        + "may have run there; read the device's state once "
                        + "the hub is back before sending it again"))
        #expect(rig.router.forwarder.waitingCount == 0)

        // While b is offline, a request for it is refused before it is sent.
        let refused = try rig.forward(#""trait":"onOff","command":"on""#, device: "porch", transaction: "t3")
        #expect(refused?.code == .unavailable)
        #expect(refused?.message == "hub 'b' is offline; try again when it is online")
        #expect(rig.messages(on: "hearth/b/devices/porch/set").count == 2)
    }

    @Test func aRequestIsNeverForwardedTwiceNorToAnUnknownHub() throws {
        let rig = try PeerRig()
        rig.peer("b", "online", devices: ["porch"])
        let (_, forwarded) = HubRequest.parse(Array(#"{"trait":"onOff","command":"on","forwardedBy":"x"}"#.utf8))
        #expect(rig.router.target(of: try forwarded.get(), device: "porch") == nil)
        let (_, local) = HubRequest.parse(Array(#"{"trait":"onOff","command":"on"}"#.utf8))
        #expect(rig.router.target(of: try local.get(), device: "lamp") == nil)
        #expect(rig.router.target(of: try local.get(), device: "garage-door") == nil)
    }
}
