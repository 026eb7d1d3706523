// A `MatterNode` over real UDP on loopback, as a controller sees it: a deferred command answered late on its own
// exchange (acknowledged alone meanwhile), and subscription reports the node sends on exchanges it opens to the
// subscriber's CASE session. The CASE session is installed on both ends with keys the test chooses (CASE itself is
// tested on its own), so that the node's fabric can use the fixture's stand-in credentials.

import HearthCrypto
@testable import HearthMatter
import HearthSync
import HearthTestKit
import NIOCore
import NIOPosix
import Testing

/// A subscriber's side of the Interaction Model: records every message and answers each ReportData that asks for it
/// with `status`; a report exchange ends with the answer to its last chunk.
final class SubscriberHandler: ExchangeHandler, @unchecked Sendable {
    let messages = Locked<[MatterMessage]>([])
    let status: IMStatusCode

    init(status: IMStatusCode = .success) { self.status = status }

    var reports: [ReportData] {
        messages.withLock { $0 }.filter { $0.payloadHeader.opcode == InteractionModelOpcode.reportData.rawValue }
            .compactMap { try? ReportData(decoding: $0.payload) }
    }

    var subscribeResponse: SubscribeResponse? {
        messages.withLock { $0 }.first { $0.payloadHeader.opcode == InteractionModelOpcode.subscribeResponse.rawValue }
            .flatMap { try? SubscribeResponse(decoding: $0.payload) }
    }

    func exchange(_ exchange: ExchangeKey, received message: MatterMessage, manager: ExchangeManager) {
        messages.withLock { $0.append(message) }
        if message.payloadHeader.opcode == InteractionModelOpcode.subscribeResponse.rawValue {
            manager.close(exchange, now: manager.now)
            return
        }
        guard message.payloadHeader.opcode == InteractionModelOpcode.reportData.rawValue,
              let report = try? ReportData(decoding: message.payload), !report.suppressResponse else { return }
        try? manager.send(
            on: exchange, protocolID: .interactionModel, opcode: InteractionModelOpcode.statusResponse.rawValue,
            payload: StatusResponse(status).encoded().encoded(), now: manager.now)
    }

    func exchange(_ exchange: ExchangeKey, failed error: ExchangeError, manager: ExchangeManager) {}
}

/// Log lines a node wrote.
final class LogLines: Sendable {
    private let lines = Locked<[String]>([])
    func append(_ line: String) { lines.withLock { $0.append(line) } }
    func contains(_ text: String) -> Bool { lines.withLock { $0.contains { $0.contains(text) } } }
}

/// A node on loopback and a controller's message layer that talks to it over a secure session installed on both.
struct NodeOverUDP {
    let group: MultiThreadedEventLoopGroup
    let fixture: MatterNodeFixture
    let node: MatterNode
    let controller: MatterUDPTransport
    let nodeAddress: SocketAddress
    let logs: LogLines

    static func start(deferredAnswerTimeout: Int64 = 30_000) async throws -> NodeOverUDP {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let fixture = try MatterNodeFixture()
        var options = try MatterNodeOptions.loopback()
        options.deferredAnswerTimeout = deferredAnswerTimeout
        let logs = LogLines()
        let node = MatterNode(core: fixture.node, options: options, eventLoop: group.next(), log: { logs.append($0) })
        try await node.start()
        let nodeAddress = try #require(await node.localAddresses.first)
        let controller = MatterUDPTransport(eventLoop: group.next(), cipher: AESCCMMessageCipher())
        try await controller.start(addresses: [try SocketAddress(ipAddress: "127.0.0.1", port: 0)])
        return NodeOverUDP(
            group: group, fixture: fixture, node: node, controller: controller, nodeAddress: nodeAddress, logs: logs)
    }

    /// Installs a session on the node (PASE, or CASE as `peer` on `fabric`) and its counterpart on the controller;
    /// returns the controller's handle.
    func session(case peer: (fabric: FabricIndex, node: NodeID)?, localSessionID: UInt16 = 0x0101,
                 controllerSessionID: UInt16 = 0x4242) async throws -> SessionHandle {
        let keys = try SessionKeys(secret: [UInt8](repeating: 0x33, count: 32), salt: [], info: "SessionKeys")
        let kind: EstablishedSession.Kind =
            peer.map { .case(fabricIndex: $0.fabric, peerNodeID: $0.node, peerCASEAuthenticatedTags: []) }
            ?? .pase
        let established = EstablishedSession(
            kind: kind, localSessionID: localSessionID, peerSessionID: controllerSessionID,
            keys: keys, peerParameters: nil, resumed: false)
        let controllerAddress = try #require(await controller.localAddresses.first)
        try await node.transport.eventLoop.submit { [node] in node.install(established, peer: controllerAddress) }.get()
        let nodeID =
            peer.flatMap { peer in fixture.node.commissioning.fabrics.first { $0.index == peer.fabric }?.identity.nodeID
            } ?? 0
        let nodeAddress = self.nodeAddress
        let handle = try await controller.withMessageLayer { layer in
            layer.addSecureSession(
                SecureSessionParameters(
                    localSessionID: controllerSessionID, peerSessionID: localSessionID,
                    encryptionKey: keys.initiatorToResponder,
                    decryptionKey: keys.responderToInitiator, localNodeID: peer?.node ?? 0, peerNodeID: nodeID,
                    peerAddress: nodeAddress))
        }
        return try #require(handle)
    }

    /// Adds a cluster whose commands the device holds until released (on endpoint 1), and invokes its `command` over
    /// a PASE session; returns the cluster, the session and the recorder of the request's exchange.
    func invokeHeldCommand(_ command: CommandID) async throws
        -> (held: HeldCluster, session: SessionHandle, recorder: MessageRecorder)
    {
        let held = HeldCluster()
        fixture.node.dataModel.addEndpoint(EndpointDefinition(id: 1, deviceTypes: [], clusters: [held]))
        let invoke = InvokeRequest(invokeRequests: [
            CommandDataIB(
                path: CommandPath(endpoint: 1, cluster: held.id, command: command), fields: TLVElement(.structure([])))
        ])
        let session = try await session(case: nil)
        let recorder = try await request(.invokeRequest, invoke.encoded(), on: session)
        return (held, session, recorder)
    }

    /// Sends one Interaction Model request on a new exchange of `session`; returns the recorder of the exchange.
    func request(_ opcode: InteractionModelOpcode, _ element: TLVElement, on session: SessionHandle) async throws
        -> MessageRecorder
    {
        let recorder = MessageRecorder()
        try await controller.withMessageLayer { layer in
            let exchange = layer.exchanges.openExchange(on: session, handler: recorder)
            try layer.exchanges.send(on: exchange, protocolID: .interactionModel, opcode: opcode.rawValue,
                                     payload: element.encoded(), now: layer.exchanges.now)
        }
        return recorder
    }

    /// Commissions the fixture's node onto a fabric, installs a CASE session with its administrator (node 112233)
    /// and serves the reports the node sends on it with `subscriber`; returns the controller's session.
    func caseSessionWithSubscriber(_ subscriber: SubscriberHandler) async throws -> (
        session: SessionHandle, fabric: FabricIndex
    ) {
        let index = try fixture.addFabric()
        _ = try fixture.completeCommissioning(fabric: index)
        let session = try await session(case: (index, 112233))
        try await controller.withMessageLayer { layer in
            layer.exchanges.registerUnsolicitedHandler(for: .interactionModel) { _ in subscriber }
        }
        return (session, index)
    }

    /// Subscribes on `session`; returns the subscription id once the SubscribeResponse came.
    func subscribe(_ request: SubscribeRequest, on session: SessionHandle) async throws -> SubscribeResponse {
        let priming = SubscriberHandler()
        try await controller.withMessageLayer { layer in
            let exchange = layer.exchanges.openExchange(on: session, handler: priming)
            try layer.exchanges.send(on: exchange, protocolID: .interactionModel,
                                     opcode: InteractionModelOpcode.subscribeRequest.rawValue,
                                     payload: request.encoded().encoded(), now: layer.exchanges.now)
        }
        #expect(await eventually(within: .seconds(20)) { priming.subscribeResponse != nil })
        return try #require(priming.subscribeResponse)
    }

    func stop() async throws {
        try await controller.stop()
        await node.stop()
        try await group.shutdownGracefully()
    }
}

@Suite(.serialized) struct MatterNodeReportingTests {
    @Test(.timeLimit(.minutes(1)))
    func aDeferredCommandIsAcknowledgedAloneThenAnsweredOnItsExchange() async throws {
        let harness = try await NodeOverUDP.start()
        let (held, _, recorder) = try await harness.invokeHeldCommand(1)
        #expect(await eventually(within: .seconds(20)) { held.heldCount == 1 })
        // The node acknowledges the request alone: the controller stops retransmitting, with nothing answered yet.
        #expect(await eventually(within: .seconds(20)) {
            (try? await harness.controller.withMessageLayer { $0.exchanges.nextDeadline == nil }) ?? false
        })
        #expect(recorder.count == 0)
        // The device finishes on another thread; the answer comes on the request's exchange.
        await Task.detached { held.release() }.value
        #expect(await eventually(within: .seconds(20)) { recorder.count == 1 })
        let answer = recorder.message(0)
        #expect(answer.payloadHeader.opcode == InteractionModelOpcode.invokeResponse.rawValue)
        let response = try InvokeResponse(decoding: answer.payload)
        guard case .command(let data) = response.invokeResponses.first else {
            Issue.record("expected a response command, got \(response)")
            return
        }
        #expect(data.fields?[context: 0]?.unsignedValue == 42)
        try await harness.stop()
    }

    @Test(.timeLimit(.minutes(1)))
    func aLateAnswerWhoseSessionIsGoneIsDropped() async throws {
        let harness = try await NodeOverUDP.start()
        let (held, session, recorder) = try await harness.invokeHeldCommand(0)
        #expect(await eventually(within: .seconds(20)) { held.heldCount == 1 })
        // The controller closes the session before the device finishes.
        let close = StatusReport(.success, .closeSession)
        try await harness.controller.withMessageLayer { layer in
            let exchange = layer.exchanges.openExchange(on: session, handler: MessageRecorder())
            try layer.exchanges.send(
                on: exchange, protocolID: .secureChannel, opcode: SecureChannelOpcode.statusReport.rawValue,
                payload: close.encoded(), reliable: false, now: layer.exchanges.now)
        }
        #expect(await eventually(within: .seconds(20)) {
            (try? await harness.node.transport.eventLoop.submit { harness.node.sessionCount }.get()) == 0
        })
        held.release()
        #expect(await eventually(within: .seconds(20)) {
            harness.logs.contains("late answer")
        })
        #expect(recorder.count == 0)
        try await harness.stop()
    }

    @Test(.timeLimit(.minutes(1)))
    func aDeviceThatNeverAnswersGetsTheRequestAnsweredTimeout() async throws {
        let harness = try await NodeOverUDP.start(deferredAnswerTimeout: 300)
        let (held, _, recorder) = try await harness.invokeHeldCommand(0)
        #expect(await eventually(within: .seconds(20)) { recorder.count == 1 })
        let answer = recorder.message(0)
        #expect(answer.payloadHeader.opcode == InteractionModelOpcode.statusResponse.rawValue)
        #expect(try StatusResponse(decoding: answer.payload).status == .timeout)
        // The device finishes after all: its answer has no exchange to go on.
        held.release()
        #expect(await eventually(within: .seconds(20)) { harness.logs.contains("late answer") })
        #expect(recorder.count == 1)
        try await harness.stop()
    }

    static let nodeLabel = AttributePath(endpoint: 0, cluster: 0x28, attribute: 5)

    @Test(.timeLimit(.minutes(1)))
    func changesAndEventsAreReportedToTheSubscriber() async throws {
        let harness = try await NodeOverUDP.start()
        let subscriber = SubscriberHandler()
        let (session, fabric) = try await harness.caseSessionWithSubscriber(subscriber)
        let admin = SubjectDescriptor.caseSession(fabricIndex: fabric, node: 112233)
        let cluster = EventfulCluster()
        harness.fixture.node.dataModel.addEndpoint(EndpointDefinition(id: 1, deviceTypes: [], clusters: [cluster]))
        let subscribed = try await harness.subscribe(SubscribeRequest(
            minIntervalFloorSeconds: 0, maxIntervalCeilingSeconds: 120, attributeRequests: [Self.nodeLabel],
            eventRequests: [EventPath(endpoint: 1)]), on: session)
        #expect(subscribed.maxIntervalSeconds == 120)

        // An attribute changes (here through a write; a bridge's clusters call markChanged): the node reports it.
        #expect(
            try harness.fixture.write(
                [AttributeDataIB(dataVersion: nil, path: Self.nodeLabel, data: .utf8("Hall"))], as: admin)
                == [.success])
        #expect(await eventually(within: .seconds(20)) {
            subscriber.reports.contains { $0.attributeReports.contains { report in
                if case .data(let data) = report { data.data == .utf8("Hall") } else { false }
            } }
        })
        #expect(subscriber.reports.allSatisfy { $0.subscriptionID == subscribed.subscriptionID })

        // An event, emitted on another thread.
        let number = await Task.detached {
            harness.fixture.node.dataModel.emitEvent(
                ConcreteEventPath(endpoint: 1, cluster: cluster.id, event: 0), priority: .info,
                data: EventTests.pressed(7))
        }.value
        #expect(await eventually(within: .seconds(20)) {
            subscriber.reports.contains { EventTests.data($0.eventReports).map(\.eventNumber) == [number] }
        })
        // The subscriber answered every report; the subscription lives on.
        #expect(harness.fixture.node.interactionModel.subscriptions.map(\.id) == [subscribed.subscriptionID])
        try await harness.stop()
    }

    @Test(.timeLimit(.minutes(1)))
    func silenceIsBrokenByKeepAlivesAtTheMaximumInterval() async throws {
        let harness = try await NodeOverUDP.start()
        let subscriber = SubscriberHandler()
        let (session, _) = try await harness.caseSessionWithSubscriber(subscriber)
        let subscribed = try await harness.subscribe(SubscribeRequest(
            minIntervalFloorSeconds: 0, maxIntervalCeilingSeconds: 1, attributeRequests: [Self.nodeLabel]), on: session)
        #expect(subscribed.maxIntervalSeconds == 1)
        #expect(await eventually(within: .seconds(20)) { subscriber.reports.count >= 2 })
        let keepAlive = try #require(subscriber.reports.first)
        #expect(keepAlive.attributeReports.isEmpty && keepAlive.eventReports.isEmpty)
        #expect(keepAlive.subscriptionID == subscribed.subscriptionID)
        #expect(!keepAlive.suppressResponse)
        try await harness.stop()
    }

    @Test(.timeLimit(.minutes(1)))
    func aSubscriberThatRefusesAReportEndsItsSubscription() async throws {
        let harness = try await NodeOverUDP.start()
        let subscriber = SubscriberHandler(status: .invalidSubscription)
        let (session, _) = try await harness.caseSessionWithSubscriber(subscriber)
        _ = try await harness.subscribe(
            SubscribeRequest(
                minIntervalFloorSeconds: 0, maxIntervalCeilingSeconds: 60, attributeRequests: [Self.nodeLabel]),
            on: session)
        harness.fixture.node.dataModel.markChanged(ConcreteClusterPath(endpoint: 0, cluster: 0x28))
        #expect(await eventually(within: .seconds(20)) { subscriber.reports.count == 1 })
        #expect(await eventually(within: .seconds(20)) { harness.fixture.node.interactionModel.subscriptions.isEmpty })
        try await harness.stop()
    }

    @Test(.timeLimit(.minutes(1)))
    func aSubscriptionWithoutASessionToReportOnIsDropped() async throws {
        let harness = try await NodeOverUDP.start()
        let subscriber = SubscriberHandler()
        let (session, _) = try await harness.caseSessionWithSubscriber(subscriber)
        _ = try await harness.subscribe(
            SubscribeRequest(
                minIntervalFloorSeconds: 0, maxIntervalCeilingSeconds: 60, attributeRequests: [Self.nodeLabel]),
            on: session)
        // The controller closes its session.
        try await harness.controller.withMessageLayer { layer in
            let exchange = layer.exchanges.openExchange(on: session, handler: MessageRecorder())
            try layer.exchanges.send(
                on: exchange, protocolID: .secureChannel, opcode: SecureChannelOpcode.statusReport.rawValue,
                payload: StatusReport(.success, .closeSession).encoded(), reliable: false,
                now: layer.exchanges.now)
        }
        #expect(await eventually(within: .seconds(20)) {
            (try? await harness.node.transport.eventLoop.submit { harness.node.sessionCount }.get()) == 0
        })
        harness.fixture.node.dataModel.markChanged(ConcreteClusterPath(endpoint: 0, cluster: 0x28))
        #expect(await eventually(within: .seconds(20)) { harness.fixture.node.interactionModel.subscriptions.isEmpty })
        #expect(harness.logs.contains("no CASE session"))
        #expect(subscriber.reports.isEmpty)
        try await harness.stop()
    }

    @Test(.timeLimit(.minutes(1)))
    func aSubscriberThatStopsAnsweringLosesItsSubscriptionWhenMRPGivesUp() async throws {
        let harness = try await NodeOverUDP.start()
        let subscriber = SubscriberHandler()
        let (session, _) = try await harness.caseSessionWithSubscriber(subscriber)
        _ = try await harness.subscribe(
            SubscribeRequest(
                minIntervalFloorSeconds: 0, maxIntervalCeilingSeconds: 60, attributeRequests: [Self.nodeLabel]),
            on: session)
        // The controller goes away without a word.
        try await harness.controller.stop()
        harness.fixture.node.dataModel.markChanged(ConcreteClusterPath(endpoint: 0, cluster: 0x28))
        #expect(await eventually(within: .seconds(40)) { harness.fixture.node.interactionModel.subscriptions.isEmpty })
        #expect(harness.logs.contains("did not acknowledge"))
        await harness.node.stop()
        try await harness.group.shutdownGracefully()
    }
}
