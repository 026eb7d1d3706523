import HearthMatter
import Testing

/// A session layer in memory: unsecured messages with a counter, every datagram kept for the test to deliver or drop.
final class RecordingTransport: ExchangeTransport {
    var counter: UInt32 = 1000
    var sent: [[UInt8]] = []

    func encode(_ payloadHeader: PayloadHeader, payload: [UInt8], for session: SessionHandle) throws
        -> (messageCounter: UInt32, datagram: [UInt8])
    {
        counter += 1
        let message = MatterMessage(
            header: MessageHeader(messageCounter: counter), payloadHeader: payloadHeader, payload: payload)
        return (counter, message.encodedUnsecured())
    }

    func send(_ datagram: [UInt8], to session: SessionHandle) { sent.append(datagram) }

    func takeSent() -> [MatterMessage] {
        defer { sent = [] }
        return sent.compactMap { try? MatterMessage.decodeUnsecured($0) }
    }
}

/// An exchange handler that records what it gets and can answer.
final class RecordingHandler: ExchangeHandler {
    var received: [MatterMessage] = []
    var failures: [ExchangeError] = []
    var reply: ((ExchangeKey, ExchangeManager) -> Void)?

    func exchange(_ exchange: ExchangeKey, received message: MatterMessage, manager: ExchangeManager) {
        received.append(message)
        reply?(exchange, manager)
    }

    func exchange(_ exchange: ExchangeKey, failed error: ExchangeError, manager: ExchangeManager) {
        failures.append(error)
    }
}

@Suite struct ExchangeManagerTests {
    let session = SessionHandle(1)

    @Test func timeoutsFollowTheSpecificationsFormula() {
        let p = ReliabilityParameters()
        // Active peer, no jitter: 330, 330, 528, 844.8, 1351.68 ms.
        #expect(
            [1, 2, 3, 4, 5].map { p.retransmissionTimeout(baseInterval: 300, sent: $0, jitter: 0) } == [
                330, 330, 528, 845, 1352
            ])
        // Full jitter adds a quarter.
        #expect(p.retransmissionTimeout(baseInterval: 300, sent: 1, jitter: 1) == 413)
        #expect(p.retransmissionTimeout(baseInterval: 500, sent: 1, jitter: 0) == 550)
    }

    @Test func aReliableMessageIsRetransmittedThenGivenUp() throws {
        let transport = RecordingTransport()
        let manager = ExchangeManager(transport: transport, firstExchangeID: 10, jitter: { 0 })
        let handler = RecordingHandler()
        let exchange = manager.openExchange(on: session, handler: handler)
        try manager.send(
            on: exchange, protocolID: .interactionModel, opcode: 2, payload: [1], now: MatterInstant(milliseconds: 0))
        let first = transport.sent
        #expect(first.count == 1)
        // The peer is idle (never heard from): 550, 550, 880, 1408 ms between transmissions.
        var now: Int64 = 0
        for wait: Int64 in [550, 550, 880, 1408] {
            let before = transport.sent.count
            manager.fire(now: MatterInstant(milliseconds: now + wait - 1))
            #expect(transport.sent.count == before, "nothing early")
            now += wait
            #expect(manager.nextDeadline == MatterInstant(milliseconds: now))
            manager.fire(now: MatterInstant(milliseconds: now))
            #expect(transport.sent.count == before + 1)
            #expect(transport.sent.last == first[0], "a retransmission is the same bytes, counter included")
        }
        #expect(handler.failures.isEmpty)
        // After the fifth transmission's wait, MRP gives up and closes the exchange.
        let last = ReliabilityParameters().retransmissionTimeout(baseInterval: 500, sent: 5, jitter: 0)
        manager.fire(now: MatterInstant(milliseconds: now + last))
        #expect(transport.sent.count == 5)
        #expect(handler.failures == [.noAcknowledgement(messageCounter: 1001)])
        #expect(!manager.isOpen(exchange))
        #expect(manager.nextDeadline == nil)
        #expect(manager.counters.retransmissions == 4 && manager.counters.givenUp == 1)
    }

    @Test func twoNodesExchangeWithPiggybackedAndStandaloneAcks() throws {
        let a = RecordingTransport(), b = RecordingTransport()
        b.counter = 5000
        let managerA = ExchangeManager(transport: a, firstExchangeID: 7, jitter: { 0 })
        let managerB = ExchangeManager(transport: b, firstExchangeID: 99, jitter: { 0 })
        let responder = RecordingHandler()
        var now = MatterInstant(milliseconds: 0)
        responder.reply = { key, manager in
            try? manager.send(on: key, protocolID: .interactionModel, opcode: 5, payload: [42], now: now)
        }
        managerB.registerUnsolicitedHandler(for: .interactionModel) { _ in responder }
        let initiator = RecordingHandler()
        let exchange = managerA.openExchange(on: session, handler: initiator)
        try managerA.send(on: exchange, protocolID: .interactionModel, opcode: 2, payload: [1], now: now)

        // A → B: B opens a responder exchange and answers, the acknowledgement riding on the answer.
        for message in a.takeSent() { managerB.receive(message, from: session, isDuplicate: false, now: now) }
        #expect(responder.received.map(\.payload) == [[1]])
        let answers = b.takeSent()
        #expect(answers.count == 1)
        #expect(answers[0].payloadHeader.acknowledgedMessageCounter == 1001)
        #expect(answers[0].payloadHeader.needsAcknowledgement)
        #expect(!answers[0].payloadHeader.isInitiator)

        // B → A: A's retransmission is acknowledged; A owes an acknowledgement, sent alone after 200 ms.
        now = MatterInstant(milliseconds: 10)
        for message in answers { managerA.receive(message, from: session, isDuplicate: false, now: now) }
        #expect(initiator.received.map(\.payload) == [[42]])
        #expect(managerA.nextDeadline == MatterInstant(milliseconds: 210))
        managerA.fire(now: MatterInstant(milliseconds: 209))
        #expect(a.sent.isEmpty)
        managerA.fire(now: MatterInstant(milliseconds: 210))
        let acks = a.takeSent()
        #expect(acks.count == 1)
        #expect(acks[0].payloadHeader.opcode == SecureChannelOpcode.standaloneAck.rawValue)
        #expect(acks[0].payloadHeader.acknowledgedMessageCounter == 5001)
        #expect(!acks[0].payloadHeader.needsAcknowledgement)
        #expect(managerA.nextDeadline == nil, "nothing left to retransmit on A")

        // The standalone ack reaches B: B stops retransmitting, and the handler does not see it.
        for message in acks { managerB.receive(message, from: session, isDuplicate: false, now: now) }
        #expect(managerB.nextDeadline == nil)
        #expect(responder.received.count == 1)

        // A duplicate of B's answer: acknowledged again at once, not delivered again.
        managerA.receive(answers[0], from: session, isDuplicate: true, now: now)
        #expect(initiator.received.count == 1)
        let again = a.takeSent()
        #expect(again.count == 1 && again[0].payloadHeader.acknowledgedMessageCounter == 5001)
        #expect(managerA.counters.duplicates == 1)
        // A duplicate acknowledgement changes nothing.
        for message in acks { managerB.receive(message, from: session, isDuplicate: false, now: now) }
        #expect(b.sent.isEmpty && managerB.nextDeadline == nil)
    }

    @Test func anActivePeerGetsTheActiveInterval() throws {
        let transport = RecordingTransport()
        let manager = ExchangeManager(transport: transport, firstExchangeID: 1, jitter: { 0 })
        let exchange = manager.openExchange(on: session, handler: RecordingHandler())
        // Something from the peer 1 s ago: active (within 4 s).
        let ping = MatterMessage(
            header: MessageHeader(messageCounter: 1),
            payloadHeader: PayloadHeader(isInitiator: true, opcode: 0x10, exchangeID: 500, protocolID: .secureChannel),
            payload: [])
        manager.receive(ping, from: session, isDuplicate: false, now: MatterInstant(milliseconds: 0))
        try manager.send(
            on: exchange, protocolID: .interactionModel, opcode: 2, payload: [], now: MatterInstant(milliseconds: 1000))
        #expect(manager.nextDeadline == MatterInstant(milliseconds: 1330))
    }

    @Test func aPeersAnnouncedIntervalsTimeItsRetransmissions() throws {
        let transport = RecordingTransport()
        let manager = ExchangeManager(transport: transport, firstExchangeID: 1, jitter: { 0 })
        manager.setPeerIntervals(for: session, idle: 5000)
        let exchange = manager.openExchange(on: session, handler: RecordingHandler())
        try manager.send(
            on: exchange, protocolID: .interactionModel, opcode: 2, payload: [], now: MatterInstant(milliseconds: 0))
        #expect(manager.nextDeadline == MatterInstant(milliseconds: 5500))
    }

    @Test func oneReliableMessageAtATimeAndClosedExchangesRefuseSends() throws {
        let transport = RecordingTransport()
        let manager = ExchangeManager(transport: transport, firstExchangeID: 1, jitter: { 0 })
        let exchange = manager.openExchange(on: session, handler: RecordingHandler())
        let now = MatterInstant(milliseconds: 0)
        try manager.send(on: exchange, protocolID: .interactionModel, opcode: 2, payload: [], now: now)
        #expect(throws: ExchangeError.reliableMessageOutstanding(exchange)) {
            try manager.send(on: exchange, protocolID: .interactionModel, opcode: 2, payload: [], now: now)
        }
        // Unreliable messages may still go.
        try manager.send(on: exchange, protocolID: .interactionModel, opcode: 2, payload: [], reliable: false, now: now)
        manager.close(exchange, now: now)
        #expect(!manager.isOpen(exchange))
        #expect(throws: ExchangeError.unknownExchange(exchange)) {
            try manager.send(on: exchange, protocolID: .interactionModel, opcode: 2, payload: [], now: now)
        }
        // The outstanding message is still retransmitted after the close.
        #expect(manager.nextDeadline == MatterInstant(milliseconds: 550))
    }

    @Test func unsolicitedMessagesWithoutAHandlerAreAcknowledgedAndCounted() {
        let transport = RecordingTransport()
        let manager = ExchangeManager(transport: transport, firstExchangeID: 1, jitter: { 0 })
        let message = MatterMessage(
            header: MessageHeader(messageCounter: 77),
            payloadHeader: PayloadHeader(
                isInitiator: true, needsAcknowledgement: true, opcode: 2,
                exchangeID: 3, protocolID: .interactionModel),
            payload: [])
        manager.receive(message, from: session, isDuplicate: false, now: MatterInstant(milliseconds: 0))
        let sent = transport.takeSent()
        #expect(sent.count == 1 && sent[0].payloadHeader.acknowledgedMessageCounter == 77)
        #expect(manager.counters.unmatched == 1)
        // A responder's message matching no exchange opens none, even with a handler.
        manager.registerUnsolicitedHandler(for: .interactionModel) { _ in RecordingHandler() }
        var fromResponder = message
        fromResponder.payloadHeader.isInitiator = false
        manager.receive(fromResponder, from: session, isDuplicate: false, now: MatterInstant(milliseconds: 0))
        #expect(manager.counters.unmatched == 2)
        #expect(manager.counters.delivered == 0)
    }

    @Test func aSessionsOpenExchangesAreLimited() {
        let transport = RecordingTransport()
        let manager = ExchangeManager(transport: transport, firstExchangeID: 1, jitter: { 0 })
        let handler = RecordingHandler()
        manager.registerUnsolicitedHandler(for: .interactionModel) { _ in handler }
        for id in 0..<UInt16(100) {
            let message = MatterMessage(
                header: MessageHeader(messageCounter: UInt32(id)),
                payloadHeader: PayloadHeader(
                    isInitiator: true, needsAcknowledgement: true, opcode: 2,
                    exchangeID: id, protocolID: .interactionModel),
                payload: [])
            manager.receive(message, from: session, isDuplicate: false, now: MatterInstant(milliseconds: 0))
        }
        #expect(handler.received.count == ExchangeManager.maximumExchangesPerSession)
        #expect(manager.counters.refusedForExchangeLimit == 100 - ExchangeManager.maximumExchangesPerSession)
        // The refused ones are acknowledged all the same, so their senders stop retransmitting.
        #expect(transport.takeSent().count == 100 - ExchangeManager.maximumExchangesPerSession)
    }

    @Test func closingFlushesAPendingAck() throws {
        let transport = RecordingTransport()
        let manager = ExchangeManager(transport: transport, firstExchangeID: 1, jitter: { 0 })
        let handler = RecordingHandler()
        manager.registerUnsolicitedHandler(for: .secureChannel) { _ in handler }
        let message = MatterMessage(header: MessageHeader(messageCounter: 9),
                                    payloadHeader: PayloadHeader(isInitiator: true, needsAcknowledgement: true,
                                                                 opcode: SecureChannelOpcode.pbkdfParamRequest.rawValue,
                                                                 exchangeID: 3, protocolID: .secureChannel),
                                    payload: [])
        manager.receive(message, from: session, isDuplicate: false, now: MatterInstant(milliseconds: 0))
        #expect(handler.received.count == 1)
        let key = ExchangeKey(session: session, exchangeID: 3, role: .responder)
        #expect(manager.isOpen(key))
        manager.close(key, now: MatterInstant(milliseconds: 5))
        let sent = transport.takeSent()
        #expect(
            sent.count == 1 && sent[0].payloadHeader.acknowledgedMessageCounter == 9
                && !sent[0].payloadHeader.isInitiator)
        #expect(manager.nextDeadline == nil)
    }
}
