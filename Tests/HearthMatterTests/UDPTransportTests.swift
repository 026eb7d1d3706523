import HearthMatter
import HearthSync
import HearthTestKit
import NIOCore
import NIOPosix
import Testing

/// What handlers received, readable from the test's task.
final class HandlerInbox: Sendable {
    let payloads = Locked<[[UInt8]]>([])
    var count: Int { payloads.withLock { $0.count } }
    func add(_ payload: [UInt8]) { payloads.withLock { $0.append(payload) } }
}

/// Records each message; answers with `answer` when given.
final class InboxHandler: ExchangeHandler {
    let inbox: HandlerInbox
    let answer: [UInt8]?
    init(_ inbox: HandlerInbox, answer: [UInt8]? = nil) {
        self.inbox = inbox
        self.answer = answer
    }

    func exchange(_ exchange: ExchangeKey, received message: MatterMessage, manager: ExchangeManager) {
        inbox.add(message.payload)
        if let answer {
            try? manager.send(on: exchange, protocolID: .interactionModel, opcode: 5, payload: answer, now: manager.now)
        }
    }

    func exchange(_ exchange: ExchangeKey, failed error: ExchangeError, manager: ExchangeManager) {}
}

@Suite(.serialized) struct UDPTransportTests {
    /// Two endpoints on loopback; A's first transmission is lost, so B hears A only once the manual clock reaches
    /// the retransmission; B answers with the acknowledgement riding on its answer, and A acknowledges the answer
    /// alone 200 ms later. A malformed datagram to B is counted and changes nothing.
    @Test(.timeLimit(.minutes(1)), arguments: ["127.0.0.1", "::1"])
    func twoEndpointsExchangeOverALossyLink(host: String) async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let clock = MatterManualClock()
        let a = MatterUDPTransport(eventLoop: group.next(), clock: clock, timerDriving: .external, cipher: ToyCipher(),
                                   jitter: { 0 })
        let b = MatterUDPTransport(eventLoop: group.next(), clock: clock, timerDriving: .external, cipher: ToyCipher(),
                                   jitter: { 0 })
        let sentByA = Locked(0)
        a.outboundFilter = { _, _ in sentByA.withLock { n in n += 1; return n > 1 } }
        try await a.start(addresses: [try SocketAddress(ipAddress: host, port: 0)])
        try await b.start(addresses: [try SocketAddress(ipAddress: host, port: 0)])
        let bAddress = try #require(await b.localAddresses.first)
        #expect(bAddress.port != 0)

        let atB = HandlerInbox(), atA = HandlerInbox()
        try await b.withMessageLayer { layer in
            layer.exchanges.registerUnsolicitedHandler(for: .interactionModel) { _ in InboxHandler(atB, answer: [9, 9])
            }
        }
        try await a.withMessageLayer { layer in
            let session = layer.unsecuredSession(with: bAddress)
            let exchange = layer.exchanges.openExchange(on: session, handler: InboxHandler(atA))
            try layer.exchanges.send(
                on: exchange, protocolID: .interactionModel, opcode: 2, payload: [1, 2, 3], now: clock.now)
        }
        #expect(sentByA.withLock { $0 } == 1)
        // The peer has never been heard from: the idle interval, 550 ms without jitter.
        clock.advance(by: 549)
        await a.runTimers()
        #expect(sentByA.withLock { $0 } == 1)
        clock.advance(by: 1)
        await a.runTimers()
        #expect(sentByA.withLock { $0 } == 2)
        #expect(await eventually(within: .seconds(20)) { atB.count == 1 && atA.count == 1 })
        #expect(atB.payloads.withLock { $0 } == [[1, 2, 3]])
        #expect(atA.payloads.withLock { $0 } == [[9, 9]])

        // A owes B an acknowledgement: alone, 200 ms after the answer.
        #expect(try await a.withMessageLayer { $0.exchanges.nextDeadline } == MatterInstant(milliseconds: 750))
        clock.advance(by: 200)
        await a.runTimers()
        #expect(await eventually(within: .seconds(20)) {
            (try? await b.withMessageLayer { $0.exchanges.nextDeadline == nil }) == true
        })
        let countersA = try await a.withMessageLayer { $0.exchanges.counters }
        #expect(countersA.retransmissions == 1 && countersA.standaloneAcksSent == 1 && countersA.delivered == 1)

        // Garbage to B: counted as malformed, nothing delivered.
        let before = try await b.withMessageLayer { $0.counters }
        let raw = try await DatagramBootstrap(group: group).bind(to: try SocketAddress(ipAddress: host, port: 0)).get()
        var buffer = raw.allocator.buffer(capacity: 3)
        buffer.writeBytes([0xFF, 0x00, 0x01])
        try await raw.writeAndFlush(AddressedEnvelope(remoteAddress: bAddress, data: buffer))
        #expect(await eventually(within: .seconds(20)) {
            (try? await b.withMessageLayer { $0.counters.malformed }) == before.malformed + 1
        })
        #expect(atB.count == 1)
        try await raw.close()

        try await a.stop()
        try await b.stop()
        try await group.shutdownGracefully()
    }

    /// The timers as they run in use: on the event loop at the monotonic clock's deadlines. A lost first
    /// transmission is sent again without anyone driving the timers (about half a second later; no time is asserted).
    @Test(.timeLimit(.minutes(1))) func theEventLoopRunsRetransmissionsOnItsOwn() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let a = MatterUDPTransport(eventLoop: group.next(), cipher: ToyCipher())
        let b = MatterUDPTransport(eventLoop: group.next(), cipher: ToyCipher())
        let sentByA = Locked(0)
        a.outboundFilter = { _, _ in sentByA.withLock { n in n += 1; return n > 1 } }
        try await a.start(addresses: [try SocketAddress(ipAddress: "127.0.0.1", port: 0)])
        try await b.start(addresses: [try SocketAddress(ipAddress: "127.0.0.1", port: 0)])
        let bAddress = try #require(await b.localAddresses.first)
        let atB = HandlerInbox()
        try await b.withMessageLayer { layer in
            layer.exchanges.registerUnsolicitedHandler(for: .interactionModel) { _ in InboxHandler(atB) }
        }
        try await a.withMessageLayer { layer in
            let exchange = layer.exchanges.openExchange(
                on: layer.unsecuredSession(with: bAddress), handler: InboxHandler(HandlerInbox()))
            try layer.exchanges.send(
                on: exchange, protocolID: .interactionModel, opcode: 2, payload: [5], now: a.clock.now)
        }
        #expect(await eventually(within: .seconds(20)) { atB.count == 1 })
        // B's acknowledgement (alone, after 200 ms) ends A's retransmissions.
        #expect(await eventually(within: .seconds(20)) {
            (try? await a.withMessageLayer { $0.exchanges.nextDeadline == nil }) == true
        })
        // At least the lost transmission and one retransmission (more only if this machine was too busy to deliver
        // B's acknowledgement before A's next timeout).
        #expect(sentByA.withLock { $0 } >= 2)
        #expect(atB.count == 1)
        try await a.stop()
        try await b.stop()
        try await group.shutdownGracefully()
    }

    @Test(.timeLimit(.minutes(1))) func aTakenPortIsAnError() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let first = MatterUDPTransport(eventLoop: group.next(), cipher: ToyCipher())
        try await first.start(addresses: [try SocketAddress(ipAddress: "127.0.0.1", port: 0)])
        let taken = try #require(await first.localAddresses.first)
        let second = MatterUDPTransport(eventLoop: group.next(), cipher: ToyCipher())
        await #expect(throws: MatterTransportError.self) { try await second.start(addresses: [taken]) }
        try await first.stop()
        try await group.shutdownGracefully()
    }
}
