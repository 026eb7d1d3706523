// Events: the blocks' exact tags, the log's bounded buffers by priority, event numbers that never go back across a
// restart, reads with wildcards, EventMin and access checks, chunking with attributes under the MTU, and
// subscriptions that report each new event once (urgent ones without waiting for the minimum interval).

@testable import HearthMatter
import HearthSync
import Testing

/// A cluster with events for tests: a switch's press (info), a debug trace, and an alarm only administrators see.
final class EventfulCluster: ClusterServer {
    let id: ClusterID = 0xFFF1_FC02
    let revision: UInt16 = 1
    let attributes = [AttributeDefinition(0, "Presses")]
    let events = [
        EventDefinition(0, "Pressed"),
        EventDefinition(1, "Trace", priority: .debug),
        EventDefinition(2, "Alarm", priority: .critical, read: .administer),
    ]

    func read(_ attribute: AttributeID, context: ReadContext) throws(IMError) -> TLVValue { .uint(UInt8(0)) }
}

@Suite struct EventTests {
    let pase = SubjectDescriptor.pase()

    static func pressed(_ n: UInt8) -> TLVElement { .structure { TLVElement(context: 0, .uint(n)) } }

    func fixtureWithEvents() throws -> (MatterNodeFixture, EventfulCluster) {
        let fixture = try MatterNodeFixture()
        let cluster = EventfulCluster()
        fixture.node.dataModel.addEndpoint(EndpointDefinition(id: 1, deviceTypes: [], clusters: [cluster]))
        return (fixture, cluster)
    }

    func path(_ event: EventID, endpoint: EndpointID = 1, cluster: ClusterID = 0xFFF1_FC02) -> ConcreteEventPath {
        ConcreteEventPath(endpoint: endpoint, cluster: cluster, event: event)
    }

    /// Reads events (and attributes), following chunks; returns the event reports and each message's size.
    func readEvents(
        _ fixture: MatterNodeFixture, _ paths: [EventPath], eventMin: UInt64? = nil,
        attributes: [AttributePath] = [], as subject: SubjectDescriptor
    ) throws -> (events: [EventReportIB], sizes: [Int]) {
        var exchange = IMExchangeState()
        let request = ReadRequest(attributeRequests: attributes, eventRequests: paths,
                                  eventFilters: eventMin.map { [EventFilter(eventMin: $0)] } ?? [])
        var reply = fixture.send(.readRequest, request.encoded(), exchange: &exchange, as: subject)
        var events: [EventReportIB] = [], sizes: [Int] = []
        for _ in 0..<100 {
            let message = try #require(reply.message)
            try #require(message.opcode == .reportData, "expected ReportData, got \(message.opcode)")
            let report = try ReportData(decoding: message.payload)
            events += report.eventReports
            sizes.append(message.payload.count)
            if !report.moreChunkedMessages { return (events, sizes) }
            reply = fixture.send(.statusResponse, StatusResponse(.success).encoded(), exchange: &exchange, as: subject)
        }
        Issue.record("the read did not end in 100 chunks")
        return (events, sizes)
    }

    static func data(_ reports: [EventReportIB]) -> [EventDataIB] {
        reports.compactMap { if case .data(let d) = $0 { d } else { nil } }
    }

    @Test func theBlocksHaveTheSpecificationsTags() throws {
        // EventPathIB is a list {0 node, 1 endpoint, 2 cluster, 3 event, 4 urgent}; EventFilterIB a structure
        // {0 node, 1 EventMin}; ReadRequest carries them as members 1 and 2.
        let request = ReadRequest(
            attributeRequests: [], eventRequests: [EventPath(endpoint: 1, cluster: 6, event: 2, isUrgent: true)],
            eventFilters: [EventFilter(eventMin: 5)])
        #expect(request.encoded().encoded() == [
            0x15,
            0x36, 0x01, 0x17, 0x24, 0x01, 0x01, 0x24, 0x02, 0x06, 0x24, 0x03, 0x02, 0x29, 0x04, 0x18, 0x18,
            0x36, 0x02, 0x15, 0x24, 0x01, 0x05, 0x18, 0x18,
            0x29, 0x03,
            0x24, 0xFF, 0x0C,
            0x18,
        ])
        // EventDataIB {0 path, 1 number, 2 priority, 4 system timestamp, 7 data}, in EventReportIB member 1, in
        // ReportData member 2.
        let event = EventDataIB(
            path: ConcreteEventPath(endpoint: 1, cluster: 6, event: 2), eventNumber: 9, priority: .critical,
            systemTimestamp: 300, data: .structure([]))
        let report = ReportData(attributeReports: [], eventReports: [.data(event)])
        #expect(report.encoded().encoded() == [
            0x15,
            0x36, 0x02, 0x15, 0x35, 0x01,
            0x37, 0x00, 0x24, 0x01, 0x01, 0x24, 0x02, 0x06, 0x24, 0x03, 0x02, 0x18,
            0x24, 0x01, 0x09, 0x24, 0x02, 0x02, 0x25, 0x04, 0x2C, 0x01, 0x35, 0x07, 0x18,
            0x18, 0x18, 0x18,
            0x24, 0xFF, 0x0C,
            0x18,
        ])
        #expect(try ReportData(decoding: report.encoded().encoded()) == report)
        let status = ReportData(
            attributeReports: [],
            eventReports: [
                .status(
                    EventStatusIB(
                        path: EventPath(endpoint: 3, cluster: 6, event: 0), status: StatusIB(.unsupportedEndpoint)))
            ])
        #expect(try ReportData(decoding: status.encoded().encoded()) == status)
        let subscribe = SubscribeRequest(
            minIntervalFloorSeconds: 0, maxIntervalCeilingSeconds: 10, attributeRequests: [],
            eventRequests: [EventPath(cluster: 6)], eventFilters: [EventFilter(node: 1, eventMin: 3)])
        let element = subscribe.encoded()
        #expect(element[context: 4]?.arrayMembers?.count == 1)
        #expect(element[context: 5]?.arrayMembers?.count == 1)
        #expect(try SubscribeRequest(decoding: element.encoded()) == subscribe)
    }

    @Test(arguments: [
        ("a path that is a structure", TLVElement.structure { TLVElement(context: 1, .uint(UInt8(1))) }),
        ("an event without its cluster", TLVElement.list { TLVElement(context: 3, .uint(UInt8(1))) }),
        ("a negative endpoint", TLVElement.list { TLVElement(context: 1, .signed(-1)) }),
        ("an urgent flag that is a number", TLVElement.list { TLVElement(context: 4, .uint(UInt8(1))) }),
    ])
    func malformedEventPathsAreInvalidAction(_ what: String, _ path: TLVElement) {
        let request = TLVElement.message {
            TLVElement(context: 1, .array([path]))
            TLVElement(context: 3, .bool(true))
        }
        #expect(throws: IMError.self, "\(what)") { try ReadRequest(decoding: request.encoded()) }
        let fixture = try? MatterNodeFixture()
        var exchange = IMExchangeState()
        #expect(fixture?.send(.readRequest, request, exchange: &exchange, as: pase) == .status(.invalidAction))
    }

    @Test func theLogKeepsTheNewestOfEachPriority() {
        let model = DataModel(initialDataVersion: 1, acl: { [] }, eventNumbers: EventNumberSource(first: 100),
                              eventCapacity: EventLogCapacity(debug: 2, info: 3, critical: 1))
        let p = ConcreteEventPath(endpoint: 1, cluster: 6, event: 0)
        #expect(model.emitEvent(p, priority: .critical, data: Self.pressed(0)) == 100)
        for n in 1...5 { model.emitEvent(p, priority: .info, data: Self.pressed(UInt8(n))) }
        for n in 6...9 { model.emitEvent(p, priority: .debug, data: Self.pressed(UInt8(n))) }
        // A flood of info and debug events never pushes out the critical one.
        #expect(model.loggedEvents().map(\.number) == [100, 103, 104, 105, 108, 109])
        #expect(model.loggedEvents(from: 105).map(\.number) == [105, 108, 109])
        #expect(model.nextEventNumber == 110)
    }

    func stored(_ storage: InMemoryNodeStorage) throws -> UInt64? {
        let bytes = try #require(try storage.load(.eventNumbers))
        return try TLVElement(decoding: bytes).unsignedValue
    }

    @Test func eventNumbersNeverGoBackAcrossARestart() throws {
        let storage = InMemoryNodeStorage()
        let first = try EventNumberSource(storage: storage)
        #expect(first.next == 0)
        #expect(try stored(storage) == 1000)
        for _ in 0..<1500 { _ = first.take() }
        // A block is reserved before it is used.
        #expect(try stored(storage) == 2000)
        // After a restart (even one that lost the numbers above 1500), numbers start past all given.
        let second = try EventNumberSource(storage: storage)
        #expect(second.next == 2000)
        #expect(second.take() == 2000)
        // A node's StartUp event gets its number from the storage too.
        let fixture = try MatterNodeFixture(storage: storage)
        #expect(fixture.node.dataModel.loggedEvents().map(\.number) == [3000])
        // A stored value that is not a number is a storage error, not a silent restart at 0.
        try storage.store(.eventNumbers, [0x15])
        #expect(throws: StorageError.self) { try EventNumberSource(storage: storage) }
    }

    @Test func aReadReturnsTheMatchingEventsWithTheirTimestamps() throws {
        let (fixture, cluster) = try fixtureWithEvents()
        let model = fixture.node.dataModel
        let startUp = try #require(model.loggedEvents().first)
        #expect(startUp.path == ConcreteEventPath(endpoint: 0, cluster: 0x28, event: 0))
        #expect(startUp.systemTimestamp == UInt64(fixture.clock.now.milliseconds))
        fixture.clock.advance(.milliseconds(250))
        let a = model.emitEvent(path(0), priority: .info, data: Self.pressed(1))
        fixture.clock.advance(.milliseconds(250))
        let b = model.emitEvent(path(1), priority: .debug, data: Self.pressed(2))
        let c = model.emitEvent(path(0), priority: .info, data: Self.pressed(3))

        // Everything (PASE may read all), in number order, StartUp included.
        let all = Self.data(try readEvents(fixture, [EventPath()], as: pase).events)
        #expect(all.map(\.eventNumber) == [startUp.number, a, b, c])
        #expect(
            all[1]
                == EventDataIB(
                    path: path(0), eventNumber: a, priority: .info,
                    systemTimestamp: UInt64(fixture.clock.start.milliseconds + 250), data: Self.pressed(1).value))
        // A wildcard by event, with EventMin; paths that overlap report each event once.
        let pressed = Self.data(
            try readEvents(
                fixture, [EventPath(cluster: cluster.id, event: 0), EventPath(endpoint: 1)],
                eventMin: b, as: pase
            ).events)
        #expect(pressed.map(\.eventNumber) == [b, c])
        // Events and attributes in one read.
        var exchange = IMExchangeState()
        let both = fixture.send(
            .readRequest,
            ReadRequest(
                attributeRequests: [AttributePath(endpoint: 1, cluster: cluster.id, attribute: 0)],
                eventRequests: [EventPath(endpoint: 1, cluster: cluster.id, event: 1)]
            ).encoded(),
            exchange: &exchange, as: pase)
        let report = try ReportData(decoding: try #require(both.message).payload)
        #expect(report.attributeReports.count == 1)
        #expect(Self.data(report.eventReports).map(\.eventNumber) == [b])
    }

    @Test func concretePathsToWhatDoesNotExistAnswerAStatus() throws {
        let (fixture, cluster) = try fixtureWithEvents()
        let reports = try readEvents(fixture, [
            EventPath(endpoint: 9, cluster: cluster.id, event: 0),
            EventPath(endpoint: 1, cluster: 0x0006, event: 0),
            EventPath(endpoint: 1, cluster: cluster.id, event: 7),
            EventPath(endpoint: 1, cluster: cluster.id, event: 0),
            // A wildcard that matches nothing is no error.
            EventPath(endpoint: 9),
        ], as: pase).events
        let statuses = reports.compactMap { r -> IMStatusCode? in
            if case .status(let s) = r { s.status.status } else { nil }
        }
        #expect(statuses == [.unsupportedEndpoint, .unsupportedCluster, .unsupportedEvent])
        #expect(Self.data(reports).isEmpty)
    }

    @Test func anEventIsReadOnlyWithItsReadPrivilege() throws {
        let (fixture, cluster) = try fixtureWithEvents()
        let (_, admin, viewer) = try fixture.commissionedWithViewer()
        let pressed = fixture.node.dataModel.emitEvent(path(0), priority: .info, data: Self.pressed(1))
        let alarm = fixture.node.dataModel.emitEvent(path(2), priority: .critical, data: Self.pressed(2))
        #expect(
            Self.data(try readEvents(fixture, [EventPath(endpoint: 1)], as: admin).events).map(\.eventNumber) == [
                pressed, alarm
            ])
        #expect(
            Self.data(try readEvents(fixture, [EventPath(endpoint: 1)], as: viewer).events).map(\.eventNumber) == [
                pressed
            ])
        let denied = try readEvents(fixture, [EventPath(endpoint: 1, cluster: cluster.id, event: 2)], as: viewer).events
        #expect(denied == [.status(EventStatusIB(path: EventPath(endpoint: 1, cluster: cluster.id, event: 2),
                                                 status: StatusIB(.unsupportedAccess)))])
    }

    @Test func manyEventsAreChunkedUnderTheMTU() throws {
        let (fixture, cluster) = try fixtureWithEvents()
        var numbers: [UInt64] = []
        for n in 0..<40 {
            numbers.append(fixture.node.dataModel.emitEvent(path(0), priority: .info, data: .structure {
                TLVElement(context: 0, .uint(UInt8(n)))
                TLVElement(context: 1, .bytes([UInt8](repeating: UInt8(n), count: 60)))
            }))
        }
        let (events, sizes) = try readEvents(fixture, [EventPath(endpoint: 1, cluster: cluster.id)],
                                             attributes: [AttributePath(endpoint: 0, cluster: 0x28)], as: pase)
        #expect(sizes.count > 2)
        #expect(sizes.allSatisfy { $0 <= InteractionModelServer.defaultMaximumPayloadSize })
        #expect(Self.data(events).map(\.eventNumber) == numbers)
    }
}

@Suite struct EventSubscriptionTests {
    func subscribe(_ fixture: MatterNodeFixture, _ paths: [EventPath], eventMin: UInt64? = nil, minInterval: UInt16 = 5,
                   as subject: SubjectDescriptor) throws -> [EventReportIB] {
        var exchange = IMExchangeState()
        let request = SubscribeRequest(
            minIntervalFloorSeconds: minInterval, maxIntervalCeilingSeconds: 60, attributeRequests: [],
            eventRequests: paths, eventFilters: eventMin.map { [EventFilter(eventMin: $0)] } ?? [])
        let priming = fixture.send(.subscribeRequest, request.encoded(), exchange: &exchange, as: subject)
        let report = try ReportData(decoding: try #require(priming.message).payload)
        let answer = fixture.send(.statusResponse, StatusResponse(.success).encoded(), exchange: &exchange, as: subject)
        #expect(answer.message?.opcode == .subscribeResponse)
        return report.eventReports
    }

    /// The events of the reports due now, each report answered by the subscriber.
    func dueEvents(_ fixture: MatterNodeFixture) throws -> [[UInt64]] {
        try fixture.node.interactionModel.reportsDue(now: fixture.clock.now).map { due in
            var exchange = due.exchange
            let answer = fixture.node.receive(
                opcode: InteractionModelOpcode.statusResponse.rawValue,
                payload: StatusResponse(.success).encoded().encoded(), exchange: &exchange,
                subject: due.subject, now: fixture.clock.now)
            #expect(answer.closesExchange)
            return EventTests.data(try ReportData(decoding: due.message.payload).eventReports).map(\.eventNumber)
        }
    }

    @Test func newEventsAreReportedOnceAfterTheMinimumInterval() throws {
        let fixture = try MatterNodeFixture()
        let cluster = EventfulCluster()
        fixture.node.dataModel.addEndpoint(EndpointDefinition(id: 1, deviceTypes: [], clusters: [cluster]))
        let index = try fixture.addFabric()
        _ = try fixture.completeCommissioning(fabric: index)
        let admin = SubjectDescriptor.caseSession(fabricIndex: index, node: 112233)
        let model = fixture.node.dataModel
        let old = model.emitEvent(
            ConcreteEventPath(endpoint: 1, cluster: cluster.id, event: 0), priority: .info, data: EventTests.pressed(0))
        // The priming report has the events the filter has not seen.
        let primed = try subscribe(fixture, [EventPath(endpoint: 1)], eventMin: old, as: admin)
        #expect(EventTests.data(primed).map(\.eventNumber) == [old])
        #expect(fixture.node.interactionModel.subscriptions.first?.eventPaths == [EventPath(endpoint: 1)])

        let new = model.emitEvent(
            ConcreteEventPath(endpoint: 1, cluster: cluster.id, event: 0), priority: .info, data: EventTests.pressed(1))
        // An event elsewhere is not this subscription's.
        model.emitEvent(
            ConcreteEventPath(endpoint: 0, cluster: 0x28, event: 2), priority: .info, data: EventTests.pressed(2))
        fixture.clock.advance(.seconds(4))
        #expect(try dueEvents(fixture).isEmpty)
        fixture.clock.advance(.seconds(1))
        #expect(try dueEvents(fixture) == [[new]])
        // Reported once.
        fixture.clock.advance(.seconds(5))
        #expect(try dueEvents(fixture).isEmpty)
    }

    @Test func anUrgentEventDoesNotWaitForTheMinimumInterval() throws {
        let fixture = try MatterNodeFixture()
        let cluster = EventfulCluster()
        fixture.node.dataModel.addEndpoint(EndpointDefinition(id: 1, deviceTypes: [], clusters: [cluster]))
        let index = try fixture.addFabric()
        _ = try fixture.completeCommissioning(fabric: index)
        let admin = SubjectDescriptor.caseSession(fabricIndex: index, node: 112233)
        _ = try subscribe(
            fixture,
            [
                EventPath(endpoint: 1, cluster: cluster.id, event: 0),
                EventPath(endpoint: 1, cluster: cluster.id, event: 2, isUrgent: true)
            ], minInterval: 30, as: admin)
        let model = fixture.node.dataModel
        let pressed = model.emitEvent(
            ConcreteEventPath(endpoint: 1, cluster: cluster.id, event: 0), priority: .info, data: EventTests.pressed(0))
        fixture.clock.advance(.seconds(1))
        #expect(try dueEvents(fixture).isEmpty)
        let alarm = model.emitEvent(
            ConcreteEventPath(endpoint: 1, cluster: cluster.id, event: 2), priority: .critical,
            data: EventTests.pressed(1))
        // The urgent event brings the report forward, with the other new event in it.
        #expect(try dueEvents(fixture) == [[pressed, alarm]])
    }
}
