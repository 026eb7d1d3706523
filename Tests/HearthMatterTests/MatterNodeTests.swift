import HearthCrypto
import HearthMatter
import HearthTestKit
import HearthSync
import NIOCore
import NIOPosix
import Testing

/// Records every message of an exchange, for a test's initiator to read from its own task.
final class MessageRecorder: ExchangeHandler, @unchecked Sendable {
    let messages = Locked<[MatterMessage]>([])
    var count: Int { messages.withLock { $0.count } }
    func message(_ index: Int) -> MatterMessage { messages.withLock { $0[index] } }

    func exchange(_ exchange: ExchangeKey, received message: MatterMessage, manager: ExchangeManager) {
        messages.withLock { $0.append(message) }
    }

    func exchange(_ exchange: ExchangeKey, failed error: ExchangeError, manager: ExchangeManager) {}
}

/// A `MatterNode` over real UDP on loopback, reached by an initiator written here with the same message layer, PASE
/// messages and SPAKE2+ prover: PASE with the node's passcode, then an Interaction Model read over the session.
@Suite(.serialized) struct MatterNodeTests {
    static let passcode: UInt32 = 20_202_021

    @Test(.timeLimit(.minutes(1)), arguments: ["127.0.0.1", "::1"])
    func paseThenReadOverUDP(host: String) async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let fixture = try MatterNodeFixture()
        let salt = try SecureRandom.bytes(32)
        let options = try MatterNodeOptions.loopback(host: host, salt: salt)
        let node = MatterNode(core: fixture.node, options: options, eventLoop: group.next(), log: { _ in })
        try await node.start()
        let nodeAddress = try #require(await node.localAddresses.first)

        let initiator = MatterUDPTransport(eventLoop: group.next(), cipher: AESCCMMessageCipher())
        try await initiator.start(addresses: [try SocketAddress(ipAddress: host, port: 0)])

        // PBKDFParamRequest → PBKDFParamResponse.
        let request = PBKDFParamRequest(
            initiatorRandom: try SecureRandom.bytes(32), initiatorSessionID: 0x4242, hasPBKDFParameters: false)
        let pase = MessageRecorder()
        let paseExchange = try await initiator.withMessageLayer { layer in
            let session = layer.unsecuredSession(with: nodeAddress, peerNodeID: nil)
            let exchange = layer.exchanges.openExchange(on: session, handler: pase)
            try layer.exchanges.send(
                on: exchange, protocolID: .secureChannel, opcode: SecureChannelOpcode.pbkdfParamRequest.rawValue,
                payload: request.encoded, now: layer.exchanges.now)
            return exchange
        }
        #expect(await eventually(within: .seconds(20)) { pase.count == 1 })
        let responseMessage = pase.message(0)
        #expect(responseMessage.payloadHeader.opcode == SecureChannelOpcode.pbkdfParamResponse.rawValue)
        let response = try PBKDFParamResponse(payload: responseMessage.payload)
        #expect(response.salt == salt)

        // Pake1 → Pake2.
        let context = SPAKE2Plus.matterContext(
            pbkdfParamRequest: request.encoded, pbkdfParamResponse: responseMessage.payload)
        let (w0, w1) = try SPAKE2Plus.computeW0W1(passcode: Self.passcode, salt: salt, iterations: 1000)
        var prover = try SPAKE2Plus.Prover(context: context, w0: w0, w1: w1)
        let pA = prover.pA
        try await initiator.withMessageLayer { layer in
            try layer.exchanges.send(
                on: paseExchange, protocolID: .secureChannel, opcode: SecureChannelOpcode.pasePake1.rawValue,
                payload: PAKEMessage.pake1(pA: pA), now: layer.exchanges.now)
        }
        #expect(await eventually(within: .seconds(20)) { pase.count == 2 })
        let (pB, cB) = try PAKEMessage.readPake2(pase.message(1).payload)
        let cA = try prover.finish(pB: pB, cB: cB)

        // Pake3 → StatusReport success.
        try await initiator.withMessageLayer { layer in
            try layer.exchanges.send(
                on: paseExchange, protocolID: .secureChannel, opcode: SecureChannelOpcode.pasePake3.rawValue,
                payload: PAKEMessage.pake3(cA: cA), now: layer.exchanges.now)
        }
        #expect(await eventually(within: .seconds(20)) { pase.count == 3 })
        let status = try StatusReport(decoding: pase.message(2).payload)
        #expect(status == .sessionEstablishmentSuccess)

        // The session's keys, as the initiator derives them, and an Interaction Model read over it.
        let ke = try #require(prover.sharedKey)
        let keys = try HKDFSHA256.deriveKey(
            inputKeyMaterial: ke, salt: [], info: Array("SessionKeys".utf8), outputByteCount: 48)
        let read = MessageRecorder()
        let readRequest = ReadRequest(
            attributeRequests: [AttributePath(endpoint: 0, cluster: 0x0028, attribute: 0x0002)],
            isFabricFiltered: false)
        try await initiator.withMessageLayer { layer in
            layer.exchanges.close(paseExchange, now: layer.exchanges.now)
            guard let session = layer.addSecureSession(SecureSessionParameters(
                localSessionID: 0x4242, peerSessionID: response.responderSessionID, encryptionKey: Array(keys[0..<16]),
                decryptionKey: Array(keys[16..<32]), peerAddress: nodeAddress)) else { return }
            let exchange = layer.exchanges.openExchange(on: session, handler: read)
            try layer.exchanges.send(
                on: exchange, protocolID: .interactionModel, opcode: InteractionModelOpcode.readRequest.rawValue,
                payload: readRequest.encoded().encoded(), now: layer.exchanges.now)
        }
        #expect(await eventually(within: .seconds(20)) { read.count == 1 })
        let reply = read.message(0)
        #expect(reply.payloadHeader.opcode == InteractionModelOpcode.reportData.rawValue)
        let report = try ReportData(decoding: reply.payload)
        try #require(report.attributeReports.count == 1)
        guard case .data(let data) = report.attributeReports[0] else {
            Issue.record("VendorID answered \(report.attributeReports[0])")
            return
        }
        #expect(data.data == .unsigned(0xFFF1))

        try await initiator.stop()
        await node.stop()
        try await group.shutdownGracefully()
    }
}
