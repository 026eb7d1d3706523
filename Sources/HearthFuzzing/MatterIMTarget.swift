import HearthMatter

/// The Interaction Model server's promises (`Sources/HearthMatter/InteractionModel`): any message, of any opcode,
/// from a commissioner's PASE session (which may do everything) is answered and never crashes the node; every
/// answer decodes as the message its opcode says and fits the 1280-byte MTU; a message refused whole (a
/// StatusResponse other than SUCCESS) changes nothing — no fabric, ACL entry, breadcrumb, fail-safe, setting,
/// DataVersion or stored byte; and each message kind that decodes encodes back to the same value.
///
/// Input: the first byte is the opcode, the rest the TLV payload. Each input runs on a fresh node whose fail-safe is
/// armed, so that commissioning commands reach their checks.
enum MatterIMTarget {
    /// A node on `storage` (empty: not commissioned), at time 0 for ever, with the fuzzers' stand-in keys.
    static func freshNode(storage: InMemoryNodeStorage) throws(FuzzFailure) -> MatterNodeCore {
        let start = MatterInstant(milliseconds: 0)
        do {
            return try MatterNodeCore(
                configuration: MatterNodeConfiguration(
                    basicInformation: BasicInformationConfiguration(serialNumber: "FUZZ", uniqueID: "fuzz"),
                    networkInterfaces: {
                        [NetworkInterfaceInfo(name: "eth0", isOperational: true, hardwareAddress: [2, 0, 0, 0, 0, 1])]
                    },
                    initialDataVersion: 1),
                storage: storage, keys: FuzzKeys(), verifier: FuzzVerifier(), attestation: FuzzAttestation(),
                started: start, now: { start })
        } catch {
            throw FuzzFailure("the node did not start on empty storage: \(error)")
        }
    }

    static func run(_ bytes: [UInt8]) throws(FuzzFailure) {
        guard let opcode = bytes.first else { return }
        let payload = Array(bytes.dropFirst())
        try checkRoundTrip(opcode, payload)

        let storage = InMemoryNodeStorage()
        let start = MatterInstant(milliseconds: 0)
        let node = try freshNode(storage: storage)
        let pase = SubjectDescriptor.pase(attestationChallenge: [UInt8](repeating: 1, count: 16))
        var arming = IMExchangeState()
        let arm = InvokeRequest(invokeRequests: [
            CommandDataIB(
                path: CommandPath(endpoint: 0, cluster: 0x30, command: 0),
                fields: TLVElement(
                    .structure([TLVElement(context: 0, .uint(UInt16(60))), TLVElement(context: 1, .uint(UInt64(0)))])))
        ])
        _ = node.receive(
            opcode: InteractionModelOpcode.invokeRequest.rawValue, payload: arm.encoded().encoded(), exchange: &arming,
            subject: pase, now: start)

        let before = snapshot(node, storage)
        var exchange = IMExchangeState()
        var reply = node.receive(opcode: opcode, payload: payload, exchange: &exchange, subject: pase, now: start)
        // Follow a chunked report to its end, as a client would.
        var turns = 0
        while true {
            guard let message = reply.message else { break }
            try require(message.payload.count <= InteractionModelServer.defaultMaximumPayloadSize,
                        "a \(message.opcode) of \(message.payload.count) bytes exceeds the MTU")
            try checkDecodes(message)
            if case .statusResponse = message.opcode, let status = try? StatusResponse(decoding: message.payload),
               status.status != .success, turns == 0 {
                let after = snapshot(node, storage)
                try require(
                    after == before, "a message refused with \(status.status) changed the node: \(shown(bytes))")
            }
            if reply.closesExchange { break }
            turns += 1
            try require(turns < 200, "a reply that never ends")
            if message.opcode == .statusResponse { break }
            reply = node.receive(
                opcode: InteractionModelOpcode.statusResponse.rawValue,
                payload: StatusResponse(.success).encoded().encoded(),
                exchange: &exchange, subject: pase, now: start)
        }
    }

    struct Snapshot: Equatable {
        var fabrics: [Fabric]
        var acl: [ACLEntry]
        var breadcrumb: UInt64
        var armed: Bool
        var settings: CommissioningState.Settings
        var versions: [UInt32?]
        var stored: [[UInt8]?]
    }

    static func snapshot(_ node: MatterNodeCore, _ storage: InMemoryNodeStorage) -> Snapshot {
        let model = node.dataModel
        let versions = model.endpointIDs.flatMap { endpoint in
            [0x1D, 0x1F, 0x28, 0x30, 0x31, 0x33, 0x3E, 0x3F].map {
                model.dataVersion(ConcreteClusterPath(endpoint: endpoint, cluster: $0))
            }
        }
        let keys: [StorageKey] = [.fabrics, .nodeSettings, .counters]
        return Snapshot(
            fabrics: node.commissioning.fabrics, acl: node.commissioning.acl, breadcrumb: node.commissioning.breadcrumb,
            armed: node.commissioning.isFailSafeArmed, settings: node.commissioning.settings, versions: versions,
            stored: keys.map { try? storage.load($0) })
    }

    static func checkDecodes(_ message: IMMessage) throws(FuzzFailure) {
        do throws(IMError) {
            switch message.opcode {
            case .statusResponse: _ = try StatusResponse(decoding: message.payload)
            case .reportData: _ = try ReportData(decoding: message.payload)
            case .writeResponse: _ = try WriteResponse(decoding: message.payload)
            case .invokeResponse: _ = try InvokeResponse(decoding: message.payload)
            case .subscribeResponse: _ = try SubscribeResponse(decoding: message.payload)
            default: throw IMError(.failure, "a server does not send \(message.opcode)")
            }
        } catch {
            throw FuzzFailure("the node sent a \(message.opcode) its own decoder refuses: \(error)")
        }
    }

    /// Whatever decodes as a message encodes to bytes that decode to the same message.
    private static func checkRoundTrip(_ opcode: UInt8, _ payload: [UInt8]) throws(FuzzFailure) {
        func same<M: Equatable>(_ decode: ([UInt8]) throws(IMError) -> M, _ encode: (M) -> TLVElement)
            throws(FuzzFailure)
        {
            guard let first = try? decode(payload) else { return }
            let again: M
            do { again = try decode(encode(first).encoded()) } catch {
                throw FuzzFailure("re-encoded \(M.self) does not decode: \(error)")
            }
            try require(again == first, "\(M.self) changed in a round trip: \(first) → \(again)")
        }
        switch InteractionModelOpcode(rawValue: opcode) {
        case .readRequest?: try same({ (b) throws(IMError) in try ReadRequest(decoding: b) }, { $0.encoded() })
        case .writeRequest?: try same({ (b) throws(IMError) in try WriteRequest(decoding: b) }, { $0.encoded() })
        case .invokeRequest?: try same({ (b) throws(IMError) in try InvokeRequest(decoding: b) }, { $0.encoded() })
        case .subscribeRequest?:
            try same({ (b) throws(IMError) in try SubscribeRequest(decoding: b) }, { $0.encoded() })
        case .reportData?: try same({ (b) throws(IMError) in try ReportData(decoding: b) }, { $0.encoded() })
        case .invokeResponse?: try same({ (b) throws(IMError) in try InvokeResponse(decoding: b) }, { $0.encoded() })
        case .timedRequest?: try same({ (b) throws(IMError) in try TimedRequest(decoding: b) }, { $0.encoded() })
        default: break
        }
    }
}

// Stand-in credentials: the target checks the Interaction Model and the commissioning logic, not cryptography.
struct FuzzKey: OperationalKeyPair {
    var publicKey: [UInt8] { [0x04] + [UInt8](repeating: 3, count: 64) }
    func certificateSigningRequest() throws(CredentialError) -> [UInt8] { [0x30, 0x00] }
    var serialized: [UInt8] { publicKey }
}

struct FuzzKeys: OperationalKeyFactory {
    func makeKey() throws(CredentialError) -> any OperationalKeyPair { FuzzKey() }
    func restoreKey(_ serialized: [UInt8]) throws(CredentialError) -> any OperationalKeyPair { FuzzKey() }
}

struct FuzzVerifier: OperationalCertificateVerifier {
    func checkRoot(_ root: [UInt8]) throws(CredentialError) {
        if root.isEmpty { throw CredentialError("empty root") }
    }
    func verifyChain(noc: [UInt8], icac: [UInt8]?, root: [UInt8]) throws(CredentialError)
        -> OperationalCertificateIdentity
    {
        guard noc.count >= 2 else { throw CredentialError("short NOC") }
        return OperationalCertificateIdentity(
            fabricID: UInt64(noc[0]), nodeID: UInt64(noc[1]) + 1, publicKey: FuzzKey().publicKey,
            rootPublicKey: root)
    }
}

struct FuzzAttestation: DeviceAttestationCredentials {
    var deviceAttestationCertificate: [UInt8] { [0x30, 0x00] }
    var productAttestationIntermediate: [UInt8] { [0x30, 0x00] }
    var certificationDeclaration: [UInt8] { [0x30, 0x00] }
    func signWithDeviceAttestationKey(_ message: [UInt8]) throws(CredentialError) -> [UInt8] {
        [UInt8](repeating: 0, count: 64)
    }
}
