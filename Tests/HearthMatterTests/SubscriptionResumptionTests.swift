import HearthCrypto
@testable import HearthMatter
import Testing

/// Several subscribers at once, keepSubscriptions, keep-alives, and what a restart needs: the stored form, the priming
/// report of a resumed subscription, the back-off and CASE as the initiator.
@Suite struct SeveralSubscribersTests {
    static let subscribers: [NodeID] = [112233, 0x2222, 0x3333]

    /// A commissioned fixture whose fabric lets the three subscribers administer the node.
    static func fixture() throws -> (MatterNodeFixture, FabricIndex) {
        let fixture = try MatterNodeFixture()
        let index = try fixture.addFabric()
        _ = try fixture.completeCommissioning(fabric: index)
        let entry = TLVElement.structure {
            TLVElement(context: 1, .uint(UInt8(5)))
            TLVElement(context: 2, .uint(UInt8(2)))
            TLVElement.array(tag: .context(3)) { subscribers.map { TLVElement(.uint($0)) } }
            TLVElement(context: 4, .null)
        }
        let acl = AttributePath(endpoint: 0, cluster: 0x1F, attribute: 0)
        let statuses = try fixture.write([AttributeDataIB(dataVersion: nil, path: acl, data: .array([entry]))],
                                         as: .caseSession(fabricIndex: index, node: subscribers[0]))
        try #require(statuses == [.success])
        return (fixture, index)
    }

    /// Subscribes and answers the priming report; returns the subscription's id.
    static func subscribe(
        _ fixture: MatterNodeFixture, as subject: SubjectDescriptor, keep: Bool = true, max: UInt16 = 60
    )
        throws -> UInt32
    {
        var exchange = IMExchangeState()
        let request = SubscribeRequest(
            keepSubscriptions: keep, minIntervalFloorSeconds: 0, maxIntervalCeilingSeconds: max,
            attributeRequests: [AttributePath(endpoint: 0, cluster: 0x28, attribute: 5)])
        _ = fixture.send(.subscribeRequest, request.encoded(), exchange: &exchange, as: subject)
        let answer = fixture.send(.statusResponse, StatusResponse(.success).encoded(), exchange: &exchange, as: subject)
        return try SubscribeResponse(decoding: try #require(answer.message).payload).subscriptionID
    }

    @Test func threeSubscribersEachHearOfAChangeAndKeepSubscriptionsFalseDropsOnlyTheSubscribersOwn() throws {
        let (fixture, fabric) = try Self.fixture()
        let server = fixture.node.interactionModel
        let subjects = Self.subscribers.map { SubjectDescriptor.caseSession(fabricIndex: fabric, node: $0) }
        var ids: [UInt32] = []
        for subject in subjects { ids.append(try Self.subscribe(fixture, as: subject)) }
        // A second subscription of the first subscriber, kept beside its first.
        ids.append(try Self.subscribe(fixture, as: subjects[0]))
        #expect(server.subscriptions.map(\.id) == ids)

        #expect(server.takeSubscribersStartedAfresh().isEmpty)
        // The second subscriber starts afresh: only its own subscription goes.
        let fresh = try Self.subscribe(fixture, as: subjects[1], keep: false)
        // The node hears of it, to drop what it still holds for that subscriber (a subscription not yet resumed).
        #expect(server.takeSubscribersStartedAfresh() == [subjects[1]])
        #expect(server.takeSubscribersStartedAfresh().isEmpty)
        #expect(Set(server.subscriptions.map(\.id)) == Set([ids[0], ids[2], ids[3], fresh]))
        // The first subscriber starts afresh: both of its go, the others stay.
        let first = try Self.subscribe(fixture, as: subjects[0], keep: false)
        #expect(Set(server.subscriptions.map(\.id)) == Set([ids[2], fresh, first]))
        // A node of the same id on another fabric is another subscriber.
        let other = try fixture.addFabric(fabricID: 2, rootPublicKey: [0x04] + [UInt8](repeating: 2, count: 64))
        _ = try fixture.completeCommissioning(fabric: other)
        _ = try Self.subscribe(fixture, as: .caseSession(fabricIndex: other, node: Self.subscribers[0]), keep: false)
        #expect(server.subscriptions.count == 4)

        // A change reaches every subscriber.
        let label = AttributePath(endpoint: 0, cluster: 0x28, attribute: 5)
        #expect(
            try fixture.write([AttributeDataIB(dataVersion: nil, path: label, data: .utf8("Hall"))], as: subjects[0])
                == [.success])
        let due = server.reportsDue(now: fixture.clock.now)
        #expect(Set(due.map(\.subscriptionID)) == Set(server.subscriptions.map(\.id)))
        for report in due {
            let data = try ReportData(decoding: report.message.payload)
            #expect(data.subscriptionID == report.subscriptionID)
            #expect(
                data.attributeReports.contains { if case .data(let d) = $0 { d.data == .utf8("Hall") } else { false } })
        }
    }

    @Test func eachSubscriberIsKeptAliveAtItsOwnMaximumInterval() throws {
        let (fixture, fabric) = try Self.fixture()
        let server = fixture.node.interactionModel
        let start = fixture.clock.now
        var ids: [UInt32: Int64] = [:]
        for (subscriber, max) in zip(Self.subscribers, [UInt16(10), 20, 30]) {
            ids[try Self.subscribe(fixture, as: .caseSession(fabricIndex: fabric, node: subscriber), max: max)] = Int64(
                max)
        }
        #expect(server.nextKeepAliveDeadline == start + 10_000)
        var heard: [UInt32: [Int64]] = [:]
        for _ in 0..<60 {
            fixture.clock.advance(.seconds(1))
            for report in server.reportsDue(now: fixture.clock.now) {
                heard[report.subscriptionID, default: []].append(fixture.clock.now - start)
                #expect(try ReportData(decoding: report.message.payload).attributeReports.isEmpty)
                var exchange = report.exchange
                _ = fixture.node.receive(opcode: InteractionModelOpcode.statusResponse.rawValue,
                                         payload: StatusResponse(.success).encoded().encoded(), exchange: &exchange,
                                         subject: report.subject, now: fixture.clock.now)
            }
        }
        for (id, max) in ids {
            #expect(heard[id] == Array(stride(from: max * 1000, through: 60_000, by: Int(max * 1000))))
        }
    }
}

@Suite struct SubscriptionResumptionTests {
    static let stored = PersistedSubscription(
        id: 7, fabricIndex: 1, subscriberNodeID: 112233, cats: [0x0001_0001],
        paths: [AttributePath(endpoint: 0, cluster: 0x28, attribute: 5), AttributePath(endpoint: 1)],
        eventPaths: [EventPath(endpoint: 0, cluster: 0x28, event: 0, isUrgent: true)], isFabricFiltered: true,
        minIntervalSeconds: 1, maxIntervalSeconds: 60, peerHost: "fe80::2", peerPort: 5541, peerScopeID: 3)

    @Test func theStoredFormReadsBackAndABadOneIsAnError() throws {
        let other = PersistedSubscription(
            id: 8, fabricIndex: 2, subscriberNodeID: 9, cats: [], paths: [], eventPaths: [], isFabricFiltered: false,
            minIntervalSeconds: 0, maxIntervalSeconds: 1, peerHost: "127.0.0.1", peerPort: 1)
        let bytes = PersistedSubscription.encode([Self.stored, other])
        #expect(try PersistedSubscription.decode(bytes) == [Self.stored, other])
        #expect(try PersistedSubscription.decode(PersistedSubscription.encode([])) == [])
        // Truncated, not an array, an id twice, a fabric 0, a maximum below the minimum: each an error, no partial
        // list.
        var zeroFabric = other
        zeroFabric.fabricIndex = 0
        var inverted = other
        inverted.minIntervalSeconds = 5
        for bad in [Array(bytes.dropLast(3)), TLVElement(.uint(UInt8(1))).encoded(),
                    PersistedSubscription.encode([other, other]), PersistedSubscription.encode([zeroFabric]),
                    PersistedSubscription.encode([inverted])] {
            #expect(throws: StorageError.self) { try PersistedSubscription.decode(bad) }
        }
    }

    @Test func theStoreWritesOnlyWhatChanged() throws {
        let storage = InMemoryNodeStorage()
        let store = SubscriptionStore(storage: storage)
        #expect(try store.load() == [])
        try store.save([Self.stored])
        #expect(try SubscriptionStore(storage: storage).load() == [Self.stored])
        try storage.remove(.subscriptions)
        try store.save([Self.stored])
        // Unchanged: not written again.
        #expect(try storage.load(.subscriptions) == nil)
    }

    @Test func aResumedSubscriptionPrimesUnderItsOldIDAndReportsOnFromThere() throws {
        let fixture = try MatterNodeFixture()
        let fabric = try fixture.addFabric()
        _ = try fixture.completeCommissioning(fabric: fabric)
        var stored = Self.stored
        stored.fabricIndex = fabric
        stored.cats = []
        let server = fixture.node.interactionModel
        server.reserveSubscriptionID(stored.id)
        let priming = try #require(server.resume(stored, now: fixture.clock.now))
        #expect(server.resume(stored, now: fixture.clock.now) == nil)
        #expect(priming.subscriptionID == 7)
        #expect(priming.expectsResponse)
        let report = try ReportData(decoding: priming.message.payload)
        #expect(report.subscriptionID == 7)
        #expect(!report.suppressResponse)
        #expect(report.attributeReports.contains {
            if case .data(let d) = $0 { d.path.cluster == 0x28 && d.path.attribute == 5 } else { false }
        })
        // Nothing more goes until the subscriber answers the priming report.
        fixture.clock.advance(.seconds(120))
        #expect(server.reportsDue(now: fixture.clock.now).isEmpty)
        var exchange = priming.exchange
        let answer = fixture.node.receive(opcode: InteractionModelOpcode.statusResponse.rawValue,
                                          payload: StatusResponse(.success).encoded().encoded(), exchange: &exchange,
                                          subject: stored.subject, now: fixture.clock.now)
        #expect(answer == IMReply(message: nil, closesExchange: true))
        #expect(server.subscriptions.first?.isReportInFlight == false)
        // New subscriptions take ids above the resumed one.
        let next = try SeveralSubscribersTests.subscribe(fixture, as: .caseSession(fabricIndex: fabric, node: 112233))
        #expect(next == 8)
    }

    @Test func theBackOffDoublesUpToItsCeiling() {
        let backoff = SubscriptionResumptionBackoff(first: 2_000, ceiling: 30_000)
        #expect(
            (0...7).map { backoff.delay(afterFailures: $0) } == [0, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000]
        )
        #expect(SubscriptionResumptionBackoff().delay(afterFailures: 1_000) == 300_000)
    }
}

@Suite struct CASEInitiatorTests {
    static let hubNodeID: UInt64 = 0x1111
    static let controllerNodeID: UInt64 = 0x2222

    struct Pair {
        var hub: OperationalIdentity
        var hubResumptions = InMemoryCASEResumptionStore()
        var controller: CASEResponder
        var controllerResumptions: InMemoryCASEResumptionStore
    }

    static func pair(withICAC: Bool = false) throws -> Pair {
        let fabric = try TestFabric(fabricID: 0xFAB1, withICAC: withICAC)
        let hub = try fabric.identity(fabricIndex: 1, nodeID: hubNodeID, key: try P256.SigningKey())
        let controller = try fabric.identity(fabricIndex: 3, nodeID: controllerNodeID, key: try P256.SigningKey())
        let resumptions = InMemoryCASEResumptionStore()
        return Pair(
            hub: hub,
            controller: CASEResponder(
                identities: FixedIdentities(identities: [controller]), resumptions: resumptions,
                sessionIDs: { 0x0202 }, now: { nil }),
            controllerResumptions: resumptions)
    }

    /// Runs the initiator against the responder to the end; returns both sides' sessions.
    static func run(_ pair: inout Pair, peer: UInt64 = controllerNodeID) throws
        -> (initiator: EstablishedSession?, responder: EstablishedSession?, failure: SessionEstablishmentError?)
    {
        var initiator = CASEInitiator(identity: pair.hub, peerNodeID: peer, localSessionID: 0x0101,
                                      resumption: pair.hubResumptions.record(fabricIndex: 1, peerNodeID: peer),
                                      resumptions: pair.hubResumptions, now: { nil })
        var toResponder = try initiator.start()
        var responderSession: EstablishedSession?
        for _ in 0..<4 {
            let answer = pair.controller.receive(opcode: toResponder.opcode.rawValue, payload: toResponder.payload)
            responderSession = responderSession ?? answer.established
            guard let reply = answer.reply else { return (nil, responderSession, answer.failure) }
            let step = initiator.receive(opcode: reply.opcode.rawValue, payload: reply.payload)
            if let established = step.established {
                if let last = step.reply {
                    responderSession =
                        pair.controller.receive(opcode: last.opcode.rawValue, payload: last.payload).established
                }
                return (established, responderSession, nil)
            }
            guard let next = step.reply, step.failure == nil else { return (nil, responderSession, step.failure) }
            toResponder = next
        }
        return (nil, responderSession, nil)
    }

    @Test(arguments: [false, true])
    func fullCASEGivesBothSidesTheSameKeys(withICAC: Bool) throws {
        var pair = try Self.pair(withICAC: withICAC)
        let (initiator, responder, failure) = try Self.run(&pair)
        #expect(failure == nil)
        let mine = try #require(initiator)
        let theirs = try #require(responder)
        #expect(!mine.resumed)
        #expect(mine.keys == theirs.keys)
        #expect(mine.localSessionID == 0x0101 && mine.peerSessionID == 0x0202)
        #expect(theirs.peerSessionID == 0x0101)
        #expect(mine.kind == .case(fabricIndex: 1, peerNodeID: Self.controllerNodeID, peerCASEAuthenticatedTags: []))
        #expect(theirs.kind == .case(fabricIndex: 3, peerNodeID: Self.hubNodeID, peerCASEAuthenticatedTags: []))
        // Both sides keep the same resumption id.
        let record = try #require(pair.hubResumptions.record(fabricIndex: 1, peerNodeID: Self.controllerNodeID))
        #expect(pair.controllerResumptions.record(resumptionID: record.resumptionID) != nil)
    }

    @Test func aSecondSessionResumesTheFirst() throws {
        var pair = try Self.pair()
        _ = try Self.run(&pair)
        let before = try #require(pair.hubResumptions.record(fabricIndex: 1, peerNodeID: Self.controllerNodeID))
        let (initiator, responder, failure) = try Self.run(&pair)
        #expect(failure == nil)
        let mine = try #require(initiator)
        let theirs = try #require(responder)
        #expect(mine.resumed && theirs.resumed)
        #expect(mine.keys == theirs.keys)
        let after = try #require(pair.hubResumptions.record(fabricIndex: 1, peerNodeID: Self.controllerNodeID))
        #expect(after.resumptionID != before.resumptionID)
        #expect(after.sharedSecret == before.sharedSecret)
    }

    @Test func aResponderThatForgotTheRecordGetsAFullCASE() throws {
        var pair = try Self.pair()
        _ = try Self.run(&pair)
        pair.controllerResumptions.removeFabric(3)
        let (initiator, responder, failure) = try Self.run(&pair)
        #expect(failure == nil)
        #expect(initiator?.resumed == false)
        #expect(initiator?.keys == responder?.keys)
    }

    @Test func aResponderThatIsNotTheNodeAskedForIsRefused() throws {
        var pair = try Self.pair()
        // The destination id names a node the responder is not: it has no shared root for it.
        let (initiator, _, failure) = try Self.run(&pair, peer: 0x9999)
        #expect(initiator == nil)
        #expect(failure == .peerReported(.noSharedTrustRoots))
    }

    @Test func aBusyResponderSaysHowLongToWait() throws {
        var pair = try Self.pair()
        var first = CASEInitiator(
            identity: pair.hub, peerNodeID: Self.controllerNodeID, localSessionID: 1, resumption: nil,
            resumptions: pair.hubResumptions, now: { nil })
        let sigma1 = try first.start()
        _ = pair.controller.receive(opcode: sigma1.opcode.rawValue, payload: sigma1.payload)
        // A second Sigma1 while the first is under way is answered BUSY, with the wait the responder asks for.
        var second = CASEInitiator(
            identity: pair.hub, peerNodeID: Self.controllerNodeID, localSessionID: 2, resumption: nil,
            resumptions: pair.hubResumptions, now: { nil })
        let again = try second.start()
        let busy = try #require(pair.controller.receive(opcode: again.opcode.rawValue, payload: again.payload).reply)
        let step = second.receive(opcode: busy.opcode.rawValue, payload: busy.payload)
        #expect(step.reply == nil)
        #expect(step.failure?.busyWaitMilliseconds == Int64(StatusReport.busyWaitMilliseconds))
        #expect(SessionEstablishmentError.peerReported(.busy(waitMilliseconds: 1234)).busyWaitMilliseconds == 1234)
        #expect(SessionEstablishmentError.peerReported(.invalidParameter).busyWaitMilliseconds == nil)
        #expect(SessionEstablishmentError.noSharedTrustRoots.busyWaitMilliseconds == nil)
    }

    @Test func badResponderMessagesEndTheAttemptWithoutCrashing() throws {
        let pair = try Self.pair()
        for (opcode, payload) in [
            (UInt8(0x31), [UInt8]()), (0x31, [0x15, 0x18]), (0x33, [0x15, 0x30, 0x01, 0x00, 0x18]),
            (0x40, [1, 2]), (0x20, [])
        ] {
            var initiator = CASEInitiator(identity: pair.hub, peerNodeID: Self.controllerNodeID, localSessionID: 1,
                                          resumption: nil, resumptions: pair.hubResumptions, now: { nil })
            _ = try initiator.start()
            let step = initiator.receive(opcode: opcode, payload: payload)
            #expect(step.established == nil)
            #expect(step.failure != nil)
            // Over: a further message is not taken.
            #expect(initiator.receive(opcode: 0x31, payload: payload).established == nil)
        }
    }
}
