// A fabric as this node keeps it, and the TLV the node's storage holds for fabrics, ACL entries and settings.

/// One fabric the node belongs to: its identity on it, the certificates that prove it, its key and its IPK.
public struct Fabric: Sendable, Equatable {
    /// 1…254; never 0.
    public var index: FabricIndex
    public var identity: OperationalCertificateIdentity
    public var vendorID: UInt16
    public var label: String
    /// RCAC, ICAC and NOC, Matter TLV encoded, as AddNOC gave them.
    public var rootCertificate: [UInt8]
    public var intermediateCertificate: [UInt8]?
    public var operationalCertificate: [UInt8]
    /// The operational private key, as `OperationalKeyFactory.restoreKey` reads it.
    public var operationalKey: [UInt8]
    /// The Identity Protection Key's epoch key (group key set 0), 16 bytes.
    public var identityProtectionKey: [UInt8]

    public init(index: FabricIndex, identity: OperationalCertificateIdentity, vendorID: UInt16, label: String,
                rootCertificate: [UInt8], intermediateCertificate: [UInt8]?, operationalCertificate: [UInt8],
                operationalKey: [UInt8], identityProtectionKey: [UInt8]) {
        self.index = index
        self.identity = identity
        self.vendorID = vendorID
        self.label = label
        self.rootCertificate = rootCertificate
        self.intermediateCertificate = intermediateCertificate
        self.operationalCertificate = operationalCertificate
        self.operationalKey = operationalKey
        self.identityProtectionKey = identityProtectionKey
    }

    func encoded() -> TLVElement {
        .structure {
            TLVElement(context: 0, .uint(index))
            TLVElement(context: 1, .uint(identity.fabricID))
            TLVElement(context: 2, .uint(identity.nodeID))
            TLVElement(context: 3, .bytes(identity.publicKey))
            TLVElement(context: 4, .bytes(identity.rootPublicKey))
            TLVElement.array(tag: .context(5)) { identity.cats.map { TLVElement(.uint($0)) } }
            TLVElement(context: 6, .uint(vendorID))
            TLVElement(context: 7, .utf8(label))
            TLVElement(context: 8, .bytes(rootCertificate))
            if let intermediateCertificate { TLVElement(context: 9, .bytes(intermediateCertificate)) }
            TLVElement(context: 10, .bytes(operationalCertificate))
            TLVElement(context: 11, .bytes(operationalKey))
            TLVElement(context: 12, .bytes(identityProtectionKey))
        }
    }

    init(decoding element: TLVElement) throws(TLVFieldError) {
        let index = try element.field(0).unsigned(FabricIndex.self)
        guard index != 0 else { throw TLVFieldError(.outOfRange("fabric index 0"), tag: .context(0)) }
        var cats: [UInt32] = []
        for cat in try element.field(5).array() { cats.append(try cat.unsigned(UInt32.self)) }
        self.init(
            index: index,
            identity: OperationalCertificateIdentity(
                fabricID: try element.field(1).unsigned(), nodeID: try element.field(2).unsigned(),
                publicKey: try element.field(3).bytes(), rootPublicKey: try element.field(4).bytes(), cats: cats),
            vendorID: try element.field(6).unsigned(), label: try element.field(7).string(),
            rootCertificate: try element.field(8).bytes(),
            intermediateCertificate: try element.optionalField(9)?.bytes(),
            operationalCertificate: try element.field(10).bytes(), operationalKey: try element.field(11).bytes(),
            identityProtectionKey: try element.field(12).bytes(count: 16))
    }
}

extension ACLEntry {
    /// AccessControlEntryStruct (§9.10.5.5): Privilege 1, AuthMode 2, Subjects 3, Targets 4, FabricIndex 0xFE.
    public func encoded(includingFabricIndex: Bool = true) -> TLVElement {
        .structure {
            TLVElement(context: 1, .uint(privilege.rawValue))
            TLVElement(context: 2, .uint(authMode.rawValue))
            if subjects.isEmpty { TLVElement(context: 3, .null) } else {
                TLVElement.array(tag: .context(3)) { subjects.map { TLVElement(.uint($0)) } }
            }
            if targets.isEmpty { TLVElement(context: 4, .null) } else {
                TLVElement.array(tag: .context(4)) {
                    targets.map { target in
                        TLVElement.structure {
                            TLVElement(context: 0, target.cluster.map { .uint($0) } ?? .null)
                            TLVElement(context: 1, target.endpoint.map { .uint($0) } ?? .null)
                            TLVElement(context: 2, target.deviceType.map { .uint($0) } ?? .null)
                        }
                    }
                }
            }
            if includingFabricIndex { TLVElement(context: 0xFE, .uint(fabricIndex)) }
        }
    }

    /// Reads an entry; a write gives no FabricIndex (the accessing fabric's is used), storage always does.
    public init(decoding element: TLVElement, fabricIndex accessing: FabricIndex?) throws(IMError) {
        let what = "AccessControlEntryStruct"
        try requireStructure(element, what)
        func nullable<T: FixedWidthInteger & UnsignedInteger>(_ e: TLVElement, _ tag: UInt8) throws(TLVFieldError) -> T?
        {
            guard let member = e.optionalField(tag) else { throw TLVFieldError(.missing, tag: .context(tag)) }
            return member.isNull ? nil : try member.unsigned(T.self)
        }
        let decoded = try tlv(what) { () throws(TLVFieldError) in
            let privilege = try element.field(1).unsigned(UInt8.self)
            let authMode = try element.field(2).unsigned(UInt8.self)
            let subjectsField = try element.field(3)
            var subjects: [UInt64] = []
            if !subjectsField.isNull {
                for s in try subjectsField.array() { subjects.append(try s.unsigned(UInt64.self)) }
            }
            let targetsField = try element.field(4)
            var targets: [ACLTarget] = []
            if !targetsField.isNull {
                for t in try targetsField.array() {
                    _ = try t.structure()
                    targets.append(ACLTarget(cluster: try nullable(t, 0), endpoint: try nullable(t, 1),
                                             deviceType: try nullable(t, 2)))
                }
            }
            let fabric = try element.optionalField(0xFE)?.unsigned(FabricIndex.self)
            return (privilege, authMode, subjects, targets, fabric)
        }
        guard let privilege = Privilege(rawValue: decoded.0) else {
            throw IMError(.constraintError, "\(what) privilege \(decoded.0) is not a privilege")
        }
        guard let authMode = AuthMode(rawValue: decoded.1) else {
            throw IMError(.constraintError, "\(what) auth mode \(decoded.1) is not an auth mode")
        }
        guard let fabricIndex = accessing ?? decoded.4 else {
            throw IMError(.constraintError, "\(what) has no fabric index")
        }
        self.init(
            privilege: privilege, authMode: authMode, subjects: decoded.2, targets: decoded.3, fabricIndex: fabricIndex)
    }
}
