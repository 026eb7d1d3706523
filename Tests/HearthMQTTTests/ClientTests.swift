import Foundation
@_spi(Testing) import HearthMQTT
import HearthTestKit
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Every test starts its own mosquitto (see `TestBroker`), so they run in parallel.
@Suite(.timeLimit(.minutes(2))) struct MessagingTests {
    @Test func publishAndSubscribeRoundTrip() async throws {
        let broker = try TestBroker()
        let subscriber = try await broker.connectedProbe()
        try subscriber.client.subscribe("home/+/state", options: MQTTSubscriptionOptions(qos: .atLeastOnce))
        #expect(try await subscriber.barrier("home/barrier/state"))

        let publisher = try await broker.connectedProbe()
        #expect(publisher.client.connectedProtocolVersion == .v5)
        try publisher.client.publish("home/lamp/state", payload: [0, 1, 2, 255], qos: .atLeastOnce)
        try publisher.client.publish("home/lamp/ignored", payload: [9])
        try publisher.client.publish("home/fan/state", payload: [], qos: .exactlyOnce)

        let lamp = try #require(await subscriber.message(on: "home/lamp/state"))
        #expect(lamp.payload == [0, 1, 2, 255])
        #expect(lamp.qos == .atLeastOnce)
        #expect(lamp.retain == false)
        #expect(lamp.responseTopic == nil && lamp.correlationData == nil)
        let fan = try #require(await subscriber.message(on: "home/fan/state"))
        #expect(fan.payload.isEmpty)
        #expect(fan.qos == .atLeastOnce, "delivered at the subscription's QoS")
        #expect(!subscriber.messages.all.contains { $0.topic == "home/lamp/ignored" })
    }

    @Test func theAsyncMessageStreamSeesWhatTheHandlerSees() async throws {
        let broker = try TestBroker()
        let probe = try await broker.connectedProbe()
        let stream = probe.client.messages()
        try probe.client.subscribe("stream/#")
        try probe.client.publish("stream/a", payload: Array("hello"))
        var iterator = stream.makeAsyncIterator()
        let first = await iterator.next()
        #expect(first?.topic == "stream/a")
        #expect(first?.payload == Array("hello"))
        probe.client.disconnect()
        #expect(await iterator.next() == nil, "the stream finishes when the client stops")
    }

    @Test func unsubscribeStopsDelivery() async throws {
        let broker = try TestBroker()
        let probe = try await broker.connectedProbe()
        try probe.client.subscribe("u/a")
        try probe.client.subscribe("u/b")
        #expect(try await probe.barrier("u/a"))
        try probe.client.unsubscribe("u/a")
        try probe.client.publish("u/a", payload: Array("after"))
        #expect(try await probe.barrier("u/b"), "u/b is still subscribed, and u/a's UNSUBSCRIBE went first")
        #expect(!probe.messages.all.contains { $0.topic == "u/a" && $0.payload == Array("after") })
    }

    @Test func retainedMessageArrivesFlaggedOnSubscription() async throws {
        let broker = try TestBroker()
        let publisher = try await broker.connectedProbe()
        try publisher.client.publish("retained/lamp", payload: Array("on"), qos: .atLeastOnce, retain: true)
        // DISCONNECT follows the PUBLISH on the same connection, so once it is flushed the broker has the message.
        publisher.client.disconnect()

        let subscriber = try await broker.connectedProbe()
        try subscriber.client.subscribe("retained/#")
        let message = try #require(await subscriber.message(on: "retained/lamp"))
        #expect(message.retain)
        #expect(message.payload == Array("on"))
    }

    @Test func retainAsPublishedKeepsTheFlagOnLivePublishes() async throws {
        let broker = try TestBroker()
        let probe = try await broker.connectedProbe()
        try probe.client.subscribe("rap/on", options: MQTTSubscriptionOptions(retainAsPublished: true))
        try probe.client.subscribe("rap/off")
        // Same connection: both SUBSCRIBEs are active before these PUBLISHes.
        try probe.client.publish("rap/on", payload: Array("1"), retain: true)
        try probe.client.publish("rap/off", payload: Array("1"), retain: true)
        let kept = try #require(await probe.message(on: "rap/on"))
        let cleared = try #require(await probe.message(on: "rap/off"))
        #expect(kept.retain, "retainAsPublished keeps the publisher's retain flag")
        #expect(!cleared.retain, "without it, a live delivery has retain cleared")
    }

    @Test func noLocalSuppressesOwnPublishes() async throws {
        let broker = try TestBroker()
        let probe = try await broker.connectedProbe()
        try probe.client.subscribe("nolocal/x", options: MQTTSubscriptionOptions(noLocal: true))
        try probe.client.subscribe("nolocal/barrier")
        try probe.client.publish("nolocal/x", payload: Array("mine"))
        #expect(try await probe.barrier("nolocal/barrier"))
        #expect(!probe.messages.all.contains { $0.topic == "nolocal/x" })

        let other = try await broker.connectedProbe()
        try other.client.publish("nolocal/x", payload: Array("theirs"))
        #expect(await probe.message(on: "nolocal/x")?.payload == Array("theirs"))
    }

    /// A probe subscribed to `filter` once the broker has sent back a message on `barrier` (a topic the filter
    /// matches; the filter itself by default), so that nothing published after it is missed.
    func subscribedProbe(_ broker: TestBroker, _ filter: String, barrier: String? = nil) async throws -> Probe {
        let probe = try await broker.connectedProbe()
        try probe.client.subscribe(filter)
        #expect(try await probe.barrier(barrier ?? filter))
        return probe
    }

    @Test func responseTopicAndCorrelationDataRoundTrip() async throws {
        let broker = try TestBroker()
        let responder = try await subscribedProbe(broker, "rpc/request")
        let requester = try await subscribedProbe(broker, "rpc/reply/requester")

        let replier = responder.client
        let requests = responder.messages
        replier.onMessage = { request in
            requests.append(request)
            guard let replyTo = request.responseTopic else { return }
            // On the network thread, from the handler: the low-latency reply path.
            try? replier.publish(replyTo, payload: request.payload.reversed(), correlationData: request.correlationData)
        }
        let correlation: [UInt8] = [0xde, 0xad, 0xbe, 0xef, 0]
        try requester.client.publish("rpc/request", payload: [1, 2, 3], qos: .atLeastOnce,
                                     responseTopic: "rpc/reply/requester", correlationData: correlation)

        let request = try #require(await responder.message(on: "rpc/request") { $0.payload == [1, 2, 3] })
        #expect(request.responseTopic == "rpc/reply/requester")
        #expect(request.correlationData == correlation)
        let reply = try #require(await requester.message(on: "rpc/reply/requester") { $0.payload == [3, 2, 1] })
        #expect(reply.correlationData == correlation)
        #expect(reply.responseTopic == nil)
    }

    @Test func userPropertiesArriveInOrderAndWithoutThemThereAreNone() async throws {
        let broker = try TestBroker()
        let receiver = try await subscribedProbe(broker, "props/#", barrier: "props/barrier")
        let sender = try await broker.connectedProbe()
        let properties = [MQTTUserProperty("hearth-reply-to", #"{"topic":"a/b"}"#), MQTTUserProperty("empty", ""),
                          MQTTUserProperty("hearth-reply-to", "second, same name"), MQTTUserProperty("ünïcode", "✓")]
        try sender.client.publish("props/with", payload: [1], qos: .atLeastOnce, responseTopic: "props/reply",
                                  userProperties: properties)
        try sender.client.publish("props/without", payload: [2])
        let with = try #require(await receiver.message(on: "props/with"))
        #expect(with.userProperties == properties)
        #expect(with.userProperty("hearth-reply-to") == #"{"topic":"a/b"}"#)
        #expect(with.responseTopic == "props/reply")
        let without = try #require(await receiver.message(on: "props/without"))
        #expect(without.userProperties.isEmpty && without.userProperty("hearth-reply-to") == nil)
        // A name or value that C cannot carry is refused, and nothing is sent.
        #expect(throws: MQTTError.self) {
            try sender.client.publish("props/bad", payload: [3], userProperties: [MQTTUserProperty("a\0b", "x")])
        }
    }

    /// Work deferred from a handler runs on the network thread after the handler's turn, once what the handler
    /// published is on the socket: here the work waits until a subscriber has received the handler's message, which
    /// could never happen if the message were still queued behind it.
    @Test func workDeferredFromAHandlerRunsOnceTheHandlersMessagesAreWritten() async throws {
        let broker = try TestBroker()
        let watcher = try await subscribedProbe(broker, "deferred/out")
        let responder = try await subscribedProbe(broker, "deferred/in")
        let delivered = DispatchSemaphore(value: 0)
        let result = Mutex<(handlerReturned: Bool, ranAfterIt: Bool?, sawTheMessage: Bool?)>((false, nil, nil))
        let client = responder.client
        client.onMessage = { message in
            guard message.topic == "deferred/in" else { return }
            try? client.publish("deferred/out", payload: [1])
            client.afterWriting {
                let returned = result.withLock { $0.handlerReturned }
                let saw = delivered.wait(timeout: .now() + .seconds(20)) == .success
                result.withLock { $0.ranAfterIt = returned; $0.sawTheMessage = saw }
                try? client.publish("deferred/out", payload: [2])
            }
            result.withLock { $0.handlerReturned = true }
        }
        try watcher.client.publish("deferred/in", payload: [])
        _ = try #require(await watcher.message(on: "deferred/out") { $0.payload == [1] })
        delivered.signal()
        _ = try #require(await watcher.message(on: "deferred/out") { $0.payload == [2] })
        let seen = result.withLock { $0 }
        #expect(seen.ranAfterIt == true, "after the handler returned")
        #expect(seen.sawTheMessage == true, "the handler's message was written before the work ran")
    }

    /// A burst larger than the socket takes at once: the work waits, turn after turn, until libmosquitto has nothing
    /// left to write, and runs once.
    @Test func workAfterABurstRunsOnceTheSocketHasTakenAllOfIt() async throws {
        let broker = try TestBroker()
        let watcher = try await subscribedProbe(broker, "burst/#", barrier: "burst/barrier")
        let responder = try await subscribedProbe(broker, "burst-in")
        let seen = Mutex<[Bool]>([])
        let client = responder.client
        let parts = 16, size = 512 * 1024
        client.onMessage = { message in
            guard message.topic == "burst-in" else { return }
            for i in 0..<parts { try? client.publish("burst/\(i)", payload: [UInt8](repeating: UInt8(i), count: size)) }
            client.whenWritten {
                seen.withLock { $0.append(client.hasUnwrittenPackets) }
                try? client.publish("burst/done", payload: [1])
            }
        }
        try watcher.client.publish("burst-in", payload: [])
        _ = try #require(await watcher.message(on: "burst/done"))
        let topics = watcher.messages.all.map(\.topic).filter { $0.hasPrefix("burst/") && $0 != "burst/barrier" }
        #expect(topics == (0..<parts).map { "burst/\($0)" } + ["burst/done"])
        #expect(seen.withLock { $0 } == [false], "ran once, with nothing left to write")
    }

    /// Messages that have arrived together are read in one turn of the network thread and answered in order: the
    /// handler holds the thread on the first until the whole burst is at the broker, which has then written it to the
    /// client's socket, so the turns that follow find several messages waiting.
    @Test(.timeLimit(.minutes(1))) func messagesThatArrivedTogetherAreReadInOneTurnAndAnsweredInOrder() async throws {
        let broker = try TestBroker()
        let watcher = try await subscribedProbe(broker, "together/#", barrier: "together/barrier")
        let responder = try await subscribedProbe(broker, "together-in")
        let released = DispatchSemaphore(value: 0)
        let first = Atomic<Bool>(true)
        let client = responder.client
        client.onMessage = { message in
            guard message.topic == "together-in" else { return }
            if first.exchange(false, ordering: .relaxed) { _ = released.wait(timeout: .now() + .seconds(20)) }
            try? client.publish("together/out", payload: message.payload)
        }
        let count = 200
        for i in 0..<count { try watcher.client.publish("together-in", payload: Array("\(i)".utf8)) }
        try watcher.client.publish("together/sent", payload: [])
        // The broker handles one publisher's messages in order: when the marker comes back, the burst has been
        // written to the responder's socket.
        _ = try #require(await watcher.message(on: "together/sent"))
        released.signal()
        #expect(await watcher.messages.count(atLeast: count) { $0.topic == "together/out" })
        let answers = watcher.messages.all.filter { $0.topic == "together/out" }.map {
            String(decoding: $0.payload, as: UTF8.self)
        }
        #expect(answers == (0..<count).map { "\($0)" })
        #expect(client.packetsReadWithinTurns > 0)
    }

    @Test func v5PropertiesAreDroppedOnA311Connection() async throws {
        let broker = try TestBroker()
        let probe = try await broker.connectedProbe { $0.protocolVersion = .v311 }
        #expect(probe.client.connectedProtocolVersion == .v311)
        try probe.client.subscribe("v3/x", options: MQTTSubscriptionOptions(noLocal: true, retainAsPublished: true))
        try probe.client.publish("v3/x", payload: Array("p"), responseTopic: "v3/reply", correlationData: [1])
        let message = try #require(await probe.message(on: "v3/x"),
                                   "v5 subscription options are dropped too (noLocal would have hidden it)")
        #expect(message.responseTopic == nil)
        #expect(message.correlationData == nil)
    }

    @Test func concurrentPublishersLoseNothing() async throws {
        let broker = try TestBroker()
        let subscriber = try await broker.connectedProbe()
        try subscriber.client.subscribe("burst/#", options: MQTTSubscriptionOptions(qos: .atLeastOnce))
        #expect(try await subscriber.barrier("burst/barrier"))
        let publisher = try await broker.connectedProbe()
        let client = publisher.client
        // Several threads publish through one client at once while its network thread writes.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for sender in 0..<4 {
                group.addTask {
                    for index in 0..<250 {
                        try client.publish("burst/\(sender)", payload: [UInt8(sender), UInt8(index % 256)],
                                           qos: .atLeastOnce)
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(
            await subscriber.messages.count(atLeast: 1000) {
                $0.topic.hasPrefix("burst/") && $0.topic != "burst/barrier"
            })
        for sender in 0..<4 {
            // QoS 1 from one connection keeps each sender's order.
            let indices = subscriber.messages.all.filter { $0.topic == "burst/\(sender)" }.map { Int($0.payload[1]) }
            #expect(indices == Array(0..<250))
        }
    }

    @Test func invalidArgumentsAreTypedErrors() async throws {
        let broker = try TestBroker()
        let probe = try await broker.connectedProbe()
        #expect(throws: MQTTError.self) { try probe.client.subscribe("a/#/b") }
        do {
            try probe.client.subscribe("a/#/b")
        } catch {
            #expect(error.code == .invalidArgument)
            #expect(error.context.contains("a/#/b"))
        }
        do {
            try probe.client.publish("wild/+", payload: [])
            Issue.record("publishing to a wildcard must fail")
        } catch {
            #expect(error.code == .invalidArgument)
        }
        do {
            try probe.client.publish("nul\u{0}topic", payload: [])
            Issue.record("a NUL in a topic must fail")
        } catch {
            #expect(error.code == .invalidArgument)
        }
    }
}

@Suite(.timeLimit(.minutes(2))) struct ConnectionTests {
    @Test func lastWillIsPublishedWhenTheConnectionDiesWithoutDisconnect() async throws {
        let broker = try TestBroker()
        let watcher = try await broker.connectedProbe()
        try watcher.client.subscribe("will/#", options: MQTTSubscriptionOptions(qos: .atLeastOnce))
        #expect(try await watcher.barrier("will/barrier"))

        let will = MQTTConnectOptions.Will(topic: "will/crashed", payload: Array("offline"), qos: .atLeastOnce,
                                           retain: false)
        let polite = try await broker.connectedProbe(clientID: "polite") {
            $0.will = MQTTConnectOptions.Will(topic: "will/polite", payload: Array("offline"), retain: false)
        }
        let crashing = try await broker.connectedProbe(clientID: "crashing") { $0.will = will }

        polite.client.disconnect()
        crashing.client.severConnectionWithoutDisconnect()

        let received = try #require(await watcher.message(on: "will/crashed"), "broker log:\n\(broker.log)")
        #expect(received.payload == Array("offline"))
        #expect(received.qos == .atLeastOnce)
        #expect(!watcher.messages.all.contains { $0.topic == "will/polite" },
                "a clean disconnect() discards the will")
        // The crashed client reconnects on its own.
        #expect(await crashing.connects.count(atLeast: 2) { _ in true })
    }

    @Test func aKilledProcessHasItsWillPublished() async throws {
        // The same broker behaviour, through a real process death: mosquitto_sub with a will, killed with SIGKILL.
        let broker = try TestBroker()
        let watcher = try await broker.connectedProbe()
        try watcher.client.subscribe("will/process")
        #expect(try await watcher.barrier("will/process"))
        let sub = "/usr/bin/mosquitto_sub"
        try #require(access(sub, X_OK) == 0, "mosquitto_sub (mosquitto-clients) is needed")
        let child = try TestProcess(sub, ["-h", broker.host, "-p", "\(broker.port)", "-t", "ignored",
                                          "--will-topic", "will/process", "--will-payload", "gone",
                                          "-i", "victim"])
        // Wait until the broker has the victim connected, then kill it.
        #expect(await eventually { broker.log.contains("as victim") })
        child.kill()
        let message = try #require(await watcher.message(on: "will/process") { $0.payload == Array("gone") },
                                   "broker log:\n\(broker.log)")
        #expect(message.payload == Array("gone"))
    }

    @Test func reconnectsAndResubscribesAfterABrokerRestart() async throws {
        let broker = try TestBroker()
        let probe = try await broker.connectedProbe(clientID: "survivor")
        try probe.client.subscribe("restart/#", options: MQTTSubscriptionOptions(qos: .atLeastOnce))
        #expect(try await probe.barrier("restart/barrier"))

        broker.stop()
        let lost = await probe.events.first {
            if case .disconnected(.lost) = $0 { return true } else { return false }
        }
        #expect(lost != nil)
        #expect(!probe.client.isConnected)
        try broker.restart()

        #expect(await probe.connects.count(atLeast: 2) { _ in true }, "onConnect runs again after the reconnect")
        #expect(probe.client.isConnected)
        let publisher = try await broker.connectedProbe()
        // The broker has no persistence: only the client's own resubscription can deliver these.
        var delivered = false
        for attempt in 0..<50 where !delivered {
            try publisher.client.publish("restart/after", payload: Array("\(attempt)"), qos: .atLeastOnce)
            delivered = await probe.messages.first(within: .milliseconds(300)) { $0.topic == "restart/after" } != nil
        }
        #expect(delivered, "broker log:\n\(broker.log)")
    }

    @Test func theConnectHandlerRunsAfterResubscribing() async throws {
        // onConnect republishes retained state; a subscription to the same topic must already be back in place.
        let broker = try TestBroker()
        let probe = try Probe(broker.options(clientID: "republisher"))
        let client = probe.client
        client.onConnect = { _ in
            try? client.publish("state/self", payload: Array("republished"), qos: .atLeastOnce)
        }
        try client.subscribe("state/self") // before start: recorded, sent on connect
        try await client.connect()
        #expect(await probe.message(on: "state/self") != nil)
        broker.stop()
        try broker.restart()
        #expect(await probe.messages.count(atLeast: 2) { $0.topic == "state/self" })
    }

    @Test func refusedPortIsATypedErrorAndTheClientKeepsTrying() async throws {
        let port = try TestBroker.unusedLoopbackPort()
        let probe = try Probe(MQTTConnectOptions(host: "127.0.0.1", port: port, reconnectBackoff:
            MQTTBackoff(initialDelay: .milliseconds(10), maximumDelay: .milliseconds(50))))
        do {
            try await probe.client.connect()
            Issue.record("nothing listens on \(port)")
        } catch {
            #expect(error.code == .system)
            #expect(error.systemErrno == ECONNREFUSED)
            #expect(error.context.contains("127.0.0.1:\(port)"))
            #expect(error.message.contains("refused"))
        }
        #expect(await probe.events.count(atLeast: 3) {
            if case .connectionFailed = $0 { return true } else { return false }
        }, "it retries with backoff")
        probe.client.disconnect()
        #expect(!probe.client.isConnected)
    }

    @Test func unresolvableHostIsATypedError() async throws {
        let probe = try Probe(MQTTConnectOptions(host: "no-such-broker.invalid", port: 1883))
        await #expect(throws: MQTTError.self) { try await probe.client.connect() }
        probe.client.disconnect()
    }

    @Test func disconnectIsIdempotentAndEndsTheEventStream() async throws {
        let broker = try TestBroker()
        let client = try MQTTClient(options: broker.options())
        let events = client.connectionEvents()
        try await client.connect()
        client.disconnect()
        client.disconnect()
        var seen: [MQTTConnectionEvent] = []
        for await event in events { seen.append(event) }
        #expect(seen.count == 2)
        #expect(seen.last == .disconnected(.requested))
        #expect(throws: MQTTError.self) { try client.start() }
        #expect(throws: MQTTError.self) { try client.publish("x", payload: []) }
    }

    @Test func disconnectFromTheNetworkThreadDoesNotDeadlock() async throws {
        let broker = try TestBroker()
        let probe = try Probe(broker.options())
        let client = probe.client
        client.onConnect = { _ in client.disconnect() }
        try client.start()
        #expect(await probe.events.first { $0 == .disconnected(.requested) } != nil)
    }

    @Test func releasingAClientStopsIt() async throws {
        let broker = try TestBroker()
        let events = Recorder<MQTTConnectionEvent>()
        do {
            let client = try MQTTClient(options: broker.options())
            client.onConnectionEvent = { events.append($0) }
            try await client.connect()
        }
        #expect(await events.first { $0 == .disconnected(.requested) } != nil)
        // Never started at all: released, its streams end at once and empty (nothing waits on a thread that
        // never ran).
        let (neverStartedEvents, neverStartedMessages) = try {
            let idle = try MQTTClient(options: broker.options())
            return (idle.connectionEvents(), idle.messages())
        }()
        // Streams that never finished would hold this loop until the suite's time limit (which fails the test).
        var received = 0
        for await _ in neverStartedEvents { received += 1 }
        for await _ in neverStartedMessages { received += 1 }
        #expect(received == 0, "both streams finish, with nothing in them")
    }

    /// `disconnect()` must not wait for a TCP connect that will never complete. It runs on a thread of its own
    /// and the test waits for it to return: a `disconnect()` that hangs fails the test (after the generous
    /// timeout, a hang guard and not a performance bound) instead of hanging it.
    @Test(.timeLimit(.minutes(1))) func disconnectWhileAConnectIsPendingReturns() async throws {
        let stalled = try StalledListener()
        let client = try MQTTClient(options: MQTTConnectOptions(host: "127.0.0.1", port: stalled.port))
        try client.start()
        #expect(
            await eventually { stalled.pendingConnects > 0 },
            "the client's connect is pending on the listener: \(stalled.connections), fillers \(stalled.fillerPorts)")
        let returned = Recorder<Bool>()
        Thread.detachNewThread {
            client.disconnect()
            returned.append(true)
        }
        #expect(await returned.first(within: .seconds(10)) { $0 } != nil, "disconnect() returned")
        #expect(!client.isConnected)
    }

    /// The network thread sleeps until there is something to do; the keep-alive pings must still go out
    /// (the broker drops a client that is silent for 1.5 × its keep-alive, 7.5 s here). The test waits for the
    /// broker to log the client's second PINGREQ (about 10 s after connecting, past the 7.5 s), then checks the
    /// connection was never lost.
    @Test func anIdleConnectionIsKeptAliveByPings() async throws {
        let broker = try TestBroker()
        let probe = try await broker.connectedProbe(clientID: "idler") { $0.keepAlive = 5 }
        try probe.client.subscribe("idle/#")
        let pings = await poll(within: .seconds(30), every: .milliseconds(100)) {
            broker.log.components(separatedBy: "Received PINGREQ from idler").count - 1 >= 2
        }
        #expect(pings, "broker log:\n\(broker.log)")
        #expect(probe.client.isConnected)
        #expect(probe.connects.all.count == 1, "the connection was never lost and remade")
        #expect(try await probe.barrier("idle/after"), "broker log:\n\(broker.log)")
    }

    @Test func publishingWhileDisconnectedIsATypedError() throws {
        let client = try MQTTClient(options: MQTTConnectOptions(host: "127.0.0.1", port: 1))
        do {
            try client.publish("x", payload: [1])
            Issue.record("no connection")
        } catch {
            #expect(error.code == .notConnected)
        }
    }
}

@Suite(.timeLimit(.minutes(2))) struct SecurityTests {
    @Test func passwordIsAcceptedAndAWrongOneRefused() async throws {
        let broker = try TestBroker(users: ["hub": "s3cret", "other": "x"])
        let good = try await broker.connectedProbe { $0.username = "hub"; $0.password = "s3cret" }
        #expect(good.client.isConnected)

        for version in [MQTTProtocolVersion.v5, .v311] {
            let bad = try MQTTClient(options: broker.options {
                $0.username = "hub"
                $0.password = "wrong"
                $0.protocolVersion = version
            })
            do {
                try await bad.connect()
                Issue.record("a wrong password must be refused (\(version))")
            } catch {
                #expect(error.code == .connectionRefused)
                // v5: 0x86 bad user name or password / 0x87 not authorized; v3.1.1: 4 or 5.
                #expect([0x86, 0x87, 4, 5].contains(error.reasonCode ?? -1), "\(error)")
            }
            bad.disconnect()
        }

        let anonymous = try MQTTClient(options: broker.options())
        await #expect(throws: MQTTError.self) { try await anonymous.connect() }
    }

    @Test func tlsWithTheTestCAConnects() async throws {
        let broker = try TestBroker(security: .tls)
        let certificates = try #require(broker.certificates)
        for host in ["127.0.0.1", "localhost"] {
            let probe = try await broker.connectedProbe {
                $0.host = host
                $0.tls = MQTTConnectOptions.TLS(caFile: certificates.caFile)
            }
            try probe.client.subscribe("tls/x")
            try probe.client.publish("tls/x", payload: Array("secret"))
            #expect(await probe.message(on: "tls/x")?.payload == Array("secret"))
        }
    }

    @Test func tlsWithAnotherCAIsRefused() async throws {
        let broker = try TestBroker(security: .tls)
        let stranger = try TestCertificates.make(in: broker.directory + "/stranger", caName: "Stranger CA")
        let client = try MQTTClient(
            options: broker.options { $0.tls = MQTTConnectOptions.TLS(caFile: stranger.caFile) })
        do {
            try await client.connect()
            Issue.record("a server certificate from an unknown CA must be refused")
        } catch {
            #expect(error.code == .tls || error.code == .tlsHandshake, "\(error)")
        }
        client.disconnect()

        // Without verification the same connection works (encryption only).
        let unverified = try await broker.connectedProbe {
            $0.tls = MQTTConnectOptions.TLS(caFile: stranger.caFile, verifyPeer: false)
        }
        #expect(unverified.client.isConnected)
    }

    @Test func mutualTLSNeedsTheClientCertificate() async throws {
        let broker = try TestBroker(security: .mutualTLS)
        let certificates = try #require(broker.certificates)
        let withCertificate = try await broker.connectedProbe {
            $0.tls = MQTTConnectOptions.TLS(caFile: certificates.caFile,
                                            certificateFile: certificates.clientCertificateFile,
                                            keyFile: certificates.clientKeyFile)
        }
        #expect(withCertificate.client.isConnected)

        let without = try MQTTClient(options: broker.options {
            $0.tls = MQTTConnectOptions.TLS(caFile: certificates.caFile)
        })
        await #expect(throws: MQTTError.self) { try await without.connect() }
        without.disconnect()
    }

    @Test func impossibleOptionsAreRejectedUpFront() {
        for options in [MQTTConnectOptions(host: ""), MQTTConnectOptions(port: 0), MQTTConnectOptions(port: 70_000),
                        MQTTConnectOptions(keepAlive: 2), MQTTConnectOptions(clientID: nil, cleanStart: false)] {
            #expect(throws: MQTTError.self) { _ = try MQTTClient(options: options) }
        }
        #expect(throws: Never.self) { _ = try MQTTClient(options: MQTTConnectOptions(keepAlive: 0)) }
    }

    @Test func unreadableTLSFilesAreRejectedUpFront() {
        do {
            _ = try MQTTClient(options: MQTTConnectOptions(tls: MQTTConnectOptions.TLS(caFile: "/nonexistent/ca.pem")))
            Issue.record("a missing CA file must be rejected")
        } catch {
            #expect(error.code == .invalidArgument)
            #expect(error.context.contains("/nonexistent/ca.pem"))
        }
    }
}

@Suite(.timeLimit(.minutes(2))) struct ProtocolFallbackTests {
    @Test func aBrokerRefusingV5GetsA311Connection() async throws {
        let broker = try TestBroker()
        let proxy = try V5RefusingProxy(upstreamPort: broker.port)
        let probe = try Probe(MQTTConnectOptions(host: proxy.host, port: proxy.port))
        let version = try await probe.client.connect()
        #expect(version == .v311)
        #expect(proxy.refusedV5Connections == 1)
        try probe.client.subscribe("fallback/x")
        try probe.client.publish("fallback/x", payload: Array("ok"))
        #expect(await probe.message(on: "fallback/x") != nil)
        #expect(!probe.events.all.contains {
            if case .connectionFailed = $0 { return true } else { return false }
        }, "the fallback is not reported as a failure")
    }

    @Test func withoutFallbackTheRefusalIsReported() async throws {
        let broker = try TestBroker()
        let proxy = try V5RefusingProxy(upstreamPort: broker.port)
        let client = try MQTTClient(options: MQTTConnectOptions(host: proxy.host, port: proxy.port,
                                                                allowsProtocolFallback: false))
        do {
            try await client.connect()
            Issue.record("the proxy refuses v5")
        } catch {
            #expect(error.code == .connectionRefused, "\(error)")
            // libmosquitto reports the v3.1.1 "unacceptable protocol version" as the v5 reason 0x84.
            #expect(error.reasonCode == 0x84 || error.reasonCode == 1, "\(error)")
            #expect(proxy.forwardedConnections == 0)
        }
        client.disconnect()
    }
}
