// Reads, writes and invokes against the data model through message bytes: wildcards, global attributes, DataVersion,
// endpoints that come and go, chunking under the MTU, timed interactions and the status of each failure.

@testable import HearthMatter
import HearthSync
import Testing

/// A cluster for tests: one writable uint8, one long list, a timed command and a timed-write attribute.
final class ProbeCluster: ClusterServer {
    let id: ClusterID = 0xFFF1_FC00
    let revision: UInt16 = 3
    let featureMap: UInt32 = 0b101
    let attributes = [
        AttributeDefinition(0, "Level", [.writable]),
        AttributeDefinition(1, "Entries", [.list, .writable]),
        AttributeDefinition(2, "Guarded", [.writable, .timedWrite]),
    ]
    let acceptedCommands = [CommandDefinition(0, "Ping"), CommandDefinition(1, "Arm", timed: true)]
    let values = Locked<(level: UInt8, entries: [TLVElement], guarded: Bool)>((0, [], false))

    init(entries: Int = 0) {
        values.withLock {
            $0.entries = (0..<entries).map { TLVElement(.bytes([UInt8](repeating: UInt8($0 % 256), count: 40))) }
        }
    }

    func read(_ attribute: AttributeID, context: ReadContext) throws(IMError) -> TLVValue {
        switch attribute {
        case 0: return .uint(values.withLock { $0.level })
        case 1: return .array(values.withLock { $0.entries })
        case 2: return .bool(values.withLock { $0.guarded })
        default: throw IMError(.unsupportedAttribute, "none")
        }
    }

    func write(_ attribute: AttributeID, value: TLVValue, context: ActionContext) throws(IMError) {
        switch (attribute, value) {
        case (0, .unsigned(let v)):
            guard v <= 100 else { throw IMError(.constraintError, "at most 100") }
            values.withLock { $0.level = UInt8(v) }
        case (1, .array(let items)): values.withLock { $0.entries = items }
        case (2, .bool(let b)): values.withLock { $0.guarded = b }
        default: throw IMError(.invalidDataType, "wrong type")
        }
    }

    func invoke(_ command: CommandID, fields: TLVElement?, context: ActionContext) throws(IMError) -> CommandResult {
        .success
    }
}

@Suite struct DataModelTests {
    let pase = SubjectDescriptor.pase()

    @Test func theRootEndpointDescribesItself() throws {
        let fixture = try MatterNodeFixture()
        #expect(try fixture.readValue(0, 0x001D, 0, as: pase) == .array([TLVElement.structure {
            TLVElement(context: 0, .uint(UInt32(0x16)))
            TLVElement(context: 1, .uint(UInt16(3)))
        }]))
        let servers = try fixture.readValue(0, 0x001D, 1, as: pase)
        #expect(
            servers
                == .array([0x1D, 0x1F, 0x28, 0x30, 0x31, 0x33, 0x3C, 0x3E, 0x3F].map { TLVElement(.uint(UInt32($0))) }))
        #expect(try fixture.readValue(0, 0x001D, 3, as: pase) == .array([]))
        #expect(try fixture.readValue(0, 0x0028, 2, as: pase) == .unsigned(0xFFF1))
        #expect(try fixture.readValue(0, 0x0028, 4, as: pase) == .unsigned(0x8000))
        #expect(try fixture.readValue(0, 0x0028, 0x0F, as: pase) == .utf8("HUB-0001"))
        #expect(try fixture.readValue(0, 0x0031, 0xFFFC, as: pase) == .unsigned(4))
    }

    @Test func globalAttributesComeFromTheDefinition() throws {
        let fixture = try MatterNodeFixture()
        fixture.node.dataModel.addEndpoint(
            EndpointDefinition(
                id: 1, deviceTypes: [DeviceTypeRevision(0x0100, revision: 3)],
                clusters: [ProbeCluster()]))
        let cluster: ClusterID = 0xFFF1_FC00
        #expect(try fixture.readValue(1, cluster, 0xFFFD, as: pase) == .unsigned(3))
        #expect(try fixture.readValue(1, cluster, 0xFFFC, as: pase) == .unsigned(5))
        #expect(try fixture.readValue(1, cluster, 0xFFFB, as: pase)
            == .array([0, 1, 2, 0xFFF8, 0xFFF9, 0xFFFB, 0xFFFC, 0xFFFD].map { TLVElement(.uint(UInt32($0))) }))
        #expect(
            try fixture.readValue(1, cluster, 0xFFF9, as: pase)
                == .array([TLVElement(.uint(UInt32(0))), TLVElement(.uint(UInt32(1)))]))
        #expect(try fixture.readValue(1, cluster, 0xFFF8, as: pase) == .array([]))
    }

    @Test func missingPathsAnswerTheirStatus() throws {
        let fixture = try MatterNodeFixture()
        #expect(
            try fixture.readStatus(AttributePath(endpoint: 9, cluster: 0x28, attribute: 0), as: pase)
                == .unsupportedEndpoint)
        #expect(
            try fixture.readStatus(AttributePath(endpoint: 0, cluster: 0x06, attribute: 0), as: pase)
                == .unsupportedCluster)
        #expect(
            try fixture.readStatus(AttributePath(endpoint: 0, cluster: 0x28, attribute: 0x99), as: pase)
                == .unsupportedAttribute)
        #expect(try fixture.invokeStatus(9, 0x0030, 0, as: pase) == .unsupportedEndpoint)
        #expect(try fixture.invokeStatus(0, 0x0006, 0, as: pase) == .unsupportedCluster)
        #expect(try fixture.invokeStatus(0, 0x0030, 0x77, as: pase) == .unsupportedCommand)
        // Missing or mistyped fields are INVALID_COMMAND.
        #expect(try fixture.invokeStatus(0, 0x0030, 0, as: pase) == .invalidCommand)
        #expect(try fixture.invokeStatus(0, 0x0030, 0, as: pase) {
            TLVElement(context: 0, .utf8("60"))
            TLVElement(context: 1, .uint(UInt64(0)))
        } == .invalidCommand)
    }

    @Test func wildcardsExpandOverWhatExists() throws {
        let fixture = try MatterNodeFixture()
        fixture.node.dataModel.addEndpoint(
            EndpointDefinition(
                id: 1, deviceTypes: [DeviceTypeRevision(0x0100, revision: 3)],
                clusters: [ProbeCluster()]))
        // Every ClusterRevision on every endpoint: one per cluster instance.
        let (revisions, _) = try fixture.read([AttributePath(attribute: 0xFFFD)], as: pase)
        #expect(revisions.count == 9 + 2)
        // Every attribute of endpoint 1: Descriptor's 4 + 5 global, the probe's 3 + 5 global.
        let (endpoint1, _) = try fixture.read([AttributePath(endpoint: 1)], as: pase)
        #expect(endpoint1.count == 9 + 8)
        for report in endpoint1 {
            guard case .data(let data) = report else { Issue.record("a wildcard gave a status: \(report)"); continue }
            #expect(data.path.endpoint == 1)
            #expect(data.dataVersion != nil)
        }
        // A wildcard naming a cluster nowhere present is empty, not an error.
        let (none, _) = try fixture.read([AttributePath(cluster: 0x0006)], as: pase)
        #expect(none.isEmpty)
        // Skipping the root node and global attributes.
        let (skipped, _) = try fixture.read(
            [AttributePath(wildcardFlags: AttributePath.skipRootNode | AttributePath.skipGlobalAttributes)],
            as: pase)
        #expect(skipped.count == 4 + 3)
    }

    @Test func partsListFollowsEndpointsThatComeAndGo() throws {
        let fixture = try MatterNodeFixture()
        let model = fixture.node.dataModel
        let descriptor = ConcreteClusterPath(endpoint: 0, cluster: 0x1D)
        let before = try #require(model.dataVersion(descriptor))
        model.addEndpoint(EndpointDefinition(id: 1, deviceTypes: [.aggregator], clusters: []))
        model.addEndpoint(
            EndpointDefinition(id: 51, deviceTypes: [.bridgedNode], parent: 1, clusters: [ProbeCluster()]))
        model.addEndpoint(EndpointDefinition(id: 52, deviceTypes: [.bridgedNode], parent: 1, clusters: []))
        #expect(
            try fixture.readValue(0, 0x1D, 3, as: pase) == .array([1, 51, 52].map { TLVElement(.uint(UInt16($0))) }))
        #expect(try fixture.readValue(1, 0x1D, 3, as: pase) == .array([51, 52].map { TLVElement(.uint(UInt16($0))) }))
        model.removeEndpoint(51)
        #expect(try fixture.readValue(0, 0x1D, 3, as: pase) == .array([1, 52].map { TLVElement(.uint(UInt16($0))) }))
        #expect(try fixture.readValue(1, 0x1D, 3, as: pase) == .array([TLVElement(.uint(UInt16(52)))]))
        #expect(
            try fixture.readStatus(AttributePath(endpoint: 51, cluster: 0x1D, attribute: 3), as: pase)
                == .unsupportedEndpoint)
        #expect(model.dataVersion(descriptor)! != before)
    }

    @Test func writesMoveTheDataVersionAndFiltersSkipUnchangedClusters() throws {
        let fixture = try MatterNodeFixture()
        let probe = ProbeCluster()
        fixture.node.dataModel.addEndpoint(EndpointDefinition(id: 1, deviceTypes: [], clusters: [probe]))
        let cluster = ConcreteClusterPath(endpoint: 1, cluster: probe.id)
        let path = AttributePath(endpoint: 1, cluster: probe.id, attribute: 0)
        let version = try #require(fixture.node.dataModel.dataVersion(cluster))
        let (filtered, _) = try fixture.read(
            [path], as: pase, filters: [DataVersionFilter(path: cluster, dataVersion: version)])
        #expect(filtered.isEmpty)

        #expect(
            try fixture.write([AttributeDataIB(dataVersion: nil, path: path, data: .unsigned(42))], as: pase) == [
                .success
            ])
        #expect(fixture.node.dataModel.dataVersion(cluster) == version &+ 1)
        let (unfiltered, _) = try fixture.read(
            [path], as: pase, filters: [DataVersionFilter(path: cluster, dataVersion: version)])
        #expect(unfiltered == [.data(AttributeDataIB(dataVersion: version &+ 1, path: path, data: .unsigned(42)))])

        // Refused writes change nothing, the version included.
        #expect(
            try fixture.write([AttributeDataIB(dataVersion: nil, path: path, data: .unsigned(101))], as: pase) == [
                .constraintError
            ])
        #expect(
            try fixture.write([AttributeDataIB(dataVersion: version, path: path, data: .unsigned(1))], as: pase) == [
                .dataVersionMismatch
            ])
        #expect(probe.values.withLock { $0.level } == 42)
        #expect(fixture.node.dataModel.dataVersion(cluster) == version &+ 1)
    }

    @Test func aListWrittenAsReplaceAndAppendsArrivesWhole() throws {
        let fixture = try MatterNodeFixture()
        let probe = ProbeCluster()
        fixture.node.dataModel.addEndpoint(EndpointDefinition(id: 1, deviceTypes: [], clusters: [probe]))
        let whole = AttributePath(endpoint: 1, cluster: probe.id, attribute: 1)
        var append = whole
        append.listIndex = .append
        let statuses = try fixture.write([
            AttributeDataIB(dataVersion: nil, path: whole, data: .array([])),
            AttributeDataIB(dataVersion: nil, path: append, data: .unsigned(1)),
            AttributeDataIB(dataVersion: nil, path: append, data: .unsigned(2)),
        ], as: pase)
        #expect(statuses == [.success])
        #expect(probe.values.withLock { $0.entries } == [TLVElement(.unsigned(1)), TLVElement(.unsigned(2))])
        // An append alone adds to what is there.
        #expect(
            try fixture.write([AttributeDataIB(dataVersion: nil, path: append, data: .unsigned(3))], as: pase) == [
                .success
            ])
        #expect(probe.values.withLock { $0.entries }.count == 3)
        // A whole list that is not an array is the wrong type.
        #expect(
            try fixture.write([AttributeDataIB(dataVersion: nil, path: whole, data: .unsigned(1))], as: pase) == [
                .invalidDataType
            ])
    }

    @Test func aLongReadIsChunkedUnderTheMTU() throws {
        let fixture = try MatterNodeFixture()
        let probe = ProbeCluster(entries: 80)
        fixture.node.dataModel.addEndpoint(EndpointDefinition(id: 1, deviceTypes: [], clusters: [probe]))
        let (reports, sizes) = try fixture.read([AttributePath()], as: pase)
        #expect(sizes.count > 3)
        #expect(sizes.allSatisfy { $0 <= InteractionModelServer.defaultMaximumPayloadSize })
        // The long list arrives as an empty list and then each item appended, in order.
        let listReports = reports.compactMap { report -> AttributeDataIB? in
            if case .data(let data) = report, data.path.endpoint == 1, data.path.cluster == probe.id,
                data.path.attribute == 1
            {
                return data
            }
            return nil
        }
        #expect(listReports.count == 81)
        #expect(listReports.first?.path.listIndex == nil)
        #expect(listReports.first?.data == .array([]))
        #expect(listReports.dropFirst().allSatisfy { $0.path.listIndex == .append })
        #expect(listReports.dropFirst().map(\.data) == probe.values.withLock { $0.entries }.map(\.value))
        // Nothing else is lost: every attribute of every cluster is there.
        #expect(reports.count == (try fixture.read([AttributePath(endpoint: 0)], as: pase)).reports.count
            + (try fixture.read([AttributePath(endpoint: 1)], as: pase)).reports.count)
    }

    @Test func aChunkedReadStopsWhenThePeerGivesUp() throws {
        let fixture = try MatterNodeFixture()
        fixture.node.dataModel.addEndpoint(
            EndpointDefinition(id: 1, deviceTypes: [], clusters: [ProbeCluster(entries: 80)]))
        var exchange = IMExchangeState()
        let first = fixture.send(
            .readRequest, ReadRequest(attributeRequests: [AttributePath()]).encoded(), exchange: &exchange, as: pase)
        #expect(!first.closesExchange)
        let stop = fixture.send(.statusResponse, StatusResponse(.failure).encoded(), exchange: &exchange, as: pase)
        #expect(stop == IMReply(message: nil, closesExchange: true))
        // Something else than a StatusResponse mid-report is an invalid action.
        var other = IMExchangeState()
        _ = fixture.send(
            .readRequest, ReadRequest(attributeRequests: [AttributePath()]).encoded(), exchange: &other, as: pase)
        let wrong = fixture.send(
            .readRequest, ReadRequest(attributeRequests: [AttributePath()]).encoded(), exchange: &other, as: pase)
        #expect(wrong.message == IMMessage(.statusResponse, StatusResponse(.invalidAction).encoded()))
    }

    @Test func timedInteractions() throws {
        let fixture = try MatterNodeFixture()
        let probe = ProbeCluster()
        fixture.node.dataModel.addEndpoint(EndpointDefinition(id: 1, deviceTypes: [], clusters: [probe]))
        let arm = InvokeRequest(
            timedRequest: true,
            invokeRequests: [
                CommandDataIB(
                    path: CommandPath(endpoint: 1, cluster: probe.id, command: 1), fields: TLVElement(.structure([])))
            ])
        // Untimed, a timed command needs a timed interaction.
        #expect(try fixture.invokeStatus(1, probe.id, 1, as: pase) == .needsTimedInteraction)
        // A timed flag without a TimedRequest is a mismatch.
        var bare = IMExchangeState()
        #expect(fixture.send(.invokeRequest, arm.encoded(), exchange: &bare, as: pase).message
            == IMMessage(.statusResponse, StatusResponse(.timedRequestMismatch).encoded()))
        // TimedRequest, then the invoke in time.
        var exchange = IMExchangeState()
        let accepted = fixture.send(
            .timedRequest, TimedRequest(timeoutMilliseconds: 500).encoded(), exchange: &exchange, as: pase)
        #expect(
            accepted
                == IMReply(
                    message: IMMessage(.statusResponse, StatusResponse(.success).encoded()), closesExchange: false))
        fixture.clock.advance(.milliseconds(400))
        let reply = fixture.send(.invokeRequest, arm.encoded(), exchange: &exchange, as: pase)
        #expect(reply.message?.opcode == .invokeResponse)
        // Too late: TIMEOUT.
        var late = IMExchangeState()
        _ = fixture.send(.timedRequest, TimedRequest(timeoutMilliseconds: 500).encoded(), exchange: &late, as: pase)
        fixture.clock.advance(.milliseconds(501))
        #expect(fixture.send(.invokeRequest, arm.encoded(), exchange: &late, as: pase).message
            == IMMessage(.statusResponse, StatusResponse(.timeout).encoded()))
        // A timed-write attribute refuses an untimed write.
        let guarded = AttributePath(endpoint: 1, cluster: probe.id, attribute: 2)
        #expect(
            try fixture.write([AttributeDataIB(dataVersion: nil, path: guarded, data: .bool(true))], as: pase) == [
                .needsTimedInteraction
            ])
    }

    @Test func malformedMessagesAnswerInvalidActionAndChangeNothing() throws {
        let fixture = try MatterNodeFixture()
        var exchange = IMExchangeState()
        let garbage = fixture.node.receive(
            opcode: InteractionModelOpcode.invokeRequest.rawValue, payload: [0x15, 0x28, 0x00],
            exchange: &exchange, subject: pase, now: fixture.clock.now)
        #expect(garbage == .status(.invalidAction))
        let unknownOpcode = fixture.node.receive(
            opcode: 0x42, payload: [], exchange: &exchange, subject: pase, now: fixture.clock.now)
        #expect(unknownOpcode == .status(.invalidAction))
        let clientMessage = fixture.send(
            .reportData, ReportData(attributeReports: []).encoded(), exchange: &exchange, as: pase)
        #expect(clientMessage == .status(.invalidAction))
        // A write to a wildcard path is refused whole.
        let wildcard = fixture.send(.writeRequest, WriteRequest(writeRequests: [
            AttributeDataIB(dataVersion: nil, path: AttributePath(cluster: 0x28, attribute: 5), data: .utf8("x")),
        ]).encoded(), exchange: &exchange, as: pase)
        #expect(wildcard == .status(.invalidAction))
        #expect(fixture.node.commissioning.settings.nodeLabel == "")
        // More commands than MaxPathsPerInvoke.
        let batch = InvokeRequest(invokeRequests: [
            CommandDataIB(path: CommandPath(endpoint: 0, cluster: 0x33, command: 1), commandRef: 1),
            CommandDataIB(path: CommandPath(endpoint: 0, cluster: 0x33, command: 1), commandRef: 2),
        ])
        #expect(fixture.send(.invokeRequest, batch.encoded(), exchange: &exchange, as: pase) == .status(.invalidAction))
    }

    @Test func accessFollowsTheACLEntriesTargets() throws {
        let fixture = try MatterNodeFixture()
        let index = try fixture.addFabric()
        _ = try fixture.completeCommissioning(fabric: index)
        let admin = SubjectDescriptor.caseSession(fabricIndex: index, node: 112233)
        let viewer = SubjectDescriptor.caseSession(fabricIndex: index, node: 77)
        let entries =
            fixture.node.commissioning.acl + [
                ACLEntry(
                    privilege: .view, authMode: .case, subjects: [77], targets: [ACLTarget(cluster: 0x0028)],
                    fabricIndex: index)
            ]
        #expect(
            try fixture.write(
                [
                    AttributeDataIB(
                        dataVersion: nil, path: AttributePath(endpoint: 0, cluster: 0x1F, attribute: 0),
                        data: .array(entries.map { $0.encoded() }))
                ], as: admin) == [.success])
        #expect(try fixture.readStatus(AttributePath(endpoint: 0, cluster: 0x28, attribute: 1), as: viewer) == .success)
        #expect(
            try fixture.readStatus(AttributePath(endpoint: 0, cluster: 0x30, attribute: 0), as: viewer)
                == .unsupportedAccess)
        // View does not grant writing NodeLabel (Manage).
        #expect(
            try fixture.write(
                [
                    AttributeDataIB(
                        dataVersion: nil, path: AttributePath(endpoint: 0, cluster: 0x28, attribute: 5),
                        data: .utf8("x"))
                ], as: viewer) == [.unsupportedAccess])
        // An invalid entry (PASE auth mode) is a constraint error, and the ACL stays.
        let invalid = [ACLEntry(privilege: .administer, authMode: .pase, subjects: [], fabricIndex: index)]
        #expect(
            try fixture.write(
                [
                    AttributeDataIB(
                        dataVersion: nil, path: AttributePath(endpoint: 0, cluster: 0x1F, attribute: 0),
                        data: .array(invalid.map { $0.encoded() }))
                ], as: admin) == [.constraintError])
        #expect(fixture.node.commissioning.acl == entries)
    }

    @Test func aCATSubjectGrantsItsHolders() {
        let entry = ACLEntry(privilege: .operate, authMode: .case, subjects: [0xFFFF_FFFD_0001_0002], fabricIndex: 1)
        let path = ConcreteClusterPath(endpoint: 1, cluster: 6)
        func holder(_ cat: UInt32) -> SubjectDescriptor { .caseSession(fabricIndex: 1, node: 5, cats: [cat]) }
        #expect(accessGranted(to: holder(0x0001_0002), required: .operate, on: path, deviceTypes: [], acl: [entry]))
        #expect(accessGranted(to: holder(0x0001_0003), required: .operate, on: path, deviceTypes: [], acl: [entry]))
        #expect(!accessGranted(to: holder(0x0001_0001), required: .operate, on: path, deviceTypes: [], acl: [entry]))
        #expect(!accessGranted(to: holder(0x0002_0002), required: .operate, on: path, deviceTypes: [], acl: [entry]))
        #expect(!accessGranted(to: holder(0x0001_0002), required: .manage, on: path, deviceTypes: [], acl: [entry]))
        #expect(
            !accessGranted(
                to: .caseSession(fabricIndex: 2, node: 5, cats: [0x0001_0002]), required: .view, on: path,
                deviceTypes: [], acl: [entry]))
    }

    @Test func subscribePrimesAndAnswersWithItsID() throws {
        let fixture = try MatterNodeFixture()
        let index = try fixture.addFabric()
        _ = try fixture.completeCommissioning(fabric: index)
        let admin = SubjectDescriptor.caseSession(fabricIndex: index, node: 112233)
        var exchange = IMExchangeState()
        let request = SubscribeRequest(minIntervalFloorSeconds: 0, maxIntervalCeilingSeconds: 30,
                                       attributeRequests: [AttributePath(endpoint: 0, cluster: 0x28)])
        let priming = fixture.send(.subscribeRequest, request.encoded(), exchange: &exchange, as: admin)
        let report = try ReportData(decoding: try #require(priming.message).payload)
        #expect(report.subscriptionID == 1)
        #expect(!report.suppressResponse)
        #expect(!priming.closesExchange)
        let answer = fixture.send(.statusResponse, StatusResponse(.success).encoded(), exchange: &exchange, as: admin)
        #expect(answer.closesExchange)
        #expect(
            try SubscribeResponse(decoding: try #require(answer.message).payload)
                == SubscribeResponse(subscriptionID: 1, maxIntervalSeconds: 30))
        #expect(fixture.node.interactionModel.subscriptions.map(\.id) == [1])
        // PASE may not subscribe.
        var overPASE = IMExchangeState()
        #expect(
            fixture.send(.subscribeRequest, request.encoded(), exchange: &overPASE, as: pase)
                == .status(.unsupportedAccess))
    }
}

@Suite struct ChunkedWriteTests {
    let pase = SubjectDescriptor.pase()

    /// Sends write chunks on one exchange; returns each reply's statuses.
    func send(_ fixture: MatterNodeFixture, _ chunks: [[AttributeDataIB]], as subject: SubjectDescriptor) throws
        -> [[IMStatusCode]]
    {
        var exchange = IMExchangeState()
        var out: [[IMStatusCode]] = []
        for (n, chunk) in chunks.enumerated() {
            let more = n < chunks.count - 1
            let reply = fixture.send(
                .writeRequest, WriteRequest(writeRequests: chunk, moreChunkedMessages: more).encoded(),
                exchange: &exchange, as: subject)
            let message = try #require(reply.message)
            try #require(message.opcode == .writeResponse, "chunk \(n): \(message.opcode)")
            #expect(reply.closesExchange == !more)
            out.append(try WriteResponse(decoding: message.payload).writeResponses.map(\.status.status))
        }
        return out
    }

    @Test func anACLWrittenAcrossChunksNeverLocksItsWriterOut() throws {
        let fixture = try MatterNodeFixture()
        let index = try fixture.addFabric()
        _ = try fixture.completeCommissioning(fabric: index)
        let admin = SubjectDescriptor.caseSession(fabricIndex: index, node: 112233)
        let whole = AttributePath(endpoint: 0, cluster: 0x1F, attribute: 0)
        var append = whole
        append.listIndex = .append
        let entries = fixture.node.commissioning.acl + [
            ACLEntry(privilege: .view, authMode: .case, subjects: [5], fabricIndex: index),
            ACLEntry(privilege: .operate, authMode: .case, subjects: [6], fabricIndex: index),
        ]
        let writesBefore = fixture.storage.writeCount
        // The chunking a controller does when a list does not fit: an empty list, then one item per chunk.
        let statuses = try send(
            fixture,
            [
                [AttributeDataIB(dataVersion: nil, path: whole, data: .array([]))],
                [
                    AttributeDataIB(
                        dataVersion: nil, path: append, data: entries[0].encoded(includingFabricIndex: false).value)
                ],
                [
                    AttributeDataIB(
                        dataVersion: nil, path: append, data: entries[1].encoded(includingFabricIndex: false).value),
                    AttributeDataIB(
                        dataVersion: nil, path: append, data: entries[2].encoded(includingFabricIndex: false).value)
                ]
            ], as: admin)
        #expect(statuses == [[], [], [.success]])
        #expect(fixture.node.commissioning.acl == entries)
        // Written once, whole.
        #expect(fixture.storage.writeCount == writesBefore + 1)
    }

    @Test func aListAbandonedMidwayIsNotWritten() throws {
        let fixture = try MatterNodeFixture()
        let probe = ProbeCluster()
        fixture.node.dataModel.addEndpoint(EndpointDefinition(id: 1, deviceTypes: [], clusters: [probe]))
        let whole = AttributePath(endpoint: 1, cluster: probe.id, attribute: 1)
        var exchange = IMExchangeState()
        _ = fixture.send(
            .writeRequest,
            WriteRequest(
                writeRequests: [
                    AttributeDataIB(dataVersion: nil, path: whole, data: .array([TLVElement(.unsigned(1))]))
                ],
                moreChunkedMessages: true
            ).encoded(), exchange: &exchange, as: pase)
        // The peer gives up with something else than a WriteRequest.
        let reply = fixture.send(
            .readRequest, ReadRequest(attributeRequests: [whole]).encoded(), exchange: &exchange, as: pase)
        #expect(reply == .status(.invalidAction))
        #expect(probe.values.withLock { $0.entries }.isEmpty)
    }
}

@Suite struct SubscriptionReportTests {
    @Test func aChangeIsReportedAfterTheMinimumIntervalAndSilenceKeepsAlive() throws {
        let fixture = try MatterNodeFixture()
        let index = try fixture.addFabric()
        _ = try fixture.completeCommissioning(fabric: index)
        let admin = SubjectDescriptor.caseSession(fabricIndex: index, node: 112233)
        let server = fixture.node.interactionModel
        var exchange = IMExchangeState()
        let request = SubscribeRequest(
            minIntervalFloorSeconds: 2, maxIntervalCeilingSeconds: 60,
            attributeRequests: [AttributePath(endpoint: 0, cluster: 0x28), AttributePath(endpoint: 0, cluster: 0x30)])
        _ = fixture.send(.subscribeRequest, request.encoded(), exchange: &exchange, as: admin)
        _ = fixture.send(.statusResponse, StatusResponse(.success).encoded(), exchange: &exchange, as: admin)
        #expect(server.reportsDue(now: fixture.clock.now).isEmpty)

        let label = AttributePath(endpoint: 0, cluster: 0x28, attribute: 5)
        #expect(
            try fixture.write([AttributeDataIB(dataVersion: nil, path: label, data: .utf8("Hall"))], as: admin) == [
                .success
            ])
        // Not before the minimum interval.
        fixture.clock.advance(.seconds(1))
        #expect(server.reportsDue(now: fixture.clock.now).isEmpty)
        fixture.clock.advance(.seconds(1))
        let due = server.reportsDue(now: fixture.clock.now)
        try #require(due.count == 1)
        #expect(due[0].subscriptionID == 1)
        #expect(due[0].subject == admin)
        #expect(due[0].expectsResponse)
        let report = try ReportData(decoding: due[0].message.payload)
        #expect(report.subscriptionID == 1)
        #expect(!report.suppressResponse)
        // Only the changed cluster, with its new DataVersion.
        let paths = report.attributeReports.compactMap { r -> AttributeDataIB? in
            if case .data(let d) = r { d } else { nil }
        }
        #expect(!paths.isEmpty)
        #expect(paths.allSatisfy { $0.path.cluster == 0x28 })
        #expect(paths.first { $0.path.attribute == 5 }?.data == .utf8("Hall"))
        #expect(
            paths.first?.dataVersion
                == fixture.node.dataModel.dataVersion(ConcreteClusterPath(endpoint: 0, cluster: 0x28)))
        // The subscriber's StatusResponse ends the exchange; nothing more is due until the maximum interval.
        var reportExchange = due[0].exchange
        let answer = fixture.node.receive(
            opcode: InteractionModelOpcode.statusResponse.rawValue,
            payload: StatusResponse(.success).encoded().encoded(), exchange: &reportExchange,
            subject: admin, now: fixture.clock.now)
        #expect(answer == IMReply(message: nil, closesExchange: true))
        fixture.clock.advance(.seconds(10))
        #expect(server.reportsDue(now: fixture.clock.now).isEmpty)
        fixture.clock.advance(.seconds(50))
        let keepAlive = server.reportsDue(now: fixture.clock.now)
        try #require(keepAlive.count == 1)
        let empty = try ReportData(decoding: keepAlive[0].message.payload)
        #expect(empty.attributeReports.isEmpty)
        // Answered like every subscription report: the subscriber's StatusResponse says it is still there.
        #expect(!empty.suppressResponse)
        #expect(keepAlive[0].expectsResponse)
        #expect(server.nextKeepAliveDeadline == fixture.clock.now + 60_000)
    }

    @Test func aRefusedReportEndsTheSubscription() throws {
        let fixture = try MatterNodeFixture()
        let index = try fixture.addFabric()
        _ = try fixture.completeCommissioning(fabric: index)
        let admin = SubjectDescriptor.caseSession(fabricIndex: index, node: 112233)
        var exchange = IMExchangeState()
        let request = SubscribeRequest(minIntervalFloorSeconds: 0, maxIntervalCeilingSeconds: 10,
                                       attributeRequests: [AttributePath(endpoint: 0, cluster: 0x28, attribute: 5)])
        _ = fixture.send(.subscribeRequest, request.encoded(), exchange: &exchange, as: admin)
        _ = fixture.send(.statusResponse, StatusResponse(.success).encoded(), exchange: &exchange, as: admin)
        _ = try fixture.write(
            [
                AttributeDataIB(
                    dataVersion: nil, path: AttributePath(endpoint: 0, cluster: 0x28, attribute: 5),
                    data: .utf8("x"))
            ], as: admin)
        let due = fixture.node.interactionModel.reportsDue(now: fixture.clock.now)
        try #require(due.count == 1)
        var reportExchange = due[0].exchange
        _ = fixture.node.receive(
            opcode: InteractionModelOpcode.statusResponse.rawValue,
            payload: StatusResponse(.invalidSubscription).encoded().encoded(), exchange: &reportExchange,
            subject: admin, now: fixture.clock.now)
        #expect(fixture.node.interactionModel.subscriptions.isEmpty)
    }
}

extension SubscriptionReportTests {
    @Test func removingAFabricEndsItsSubscriptions() throws {
        let fixture = try MatterNodeFixture()
        let first = try fixture.addFabric(fabricID: 1, rootPublicKey: [0x04] + [UInt8](repeating: 1, count: 64))
        _ = try fixture.completeCommissioning(fabric: first)
        let second = try fixture.addFabric(fabricID: 2, rootPublicKey: [0x04] + [UInt8](repeating: 2, count: 64))
        _ = try fixture.completeCommissioning(fabric: second)
        for fabric in [first, second] {
            var exchange = IMExchangeState()
            let request = SubscribeRequest(minIntervalFloorSeconds: 0, maxIntervalCeilingSeconds: 10,
                                           attributeRequests: [AttributePath(endpoint: 0, cluster: 0x28, attribute: 5)])
            _ = fixture.send(
                .subscribeRequest, request.encoded(), exchange: &exchange,
                as: .caseSession(fabricIndex: fabric, node: 112233))
        }
        #expect(fixture.node.interactionModel.subscriptions.count == 2)
        let removed = try fixture.invokeForResponse(0, 0x003E, 0x0A, as: .caseSession(fabricIndex: first, node: 112233))
        {
            TLVElement(context: 0, .uint(second))
        }
        #expect(removed[context: 0]?.unsignedValue == 0)
        #expect(fixture.node.interactionModel.subscriptions.map(\.subject.fabricIndex) == [first])
    }
}

@Suite struct InteractionModelExchangeTests {
    @Test func aReadOnTheExchangeLayerIsAnsweredOnItsExchange() throws {
        let fixture = try MatterNodeFixture()
        let transport = RecordingTransport()
        let manager = ExchangeManager(transport: transport, firstExchangeID: 100, jitter: { 0 })
        let session = SessionHandle(7)
        InteractionModelExchange.register(
            on: manager, core: fixture.node,
            subject: { $0 == session ? .pase() : nil }, now: { [clock = fixture.clock] in clock.now })
        let request = ReadRequest(attributeRequests: [AttributePath(endpoint: 0, cluster: 0x28, attribute: 2)])
            .encoded().encoded()
        let header = PayloadHeader(
            isInitiator: true, needsAcknowledgement: true, opcode: InteractionModelOpcode.readRequest.rawValue,
            exchangeID: 5, protocolID: .interactionModel)
        manager.receive(
            MatterMessage(header: MessageHeader(messageCounter: 1), payloadHeader: header, payload: request),
            from: session, isDuplicate: false, now: fixture.clock.now)
        let sent = transport.takeSent()
        try #require(sent.count == 1)
        #expect(sent[0].payloadHeader.opcode == InteractionModelOpcode.reportData.rawValue)
        #expect(sent[0].payloadHeader.exchangeID == 5)
        #expect(!sent[0].payloadHeader.isInitiator)
        #expect(sent[0].payloadHeader.acknowledgedMessageCounter == 1)
        let report = try ReportData(decoding: sent[0].payload)
        #expect(report.attributeReports == [.data(AttributeDataIB(
            dataVersion: fixture.node.dataModel.dataVersion(ConcreteClusterPath(endpoint: 0, cluster: 0x28)),
            path: AttributePath(endpoint: 0, cluster: 0x28, attribute: 2), data: .unsigned(0xFFF1)))])

        // A session the Interaction Model does not serve gets nothing.
        manager.receive(
            MatterMessage(header: MessageHeader(messageCounter: 2), payloadHeader: header, payload: request),
            from: SessionHandle(8), isDuplicate: false, now: fixture.clock.now)
        #expect(
            transport.takeSent().allSatisfy { $0.payloadHeader.opcode != InteractionModelOpcode.reportData.rawValue })
    }
}

extension SubscriptionReportTests {
    /// Subscribes `subject` and answers the priming report; returns the subscription's id.
    func subscribe(_ fixture: MatterNodeFixture, _ paths: [AttributePath], min: UInt16, max: UInt16,
                   as subject: SubjectDescriptor) throws -> UInt32 {
        var exchange = IMExchangeState()
        let request = SubscribeRequest(
            minIntervalFloorSeconds: min, maxIntervalCeilingSeconds: max, attributeRequests: paths)
        _ = fixture.send(.subscribeRequest, request.encoded(), exchange: &exchange, as: subject)
        let answer = fixture.send(.statusResponse, StatusResponse(.success).encoded(), exchange: &exchange, as: subject)
        return try SubscribeResponse(decoding: try #require(answer.message).payload).subscriptionID
    }

    @Test func theNextReportWaitsForTheMinimumIntervalAndForTheLastAnswer() throws {
        let fixture = try MatterNodeFixture()
        let index = try fixture.addFabric()
        _ = try fixture.completeCommissioning(fabric: index)
        let admin = SubjectDescriptor.caseSession(fabricIndex: index, node: 112233)
        let server = fixture.node.interactionModel
        #expect(server.nextReportDeadline == nil)
        _ = try subscribe(fixture, [AttributePath(endpoint: 0, cluster: 0x28)], min: 2, max: 60, as: admin)
        let subscribed = fixture.clock.now
        // Nothing new: the keep-alive at the maximum interval.
        #expect(server.nextReportDeadline == subscribed + 60_000)
        fixture.node.dataModel.markChanged(ConcreteClusterPath(endpoint: 0, cluster: 0x28))
        #expect(server.nextReportDeadline == subscribed + 2000)
        fixture.clock.advance(.seconds(2))
        let due = server.reportsDue(now: fixture.clock.now)
        try #require(due.count == 1)
        // While the subscriber has not answered, no further report goes, however much changes.
        #expect(server.subscriptions.first?.isReportInFlight == true)
        fixture.node.dataModel.markChanged(ConcreteClusterPath(endpoint: 0, cluster: 0x28))
        #expect(server.nextReportDeadline == nil)
        fixture.clock.advance(.seconds(5))
        #expect(server.reportsDue(now: fixture.clock.now).isEmpty)
        var exchange = due[0].exchange
        _ = fixture.node.receive(
            opcode: InteractionModelOpcode.statusResponse.rawValue,
            payload: StatusResponse(.success).encoded().encoded(), exchange: &exchange, subject: admin,
            now: fixture.clock.now)
        // Answered: the change made meanwhile is due (its minimum interval has passed).
        #expect(server.subscriptions.first?.isReportInFlight == false)
        #expect(try #require(server.nextReportDeadline) <= fixture.clock.now)
        #expect(server.reportsDue(now: fixture.clock.now).count == 1)
    }

    @Test func aChangeTheSubscriberMayNotSeeIsNotLookedAtAgain() throws {
        let fixture = try MatterNodeFixture()
        let viewer = try fixture.commissionedWithViewer().viewer
        let server = fixture.node.interactionModel
        // A wildcard over endpoints for the ACL, which only administrators read: the viewer sees nothing of it.
        _ = try subscribe(fixture, [AttributePath(cluster: 0x1F, attribute: 0)], min: 1, max: 60, as: viewer)
        let subscribed = fixture.clock.now
        fixture.node.dataModel.markChanged(ConcreteClusterPath(endpoint: 0, cluster: 0x1F))
        #expect(server.nextReportDeadline == subscribed + 1000)
        fixture.clock.advance(.seconds(1))
        // Nothing to report; the change is taken as reported, so the node's timer goes back to the keep-alive
        // instead of waking at once forever.
        #expect(server.reportsDue(now: fixture.clock.now).isEmpty)
        #expect(server.nextReportDeadline == subscribed + 60_000)
    }

    @Test func theMaximumIntervalIsTheSubscribersCeiling() throws {
        let fixture = try MatterNodeFixture()
        let index = try fixture.addFabric()
        _ = try fixture.completeCommissioning(fabric: index)
        let admin = SubjectDescriptor.caseSession(fabricIndex: index, node: 112233)
        for (floor, ceiling, expected) in [(UInt16(0), UInt16(0), UInt16(1)), (2, 7200, 7200), (10, 10, 10)] {
            var exchange = IMExchangeState()
            let request = SubscribeRequest(
                keepSubscriptions: true, minIntervalFloorSeconds: floor, maxIntervalCeilingSeconds: ceiling,
                attributeRequests: [AttributePath(endpoint: 0, cluster: 0x28, attribute: 5)])
            _ = fixture.send(.subscribeRequest, request.encoded(), exchange: &exchange, as: admin)
            let answer = fixture.send(
                .statusResponse, StatusResponse(.success).encoded(), exchange: &exchange, as: admin)
            let response = try SubscribeResponse(decoding: try #require(answer.message).payload)
            #expect(response.maxIntervalSeconds == expected)
            // Within what the specification allows: at least the floor, at most max(ceiling, 60 minutes).
            #expect(response.maxIntervalSeconds >= floor && response.maxIntervalSeconds <= max(ceiling, 3600))
        }
    }
}
