import HearthMatter
import HearthSync
import NIOCore
import Testing

/// Two message layers wired back to back in memory, with a secure session between them.
final class SessionPair {
    var toB: [[UInt8]] = []
    var toA: [[UInt8]] = []
    var a: MessageLayer!
    var b: MessageLayer!
    let addressA = try! SocketAddress(ipAddress: "::1", port: 1000)
    let addressB = try! SocketAddress(ipAddress: "::1", port: 2000)
    var sessionA: SessionHandle!
    var sessionB: SessionHandle!

    init() {
        var starts: [UInt32] = [10, 20, 30, 40]
        a = MessageLayer(
            cipher: ToyCipher(), randomCounterStart: { starts.removeFirst() }, jitter: { 0 }, firstExchangeID: 1
        ) {
            [unowned self] _, bytes in toB.append(bytes); return true
        }
        b = MessageLayer(cipher: ToyCipher(), randomCounterStart: { 100 }, jitter: { 0 }, firstExchangeID: 1) {
            [unowned self] _, bytes in toA.append(bytes); return true
        }
        let keyAB = Array(repeating: UInt8(1), count: 16), keyBA = Array(repeating: UInt8(2), count: 16)
        sessionA = a.addSecureSession(
            SecureSessionParameters(
                localSessionID: 11, peerSessionID: 22, encryptionKey: keyAB,
                decryptionKey: keyBA, localNodeID: 1, peerNodeID: 2,
                peerAddress: addressB))
        sessionB = b.addSecureSession(
            SecureSessionParameters(
                localSessionID: 22, peerSessionID: 11, encryptionKey: keyBA,
                decryptionKey: keyAB, localNodeID: 2, peerNodeID: 1,
                peerAddress: addressA))
    }
}

@Suite struct MessageLayerTests {
    @Test func secureMessagesArriveOnceAndForgeriesAreCounted() throws {
        let pair = SessionPair()
        let inbox = HandlerInbox()
        pair.b.exchanges.registerUnsolicitedHandler(for: .interactionModel) { _ in InboxHandler(inbox) }
        let exchange = pair.a.exchanges.openExchange(on: pair.sessionA, handler: InboxHandler(HandlerInbox()))
        try pair.a.exchanges.send(
            on: exchange, protocolID: .interactionModel, opcode: 2, payload: [7], now: MatterInstant(milliseconds: 0))
        let datagram = try #require(pair.toB.first)
        #expect(datagram[1] == 22 && datagram[2] == 0, "addressed to B's session id")

        pair.b.receive(datagram, from: pair.addressA, now: MatterInstant(milliseconds: 1))
        #expect(inbox.payloads.withLock { $0 } == [[7]])
        // The same datagram again, replayed from elsewhere: a duplicate, acknowledged again (to the session's peer,
        // which a replay does not move), not delivered.
        let elsewhere = try SocketAddress(ipAddress: "::1", port: 3000)
        pair.b.receive(datagram, from: elsewhere, now: MatterInstant(milliseconds: 2))
        #expect(inbox.count == 1)
        #expect(pair.b.counters.duplicates == 1)
        #expect(pair.b.peerAddress(of: pair.sessionB) == pair.addressA)

        // A flipped byte in the payload, the header, the MIC: refused and counted, nothing delivered.
        for index in [datagram.count - 1, 4, datagram.count - 20] {
            var forged = datagram
            forged[index] ^= 0x40
            pair.b.receive(forged, from: pair.addressA, now: MatterInstant(milliseconds: 3))
        }
        #expect(pair.b.counters.authenticationFailed == 3)
        #expect(inbox.count == 1)
        // A forged counter far ahead does not move the window: the next real message still arrives.
        try pair.a.exchanges.send(on: exchange, protocolID: .interactionModel, opcode: 2, payload: [8], reliable: false,
                                  now: MatterInstant(milliseconds: 4))
        pair.b.receive(pair.toB.last!, from: pair.addressA, now: MatterInstant(milliseconds: 5))
        #expect(inbox.payloads.withLock { $0 } == [[7], [8]])

        // Unknown session id, group messages, garbage.
        var unknown = datagram
        unknown[1] = 99
        pair.b.receive(unknown, from: pair.addressA, now: MatterInstant(milliseconds: 6))
        pair.b.receive(
            MessageHeader(
                sessionID: 5, sessionType: .group, messageCounter: 1, sourceNodeID: 1,
                destination: .group(1)
            ).encoded(), from: pair.addressA, now: MatterInstant(milliseconds: 6))
        pair.b.receive([0x30], from: pair.addressA, now: MatterInstant(milliseconds: 6))
        pair.b.receive(
            MessageHeader(messageCounter: 1).encoded() + [0x01], from: pair.addressA,
            now: MatterInstant(milliseconds: 6))
        #expect(
            pair.b.counters.unknownSession == 1 && pair.b.counters.unsupported == 1 && pair.b.counters.malformed == 2)
        #expect(inbox.count == 2)
    }

    @Test func anInitiatorsEphemeralNodeIDAddressesTheAnswers() throws {
        let pair = SessionPair()
        let answered = HandlerInbox(), atA = HandlerInbox()
        pair.b.exchanges.registerUnsolicitedHandler(for: .secureChannel) { _ in InboxHandler(answered, answer: [2]) }
        let session = pair.a.unsecuredSession(with: pair.addressB, localNodeID: 0xABCD)
        let exchange = pair.a.exchanges.openExchange(on: session, handler: InboxHandler(atA))
        try pair.a.exchanges.send(
            on: exchange, protocolID: .secureChannel, opcode: 0x20, payload: [1], now: MatterInstant(milliseconds: 0))
        let request = try MatterMessage.decodeUnsecured(try #require(pair.toB.last))
        #expect(request.header.sourceNodeID == 0xABCD && request.header.destination == .none)
        pair.b.receive(pair.toB.last!, from: pair.addressA, now: MatterInstant(milliseconds: 1))
        let answer = try MatterMessage.decodeUnsecured(try #require(pair.toA.last))
        #expect(answer.header.destination == .node(0xABCD) && answer.header.sourceNodeID == nil)
        pair.a.receive(pair.toA.last!, from: pair.addressB, now: MatterInstant(milliseconds: 2))
        #expect(atA.payloads.withLock { $0 } == [[2]])
    }

    @Test func unsecuredSessionsAreCapped() {
        let layer = MessageLayer(cipher: ToyCipher(), randomCounterStart: { 1 }, jitter: { 0 }, firstExchangeID: 1) {
            _, _ in true
        }
        let peer = try! SocketAddress(ipAddress: "127.0.0.1", port: 5540)
        for node in 0..<UInt64(1000) {
            let message = MatterMessage(
                header: MessageHeader(messageCounter: 1, sourceNodeID: node),
                payloadHeader: PayloadHeader(
                    isInitiator: true, opcode: 0x20, exchangeID: 1, protocolID: .secureChannel),
                payload: [])
            layer.receive(message.encodedUnsecured(), from: peer, now: MatterInstant(milliseconds: Int64(node)))
        }
        #expect(layer.unsecuredSessionCount == MessageLayer.maximumUnsecuredSessions)
    }
}
