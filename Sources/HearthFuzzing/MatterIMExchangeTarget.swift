import HearthMatter

/// Interaction Model requests — Read, Subscribe, Write, Invoke, TimedRequest, StatusResponse — as a sequence on one
/// exchange, the way the node's exchange handler hands them to its core, from a commissioned node's three kinds of
/// peer: a commissioner's PASE session under an armed fail-safe, the fabric's administrator over CASE, and another
/// node of the fabric that no ACL entry names.
///
/// Input: a byte choosing the peer (0 PASE, 1 administrator, 2 stranger), then up to 8 messages, each a byte (the
/// opcode in the low 7 bits; the high bit moves the clock 1.5 s on first, past a timed window), a little-endian
/// 16-bit length and that many payload bytes.
///
/// Promises (`MatterNodeCore`, `InteractionModelServer`): nothing crashes; every answer decodes as what its opcode
/// says and fits the MTU; a message answered with a StatusResponse other than SUCCESS changes nothing (fabrics, ACL,
/// breadcrumb, fail-safe, settings, DataVersions, stored bytes); and a peer without an ACL entry changes nothing at
/// all, whatever it sends. (Not promised: that such a peer holds no subscription. The node accepts a
/// Subscribe whose every path it may not read and keeps it, reporting only statuses.)
enum MatterIMExchangeTarget {
    static let admin: UInt64 = 112233

    static func run(_ bytes: [UInt8]) throws(FuzzFailure) {
        guard let selector = bytes.first else { return }
        var messages: [(opcode: UInt8, advance: Bool, payload: [UInt8])] = []
        var rest = bytes.dropFirst()
        while rest.count >= 3, messages.count < 8 {
            let head = rest[rest.startIndex]
            let length = Int(rest[rest.startIndex + 1]) | Int(rest[rest.startIndex + 2]) << 8
            rest = rest.dropFirst(3)
            messages.append((head & 0x7F, head & 0x80 != 0, Array(rest.prefix(length))))
            rest = rest.dropFirst(length)
        }

        let storage = InMemoryNodeStorage()
        var now = MatterInstant(milliseconds: 0)
        let node = try commissionedNode(storage: storage)
        let subject: SubjectDescriptor
        switch selector % 3 {
        case 0:
            subject = .pase(attestationChallenge: [UInt8](repeating: 1, count: 16))
            _ = invoke(node, 0x30, 0x00, as: subject, now: now) {
                [TLVElement(context: 0, .uint(UInt16(60))), TLVElement(context: 1, .uint(UInt64(0)))]
            }
        case 1: subject = .caseSession(fabricIndex: 1, node: admin)
        default: subject = .caseSession(fabricIndex: 1, node: 0xDEAD)
        }
        let stranger = selector % 3 == 2
        let atStart = MatterIMTarget.snapshot(node, storage)

        var exchange = IMExchangeState()
        for message in messages {
            if message.advance { now = now + 1500 }
            let before = MatterIMTarget.snapshot(node, storage)
            let reply = node.receive(
                opcode: message.opcode, payload: message.payload, exchange: &exchange, subject: subject,
                now: now)
            guard let answer = reply.message else { continue }
            try require(
                answer.payload.count <= InteractionModelServer.defaultMaximumPayloadSize,
                "a \(answer.opcode) of \(answer.payload.count) bytes exceeds the MTU")
            try MatterIMTarget.checkDecodes(answer)
            if answer.opcode == .statusResponse, let status = try? StatusResponse(decoding: answer.payload),
                status.status != .success
            {
                try require(
                    MatterIMTarget.snapshot(node, storage) == before,
                    "a message refused with \(status.status) changed the node: \(shown(message.payload))")
            }
            if reply.closesExchange { exchange = IMExchangeState() }
        }
        if stranger {
            try require(
                MatterIMTarget.snapshot(node, storage) == atStart,
                "a node without an ACL entry changed the node: \(shown(bytes))")
        }
    }

    /// A node commissioned on fabric 1 with `admin` its administrator, through the commissioning commands.
    static func commissionedNode(storage: InMemoryNodeStorage) throws(FuzzFailure) -> MatterNodeCore {
        let start = MatterInstant(milliseconds: 0)
        let node = try MatterIMTarget.freshNode(storage: storage)
        let pase = SubjectDescriptor.pase(attestationChallenge: [UInt8](repeating: 1, count: 16))
        let steps: [(ClusterID, CommandID, [TLVElement])] = [
            (0x30, 0x00, [TLVElement(context: 0, .uint(UInt16(60))), TLVElement(context: 1, .uint(UInt64(1)))]),
            (0x3E, 0x04, [TLVElement(context: 0, .bytes([UInt8](repeating: 0x11, count: 32)))]),
            (0x3E, 0x0B, [TLVElement(context: 0, .bytes([0x04] + [UInt8](repeating: 0xAB, count: 64)))]),
            (
                0x3E, 0x06,
                [
                    TLVElement(context: 0, .bytes([0x12, 0x33])),
                    TLVElement(context: 2, .bytes([UInt8](repeating: 0x5A, count: 16))),
                    TLVElement(context: 3, .uint(admin)), TLVElement(context: 4, .uint(UInt16(0xFFF1)))
                ]
            )
        ]
        for (cluster, command, fields) in steps {
            let status = invoke(node, cluster, command, as: pase, now: start) { fields }
            try require(status == .success, "commissioning step \(cluster)/\(command) answered \(status)")
        }
        let complete = invoke(node, 0x30, 0x04, as: .caseSession(fabricIndex: 1, node: admin), now: start) { [] }
        try require(
            complete == .success && !node.commissioning.isFailSafeArmed && node.commissioning.fabrics.count == 1,
            "CommissioningComplete answered \(complete)")
        _ = node.takeEvents()
        return node
    }

    /// Invokes one command; returns SUCCESS for a response command or the command's status.
    @discardableResult
    static func invoke(
        _ node: MatterNodeCore, _ cluster: ClusterID, _ command: CommandID, as subject: SubjectDescriptor,
        now: MatterInstant, fields: () -> [TLVElement]
    ) -> IMStatusCode {
        var exchange = IMExchangeState()
        let request = InvokeRequest(invokeRequests: [
            CommandDataIB(
                path: CommandPath(endpoint: 0, cluster: cluster, command: command),
                fields: TLVElement(.structure(fields())))
        ])
        let reply = node.receive(
            opcode: InteractionModelOpcode.invokeRequest.rawValue, payload: request.encoded().encoded(),
            exchange: &exchange, subject: subject, now: now)
        guard let message = reply.message, message.opcode == .invokeResponse,
            let response = try? InvokeResponse(decoding: message.payload), let first = response.invokeResponses.first
        else {
            return .failure
        }
        switch first {
        case .command: return .success
        case .status(let status): return status.status.status
        }
    }
}
