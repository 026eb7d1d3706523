// A Matter node core with stand-in credentials and an in-memory store, and the client side of the Interaction Model
// the tests speak to it with: every request goes through message bytes, as it would on the wire.

@testable import HearthMatter
import HearthSync
import NIOCore
import Testing

/// An operational key whose "CSR" is its public key behind a marker: enough for the commissioning logic.
struct StandInKey: OperationalKeyPair {
    let publicKey: [UInt8]
    func certificateSigningRequest() throws(CredentialError) -> [UInt8] { [0x30, 0x00] + publicKey }
    var serialized: [UInt8] { publicKey }
}

final class StandInKeys: OperationalKeyFactory {
    private let counter = Locked<UInt8>(0)
    func makeKey() throws(CredentialError) -> any OperationalKeyPair {
        let n = counter.withLock { value -> UInt8 in value += 1; return value }
        return StandInKey(publicKey: [0x04] + [UInt8](repeating: n, count: 64))
    }
    func restoreKey(_ serialized: [UInt8]) throws(CredentialError) -> any OperationalKeyPair {
        StandInKey(publicKey: serialized)
    }
}

/// Stand-in certificates: TLV structures {1: fabric id, 2: node id, 3: public key, 4: root public key}; a root is
/// {4: its public key}. The verifier checks that the NOC names the root it is given.
enum StandInCertificates {
    static func root(publicKey: [UInt8]) -> [UInt8] {
        TLVElement.structure { TLVElement(context: 4, .bytes(publicKey)) }.encoded()
    }

    static func noc(fabricID: UInt64, nodeID: UInt64, publicKey: [UInt8], rootPublicKey: [UInt8]) -> [UInt8] {
        TLVElement.structure {
            TLVElement(context: 1, .uint(fabricID))
            TLVElement(context: 2, .uint(nodeID))
            TLVElement(context: 3, .bytes(publicKey))
            TLVElement(context: 4, .bytes(rootPublicKey))
        }.encoded()
    }
}

struct StandInVerifier: OperationalCertificateVerifier {
    func checkRoot(_ root: [UInt8]) throws(CredentialError) {
        guard (try? TLVElement(decoding: root))?[context: 4]?.bytesValue?.count == 65 else {
            throw CredentialError("not a stand-in root")
        }
    }

    func verifyChain(noc: [UInt8], icac: [UInt8]?, root: [UInt8]) throws(CredentialError)
        -> OperationalCertificateIdentity
    {
        guard let element = try? TLVElement(decoding: noc), let rootElement = try? TLVElement(decoding: root),
              let fabricID = element[context: 1]?.unsignedValue, let nodeID = element[context: 2]?.unsignedValue,
              let key = element[context: 3]?.bytesValue, let rootKey = element[context: 4]?.bytesValue,
              rootKey == rootElement[context: 4]?.bytesValue else {
            throw CredentialError("the stand-in NOC does not chain to the root")
        }
        return OperationalCertificateIdentity(
            fabricID: fabricID, nodeID: nodeID, publicKey: key, rootPublicKey: rootKey)
    }
}

struct StandInAttestation: DeviceAttestationCredentials {
    var deviceAttestationCertificate: [UInt8] { [0x30, 0x01, 0xDA] }
    var productAttestationIntermediate: [UInt8] { [0x30, 0x01, 0xFA] }
    var certificationDeclaration: [UInt8] { [0x30, 0x01, 0xCD] }
    /// A "signature" that shows what was signed: its length and first and last bytes.
    func signWithDeviceAttestationKey(_ message: [UInt8]) throws(CredentialError) -> [UInt8] {
        [UInt8(truncatingIfNeeded: message.count), message.first ?? 0, message.last ?? 0]
            + [UInt8](repeating: 0, count: 61)
    }
}

/// A manual clock for the node.
final class TestClock: Sendable {
    let start = MatterInstant(milliseconds: 1_000_000)
    private let offset = Locked<Int64>(0)
    var now: MatterInstant { start + offset.withLock { $0 } }
    func advance(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        offset.withLock { $0 += seconds * 1000 + attoseconds / 1_000_000_000_000_000 }
    }
}

struct MatterNodeFixture {
    let storage: InMemoryNodeStorage
    let clock: TestClock
    let node: MatterNodeCore
    static let rootPublicKey = [0x04] + [UInt8](repeating: 0xAB, count: 64)

    init(storage: InMemoryNodeStorage = InMemoryNodeStorage(), clock: TestClock = TestClock()) throws {
        self.storage = storage
        self.clock = clock
        let configuration = MatterNodeConfiguration(
            basicInformation: BasicInformationConfiguration(
                serialNumber: "HUB-0001", uniqueID: "hearth-test-unique-id"),
            networkInterfaces: {
                [NetworkInterfaceInfo(name: "eth0", isOperational: true, hardwareAddress: [2, 0, 0, 0, 0, 1])]
            },
            initialDataVersion: 1000)
        node = try MatterNodeCore(
            configuration: configuration, storage: storage, keys: StandInKeys(), verifier: StandInVerifier(),
            attestation: StandInAttestation(), started: clock.start, now: { [clock] in clock.now })
    }

    // MARK: The client side

    /// Sends one message on an exchange and returns the reply.
    func send(_ opcode: InteractionModelOpcode, _ element: TLVElement, exchange: inout IMExchangeState,
              as subject: SubjectDescriptor) -> IMReply {
        node.receive(
            opcode: opcode.rawValue, payload: element.encoded(), exchange: &exchange, subject: subject, now: clock.now)
    }

    /// Reads paths, following chunks; returns the reports and the ReportData messages' payload sizes.
    func read(_ paths: [AttributePath], as subject: SubjectDescriptor, fabricFiltered: Bool = true,
              filters: [DataVersionFilter] = []) throws -> (reports: [AttributeReportIB], sizes: [Int]) {
        var exchange = IMExchangeState()
        var reply = send(
            .readRequest,
            ReadRequest(
                attributeRequests: paths, isFabricFiltered: fabricFiltered,
                dataVersionFilters: filters
            ).encoded(), exchange: &exchange, as: subject)
        var reports: [AttributeReportIB] = [], sizes: [Int] = []
        for _ in 0..<100 {
            let message = try #require(reply.message)
            try #require(message.opcode == .reportData, "expected ReportData, got \(message.opcode)")
            let report = try ReportData(decoding: message.payload)
            reports += report.attributeReports
            sizes.append(message.payload.count)
            if !report.moreChunkedMessages {
                #expect(report.suppressResponse)
                #expect(reply.closesExchange)
                return (reports, sizes)
            }
            #expect(!reply.closesExchange)
            reply = send(.statusResponse, StatusResponse(.success).encoded(), exchange: &exchange, as: subject)
        }
        Issue.record("the read did not end in 100 chunks")
        return (reports, sizes)
    }

    /// Reads one attribute's value, failing the test on a status.
    func readValue(_ endpoint: EndpointID, _ cluster: ClusterID, _ attribute: AttributeID,
                   as subject: SubjectDescriptor, fabricFiltered: Bool = true) throws -> TLVValue {
        let (reports, _) = try read(
            [AttributePath(endpoint: endpoint, cluster: cluster, attribute: attribute)], as: subject,
            fabricFiltered: fabricFiltered)
        try #require(reports.count == 1)
        guard case .data(let data) = reports[0] else {
            Issue.record("read of \(endpoint)/\(cluster)/\(attribute) answered \(reports[0])")
            throw IMError(.failure, "not data")
        }
        return data.data
    }

    /// The status a concrete read answers.
    func readStatus(_ path: AttributePath, as subject: SubjectDescriptor) throws -> IMStatusCode {
        let (reports, _) = try read([path], as: subject)
        try #require(reports.count == 1)
        switch reports[0] {
        case .data: return .success
        case .status(let status): return status.status.status
        }
    }

    /// Invokes one command; returns its InvokeResponseIB.
    func invoke(
        _ endpoint: EndpointID, _ cluster: ClusterID, _ command: CommandID, as subject: SubjectDescriptor,
        timed: Bool = false, @TLVMembersBuilder fields: () -> [TLVElement] = { [] }
    ) throws -> InvokeResponseIB {
        var exchange = IMExchangeState()
        let request = InvokeRequest(timedRequest: timed, invokeRequests: [
            CommandDataIB(path: CommandPath(endpoint: endpoint, cluster: cluster, command: command),
                          fields: TLVElement(.structure(fields()))),
        ])
        let reply = send(.invokeRequest, request.encoded(), exchange: &exchange, as: subject)
        let message = try #require(reply.message)
        try #require(
            message.opcode == .invokeResponse, "expected InvokeResponse, got \(message.opcode) \(message.payload)")
        #expect(reply.closesExchange)
        let response = try InvokeResponse(decoding: message.payload)
        try #require(response.invokeResponses.count == 1)
        return response.invokeResponses[0]
    }

    /// Invokes a command answered by a response command; returns its fields.
    func invokeForResponse(
        _ endpoint: EndpointID, _ cluster: ClusterID, _ command: CommandID, as subject: SubjectDescriptor,
        @TLVMembersBuilder fields: () -> [TLVElement] = { [] }
    ) throws -> TLVElement {
        let response = try invoke(endpoint, cluster, command, as: subject, fields: fields)
        guard case .command(let data) = response, let fields = data.fields else {
            Issue.record("expected a response command, got \(response)")
            throw IMError(.failure, "no response")
        }
        return fields
    }

    /// The status a command answers with (SUCCESS for a response command).
    func invokeStatus(_ endpoint: EndpointID, _ cluster: ClusterID, _ command: CommandID, as subject: SubjectDescriptor,
                      @TLVMembersBuilder fields: () -> [TLVElement] = { [] }) throws -> IMStatusCode {
        switch try invoke(endpoint, cluster, command, as: subject, fields: fields) {
        case .command: return .success
        case .status(let status): return status.status.status
        }
    }

    /// Writes attributes; returns each path's status.
    func write(_ data: [AttributeDataIB], as subject: SubjectDescriptor) throws -> [IMStatusCode] {
        var exchange = IMExchangeState()
        let reply = send(.writeRequest, WriteRequest(writeRequests: data).encoded(), exchange: &exchange, as: subject)
        let message = try #require(reply.message)
        try #require(message.opcode == .writeResponse, "expected WriteResponse, got \(message.opcode)")
        return try WriteResponse(decoding: message.payload).writeResponses.map(\.status.status)
    }

    // MARK: Commissioning

    static let generalCommissioning: ClusterID = 0x0030
    static let operationalCredentials: ClusterID = 0x003E

    /// ArmFailSafe → CSRRequest → AddTrustedRootCertificate → AddNOC over PASE; returns the new fabric's index.
    func addFabric(
        fabricID: UInt64 = 0x1234, nodeID: UInt64 = 0x0102_0304, adminNode: UInt64 = 112233,
        rootPublicKey: [UInt8] = MatterNodeFixture.rootPublicKey, failSafeSeconds: UInt16 = 60
    ) throws -> FabricIndex {
        let outcome = try addNOC(fabricID: fabricID, nodeID: nodeID, adminNode: adminNode, rootPublicKey: rootPublicKey,
                                 failSafeSeconds: failSafeSeconds)
        try #require(outcome.status == 0, "AddNOC answered \(outcome.status)")
        return try #require(outcome.index)
    }

    /// The same steps; returns NOCResponse's status and fabric index.
    func addNOC(fabricID: UInt64 = 0x1234, nodeID: UInt64 = 0x0102_0304, adminNode: UInt64 = 112233,
                rootPublicKey: [UInt8] = MatterNodeFixture.rootPublicKey,
                failSafeSeconds: UInt16 = 60) throws -> (status: UInt8, index: FabricIndex?) {
        let pase = SubjectDescriptor.pase(attestationChallenge: [UInt8](repeating: 7, count: 16))
        let arm = try invokeForResponse(0, Self.generalCommissioning, 0x00, as: pase) {
            TLVElement(context: 0, .uint(failSafeSeconds))
            TLVElement(context: 1, .uint(UInt64(1)))
        }
        try #require(arm[context: 0]?.unsignedValue == 0, "ArmFailSafe: \(arm)")
        let csr = try invokeForResponse(0, Self.operationalCredentials, 0x04, as: pase) {
            TLVElement(context: 0, .bytes([UInt8](repeating: 0x11, count: 32)))
        }
        let elements = try TLVElement(decoding: try #require(csr[context: 0]?.bytesValue))
        let request = try #require(elements[context: 1]?.bytesValue)
        let publicKey = Array(request.dropFirst(2))
        let rootStatus = try invokeStatus(0, Self.operationalCredentials, 0x0B, as: pase) {
            TLVElement(context: 0, .bytes(StandInCertificates.root(publicKey: rootPublicKey)))
        }
        try #require(rootStatus == .success)
        let noc = try invokeForResponse(0, Self.operationalCredentials, 0x06, as: pase) {
            TLVElement(
                context: 0,
                .bytes(
                    StandInCertificates.noc(
                        fabricID: fabricID, nodeID: nodeID, publicKey: publicKey,
                        rootPublicKey: rootPublicKey)))
            TLVElement(context: 2, .bytes([UInt8](repeating: 0x5A, count: 16)))
            TLVElement(context: 3, .uint(adminNode))
            TLVElement(context: 4, .uint(UInt16(0xFFF1)))
        }
        let status = try #require(noc[context: 0]?.unsignedValue.flatMap { UInt8(exactly: $0) })
        return (status, noc[context: 1]?.unsignedValue.flatMap { FabricIndex(exactly: $0) })
    }

    /// A commissioned fabric whose administrator (node 112233) lets node 5 view too: the fabric and both subjects.
    func commissionedWithViewer() throws -> (fabric: FabricIndex, admin: SubjectDescriptor, viewer: SubjectDescriptor)
    {
        let index = try addFabric()
        _ = try completeCommissioning(fabric: index)
        let admin = SubjectDescriptor.caseSession(fabricIndex: index, node: 112233)
        let acl = node.commissioning.acl + [
            ACLEntry(privilege: .view, authMode: .case, subjects: [5], fabricIndex: index)
        ]
        let statuses = try write(
            [
                AttributeDataIB(
                    dataVersion: nil, path: AttributePath(endpoint: 0, cluster: 0x1F, attribute: 0),
                    data: .array(acl.map { $0.encoded(includingFabricIndex: false) }))
            ],
            as: admin)
        try #require(statuses == [.success], "the ACL write answered \(statuses)")
        return (index, admin, .caseSession(fabricIndex: index, node: 5))
    }

    /// CommissioningComplete over CASE on `fabric` as `node`; returns its error code.
    func completeCommissioning(fabric: FabricIndex, node: UInt64 = 112233) throws -> UInt64? {
        let fields = try invokeForResponse(
            0, Self.generalCommissioning, 0x04, as: .caseSession(fabricIndex: fabric, node: node))
        return fields[context: 0]?.unsignedValue
    }
}

extension MatterNodeOptions {
    /// A node for tests: on a free port of `host`, announcing nothing, with the test passcode 20202021.
    static func loopback(host: String = "127.0.0.1", salt: [UInt8] = [UInt8](repeating: 1, count: 32)) throws
        -> MatterNodeOptions
    {
        MatterNodeOptions(
            addresses: [try SocketAddress(ipAddress: host, port: 0)], announceInterfaces: [], hostLabel: "TEST",
            port: 0, discriminator: 3840,
            verifier: try PASEVerifier.compute(passcode: 20_202_021, salt: salt, iterations: 1000),
            vendorID: 0xFFF1, productID: 0x8000, deviceName: "test")
    }
}
