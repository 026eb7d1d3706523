// The Certification Declaration (Matter 1.4 §6.3): the certification elements (TLV) wrapped in a CMS SignedData
// signed with ECDSA P-256 SHA-256, with the shape every controller's verifier expects — version 3, one SHA-256
// digest algorithm, the content as pkcs7-data, no certificates, one SignerInfo that names its key by subject key
// identifier, and no signed attributes.
//
// The DER is assembled here rather than through OpenSSL's CMS API: the structure is fixed and small (a dozen nodes),
// and OpenSSL's CMS_sign would need the signing certificate, CMS_USE_KEYID and CMS_NOATTR to reach the same bytes,
// plus wrappers for CMS_ContentInfo and BIO handles in HearthCrypto. The signature itself is HearthCrypto's ECDSA.

public import HearthCrypto

/// What a Certification Declaration certifies.
public struct CertificationElements: Sendable, Equatable {
    public var vendorID: UInt16
    public var productIDs: [UInt16]
    public var deviceTypeID: UInt32
    /// 19 characters.
    public var certificateID: String
    /// 0: development and test (what a test CD key may sign), 1: provisional, 2: official.
    public var certificationType: UInt8
    public var versionNumber: UInt16

    public init(vendorID: UInt16, productIDs: [UInt16], deviceTypeID: UInt32, certificateID: String,
                certificationType: UInt8 = 0, versionNumber: UInt16 = 1) {
        self.vendorID = vendorID
        self.productIDs = productIDs
        self.deviceTypeID = deviceTypeID
        self.certificateID = certificateID
        self.certificationType = certificationType
        self.versionNumber = versionNumber
    }

    /// The hub's: the test vendor and product, the root node device type, development and test.
    public static let developmentHub = CertificationElements(
        vendorID: TestAttestationMaterial.vendorID, productIDs: [TestAttestationMaterial.productID], deviceTypeID: 0x0016,
        certificateID: "HEARTH0000DEV000-24")

    /// The certification elements TLV (format version 1).
    public func encoded() -> [UInt8] {
        TLVElement.structure {
            TLVElement(context: 0, .uint(UInt16(1)))
            TLVElement(context: 1, .uint(vendorID))
            TLVElement.array(tag: .context(2)) { productIDs.map { TLVElement(.uint($0)) } }
            TLVElement(context: 3, .uint(deviceTypeID))
            TLVElement(context: 4, .utf8(certificateID))
            TLVElement(context: 5, .uint(UInt8(0)))
            TLVElement(context: 6, .uint(UInt16(0)))
            TLVElement(context: 7, .uint(versionNumber))
            TLVElement(context: 8, .uint(certificationType))
        }.encoded()
    }
}

/// Builds Certification Declarations.
public enum CertificationDeclaration {
    /// The CMS SignedData (DER) of `elements`, signed with `key`, naming it by `keyIdentifier`.
    public static func make(_ elements: CertificationElements, signingKey key: P256.SigningKey,
                            keyIdentifier: [UInt8]) throws(CryptoError) -> [UInt8] {
        let content = elements.encoded()
        let signature = try key.signature(for: content).derRepresentation
        let sha256 = DER.sequence([DER.objectIdentifier(DER.sha256)])
        let signedData = DER.sequence([
            DER.integer(3),
            DER.set([sha256]),
            DER.sequence([DER.objectIdentifier(DER.pkcs7Data), DER.contextConstructed(0, [DER.octetString(content)])]),
            DER.set([DER.sequence([
                DER.integer(3),
                DER.contextPrimitive(0, keyIdentifier),
                sha256,
                DER.sequence([DER.objectIdentifier(DER.ecdsaWithSHA256)]),
                DER.octetString(signature),
            ])]),
        ])
        return DER.sequence([DER.objectIdentifier(DER.pkcs7SignedData), DER.contextConstructed(0, [signedData])])
    }

    /// The hub's development CD, signed with connectedhomeip's public test CD key.
    public static func developmentHub() throws(CryptoError) -> [UInt8] {
        try make(.developmentHub, signingKey: try P256.SigningKey(rawRepresentation: TestAttestationMaterial.certificationDeclarationSigningKey),
                 keyIdentifier: TestAttestationMaterial.certificationDeclarationSigningKeyIdentifier)
    }
}

/// The few DER encodings the CD needs (definite lengths, X.690).
enum DER {
    static let pkcs7Data: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x01]
    static let pkcs7SignedData: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x02]
    static let sha256: [UInt8] = [0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01]
    static let ecdsaWithSHA256: [UInt8] = [0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x04, 0x03, 0x02]

    static func element(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        var out = [tag]
        let count = content.count
        if count < 0x80 {
            out.append(UInt8(count))
        } else {
            var length: [UInt8] = []
            var n = count
            while n > 0 {
                length.insert(UInt8(n & 0xFF), at: 0)
                n >>= 8
            }
            out.append(0x80 | UInt8(length.count))
            out += length
        }
        return out + content
    }

    static func sequence(_ parts: [[UInt8]]) -> [UInt8] { element(0x30, parts.flatMap(\.self)) }
    static func set(_ parts: [[UInt8]]) -> [UInt8] { element(0x31, parts.flatMap(\.self)) }
    static func octetString(_ bytes: [UInt8]) -> [UInt8] { element(0x04, bytes) }
    static func objectIdentifier(_ encoded: [UInt8]) -> [UInt8] { element(0x06, encoded) }
    /// A small non-negative INTEGER.
    static func integer(_ value: UInt8) -> [UInt8] { value < 0x80 ? element(0x02, [value]) : element(0x02, [0, value]) }
    static func contextConstructed(_ number: UInt8, _ parts: [[UInt8]]) -> [UInt8] { element(0xA0 | number, parts.flatMap(\.self)) }
    static func contextPrimitive(_ number: UInt8, _ bytes: [UInt8]) -> [UInt8] { element(0x80 | number, bytes) }
}
