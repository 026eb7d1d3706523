// Matter operational certificates (core specification 6.5) in their TLV form: the model, its TLV encoding and a
// strict reader. RCAC, ICAC and NOC share this shape; what kind a certificate is follows from its subject.

/// A Matter certificate: the TLV form of an X.509 certificate of Matter's profile.
public struct MatterCertificate: Sendable, Equatable {
    /// The serial number's bytes as in the DER INTEGER (at most 20).
    public var serialNumber: [UInt8]
    public var issuer: DistinguishedName
    /// Matter epoch seconds (from 2000-01-01 00:00:00 UTC).
    public var notBefore: UInt32
    /// Matter epoch seconds; 0 means no expiry (X.509 99991231235959Z).
    public var notAfter: UInt32
    public var subject: DistinguishedName
    /// The uncompressed P-256 point (65 bytes).
    public var publicKey: [UInt8]
    /// In the order they appear (the X.509 form keeps it, and the signature covers it).
    public var extensions: [CertificateExtension]
    /// ECDSA P-256 SHA-256, raw r || s (64 bytes).
    public var signature: [UInt8]

    public init(
        serialNumber: [UInt8], issuer: DistinguishedName, notBefore: UInt32, notAfter: UInt32,
        subject: DistinguishedName, publicKey: [UInt8], extensions: [CertificateExtension], signature: [UInt8]
    ) {
        self.serialNumber = serialNumber
        self.issuer = issuer
        self.notBefore = notBefore
        self.notAfter = notAfter
        self.subject = subject
        self.publicKey = publicKey
        self.extensions = extensions
        self.signature = signature
    }
}

/// A distinguished name: attributes in order, each its own RDN in the X.509 form.
public struct DistinguishedName: Sendable, Equatable {
    public var attributes: [DNAttribute]

    public init(_ attributes: [DNAttribute]) { self.attributes = attributes }

    /// The value of the first Matter attribute of `type`.
    public func matterValue(_ type: DNAttribute.Kind) -> UInt64? {
        for attribute in attributes where attribute.kind == type {
            if case .integer(let v) = attribute.value { return v }
        }
        return nil
    }

    public var nodeID: UInt64? { matterValue(.matterNodeID) }
    public var fabricID: UInt64? { matterValue(.matterFabricID) }
    public var rcacID: UInt64? { matterValue(.matterRCACID) }
    public var icacID: UInt64? { matterValue(.matterICACID) }
    /// CASE Authenticated Tags, in order.
    public var caseAuthenticatedTags: [UInt32] {
        attributes.compactMap { attribute in
            if attribute.kind == .matterCASEAuthenticatedTag, case .integer(let v) = attribute.value {
                UInt32(exactly: v)
            } else {
                nil
            }
        }
    }
}

/// One attribute of a distinguished name.
public struct DNAttribute: Sendable, Equatable {
    /// The attribute types of Matter's profile; raw values are their TLV context tags (without the printable flag).
    public enum Kind: UInt8, Sendable, CaseIterable {
        case commonName = 1, surname, serialNumber, countryName, localityName, stateOrProvinceName, organizationName,
            organizationalUnitName, title, name, givenName, initials, generationQualifier, dnQualifier, pseudonym,
            domainComponent
        case matterNodeID = 17, matterFirmwareSigningID, matterICACID, matterRCACID, matterFabricID,
            matterCASEAuthenticatedTag

        /// Matter's own attributes carry integers (64-bit, or 32-bit for CATs), written in X.509 as upper-case hex.
        public var isMatterInteger: Bool { rawValue >= 17 }

        /// The DER contents of the attribute type's OBJECT IDENTIFIER.
        var oid: [UInt8] {
            switch self {
            case .commonName: [0x55, 0x04, 0x03]
            case .surname: [0x55, 0x04, 0x04]
            case .serialNumber: [0x55, 0x04, 0x05]
            case .countryName: [0x55, 0x04, 0x06]
            case .localityName: [0x55, 0x04, 0x07]
            case .stateOrProvinceName: [0x55, 0x04, 0x08]
            case .organizationName: [0x55, 0x04, 0x0A]
            case .organizationalUnitName: [0x55, 0x04, 0x0B]
            case .title: [0x55, 0x04, 0x0C]
            case .name: [0x55, 0x04, 0x29]
            case .givenName: [0x55, 0x04, 0x2A]
            case .initials: [0x55, 0x04, 0x2B]
            case .generationQualifier: [0x55, 0x04, 0x2C]
            case .dnQualifier: [0x55, 0x04, 0x2E]
            case .pseudonym: [0x55, 0x04, 0x41]
            case .domainComponent: [0x09, 0x92, 0x26, 0x89, 0x93, 0xF2, 0x2C, 0x64, 0x01, 0x19]
            default: [0x2B, 0x06, 0x01, 0x04, 0x01, 0x82, 0xA2, 0x7C, 0x01, rawValue - 16]
            }
        }

        init?(oid: some Collection<UInt8>) {
            guard let kind = Kind.allCases.first(where: { $0.oid.elementsEqual(oid) }) else { return nil }
            self = kind
        }
    }

    public enum Value: Sendable, Equatable {
        case integer(UInt64)
        /// A string; `printable` chooses PrintableString over UTF8String in X.509 (TLV tag flag 0x80).
        case string(String, printable: Bool)
    }

    public var kind: Kind
    public var value: Value

    public init(_ kind: Kind, _ value: Value) {
        self.kind = kind
        self.value = value
    }

    public static func matter(_ kind: Kind, _ value: UInt64) -> DNAttribute { DNAttribute(kind, .integer(value)) }
}

/// The key usages of the X.509 extension, as the TLV form numbers them (bit n is X.509's KeyUsage bit n).
public struct KeyUsage: OptionSet, Sendable, Hashable {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let digitalSignature = KeyUsage(rawValue: 0x0001)
    public static let nonRepudiation = KeyUsage(rawValue: 0x0002)
    public static let keyEncipherment = KeyUsage(rawValue: 0x0004)
    public static let dataEncipherment = KeyUsage(rawValue: 0x0008)
    public static let keyAgreement = KeyUsage(rawValue: 0x0010)
    public static let keyCertSign = KeyUsage(rawValue: 0x0020)
    public static let crlSign = KeyUsage(rawValue: 0x0040)
    public static let encipherOnly = KeyUsage(rawValue: 0x0080)
    public static let decipherOnly = KeyUsage(rawValue: 0x0100)
}

/// Extended key usage purposes, numbered as the TLV form numbers them (id-kp-N of 1.3.6.1.5.5.7.3).
public enum KeyPurpose: UInt8, Sendable, CaseIterable {
    case serverAuth = 1, clientAuth, codeSigning, emailProtection, timeStamping, ocspSigning
}

/// A certificate extension of Matter's profile.
public enum CertificateExtension: Sendable, Equatable {
    case basicConstraints(isCA: Bool, pathLength: UInt8?)
    case keyUsage(KeyUsage)
    case extendedKeyUsage([KeyPurpose])
    case subjectKeyIdentifier([UInt8])
    case authorityKeyIdentifier([UInt8])
    /// Any other extension, kept as its DER `Extension` SEQUENCE.
    case future([UInt8])
}

extension MatterCertificate {
    public var isCA: Bool {
        for case .basicConstraints(let isCA, _) in extensions { return isCA }
        return false
    }

    public var pathLengthConstraint: UInt8? {
        for case .basicConstraints(_, let length) in extensions { return length }
        return nil
    }

    public var keyUsage: KeyUsage? {
        for case .keyUsage(let usage) in extensions { return usage }
        return nil
    }

    public var extendedKeyUsage: [KeyPurpose]? {
        for case .extendedKeyUsage(let purposes) in extensions { return purposes }
        return nil
    }

    public var subjectKeyIdentifier: [UInt8]? {
        for case .subjectKeyIdentifier(let id) in extensions { return id }
        return nil
    }

    public var authorityKeyIdentifier: [UInt8]? {
        for case .authorityKeyIdentifier(let id) in extensions { return id }
        return nil
    }
}

/// Why a certificate was refused: its form (TLV or DER) or a rule of Matter's profile.
public struct CertificateError: Error, Sendable, Equatable, CustomStringConvertible {
    public var reason: String

    public init(_ reason: String) { self.reason = reason }

    public var description: String { "certificate: \(reason)" }
}

// MARK: - TLV

extension MatterCertificate {
    /// Context tags of the certificate structure.
    private enum Field {
        static let serialNumber: UInt8 = 1, signatureAlgorithm: UInt8 = 2, issuer: UInt8 = 3, notBefore: UInt8 = 4
        static let notAfter: UInt8 = 5, subject: UInt8 = 6, publicKeyAlgorithm: UInt8 = 7, curve: UInt8 = 8
        static let publicKey: UInt8 = 9, extensions: UInt8 = 10, signature: UInt8 = 11
    }

    private enum ExtensionTag {
        static let basicConstraints: UInt8 = 1, keyUsage: UInt8 = 2, extendedKeyUsage: UInt8 = 3
        static let subjectKeyIdentifier: UInt8 = 4, authorityKeyIdentifier: UInt8 = 5, future: UInt8 = 6
    }

    /// The certificate as a TLV element (an anonymous structure).
    public var tlvElement: TLVElement {
        .structure {
            TLVElement(context: Field.serialNumber, .bytes(serialNumber))
            TLVElement(context: Field.signatureAlgorithm, .unsigned(1))
            TLVElement(context: Field.issuer, .list(issuer.tlvMembers))
            TLVElement(context: Field.notBefore, .unsigned(UInt64(notBefore)))
            TLVElement(context: Field.notAfter, .unsigned(UInt64(notAfter)))
            TLVElement(context: Field.subject, .list(subject.tlvMembers))
            TLVElement(context: Field.publicKeyAlgorithm, .unsigned(1))
            TLVElement(context: Field.curve, .unsigned(1))
            TLVElement(context: Field.publicKey, .bytes(publicKey))
            TLVElement(context: Field.extensions, .list(extensions.map(\.tlvElement)))
            TLVElement(context: Field.signature, .bytes(signature))
        }
    }

    /// The Matter TLV bytes.
    public var tlvEncoded: [UInt8] { tlvElement.encoded() }

    /// Reads a Matter TLV certificate, refusing any member out of place or out of the profile.
    public init(tlv bytes: some Collection<UInt8>) throws(CertificateError) {
        let element: TLVElement
        do { element = try TLVElement(decoding: bytes) } catch { throw CertificateError("\(error)") }
        try self.init(tlvElement: element)
    }

    public init(tlvElement element: TLVElement) throws(CertificateError) {
        guard element.tag == .anonymous, let members = element.structureMembers else {
            throw CertificateError("not an anonymous TLV structure")
        }
        let expected: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]
        guard members.map(\.tag) == expected.map(TLVTag.context) else {
            throw CertificateError("members are not tags 1 to 11 in order: \(members.map(\.tag))")
        }
        do {
            serialNumber = try members[0].bytes()
            guard (1...20).contains(serialNumber.count) else {
                throw CertificateError("serial number of \(serialNumber.count) bytes")
            }
            guard try members[1].unsigned(UInt8.self) == 1 else {
                throw CertificateError("signature algorithm is not ECDSA with SHA-256")
            }
            issuer = try DistinguishedName(tlvMembers: members[2].list())
            notBefore = try members[3].unsigned(UInt32.self)
            notAfter = try members[4].unsigned(UInt32.self)
            subject = try DistinguishedName(tlvMembers: members[5].list())
            guard try members[6].unsigned(UInt8.self) == 1 else {
                throw CertificateError("public key algorithm is not EC")
            }
            guard try members[7].unsigned(UInt8.self) == 1 else { throw CertificateError("curve is not P-256") }
            publicKey = try members[8].bytes(count: 65)
            guard publicKey[0] == 0x04 else { throw CertificateError("public key is not an uncompressed point") }
            extensions = []
            for member in try members[9].list() { extensions.append(try CertificateExtension(tlv: member)) }
            signature = try members[10].bytes(count: 64)
        } catch let error as CertificateError {
            throw error
        } catch {
            throw CertificateError("\(error)")
        }
        try checkExtensionsAreDistinct()
    }

    func checkExtensionsAreDistinct() throws(CertificateError) {
        var seen: Set<Int> = []
        for ext in extensions where !ext.isFuture {
            guard seen.insert(ext.tlvTag).inserted else {
                throw CertificateError("extension \(ext.tlvTag) appears twice")
            }
        }
    }
}

extension DistinguishedName {
    var tlvMembers: [TLVElement] {
        attributes.map { attribute in
            switch attribute.value {
            case .integer(let v): TLVElement(context: attribute.kind.rawValue, .unsigned(v))
            case .string(let s, let printable):
                TLVElement(context: attribute.kind.rawValue | (printable ? 0x80 : 0), .utf8(s))
            }
        }
    }

    init(tlvMembers: [TLVElement]) throws(CertificateError) {
        var attributes: [DNAttribute] = []
        for member in tlvMembers {
            guard case .context(let raw) = member.tag, let kind = DNAttribute.Kind(rawValue: raw & 0x7F) else {
                throw CertificateError("unknown distinguished name attribute \(member.tag)")
            }
            let printable = raw & 0x80 != 0
            if kind.isMatterInteger {
                guard !printable, let v = member.unsignedValue else {
                    throw CertificateError("Matter attribute \(kind) is not an unsigned integer")
                }
                if kind == .matterCASEAuthenticatedTag, v > UInt64(UInt32.max) {
                    throw CertificateError("CAT wider than 32 bits")
                }
                attributes.append(.matter(kind, v))
            } else {
                guard let s = member.stringValue else { throw CertificateError("attribute \(kind) is not a string") }
                if kind == .domainComponent, printable {
                    throw CertificateError("domain component cannot be printable")
                }
                attributes.append(DNAttribute(kind, .string(s, printable: printable)))
            }
        }
        guard !attributes.isEmpty else { throw CertificateError("empty distinguished name") }
        self.attributes = attributes
    }
}

extension CertificateExtension {
    var isFuture: Bool { if case .future = self { true } else { false } }

    var tlvTag: Int {
        switch self {
        case .basicConstraints: 1
        case .keyUsage: 2
        case .extendedKeyUsage: 3
        case .subjectKeyIdentifier: 4
        case .authorityKeyIdentifier: 5
        case .future: 6
        }
    }

    var tlvElement: TLVElement {
        switch self {
        case .basicConstraints(let isCA, let pathLength):
            .structure(tag: .context(1)) {
                TLVElement(context: 1, .bool(isCA))
                if let pathLength { TLVElement(context: 2, .unsigned(UInt64(pathLength))) }
            }
        case .keyUsage(let usage): TLVElement(context: 2, .unsigned(UInt64(usage.rawValue)))
        case .extendedKeyUsage(let purposes):
            .array(tag: .context(3)) { for purpose in purposes { TLVElement(.unsigned(UInt64(purpose.rawValue))) } }
        case .subjectKeyIdentifier(let id): TLVElement(context: 4, .bytes(id))
        case .authorityKeyIdentifier(let id): TLVElement(context: 5, .bytes(id))
        case .future(let der): TLVElement(context: 6, .bytes(der))
        }
    }

    init(tlv member: TLVElement) throws(CertificateError) {
        do {
            switch member.tag {
            case .context(1):
                let fields = try member.structure()
                guard let isCA = fields.first, isCA.tag == .context(1) else {
                    throw CertificateError("basic constraints without isCA")
                }
                var pathLength: UInt8?
                if fields.count > 1 {
                    guard fields.count == 2, fields[1].tag == .context(2) else {
                        throw CertificateError("basic constraints malformed")
                    }
                    pathLength = try fields[1].unsigned(UInt8.self)
                }
                self = .basicConstraints(isCA: try isCA.bool(), pathLength: pathLength)
            case .context(2):
                let bits = try member.unsigned(UInt16.self)
                guard bits & ~0x01FF == 0 else {
                    throw CertificateError("unknown key usage bits 0x\(String(bits, radix: 16))")
                }
                self = .keyUsage(KeyUsage(rawValue: bits))
            case .context(3):
                var purposes: [KeyPurpose] = []
                for item in try member.array() {
                    guard let purpose = KeyPurpose(rawValue: try item.unsigned(UInt8.self)) else {
                        throw CertificateError("unknown key purpose")
                    }
                    purposes.append(purpose)
                }
                guard !purposes.isEmpty else { throw CertificateError("empty extended key usage") }
                self = .extendedKeyUsage(purposes)
            case .context(4): self = .subjectKeyIdentifier(try member.bytes(count: 20))
            case .context(5): self = .authorityKeyIdentifier(try member.bytes(count: 20))
            case .context(6): self = .future(try CertificateExtension.checkedFuture(try member.bytes()))
            default: throw CertificateError("unknown extension \(member.tag)")
            }
        } catch let error as CertificateError {
            throw error
        } catch {
            throw CertificateError("\(error)")
        }
    }
}
