// OperationalCredentials (0x003E): device attestation, the CSR for an operational key, trusted roots, NOCs and
// fabrics (Matter 1.4 §11.18), over the node's commissioning state.

final class OperationalCredentialsCluster: ClusterServer {
    static let clusterID: ClusterID = 0x003E
    enum Attribute {
        static let nocs: AttributeID = 0, fabrics: AttributeID = 1, supportedFabrics: AttributeID = 2
        static let commissionedFabrics: AttributeID = 3, trustedRootCertificates: AttributeID = 4
        static let currentFabricIndex: AttributeID = 5
    }
    enum Command {
        static let attestationRequest: CommandID = 0x00, attestationResponse: CommandID = 0x01
        static let certificateChainRequest: CommandID = 0x02, certificateChainResponse: CommandID = 0x03
        static let csrRequest: CommandID = 0x04, csrResponse: CommandID = 0x05
        static let addNOC: CommandID = 0x06, updateNOC: CommandID = 0x07, nocResponse: CommandID = 0x08
        static let updateFabricLabel: CommandID = 0x09, removeFabric: CommandID = 0x0A
        static let addTrustedRootCertificate: CommandID = 0x0B
    }

    /// The nonces of AttestationRequest and CSRRequest are 32 bytes.
    static let nonceLength = 32

    let id = OperationalCredentialsCluster.clusterID
    let revision: UInt16 = 1
    let attributes = [
        AttributeDefinition(Attribute.nocs, "NOCs", [.list, .fabricScoped], read: .administer),
        AttributeDefinition(Attribute.fabrics, "Fabrics", [.list, .fabricScoped]),
        AttributeDefinition(Attribute.supportedFabrics, "SupportedFabrics", [.fixed]),
        AttributeDefinition(Attribute.commissionedFabrics, "CommissionedFabrics"),
        AttributeDefinition(Attribute.trustedRootCertificates, "TrustedRootCertificates", [.list]),
        AttributeDefinition(Attribute.currentFabricIndex, "CurrentFabricIndex"),
    ]
    let acceptedCommands = [
        CommandDefinition(
            Command.attestationRequest, "AttestationRequest", privilege: .administer,
            response: Command.attestationResponse),
        CommandDefinition(
            Command.certificateChainRequest, "CertificateChainRequest", privilege: .administer,
            response: Command.certificateChainResponse),
        CommandDefinition(Command.csrRequest, "CSRRequest", privilege: .administer, response: Command.csrResponse),
        CommandDefinition(Command.addNOC, "AddNOC", privilege: .administer, response: Command.nocResponse),
        CommandDefinition(Command.updateNOC, "UpdateNOC", privilege: .administer, response: Command.nocResponse),
        CommandDefinition(
            Command.updateFabricLabel, "UpdateFabricLabel", privilege: .administer, response: Command.nocResponse),
        CommandDefinition(Command.removeFabric, "RemoveFabric", privilege: .administer, response: Command.nocResponse),
        CommandDefinition(Command.addTrustedRootCertificate, "AddTrustedRootCertificate", privilege: .administer),
    ]
    let generatedCommands = [Command.attestationResponse, Command.certificateChainResponse, Command.csrResponse,
                             Command.nocResponse]

    private let state: CommissioningState

    init(state: CommissioningState) { self.state = state }

    func read(_ attribute: AttributeID, context: ReadContext) throws(IMError) -> TLVValue {
        let fabrics = state.fabrics
        let accessing = context.subject.fabricIndex
        // A fabric-scoped list read filtered shows the accessing fabric's entries only.
        let visible = context.isFabricFiltered ? fabrics.filter { $0.index == accessing } : fabrics
        switch attribute {
        case Attribute.nocs:
            return .array(visible.map { fabric in
                // NOC and ICAC are fabric-sensitive: another fabric's are left out even unfiltered.
                let own = fabric.index == accessing
                return TLVElement.structure {
                    if own {
                        TLVElement(context: 1, .bytes(fabric.operationalCertificate))
                        TLVElement(context: 2, fabric.intermediateCertificate.map { .bytes($0) } ?? .null)
                    }
                    TLVElement(context: 0xFE, .uint(fabric.index))
                }
            })
        case Attribute.fabrics:
            return .array(visible.map { fabric in
                TLVElement.structure {
                    TLVElement(context: 1, .bytes(fabric.identity.rootPublicKey))
                    TLVElement(context: 2, .uint(fabric.vendorID))
                    TLVElement(context: 3, .uint(fabric.identity.fabricID))
                    TLVElement(context: 4, .uint(fabric.identity.nodeID))
                    TLVElement(context: 5, .utf8(fabric.label))
                    TLVElement(context: 0xFE, .uint(fabric.index))
                }
            })
        case Attribute.supportedFabrics: return .uint(UInt8(CommissioningState.supportedFabrics))
        case Attribute.commissionedFabrics: return .uint(UInt8(fabrics.count))
        case Attribute.trustedRootCertificates:
            var roots = fabrics.map(\.rootCertificate)
            if let pending = state.pendingRootCertificate, !roots.contains(pending) { roots.append(pending) }
            return .array(roots.map { TLVElement(.bytes($0)) })
        case Attribute.currentFabricIndex: return .uint(accessing)
        default: throw unsupported(attribute, "OperationalCredentials")
        }
    }

    func invoke(_ command: CommandID, fields: TLVElement?, context: ActionContext) throws(IMError) -> CommandResult {
        switch command {
        case Command.attestationRequest: return try attestation(fields, context)
        case Command.certificateChainRequest:
            let f = try CommandFields(fields, "CertificateChainRequest")
            let certificate: [UInt8]
            switch try f.unsigned(0, UInt8.self) {
            case 1: certificate = state.attestation.deviceAttestationCertificate
            case 2: certificate = state.attestation.productAttestationIntermediate
            case let other: throw IMError(.invalidCommand, "CertificateType \(other) is neither DAC (1) nor PAI (2)")
            }
            return .response(
                Command.certificateChainResponse, responseFields { TLVElement(context: 0, .bytes(certificate)) })
        case Command.csrRequest: return try csr(fields, context)
        case Command.addTrustedRootCertificate:
            let f = try CommandFields(fields, "AddTrustedRootCertificate")
            let root = try f.bytes(0)
            guard root.count <= 400 else {
                throw IMError(.constraintError, "a root certificate holds at most 400 bytes")
            }
            try state.addTrustedRoot(root)
            return .success
        case Command.addNOC:
            let f = try CommandFields(fields, "AddNOC")
            let noc = try f.bytes(0), icac = try f.optionalBytes(1), ipk = try f.bytes(2)
            let admin = try f.unsigned(3, UInt64.self), vendor = try f.unsigned(4, UInt16.self)
            guard noc.count <= 400, (icac?.count ?? 0) <= 400 else {
                throw IMError(.constraintError, "a certificate holds at most 400 bytes")
            }
            return nocResponse(try state.addNOC(noc: noc, icac: icac, ipk: ipk, caseAdminSubject: admin,
                                                adminVendorID: vendor, subject: context.subject))
        case Command.updateNOC:
            let f = try CommandFields(fields, "UpdateNOC")
            let noc = try f.bytes(0), icac = try f.optionalBytes(1)
            return nocResponse(try state.updateNOC(noc: noc, icac: icac, subject: context.subject))
        case Command.updateFabricLabel:
            let f = try CommandFields(fields, "UpdateFabricLabel")
            return nocResponse(try state.updateFabricLabel(try f.string(0), subject: context.subject))
        case Command.removeFabric:
            let f = try CommandFields(fields, "RemoveFabric")
            let index = try f.unsigned(0, UInt8.self)
            guard index >= 1 && index <= 254 else {
                throw IMError(.constraintError, "fabric index \(index) is out of 1…254")
            }
            return nocResponse(try state.removeFabric(index, subject: context.subject))
        default:
            throw IMError(.unsupportedCommand, "OperationalCredentials has no command 0x\(String(command, radix: 16))")
        }
    }

    private func nocResponse(_ outcome: (NOCStatus, FabricIndex?, String)) -> CommandResult {
        .response(Command.nocResponse, responseFields {
            TLVElement(context: 0, .uint(outcome.0.rawValue))
            if let index = outcome.1 { TLVElement(context: 1, .uint(index)) }
            if !outcome.2.isEmpty { TLVElement(context: 2, .utf8(String(outcome.2.utf8.prefix(128)) ?? "")) }
        })
    }

    /// AttestationResponse: attestation-elements (CD, nonce, timestamp) signed with the DAC together with the
    /// session's attestation challenge (§11.18.6.2, §6.2.3).
    private func attestation(_ fields: TLVElement?, _ context: ActionContext) throws(IMError) -> CommandResult {
        let f = try CommandFields(fields, "AttestationRequest")
        let nonce = try f.bytes(0)
        guard nonce.count == Self.nonceLength else {
            throw IMError(.invalidCommand, "AttestationNonce has \(nonce.count) bytes, not \(Self.nonceLength)")
        }
        let elements = TLVElement.structure {
            TLVElement(context: 1, .bytes(state.attestation.certificationDeclaration))
            TLVElement(context: 2, .bytes(nonce))
            TLVElement(context: 3, .uint(UInt32(0)))
        }.encoded()
        let signature = try sign(elements + context.subject.attestationChallenge)
        return .response(Command.attestationResponse, responseFields {
            TLVElement(context: 0, .bytes(elements))
            TLVElement(context: 1, .bytes(signature))
        })
    }

    /// CSRResponse: NOCSR-elements (the CSR and the nonce) signed with the DAC with the attestation challenge.
    private func csr(_ fields: TLVElement?, _ context: ActionContext) throws(IMError) -> CommandResult {
        let f = try CommandFields(fields, "CSRRequest")
        let nonce = try f.bytes(0)
        guard nonce.count == Self.nonceLength else {
            throw IMError(.invalidCommand, "CSRNonce has \(nonce.count) bytes, not \(Self.nonceLength)")
        }
        let forUpdate = try f.optionalBool(1) ?? false
        let key = try state.makeOperationalKey(forUpdate: forUpdate, subject: context.subject)
        let request: [UInt8]
        do { request = try key.certificateSigningRequest() } catch {
            throw IMError(.failure, "the CSR could not be made: \(error)")
        }
        let elements = TLVElement.structure {
            TLVElement(context: 1, .bytes(request))
            TLVElement(context: 2, .bytes(nonce))
        }.encoded()
        let signature = try sign(elements + context.subject.attestationChallenge)
        return .response(Command.csrResponse, responseFields {
            TLVElement(context: 0, .bytes(elements))
            TLVElement(context: 1, .bytes(signature))
        })
    }

    private func sign(_ message: [UInt8]) throws(IMError) -> [UInt8] {
        do { return try state.attestation.signWithDeviceAttestationKey(message) } catch {
            throw IMError(.failure, "the DAC could not sign: \(error)")
        }
    }
}

// MARK: - AccessControl

final class AccessControlCluster: ClusterServer {
    static let clusterID: ClusterID = 0x001F
    enum Attribute {
        static let acl: AttributeID = 0, subjectsPerEntry: AttributeID = 2, targetsPerEntry: AttributeID = 3
        static let entriesPerFabric: AttributeID = 4
    }

    let id = AccessControlCluster.clusterID
    let revision: UInt16 = 1
    let attributes = [
        AttributeDefinition(Attribute.acl, "ACL", [.list, .fabricScoped, .writable, .nonVolatile],
                            read: .administer, write: .administer),
        AttributeDefinition(Attribute.subjectsPerEntry, "SubjectsPerAccessControlEntry", [.fixed]),
        AttributeDefinition(Attribute.targetsPerEntry, "TargetsPerAccessControlEntry", [.fixed]),
        AttributeDefinition(Attribute.entriesPerFabric, "AccessControlEntriesPerFabric", [.fixed]),
    ]
    private let state: CommissioningState

    init(state: CommissioningState) { self.state = state }

    func read(_ attribute: AttributeID, context: ReadContext) throws(IMError) -> TLVValue {
        switch attribute {
        case Attribute.acl:
            let entries = state.acl.filter {
                !context.isFabricFiltered || $0.fabricIndex == context.subject.fabricIndex
            }
            return .array(entries.map { $0.encoded() })
        case Attribute.subjectsPerEntry: return .uint(UInt16(4))
        case Attribute.targetsPerEntry: return .uint(UInt16(3))
        case Attribute.entriesPerFabric: return .uint(UInt16(CommissioningState.aclEntriesPerFabric))
        default: throw unsupported(attribute, "AccessControl")
        }
    }

    func write(_ attribute: AttributeID, value: TLVValue, context: ActionContext) throws(IMError) {
        guard attribute == Attribute.acl else { throw IMError(.unsupportedWrite, "read-only") }
        guard case .array(let items) = value else { throw IMError(.invalidDataType, "ACL is a list") }
        var entries: [ACLEntry] = []
        for item in items {
            do {
                entries.append(try ACLEntry(decoding: item, fabricIndex: context.subject.fabricIndex))
            } catch {
                throw IMError(error.status == .invalidAction ? .invalidDataType : error.status, error.message)
            }
        }
        try state.replaceACL(entries, subject: context.subject)
    }
}
