// AdministratorCommissioning and the commissioning window: opening (enhanced and basic), the specification's refusals,
// the window closing on its timeout (the injected clock), on CommissioningComplete and on revocation, AdminFabricIndex
// following its fabric; the fabric-scoped attributes each fabric sees; local administration (remove, reset).

@testable import HearthMatter
import Testing

@Suite struct AdministratorCommissioningTests {
    static let cluster: ClusterID = 0x003C
    let salt = [UInt8](repeating: 0x53, count: 16)

    /// A node with a committed fabric; returns the fixture and the fabric's administrator.
    func commissioned() throws -> (MatterNodeFixture, SubjectDescriptor) {
        let fixture = try MatterNodeFixture()
        let index = try fixture.addFabric()
        try #require(try fixture.completeCommissioning(fabric: index) == 0)
        _ = fixture.node.takeEvents()
        return (fixture, .caseSession(fabricIndex: index, node: 112233))
    }

    /// Invokes a command inside a timed interaction; returns its status IB (SUCCESS for a response command).
    func timedInvoke(_ fixture: MatterNodeFixture, _ command: CommandID, as subject: SubjectDescriptor,
                     @TLVMembersBuilder fields: () -> [TLVElement] = { [] }) throws -> StatusIB {
        var exchange = IMExchangeState()
        _ = fixture.send(
            .timedRequest, TimedRequest(timeoutMilliseconds: 1000).encoded(), exchange: &exchange, as: subject)
        let request = InvokeRequest(timedRequest: true, invokeRequests: [
            CommandDataIB(path: CommandPath(endpoint: 0, cluster: Self.cluster, command: command),
                          fields: TLVElement(.structure(fields()))),
        ])
        let reply = fixture.send(.invokeRequest, request.encoded(), exchange: &exchange, as: subject)
        let message = try #require(reply.message)
        try #require(message.opcode == .invokeResponse, "expected InvokeResponse, got \(message.opcode)")
        let response = try InvokeResponse(decoding: message.payload)
        switch try #require(response.invokeResponses.first) {
        case .command: return StatusIB(.success)
        case .status(let status): return status.status
        }
    }

    func openEnhanced(_ fixture: MatterNodeFixture, as subject: SubjectDescriptor, timeout: UInt16 = 300,
                      verifier: [UInt8]? = nil, discriminator: UInt16 = 3000, iterations: UInt32 = 1000,
                      salt: [UInt8]? = nil) throws -> StatusIB {
        let serialized = try verifier ?? {
            let computed = try PASEVerifier.compute(passcode: 20202021, salt: self.salt, iterations: 1000)
            return computed.w0 + computed.L
        }()
        return try timedInvoke(fixture, 0x00, as: subject) {
            TLVElement(context: 0, .uint(timeout))
            TLVElement(context: 1, .bytes(serialized))
            TLVElement(context: 2, .uint(discriminator))
            TLVElement(context: 3, .uint(iterations))
            TLVElement(context: 4, .bytes(salt ?? self.salt))
        }
    }

    @Test func enhancedWindowOpensWithTheOpenersVerifierAndClosesOnItsTimeout() throws {
        let (fixture, admin) = try commissioned()
        let node = fixture.node
        #expect(try fixture.readValue(0, Self.cluster, 0, as: admin) == .unsigned(0))
        #expect(try fixture.readValue(0, Self.cluster, 1, as: admin) == .null)
        let own = try PASEVerifier.compute(passcode: 11111111, salt: salt, iterations: 1000)
        // Commissioned and no window: no PASE.
        #expect(node.window.paseVerifier(nodeVerifier: own, isCommissioned: true) == nil)

        #expect(try openEnhanced(fixture, as: admin) == StatusIB(.success))
        #expect(node.window.takeEvents() == [.opened(.enhancedOpen)])
        #expect(try fixture.readValue(0, Self.cluster, 0, as: admin) == .unsigned(1))
        #expect(try fixture.readValue(0, Self.cluster, 1, as: admin) == .unsigned(1))
        #expect(try fixture.readValue(0, Self.cluster, 2, as: admin) == .unsigned(0xFFF1))
        let window = try #require(node.window.current)
        guard case .enhanced(let verifier, let discriminator) = window.kind else { Issue.record("\(window)"); return }
        #expect(discriminator == 3000)
        #expect(node.window.paseVerifier(nodeVerifier: own, isCommissioned: true) == verifier)
        #expect(node.nextDeadline == fixture.clock.now + 300_000)

        fixture.clock.advance(.seconds(299))
        node.tick(now: fixture.clock.now)
        #expect(node.window.current != nil)
        fixture.clock.advance(.seconds(1))
        node.tick(now: fixture.clock.now)
        #expect(node.window.current == nil)
        #expect(node.window.takeEvents() == [.closed(.timeout)])
        #expect(try fixture.readValue(0, Self.cluster, 0, as: admin) == .unsigned(0))
        #expect(node.nextDeadline == nil)
    }

    @Test func refusalsCarryTheClusterStatuses() throws {
        let (fixture, admin) = try commissioned()
        // Timeout bounds: 180…900 seconds, INVALID_COMMAND outside.
        #expect(try openEnhanced(fixture, as: admin, timeout: 179) == StatusIB(.invalidCommand))
        #expect(try openEnhanced(fixture, as: admin, timeout: 901) == StatusIB(.invalidCommand))
        #expect(try openEnhanced(fixture, as: admin, discriminator: 4096) == StatusIB(.invalidCommand))
        // PAKE parameters: PAKEParameterError.
        let pake = StatusIB(.failure, clusterStatus: 3)
        #expect(try openEnhanced(fixture, as: admin, verifier: [1, 2, 3]) == pake)
        #expect(try openEnhanced(fixture, as: admin, iterations: 999) == pake)
        #expect(try openEnhanced(fixture, as: admin, iterations: 100_001) == pake)
        #expect(try openEnhanced(fixture, as: admin, salt: [UInt8](repeating: 1, count: 15)) == pake)
        #expect(try openEnhanced(fixture, as: admin, salt: [UInt8](repeating: 1, count: 33)) == pake)
        #expect(fixture.node.window.current == nil)
        // Revoking with nothing open: WindowNotOpen.
        #expect(try timedInvoke(fixture, 0x02, as: admin) == StatusIB(.failure, clusterStatus: 4))
        // A second window while one is open: Busy, of either kind.
        #expect(try openEnhanced(fixture, as: admin, timeout: 180) == StatusIB(.success))
        #expect(try openEnhanced(fixture, as: admin) == StatusIB(.failure, clusterStatus: 2))
        #expect(try timedInvoke(fixture, 0x01, as: admin) { TLVElement(context: 0, .uint(UInt16(200))) }
            == StatusIB(.failure, clusterStatus: 2))
        // The commands need a timed interaction and the Administer privilege.
        #expect(try fixture.invokeStatus(0, Self.cluster, 0x02, as: admin) == .needsTimedInteraction)
        let viewer = SubjectDescriptor.caseSession(fabricIndex: admin.fabricIndex, node: 999)
        #expect(try timedInvoke(fixture, 0x02, as: viewer) == StatusIB(.unsupportedAccess))
        #expect(fixture.node.window.current != nil)
    }

    @Test func anArmedFailSafeMakesTheNodeBusy() throws {
        let (fixture, admin) = try commissioned()
        let arm = try fixture.invokeForResponse(0, 0x0030, 0x00, as: admin) {
            TLVElement(context: 0, .uint(UInt16(60)))
            TLVElement(context: 1, .uint(UInt64(0)))
        }
        try #require(arm[context: 0]?.unsignedValue == 0)
        #expect(try openEnhanced(fixture, as: admin) == StatusIB(.failure, clusterStatus: 2))
        #expect(try timedInvoke(fixture, 0x01, as: admin) { TLVElement(context: 0, .uint(UInt16(200))) }
            == StatusIB(.failure, clusterStatus: 2))
    }

    @Test func basicWindowUsesTheNodesOwnPasscode() throws {
        let (fixture, admin) = try commissioned()
        #expect(try timedInvoke(fixture, 0x01, as: admin) { TLVElement(context: 0, .uint(UInt16(100))) }
            == StatusIB(.invalidCommand))
        #expect(
            try timedInvoke(fixture, 0x01, as: admin) { TLVElement(context: 0, .uint(UInt16(200))) }
                == StatusIB(.success))
        #expect(try fixture.readValue(0, Self.cluster, 0, as: admin) == .unsigned(2))
        let own = try PASEVerifier.compute(passcode: 11111111, salt: salt, iterations: 1000)
        #expect(fixture.node.window.paseVerifier(nodeVerifier: own, isCommissioned: true) == own)
    }

    @Test func commissioningThroughTheWindowClosesItAndAddsASecondFabric() throws {
        let (fixture, admin) = try commissioned()
        #expect(try openEnhanced(fixture, as: admin) == StatusIB(.success))
        let second = try fixture.addFabric(fabricID: 0x5678, nodeID: 0x0506, adminNode: 445566,
                                           rootPublicKey: [0x04] + [UInt8](repeating: 0xCD, count: 64))
        #expect(fixture.node.window.current != nil)
        #expect(try fixture.completeCommissioning(fabric: second, node: 445566) == 0)
        _ = fixture.node.takeEvents()
        #expect(fixture.node.window.current == nil)
        #expect(fixture.node.window.takeEvents() == [.opened(.enhancedOpen), .closed(.commissioned)])
        #expect(fixture.node.commissioning.fabrics.map(\.index) == [admin.fabricIndex, second])
    }

    @Test func revokeClosesTheWindowAndRollsBackACommissioningUnderWay() throws {
        let (fixture, admin) = try commissioned()
        #expect(try openEnhanced(fixture, as: admin) == StatusIB(.success))
        _ = try fixture.addFabric(fabricID: 0x5678, nodeID: 0x0506, adminNode: 445566,
                                  rootPublicKey: [0x04] + [UInt8](repeating: 0xCD, count: 64))
        #expect(fixture.node.commissioning.fabrics.count == 2)
        #expect(try timedInvoke(fixture, 0x02, as: admin) == StatusIB(.success))
        #expect(fixture.node.window.current == nil)
        #expect(!fixture.node.commissioning.isFailSafeArmed)
        #expect(fixture.node.commissioning.fabrics.map(\.index) == [admin.fabricIndex])
    }

    @Test func removingTheOpenersFabricClearsAdminFabricIndex() throws {
        let (fixture, admin) = try commissioned()
        #expect(try openEnhanced(fixture, as: admin) == StatusIB(.success))
        try fixture.node.removeFabricLocally(admin.fabricIndex)
        _ = fixture.node.takeEvents()
        let window = try #require(fixture.node.window.current)
        #expect(window.adminFabricIndex == nil)
        #expect(window.adminVendorID == nil)
    }

    @Test func eachFabricSeesItsOwnFabricScopedEntries() throws {
        let (fixture, first) = try commissioned()
        #expect(try openEnhanced(fixture, as: first) == StatusIB(.success))
        let index = try fixture.addFabric(fabricID: 0x5678, nodeID: 0x0506, adminNode: 445566,
                                          rootPublicKey: [0x04] + [UInt8](repeating: 0xCD, count: 64))
        #expect(try fixture.completeCommissioning(fabric: index, node: 445566) == 0)
        let second = SubjectDescriptor.caseSession(fabricIndex: index, node: 445566)
        for (subject, own) in [(first, first.fabricIndex), (second, index)] {
            for attribute: AttributeID in [0, 1] {  // NOCs, Fabrics
                guard case .array(let entries) = try fixture.readValue(0, 0x003E, attribute, as: subject) else {
                    Issue.record("not a list"); continue
                }
                #expect(entries.map { $0[context: 0xFE]?.unsignedValue } == [UInt64(own)])
            }
            guard case .array(let acl) = try fixture.readValue(0, 0x001F, 0, as: subject) else {
                Issue.record("ACL"); continue
            }
            #expect(acl.map { $0[context: 0xFE]?.unsignedValue } == [UInt64(own)])
        }
        // Unfiltered, NOCs shows the other fabric's entry without its certificates.
        guard case .array(let nocs) = try fixture.readValue(0, 0x003E, 0, as: second, fabricFiltered: false) else {
            Issue.record("NOCs"); return
        }
        #expect(nocs.count == 2)
        #expect(nocs.first { $0[context: 0xFE]?.unsignedValue == UInt64(first.fabricIndex) }?[context: 1] == nil)
        // A fabric writing the ACL replaces its own entries only.
        let extra = ACLEntry(privilege: .view, authMode: .case, subjects: [42], fabricIndex: index)
        let own = fixture.node.commissioning.acl.filter { $0.fabricIndex == index }
        let statuses = try fixture.write(
            [
                AttributeDataIB(
                    dataVersion: nil, path: AttributePath(endpoint: 0, cluster: 0x001F, attribute: 0),
                    data: .array((own + [extra]).map { $0.encoded(includingFabricIndex: false) }))
            ],
            as: second)
        #expect(statuses == [.success])
        #expect(fixture.node.commissioning.acl.filter { $0.fabricIndex == first.fabricIndex }.count == 1)
        #expect(fixture.node.commissioning.acl.filter { $0.fabricIndex == index }.count == 2)
    }

    @Test func localAdministrationOpensRemovesAndResets() throws {
        let verifier = try PASEVerifier.compute(passcode: 20202021, salt: salt, iterations: 1000)
        let fresh = try MatterNodeFixture()
        #expect(throws: MatterAdministrationError.notCommissioned) {
            try fresh.node.openWindowLocally(
                verifier: verifier, discriminator: 1, timeoutSeconds: 180, now: fresh.clock.now)
        }
        let (fixture, admin) = try commissioned()
        let node = fixture.node
        #expect(throws: MatterAdministrationError.window(.timeoutOutOfRange(seconds: 60))) {
            try node.openWindowLocally(verifier: verifier, discriminator: 1, timeoutSeconds: 60, now: fixture.clock.now)
        }
        try node.openWindowLocally(verifier: verifier, discriminator: 1, timeoutSeconds: 180, now: fixture.clock.now)
        #expect(node.window.current?.adminFabricIndex == nil)
        #expect(throws: MatterAdministrationError.window(.windowAlreadyOpen)) {
            try node.openWindowLocally(
                verifier: verifier, discriminator: 1, timeoutSeconds: 180, now: fixture.clock.now)
        }
        #expect(throws: MatterAdministrationError.noSuchFabric(9, existing: [admin.fabricIndex])) {
            try node.removeFabricLocally(9)
        }
        try node.resetFabrics()
        #expect(node.window.current == nil)
        #expect(node.commissioning.fabrics.isEmpty)
        #expect(node.commissioning.acl.isEmpty)
        // Stored: a restart finds no fabric.
        let restarted = try MatterNodeFixture(storage: fixture.storage)
        #expect(restarted.node.commissioning.fabrics.isEmpty)
        // Uncommissioned again: the node's own passcode is taken.
        #expect(node.window.paseVerifier(nodeVerifier: verifier, isCommissioned: false) == verifier)
    }
}
