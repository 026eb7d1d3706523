// A commissioning that stops at any stage, on the injected clock: whatever the commissioner got to (the fail-safe
// armed, a CSR made, a trusted root added, a NOC added, a CASE session used), the fail-safe's expiry leaves nothing —
// no trusted root, NOC, fabric, ACL entry, breadcrumb, pending key or stored byte — and the node takes a clean
// commissioning afterwards. The node's own sessions on expiry are MatterNodeFailSafeTests'.

@testable import HearthMatter
import Testing

/// How far a commissioner got before it went away.
enum CommissioningStage: String, CaseIterable, Sendable, CustomStringConvertible {
    case armedFailSafe = "after ArmFailSafe"
    case madeCSR = "after CSRRequest"
    case addedTrustedRoot = "after AddTrustedRootCertificate"
    case addedNOC = "after AddNOC"
    case usedCASE = "after CASE, before CommissioningComplete"

    var description: String { rawValue }
}

@Suite struct InterruptedCommissioningTests {
    static let pase = SubjectDescriptor.pase(attestationChallenge: [UInt8](repeating: 7, count: 16))
    static let failSafeSeconds: UInt16 = 30
    static let admin: UInt64 = 112233

    /// Runs the commissioning steps up to `stage` over PASE (and CASE for the last); returns the fabric AddNOC made.
    @discardableResult
    static func commission(
        _ fixture: MatterNodeFixture, upTo stage: CommissioningStage, fabricID: UInt64 = 0x1234,
        rootPublicKey: [UInt8] = MatterNodeFixture.rootPublicKey
    ) throws -> FabricIndex? {
        let arm = try fixture.invokeForResponse(0, 0x0030, 0x00, as: pase) {
            TLVElement(context: 0, .uint(failSafeSeconds))
            TLVElement(context: 1, .uint(UInt64(1)))
        }
        try #require(arm[context: 0]?.unsignedValue == 0, "ArmFailSafe: \(arm)")
        guard stage != .armedFailSafe else { return nil }

        let csr = try fixture.invokeForResponse(0, 0x003E, 0x04, as: pase) {
            TLVElement(context: 0, .bytes([UInt8](repeating: 0x11, count: 32)))
        }
        let elements = try TLVElement(decoding: try #require(csr[context: 0]?.bytesValue))
        let publicKey = Array(try #require(elements[context: 1]?.bytesValue).dropFirst(2))
        guard stage != .madeCSR else { return nil }

        let root = try fixture.invokeStatus(0, 0x003E, 0x0B, as: pase) {
            TLVElement(context: 0, .bytes(StandInCertificates.root(publicKey: rootPublicKey)))
        }
        try #require(root == .success)
        // The root is visible while pending.
        #expect(try fixture.readValue(0, 0x003E, 4, as: pase) != .array([]))
        guard stage != .addedTrustedRoot else { return nil }

        let noc = try fixture.invokeForResponse(0, 0x003E, 0x06, as: pase) {
            TLVElement(
                context: 0,
                .bytes(
                    StandInCertificates.noc(
                        fabricID: fabricID, nodeID: 0x0102_0304, publicKey: publicKey,
                        rootPublicKey: rootPublicKey)))
            TLVElement(context: 2, .bytes([UInt8](repeating: 0x5A, count: 16)))
            TLVElement(context: 3, .uint(admin))
            TLVElement(context: 4, .uint(UInt16(0xFFF1)))
        }
        try #require(noc[context: 0]?.unsignedValue == 0, "AddNOC: \(noc)")
        let index = try #require(noc[context: 1]?.unsignedValue.flatMap { FabricIndex(exactly: $0) })
        guard stage == .usedCASE else { return index }

        // Over CASE on the new fabric, as a commissioner does once it has found the node operationally: it reads,
        // extends the fail-safe and writes the ACL — then never sends CommissioningComplete.
        let caseAdmin = SubjectDescriptor.caseSession(fabricIndex: index, node: admin)
        #expect(try fixture.readValue(0, 0x003E, 5, as: caseAdmin) == .unsigned(UInt64(index)))
        let extend = try fixture.invokeForResponse(0, 0x0030, 0x00, as: caseAdmin) {
            TLVElement(context: 0, .uint(failSafeSeconds))
            TLVElement(context: 1, .uint(UInt64(2)))
        }
        try #require(extend[context: 0]?.unsignedValue == 0, "ArmFailSafe over CASE: \(extend)")
        let own = fixture.node.commissioning.acl.filter { $0.fabricIndex == index }
        let entries = own + [ACLEntry(privilege: .view, authMode: .case, subjects: [42], fabricIndex: index)]
        let written = try fixture.write(
            [
                AttributeDataIB(
                    dataVersion: nil, path: AttributePath(endpoint: 0, cluster: 0x001F, attribute: 0),
                    data: .array(entries.map { $0.encoded(includingFabricIndex: false) }))
            ],
            as: caseAdmin)
        #expect(written == [.success])
        #expect(fixture.node.commissioning.acl.filter { $0.fabricIndex == index }.count == 2)
        return index
    }

    /// Everything commissioning could have left is gone, read through the node as a commissioner reads it.
    static func expectNothingLeft(_ fixture: MatterNodeFixture, storedBefore: [UInt8]?) throws {
        let state = fixture.node.commissioning
        #expect(state.fabrics.isEmpty)
        #expect(state.acl.isEmpty)
        #expect(state.breadcrumb == 0)
        #expect(!state.isFailSafeArmed)
        #expect(!state.isCommissioned)
        #expect(state.pendingRootCertificate == nil)
        #expect(fixture.node.nextDeadline == nil)
        #expect(try fixture.storage.load(.fabrics) == storedBefore)
        #expect(try fixture.readValue(0, 0x003E, 4, as: pase) == .array([]))  // TrustedRootCertificates
        #expect(try fixture.readValue(0, 0x003E, 0, as: pase, fabricFiltered: false) == .array([]))  // NOCs
        #expect(try fixture.readValue(0, 0x003E, 1, as: pase, fabricFiltered: false) == .array([]))  // Fabrics
        #expect(try fixture.readValue(0, 0x003E, 3, as: pase) == .unsigned(0))  // CommissionedFabrics
        #expect(try fixture.readValue(0, 0x0030, 0, as: pase) == .unsigned(0))  // Breadcrumb
        // Nothing of the old fail-safe can be finished: AddNOC and CommissioningComplete find none.
        #expect(
            try fixture.invokeStatus(0, 0x003E, 0x0B, as: pase) {
                TLVElement(context: 0, .bytes(StandInCertificates.root(publicKey: MatterNodeFixture.rootPublicKey)))
            } == .failsafeRequired)
        let complete = try fixture.invokeForResponse(0, 0x0030, 0x04, as: pase)
        #expect(complete[context: 0]?.unsignedValue == UInt64(CommissioningError.noFailSafe.rawValue))
    }

    @Test(arguments: CommissioningStage.allCases)
    func expiryLeavesNothingAndTheNodeIsCommissionableAgain(stage: CommissioningStage) throws {
        let fixture = try MatterNodeFixture()
        let storedBefore = try fixture.storage.load(.fabrics)
        let added = try Self.commission(fixture, upTo: stage)
        _ = fixture.node.takeEvents()
        let deadline = try #require(fixture.node.nextDeadline)
        // The CASE stage extended the fail-safe from the same instant: the deadline is the first arming's.
        #expect(deadline == fixture.clock.start + Int64(Self.failSafeSeconds) * 1000)

        // A millisecond before the deadline nothing has moved.
        fixture.clock.advance(.milliseconds(Int64(Self.failSafeSeconds) * 1000 - 1))
        fixture.node.tick(now: fixture.clock.now)
        #expect(fixture.node.commissioning.isFailSafeArmed)
        #expect(fixture.node.commissioning.fabrics.count == (added == nil ? 0 : 1))

        fixture.clock.advance(.milliseconds(1))
        fixture.node.tick(now: fixture.clock.now)
        #expect(fixture.node.takeEvents() == [.failSafeExpired(removedFabrics: added.map { [$0] } ?? [])])
        try Self.expectNothingLeft(fixture, storedBefore: storedBefore)
        if let added {
            // The fabric's administrator lost its access with the fabric.
            #expect(
                try fixture.invokeStatus(0, 0x0030, 0x04, as: .caseSession(fabricIndex: added, node: Self.admin))
                    == .unsupportedAccess)
        }

        // A clean commissioning afterwards: a new CSR is needed (the old key went), and it completes and is stored.
        let index = try fixture.addFabric()
        #expect(try fixture.completeCommissioning(fabric: index) == 0)
        #expect(fixture.node.commissioning.fabrics.map(\.index) == [index])
        #expect(fixture.node.commissioning.isCommissioned)
        #expect(try fixture.storage.load(.fabrics) != nil)
    }

    @Test(arguments: CommissioningStage.allCases)
    func theExpiryIsSeenByTheNextMessageWithoutATimer(stage: CommissioningStage) throws {
        let fixture = try MatterNodeFixture()
        try Self.commission(fixture, upTo: stage)
        fixture.clock.advance(.seconds(Int64(Self.failSafeSeconds)))
        // No tick: the read itself finds the fail-safe over and sees the rolled-back node.
        #expect(try fixture.readValue(0, 0x003E, 4, as: Self.pase) == .array([]))
        try Self.expectNothingLeft(fixture, storedBefore: nil)
    }

    @Test(arguments: CommissioningStage.allCases)
    func anInterruptedSecondCommissioningLeavesTheFirstFabricAsItWas(stage: CommissioningStage) throws {
        let fixture = try MatterNodeFixture()
        let first = try fixture.addFabric(fabricID: 1, rootPublicKey: [0x04] + [UInt8](repeating: 1, count: 64))
        #expect(try fixture.completeCommissioning(fabric: first) == 0)
        let fabrics = fixture.node.commissioning.fabrics
        let acl = fixture.node.commissioning.acl
        let stored = try fixture.storage.load(.fabrics)
        _ = fixture.node.takeEvents()

        try Self.commission(fixture, upTo: stage, fabricID: 2, rootPublicKey: [0x04] + [UInt8](repeating: 2, count: 64))
        fixture.clock.advance(.seconds(Int64(Self.failSafeSeconds)))
        fixture.node.tick(now: fixture.clock.now)
        #expect(fixture.node.commissioning.fabrics == fabrics)
        #expect(fixture.node.commissioning.acl == acl)
        #expect(try fixture.storage.load(.fabrics) == stored)
        #expect(!fixture.node.commissioning.isFailSafeArmed)
        let roots = try fixture.readValue(0, 0x003E, 4, as: Self.pase)
        #expect(
            roots
                == .array([
                    TLVElement(.bytes(StandInCertificates.root(publicKey: [0x04] + [UInt8](repeating: 1, count: 64))))
                ]))
        // The first fabric's administrator still reads.
        let firstAdmin = SubjectDescriptor.caseSession(fabricIndex: first, node: Self.admin)
        #expect(try fixture.readValue(0, 0x003E, 5, as: firstAdmin) == .unsigned(UInt64(first)))
    }

    @Test func aCommissionerThatDisarmsLeavesNothingAtOnce() throws {
        // ArmFailSafe(0) is how a commissioner that gives up restarts without waiting for the expiry.
        let fixture = try MatterNodeFixture()
        try Self.commission(fixture, upTo: .addedNOC)
        let disarm = try fixture.invokeForResponse(0, 0x0030, 0x00, as: Self.pase) {
            TLVElement(context: 0, .uint(UInt16(0)))
            TLVElement(context: 1, .uint(UInt64(0)))
        }
        #expect(disarm[context: 0]?.unsignedValue == 0)
        try Self.expectNothingLeft(fixture, storedBefore: nil)
    }
}
