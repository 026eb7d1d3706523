// Commands and writes of clusters that answer later (a bridged device's): the Interaction Model checks first, hands
// the action over, and sends one response with every status in request order when the last action has finished —
// on the Interaction Model server, and on the exchange layer, where MRP acknowledges the request alone meanwhile.

@testable import HearthMatter
import HearthSync
import Testing

/// A deferred cluster whose actions wait until the test releases them: a writable level, a command with a response,
/// a timed command. Each release answers with what the action would answer.
final class HeldCluster: DeferredClusterServer {
    let id: ClusterID = 0xFFF1_FC01
    let revision: UInt16 = 1
    let attributes = [AttributeDefinition(0, "Level", [.writable])]
    let acceptedCommands = [
        CommandDefinition(0, "Toggle"),
        CommandDefinition(1, "Measure", response: 2),
        CommandDefinition(2, "Unlock", timed: true),
    ]
    let generatedCommands: [CommandID] = [2]
    let level = Locked<UInt8>(0)
    /// The actions started and not yet released, in start order.
    private let held = Locked<[@Sendable () -> Void]>([])
    /// What each started action was, for the test to check the context it got.
    let started = Locked<[(what: String, timed: Bool)]>([])

    var heldCount: Int { held.withLock { $0.count } }

    /// Finishes the action started `index`-th among those still held.
    func release(_ index: Int = 0) {
        let action = held.withLock { $0.remove(at: index) }
        action()
    }

    func read(_ attribute: AttributeID, context: ReadContext) throws(IMError) -> TLVValue {
        .uint(level.withLock { $0 })
    }

    func write(_ attribute: AttributeID, value: TLVValue, context: ActionContext,
               completion: @escaping @Sendable (IMError?) -> Void) {
        started.withLock { $0.append(("write", context.isTimed)) }
        held.withLock {
            $0.append { [self] in
                guard case .unsigned(let v) = value, v <= 100 else {
                    completion(IMError(.constraintError, "at most 100"))
                    return
                }
                self.level.withLock { $0 = UInt8(v) }
                completion(nil)
            }
        }
    }

    func invoke(_ command: CommandID, fields: TLVElement?, context: ActionContext,
                completion: @escaping @Sendable (Result<CommandResult, IMError>) -> Void) {
        started.withLock { $0.append(("invoke \(command)", context.isTimed)) }
        held.withLock {
            $0.append {
                switch command {
                case 1:
                    completion(
                        .success(.response(2, TLVElement(.structure([TLVElement(context: 0, .uint(UInt8(42)))])))))
                default: completion(.success(.success))
                }
            }
        }
    }
}

@Suite struct DeferredInteractionTests {
    let pase = SubjectDescriptor.pase()

    func fixtureWithClusters() throws -> (MatterNodeFixture, HeldCluster, ProbeCluster) {
        let fixture = try MatterNodeFixture()
        let held = HeldCluster(), probe = ProbeCluster()
        fixture.node.dataModel.addEndpoint(EndpointDefinition(id: 1, deviceTypes: [], clusters: [held, probe]))
        return (fixture, held, probe)
    }

    /// Waits for a deferred reply that the test makes ready by releasing actions.
    func answer(_ reply: IMReply, after release: () -> Void) throws -> IMReply {
        let deferred = try #require(reply.deferred, "expected a deferred reply, got \(reply)")
        #expect(reply.message == nil)
        #expect(!reply.closesExchange)
        let answer = Locked<IMReply?>(nil)
        deferred.whenReady { reply in answer.withLock { $0 = reply } }
        #expect(answer.withLock { $0 } == nil)
        release()
        let final = try #require(answer.withLock { $0 }, "the deferred reply never came")
        #expect(final.deferred == nil)
        return final
    }

    func invoke(_ command: CommandID, on cluster: ClusterID, timed: Bool = false) -> InvokeRequest {
        InvokeRequest(
            timedRequest: timed,
            invokeRequests: [
                CommandDataIB(
                    path: CommandPath(endpoint: 1, cluster: cluster, command: command),
                    fields: TLVElement(.structure([])))
            ])
    }

    @Test func aDeferredCommandIsAnsweredWhenItFinishes() throws {
        let (fixture, held, _) = try fixtureWithClusters()
        var exchange = IMExchangeState()
        let reply = fixture.send(.invokeRequest, invoke(1, on: held.id).encoded(), exchange: &exchange, as: pase)
        #expect(held.heldCount == 1)
        let final = try answer(reply) { held.release() }
        #expect(final.closesExchange)
        let response = try InvokeResponse(decoding: try #require(final.message).payload)
        #expect(response.invokeResponses == [.command(CommandDataIB(
            path: CommandPath(endpoint: 1, cluster: held.id, command: 2),
            fields: TLVElement(.structure([TLVElement(context: 0, .uint(UInt8(42)))]))))])
    }

    @Test func synchronousClustersStillAnswerAtOnce() throws {
        let (fixture, _, probe) = try fixtureWithClusters()
        var exchange = IMExchangeState()
        let reply = fixture.send(.invokeRequest, invoke(0, on: probe.id).encoded(), exchange: &exchange, as: pase)
        #expect(reply.deferred == nil)
        #expect(reply.closesExchange)
        #expect(reply.message?.opcode == .invokeResponse)
    }

    @Test func checksComeFirstAndRefuseAtOnce() throws {
        let (fixture, held, _) = try fixtureWithClusters()
        let index = try fixture.addFabric()
        _ = try fixture.completeCommissioning(fabric: index)
        // A CASE peer the ACL does not name.
        let stranger = SubjectDescriptor.caseSession(fabricIndex: index, node: 999)
        var exchange = IMExchangeState()
        let denied = fixture.send(.invokeRequest, invoke(0, on: held.id).encoded(), exchange: &exchange, as: stranger)
        #expect(denied.deferred == nil)
        let response = try InvokeResponse(decoding: try #require(denied.message).payload)
        guard case .status(let status) = response.invokeResponses.first else {
            Issue.record("expected a status, got \(response)")
            return
        }
        #expect(status.status.status == .unsupportedAccess)
        // An unknown command and an untimed timed command never reach the cluster either.
        #expect(try fixture.invokeStatus(1, held.id, 9, as: pase) == .unsupportedCommand)
        #expect(try fixture.invokeStatus(1, held.id, 2, as: pase) == .needsTimedInteraction)
        let level = AttributePath(endpoint: 1, cluster: held.id, attribute: 0)
        #expect(try fixture.write([AttributeDataIB(dataVersion: 1, path: level, data: .uint(UInt8(1)))], as: pase)
            == [.dataVersionMismatch])
        #expect(held.started.withLock { $0.isEmpty })
    }

    @Test func aTimedCommandOfADeferredClusterRunsTimed() throws {
        let (fixture, held, _) = try fixtureWithClusters()
        var exchange = IMExchangeState()
        _ = fixture.send(.timedRequest, TimedRequest(timeoutMilliseconds: 500).encoded(), exchange: &exchange, as: pase)
        fixture.clock.advance(.milliseconds(100))
        let reply = fixture.send(
            .invokeRequest, invoke(2, on: held.id, timed: true).encoded(), exchange: &exchange, as: pase)
        // The answer may come after the timed window: the window bounds the request, not the device.
        fixture.clock.advance(.seconds(5))
        let final = try answer(reply) { held.release() }
        let response = try InvokeResponse(decoding: try #require(final.message).payload)
        #expect(
            response.invokeResponses == [
                .status(
                    CommandStatusIB(
                        path: CommandPath(endpoint: 1, cluster: held.id, command: 2),
                        status: .success))
            ])
        #expect(held.started.withLock { $0.map(\.timed) } == [true])

        // A timed write to a deferred cluster, too.
        var writeExchange = IMExchangeState()
        _ = fixture.send(
            .timedRequest, TimedRequest(timeoutMilliseconds: 500).encoded(), exchange: &writeExchange, as: pase)
        let write = WriteRequest(
            timedRequest: true,
            writeRequests: [
                AttributeDataIB(
                    dataVersion: nil, path: AttributePath(endpoint: 1, cluster: held.id, attribute: 0),
                    data: .uint(UInt8(7)))
            ])
        let written = try answer(fixture.send(.writeRequest, write.encoded(), exchange: &writeExchange, as: pase)) {
            held.release()
        }
        #expect(
            try WriteResponse(decoding: try #require(written.message).payload).writeResponses.map(\.status.status) == [
                .success
            ])
        #expect(held.started.withLock { $0.map(\.timed) } == [true, true])
    }

    @Test func aWriteOfManyAttributesAnswersOnceInRequestOrder() throws {
        let (fixture, held, probe) = try fixtureWithClusters()
        let heldLevel = AttributePath(endpoint: 1, cluster: held.id, attribute: 0)
        let probeLevel = AttributePath(endpoint: 1, cluster: probe.id, attribute: 0)
        let heldVersion = fixture.node.dataModel.dataVersion(ConcreteClusterPath(endpoint: 1, cluster: held.id))
        let request = WriteRequest(writeRequests: [
            AttributeDataIB(dataVersion: nil, path: heldLevel, data: .uint(UInt8(10))),
            AttributeDataIB(dataVersion: nil, path: probeLevel, data: .uint(UInt8(20))),
            AttributeDataIB(dataVersion: nil, path: heldLevel, data: .uint(UInt8(200))),
            AttributeDataIB(
                dataVersion: nil, path: AttributePath(endpoint: 1, cluster: held.id, attribute: 9),
                data: .uint(UInt8(1)))
        ])
        var exchange = IMExchangeState()
        let reply = fixture.send(.writeRequest, request.encoded(), exchange: &exchange, as: pase)
        // The synchronous write is done already.
        #expect(probe.values.withLock { $0.level } == 20)
        #expect(held.heldCount == 2)
        // The deferred writes finish in the other order; the statuses stay in request order.
        let final = try answer(reply) {
            held.release(1)
            held.release(0)
        }
        #expect(final.closesExchange)
        let response = try WriteResponse(decoding: try #require(final.message).payload)
        #expect(response.writeResponses.map(\.path) == [heldLevel, probeLevel, heldLevel,
                                                        AttributePath(endpoint: 1, cluster: held.id, attribute: 9)])
        #expect(
            response.writeResponses.map(\.status.status) == [
                .success, .success, .constraintError, .unsupportedAttribute
            ])
        // A deferred write's success does not move the DataVersion: the cluster marks its change when the value moves.
        #expect(fixture.node.dataModel.dataVersion(ConcreteClusterPath(endpoint: 1, cluster: held.id)) == heldVersion)
    }

    @Test func aChunkedWriteAnswersEachChunkWhenItsWritesFinish() throws {
        let (fixture, held, probe) = try fixtureWithClusters()
        let heldLevel = AttributePath(endpoint: 1, cluster: held.id, attribute: 0)
        let probeLevel = AttributePath(endpoint: 1, cluster: probe.id, attribute: 0)
        var exchange = IMExchangeState()
        let first = fixture.send(.writeRequest, WriteRequest(writeRequests: [
            AttributeDataIB(dataVersion: nil, path: heldLevel, data: .uint(UInt8(3))),
        ], moreChunkedMessages: true).encoded(), exchange: &exchange, as: pase)
        let firstAnswer = try answer(first) { held.release() }
        #expect(!firstAnswer.closesExchange)
        #expect(
            try WriteResponse(decoding: try #require(firstAnswer.message).payload).writeResponses.map(\.status.status)
                == [.success])
        // The last chunk touches only a synchronous cluster: answered at once, and the exchange ends.
        let last = fixture.send(.writeRequest, WriteRequest(writeRequests: [
            AttributeDataIB(dataVersion: nil, path: probeLevel, data: .uint(UInt8(4))),
        ]).encoded(), exchange: &exchange, as: pase)
        #expect(last.deferred == nil)
        #expect(last.closesExchange)
        #expect(held.level.withLock { $0 } == 3)
        #expect(probe.values.withLock { $0.level } == 4)
    }

    @Test func aSuppressedResponseStillRunsTheAction() throws {
        let (fixture, held, _) = try fixtureWithClusters()
        var exchange = IMExchangeState()
        var request = invoke(0, on: held.id)
        request.suppressResponse = true
        let reply = fixture.send(.invokeRequest, request.encoded(), exchange: &exchange, as: pase)
        #expect(reply == IMReply(message: nil, closesExchange: true))
        #expect(held.heldCount == 1)
        held.release()
    }

    @Test func theGathererAnswersOnceWhateverTheOrder() {
        let gatherer = ResultGatherer<Int>()
        let a = gatherer.reserve(), b = gatherer.reserve()
        gatherer.add(3)
        gatherer.fill(b, 2)
        #expect(gatherer.seal() == nil)
        let heard = Locked<[[Int]]>([])
        gatherer.whenComplete { values in heard.withLock { $0.append(values) } }
        gatherer.fill(a, 1)
        gatherer.fill(a, 9)
        #expect(heard.withLock { $0 } == [[1, 2, 3]])
    }
}

@Suite struct DeferredExchangeTests {
    @Test func theRequestIsAcknowledgedAloneAndTheAnswerComesOnItsExchange() throws {
        let fixture = try MatterNodeFixture()
        let held = HeldCluster()
        fixture.node.dataModel.addEndpoint(EndpointDefinition(id: 1, deviceTypes: [], clusters: [held]))
        let transport = RecordingTransport()
        let manager = ExchangeManager(transport: transport, firstExchangeID: 100, jitter: { 0 })
        let session = SessionHandle(7)
        InteractionModelExchange.register(
            on: manager, core: fixture.node,
            subject: { $0 == session ? .pase() : nil }, now: { [clock = fixture.clock] in clock.now })
        let request = InvokeRequest(invokeRequests: [
            CommandDataIB(
                path: CommandPath(endpoint: 1, cluster: held.id, command: 0), fields: TLVElement(.structure([])))
        ]).encoded().encoded()
        let header = PayloadHeader(
            isInitiator: true, needsAcknowledgement: true, opcode: InteractionModelOpcode.invokeRequest.rawValue,
            exchangeID: 5, protocolID: .interactionModel)
        manager.receive(
            MatterMessage(header: MessageHeader(messageCounter: 1), payloadHeader: header, payload: request),
            from: session, isDuplicate: false, now: fixture.clock.now)
        #expect(transport.takeSent().isEmpty)
        // MRP's standalone acknowledgement goes when its timer is due, the answer still pending.
        fixture.clock.advance(.milliseconds(manager.parameters.standaloneAckTimeout))
        manager.fire(now: fixture.clock.now)
        let acks = transport.takeSent()
        try #require(acks.count == 1)
        #expect(acks[0].payloadHeader.opcode == SecureChannelOpcode.standaloneAck.rawValue)
        #expect(acks[0].payloadHeader.acknowledgedMessageCounter == 1)
        #expect(manager.isOpen(ExchangeKey(session: session, exchangeID: 5, role: .responder)))

        held.release()
        let sent = transport.takeSent()
        try #require(sent.count == 1)
        #expect(sent[0].payloadHeader.opcode == InteractionModelOpcode.invokeResponse.rawValue)
        #expect(sent[0].payloadHeader.exchangeID == 5)
        #expect(sent[0].payloadHeader.needsAcknowledgement)
        #expect(!manager.isOpen(ExchangeKey(session: session, exchangeID: 5, role: .responder)))
    }
}
