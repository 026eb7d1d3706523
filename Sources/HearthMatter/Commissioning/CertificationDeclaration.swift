// The Certification Declaration (Matter 1.4 §6.3): the certification elements (TLV) in a CMS SignedData signed with
// ECDSA P-256 SHA-256 by a CD key named by its subject key identifier, made by HearthCrypto's `CMSSignedMessage`.

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
        vendorID: TestAttestationMaterial.vendorID, productIDs: [TestAttestationMaterial.productID],
        deviceTypeID: 0x0016,
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
        try CMSSignedMessage.sign(content: elements.encoded(), subjectKeyIdentifier: keyIdentifier, key: key)
    }

    /// The hub's development CD, signed with connectedhomeip's public test CD key.
    public static func developmentHub() throws(CryptoError) -> [UInt8] {
        try make(
            .developmentHub,
            signingKey: try P256.SigningKey(
                rawRepresentation: TestAttestationMaterial.certificationDeclarationSigningKey),
            keyIdentifier: TestAttestationMaterial.certificationDeclarationSigningKeyIdentifier)
    }
}
