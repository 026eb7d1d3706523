// The node's credentials over HearthCrypto: P-256 operational keys with their CSRs, and the device attestation
// credentials — a DAC made at first start under connectedhomeip's public test PAI, kept in the node's storage, and
// the development Certification Declaration.

public import HearthCrypto

/// An operational key: a P-256 key pair whose CSR HearthCrypto makes and signs.
public struct P256OperationalKey: OperationalKeyPair {
    public let key: P256.SigningKey

    public init(key: P256.SigningKey) { self.key = key }

    public var publicKey: [UInt8] { key.publicKey.x963Representation }

    public func certificateSigningRequest() throws(CredentialError) -> [UInt8] {
        // The commissioner reads only the key from the CSR; the subject is a placeholder, as other nodes send.
        do {
            return try CertificateSigningRequest.make(
                key: key, subject: [X509Attribute(oid: X509Attribute.commonNameOID, value: "CSA")])
        }
        catch { throw CredentialError("the CSR could not be made: \(error)") }
    }

    public var serialized: [UInt8] { key.rawRepresentation }
}

/// Makes and restores P-256 operational keys.
public struct P256OperationalKeyFactory: OperationalKeyFactory {
    public init() {}

    public func makeKey() throws(CredentialError) -> any OperationalKeyPair {
        do { return P256OperationalKey(key: try P256.SigningKey()) } catch {
            throw CredentialError("no P-256 key could be made: \(error)")
        }
    }

    public func restoreKey(_ serialized: [UInt8]) throws(CredentialError) -> any OperationalKeyPair {
        do { return P256OperationalKey(key: try P256.SigningKey(rawRepresentation: serialized)) } catch {
            throw CredentialError("the stored operational key is not a P-256 key: \(error)")
        }
    }
}

/// Device attestation credentials held in software: DAC, its key, PAI and CD.
public struct DeviceAttestation: DeviceAttestationCredentials {
    public let deviceAttestationCertificate: [UInt8]
    public let productAttestationIntermediate: [UInt8]
    public let certificationDeclaration: [UInt8]
    let key: P256.SigningKey

    public init(deviceAttestationCertificate: [UInt8], key: P256.SigningKey, productAttestationIntermediate: [UInt8],
                certificationDeclaration: [UInt8]) {
        self.deviceAttestationCertificate = deviceAttestationCertificate
        self.key = key
        self.productAttestationIntermediate = productAttestationIntermediate
        self.certificationDeclaration = certificationDeclaration
    }

    public func signWithDeviceAttestationKey(_ message: [UInt8]) throws(CredentialError) -> [UInt8] {
        do { return try key.signature(for: message).rawRepresentation } catch {
            throw CredentialError("the DAC key could not sign: \(error)")
        }
    }

    /// When the DAC's validity begins: a fixed day in the past, since a hub may start without the time of day
    /// (controllers check the chain at the DAC's notBefore).
    static let dacNotBefore: Int64 = 1_704_067_200

    /// The development credentials in `storage`, made and stored at the first start: a new DAC key, its DAC
    /// (vendor FFF1, product 8000) signed by the test PAI, and the development CD.
    public static func development(storage: any NodeStorage) throws(CredentialError) -> DeviceAttestation {
        if let stored = try? storage.load(.attestation) {
            guard let element = try? TLVElement(decoding: stored), let dac = element[context: 1]?.bytesValue,
                let scalar = element[context: 2]?.bytesValue, let key = try? P256.SigningKey(rawRepresentation: scalar)
            else {
                throw CredentialError("the stored attestation credentials are unreadable")
            }
            return try make(dac: dac, key: key)
        }
        let made: DeviceAttestation
        do {
            let key = try P256.SigningKey()
            made = try make(dac: try makeDAC(for: key.publicKey), key: key)
        } catch let error as CredentialError {
            throw error
        } catch {
            throw CredentialError("the DAC could not be made: \(error)")
        }
        let record = TLVElement.structure {
            TLVElement(context: 1, .bytes(made.deviceAttestationCertificate))
            TLVElement(context: 2, .bytes(made.key.rawRepresentation))
        }.encoded()
        do { try storage.store(.attestation, record) } catch {
            throw CredentialError("the DAC could not be stored: \(error)")
        }
        return made
    }

    private static func make(dac: [UInt8], key: P256.SigningKey) throws(CredentialError) -> DeviceAttestation {
        let declaration: [UInt8]
        do { declaration = try CertificationDeclaration.developmentHub() } catch {
            throw CredentialError("the Certification Declaration could not be signed: \(error)")
        }
        return DeviceAttestation(deviceAttestationCertificate: dac, key: key,
                                 productAttestationIntermediate: TestAttestationMaterial.productAttestationIntermediate,
                                 certificationDeclaration: declaration)
    }

    /// A DAC for `publicKey` under the test PAI (Matter 1.4 §6.2.2.3: not a CA, digitalSignature, key ids).
    static func makeDAC(for publicKey: P256.PublicKey) throws(CryptoError) -> [UInt8] {
        let pai = try X509Certificate(der: TestAttestationMaterial.productAttestationIntermediate)
        let paiKey = try P256.SigningKey(rawRepresentation: TestAttestationMaterial.productAttestationIntermediateKey)
        var serial = try P256.Scalar.random().rawRepresentation.prefix(16).map { $0 }
        serial[0] &= 0x7F
        if serial[0] == 0 { serial[0] = 1 }
        let builder = X509Builder(
            serialNumber: serial,
            subject: [
                X509Attribute(oid: X509Attribute.commonNameOID, value: "Hearth Development DAC"),
                X509Attribute(oid: X509Attribute.matterVendorIdOID, value: hex(TestAttestationMaterial.vendorID)),
                X509Attribute(oid: X509Attribute.matterProductIdOID, value: hex(TestAttestationMaterial.productID)),
            ],
            issuer: pai.subject, notBefore: dacNotBefore, notAfter: X509Builder.noExpiry, publicKey: publicKey,
            extensions: [
                .basicConstraints(critical: true, isCA: false, pathLength: nil),
                .keyUsage(critical: true, .digitalSignature),
                // RFC 7093 method 1: the leftmost 160 bits of the SHA-256 of the public key.
                .subjectKeyIdentifier(critical: false, Array(SHA256.hash(publicKey.x963Representation).prefix(20))),
                .authorityKeyIdentifier(
                    critical: false, TestAttestationMaterial.productAttestationIntermediateKeyIdentifier),
            ])
        return try builder.sign(with: paiKey)
    }

    /// Four upper-case hex digits, as Matter writes vendor and product ids in certificate subjects.
    private static func hex(_ value: UInt16) -> String {
        let digits = Array("0123456789ABCDEF")
        return String([12, 8, 4, 0].map { digits[Int((value >> UInt16($0)) & 0xF)] })
    }
}
