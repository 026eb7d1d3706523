import Foundation
import HearthCrypto
import HearthTestKit
import Testing

/// connectedhomeip's public test attestation chain (see Vectors/README.md for origin and commits).
enum TestAttestation {
    static func load(_ name: String) throws -> [UInt8] {
        let path = Repository.path("Tests/HearthCryptoTests/Vectors/\(name)")
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CryptoError(operation: "test vector", reason: "cannot read \(path)")
        }
        return [UInt8](data)
    }

    static var paa: [UInt8] { get throws { try load("Chip-Test-PAA-FFF1-Cert.der") } }
    static var pai: [UInt8] { get throws { try load("Chip-Test-PAI-FFF1-8000-Cert.der") } }
    static var dac: [UInt8] { get throws { try load("Chip-Test-DAC-FFF1-8000-0002-Cert.der") } }
}

@Suite struct X509Tests {
    @Test func testAttestationChainParses() throws {
        let paa = try X509Certificate(der: try TestAttestation.paa)
        let pai = try X509Certificate(der: try TestAttestation.pai)
        let dac = try X509Certificate(der: try TestAttestation.dac)

        #expect(paa.subject == [X509Attribute(oid: "2.5.4.3", value: "Matter Test PAA FFF1")])
        #expect(paa.subjectDER == paa.issuerDER)
        #expect(paa.basicConstraints?.isCA == true && paa.basicConstraints?.pathLength == 1)
        #expect(paa.keyUsage == [.keyCertSign, .cRLSign])
        #expect(paa.subjectKeyIdentifier == hex("ef18e0ecd4660434df0dbc911ed452169966839f"))
        #expect(paa.subjectKeyIdentifier == paa.authorityKeyIdentifier)

        #expect(pai.subject == [
            X509Attribute(oid: "2.5.4.3", value: "Matter Test PAI"),
            X509Attribute(oid: X509Attribute.matterVendorIdOID, value: "FFF1"),
            X509Attribute(oid: X509Attribute.matterProductIdOID, value: "8000"),
        ])
        #expect(pai.issuerDER == paa.subjectDER)
        #expect(pai.authorityKeyIdentifier == paa.subjectKeyIdentifier)
        #expect(pai.basicConstraints?.isCA == true && pai.basicConstraints?.pathLength == 0)

        #expect(dac.subjectValue("2.5.4.3") == "Matter Test DAC 0002")
        #expect(dac.subjectValue(X509Attribute.matterVendorIdOID) == "FFF1")
        #expect(dac.issuerDER == pai.subjectDER)
        #expect(dac.authorityKeyIdentifier == pai.subjectKeyIdentifier)
        #expect(dac.basicConstraints?.isCA == false && dac.basicConstraints?.pathLength == nil)
        #expect(dac.keyUsage == [.digitalSignature])
        #expect(dac.extensions.allSatisfy { if case .other = $0 { false } else { true } })
        #expect(dac.extensions.map(\.isCritical) == [true, true, false, false])
        #expect(dac.serialNumber == hex("5282195c3c800c75"))
        #expect(dac.version == 3)
        // 2021-06-28T14:23:43Z, and no expiry.
        #expect(dac.notBefore == 1_624_890_223)
        #expect(dac.notAfter == X509Builder.noExpiry)
        #expect(dac.signatureAlgorithmOID == "1.2.840.10045.4.3.2")
        #expect(try dac.rawSignature.count == 64)
        #expect(dac.publicKey.x963Representation.count == 65)
        #expect(dac.tbsDER.first == 0x30 && dac.tbsDER.count < dac.der.count)
    }

    @Test func testAttestationChainVerifies() throws {
        let paa = try X509Certificate(der: try TestAttestation.paa)
        let pai = try X509Certificate(der: try TestAttestation.pai)
        let dac = try X509Certificate(der: try TestAttestation.dac)
        #expect(paa.isSigned(by: paa.publicKey))
        #expect(pai.isSigned(by: paa.publicKey))
        #expect(dac.isSigned(by: pai.publicKey))
        #expect(!dac.isSigned(by: paa.publicKey))
        #expect(!pai.isSigned(by: pai.publicKey))
        // The signature over tbsDER checks with the plain ECDSA API too.
        #expect(pai.publicKey.isValidSignature(try P256.Signature(derRepresentation: dac.signature), for: dac.tbsDER))
    }

    @Test func tamperedOrTruncatedCertificatesAreRefusedOrFail() throws {
        let dacDER = try TestAttestation.dac
        let pai = try X509Certificate(der: try TestAttestation.pai)
        // A changed byte in the subject's CN: still parses, no longer verifies.
        var changed = dacDER
        let cn = Array("DAC 0002".utf8)
        let at = (0...(changed.count - cn.count)).first { Array(changed[$0..<($0 + cn.count)]) == cn }!
        changed[at] = UInt8(ascii: "X")
        #expect(!(try X509Certificate(der: changed)).isSigned(by: pai.publicKey))
        #expect(throws: CryptoError.self) { try X509Certificate(der: Array(dacDER.dropLast(1))) }
        #expect(throws: CryptoError.self) { try X509Certificate(der: dacDER + [0]) }
        #expect(throws: CryptoError.self) { try X509Certificate(der: []) }
        #expect(throws: CryptoError.self) { try X509Certificate(der: [0x30, 0x03, 0x02, 0x01, 0x01]) }
    }

    @Test func builtCertificateParsesAndVerifies() throws {
        let issuerKey = try P256.SigningKey()
        let subjectKey = try P256.SigningKey()
        let subjectKeyId = Array(SHA256.hash(subjectKey.publicKey.x963Representation).prefix(20))
        let issuerKeyId = Array(SHA256.hash(issuerKey.publicKey.x963Representation).prefix(20))
        let subject = [
            X509Attribute(oid: X509Attribute.commonNameOID, value: "Hearth DAC"),
            X509Attribute(oid: X509Attribute.matterVendorIdOID, value: "FFF1"),
            X509Attribute(oid: X509Attribute.matterProductIdOID, value: "8000"),
        ]
        let issuer = [
            X509Attribute(oid: X509Attribute.commonNameOID, value: "Hearth PAI", type: .printableString),
            X509Attribute(oid: X509Attribute.matterVendorIdOID, value: "FFF1"),
        ]
        let builder = X509Builder(
            serialNumber: hex("0102030405060708"), subject: subject, issuer: issuer,
            notBefore: 1_700_000_000, notAfter: X509Builder.noExpiry, publicKey: subjectKey.publicKey,
            extensions: [
                .basicConstraints(critical: true, isCA: false, pathLength: nil),
                .keyUsage(critical: true, [.digitalSignature]),
                .extendedKeyUsage(critical: true, [X509Extension.clientAuthOID, X509Extension.serverAuthOID]),
                .subjectKeyIdentifier(critical: false, subjectKeyId),
                .authorityKeyIdentifier(critical: false, issuerKeyId),
                .other(oid: "1.3.6.1.4.1.37244.99", critical: false, value: [0x04, 0x01, 0xAA]),
            ])
        let der = try builder.sign(with: issuerKey)
        let certificate = try X509Certificate(der: der)
        #expect(certificate.subject == subject)
        #expect(certificate.issuer == issuer)
        #expect(certificate.serialNumber == hex("0102030405060708"))
        #expect(certificate.notBefore == 1_700_000_000)
        #expect(certificate.notAfter == X509Builder.noExpiry)
        #expect(certificate.publicKey == subjectKey.publicKey)
        #expect(certificate.extensions == builder.extensions)
        #expect(certificate.isSigned(by: issuerKey.publicKey))
        #expect(!certificate.isSigned(by: subjectKey.publicKey))
        // 99991231235959Z is written as GeneralizedTime, and 2023 as UTCTime (RFC 5280 §4.1.2.5).
        #expect(contains(der, [0x18, 0x0f] + Array("99991231235959Z".utf8)))
        #expect(contains(der, [0x17, 0x0d] + Array("231114221320Z".utf8)))
    }

    @Test func builderRefusesBadInput() throws {
        let key = try P256.SigningKey()
        var builder = X509Builder(serialNumber: [], subject: [], issuer: [], notBefore: 0, notAfter: 1,
                                  publicKey: key.publicKey, extensions: [])
        #expect(throws: CryptoError.self) { try builder.sign(with: key) }
        builder.serialNumber = [1]
        builder.subject = [X509Attribute(oid: "not an oid", value: "x")]
        #expect(throws: CryptoError.self) { try builder.sign(with: key) }
    }

    @Test func csrRoundTrip() throws {
        let key = try P256.SigningKey()
        let subject = [X509Attribute(oid: X509Attribute.organizationOID, value: "CSR")]
        let der = try CertificateSigningRequest.make(key: key, subject: subject)
        let request = try CertificateSigningRequest(der: der)
        #expect(request.publicKey == key.publicKey)
        #expect(request.subject == subject)
        #expect(request.der == der)
    }

    @Test func csrWithBrokenSignatureIsRefused() throws {
        let key = try P256.SigningKey()
        var der = try CertificateSigningRequest.make(key: key, subject: [])
        // The public key's last byte is not the last byte of the CSR; flip a byte of the signature instead.
        der[der.count - 3] ^= 0x01
        #expect(throws: CryptoError.self) { try CertificateSigningRequest(der: der) }
        #expect(throws: CryptoError.self) { try CertificateSigningRequest(der: [0x30, 0x00]) }
    }
}

@Suite struct X509RebuildTests {
    /// The builder given a published certificate's fields makes its TBS byte for byte: what checking a certificate
    /// that arrives as Matter TLV (rebuilt as X.509, then its signature checked) depends on.
    @Test(arguments: ["Chip-Test-PAA-FFF1-Cert.der", "Chip-Test-PAI-FFF1-8000-Cert.der",
                      "Chip-Test-DAC-FFF1-8000-0002-Cert.der"])
    func builderReproducesPublishedTBS(_ name: String) throws {
        let certificate = try X509Certificate(der: try TestAttestation.load(name))
        let builder = X509Builder(
            serialNumber: certificate.serialNumber, subject: certificate.subject, issuer: certificate.issuer,
            notBefore: certificate.notBefore, notAfter: certificate.notAfter, publicKey: certificate.publicKey,
            extensions: certificate.extensions)
        let tbs = try builder.tbsDER()
        #expect(tbs == certificate.tbsDER)
        // …so the published signature verifies over the rebuilt TBS.
        let issuer = try X509Certificate(
            der: try TestAttestation.load(
                name.contains("DAC") ? "Chip-Test-PAI-FFF1-8000-Cert.der" : "Chip-Test-PAA-FFF1-Cert.der"))
        #expect(
            issuer.publicKey.isValidSignature(try P256.Signature(derRepresentation: certificate.signature), for: tbs))
    }
}
