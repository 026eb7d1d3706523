// The node's sessions when a commissioning is interrupted, on the injected clock: the fail-safe's expiry closes the
// PASE session and the sessions of the fabric it rolled back, keeps those of fabrics committed before, and leaves the
// node commissionable (it answers PASE again); a PASE session the commissioner dropped half-way changes nothing until
// then. The node runs on loopback UDP but no message is sent: sessions are installed as PASE and CASE would install
// them, and the fail-safe's timer is fired by hand at the clock's deadline.

@testable import HearthMatter
import NIOCore
import NIOPosix
import Testing

@Suite(.serialized) struct MatterNodeFailSafeTests {
    struct Running {
        let group: MultiThreadedEventLoopGroup
        let fixture: MatterNodeFixture
        let clock: MatterManualClock
        let node: MatterNode

        /// Runs `body` on the node's loop, where its sessions live.
        func onLoop<T: Sendable>(_ body: @escaping @Sendable (MatterNode) throws -> T) async throws -> T {
            let node = self.node
            return try await node.transport.eventLoop.submit { try body(node) }.get()
        }

        /// Moves the node's clock and the core's together.
        func advance(milliseconds: Int64) {
            clock.advance(by: milliseconds)
            fixture.clock.advance(.milliseconds(milliseconds))
        }

        func stop() async throws {
            await node.stop()
            try await group.shutdownGracefully()
        }
    }

    static func start() async throws -> Running {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let fixture = try MatterNodeFixture()
        let clock = MatterManualClock(now: fixture.clock.start)
        let options = try MatterNodeOptions.loopback()
        let node = MatterNode(
            core: fixture.node, options: options, eventLoop: group.next(), clock: clock, log: { _ in })
        try await node.start()
        return Running(group: group, fixture: fixture, clock: clock, node: node)
    }

    static func session(_ kind: EstablishedSession.Kind, id: UInt16) throws -> EstablishedSession {
        EstablishedSession(
            kind: kind, localSessionID: id, peerSessionID: id,
            keys: try SessionKeys(
                secret: [UInt8](repeating: UInt8(truncatingIfNeeded: id), count: 32), salt: [],
                info: "SessionKeys"),
            peerParameters: nil, resumed: false)
    }

    static let peer = try! SocketAddress(ipAddress: "127.0.0.1", port: 5999)

    /// The node's sessions as (kind, fabric) pairs, sorted.
    static func sessions(of running: Running) async throws -> [String] {
        try await running.onLoop { node in
            node.sessions.values.map { "\($0.kind == .pase ? "PASE" : "CASE") \($0.fabricIndex)" }.sorted()
        }
    }

    @Test(.timeLimit(.minutes(1)), arguments: [CommissioningStage.addedNOC, .usedCASE])
    func expiryClosesThePASESessionAndTheRolledBackFabricsSessions(stage: CommissioningStage) async throws {
        let running = try await Self.start()
        // A fabric committed earlier, with a CASE session of its own.
        let first = try running.fixture.addFabric(fabricID: 1, rootPublicKey: [0x04] + [UInt8](repeating: 1, count: 64))
        #expect(try running.fixture.completeCommissioning(fabric: first) == 0)
        _ = running.fixture.node.takeEvents()
        try await running.onLoop { node in
            node.install(
                try Self.session(.case(fabricIndex: first, peerNodeID: 112233, peerCASEAuthenticatedTags: []), id: 10),
                peer: Self.peer)
        }
        // The second commissioner's PASE session, its steps, and (after AddNOC) its CASE session on the new fabric.
        try await running.onLoop { node in node.install(try Self.session(.pase, id: 20), peer: Self.peer) }
        let added = try #require(
            try InterruptedCommissioningTests.commission(
                running.fixture, upTo: stage, fabricID: 2, rootPublicKey: [0x04] + [UInt8](repeating: 2, count: 64)))
        try await running.onLoop { node in
            node.install(
                try Self.session(.case(fabricIndex: added, peerNodeID: 112233, peerCASEAuthenticatedTags: []), id: 30),
                peer: Self.peer)
        }
        #expect(try await Self.sessions(of: running) == ["CASE \(added)", "CASE \(first)", "PASE 0"].sorted())

        // A millisecond early, the timer changes nothing.
        running.advance(milliseconds: Int64(InterruptedCommissioningTests.failSafeSeconds) * 1000 - 1)
        try await running.onLoop { node in node.expireFailSafeIfDue() }
        #expect(try await Self.sessions(of: running).count == 3)

        running.advance(milliseconds: 1)
        try await running.onLoop { node in node.expireFailSafeIfDue() }
        #expect(try await Self.sessions(of: running) == ["CASE \(first)"])
        #expect(running.fixture.node.commissioning.fabrics.map(\.index) == [first])
        try await running.stop()
    }

    @Test(.timeLimit(.minutes(1)), arguments: CommissioningStage.allCases)
    func aDroppedPASESessionIsRolledBackAtExpiryAndTheNodeIsCommissionableAgain(stage: CommissioningStage) async throws
    {
        let running = try await Self.start()
        try await running.onLoop { node in node.install(try Self.session(.pase, id: 20), peer: Self.peer) }
        let added = try InterruptedCommissioningTests.commission(running.fixture, upTo: stage)
        // The commissioner goes away: its PASE session closes; the fail-safe runs on.
        try await running.onLoop { node in
            for (handle, record) in node.sessions where record.kind == .pase { node.removeSession(handle) }
        }
        #expect(running.fixture.node.commissioning.isFailSafeArmed)
        #expect(running.node.isCommissioned == (added != nil))

        running.advance(milliseconds: Int64(InterruptedCommissioningTests.failSafeSeconds) * 1000)
        try await running.onLoop { node in node.expireFailSafeIfDue() }
        #expect(try await Self.sessions(of: running).isEmpty)
        #expect(!running.node.isCommissioned)
        try InterruptedCommissioningTests.expectNothingLeft(running.fixture, storedBefore: nil)
        try await running.stop()
    }
}
