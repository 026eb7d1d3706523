import HearthCrypto
@testable import HearthMatter
import Testing

/// The TLV ↔ X.509 conversion against an independent encoder and parser: libcrypto's, through HearthCrypto's
/// `X509Certificate` and `X509Builder`.
@Suite struct CertificateOpenSSLTests {
    @Test func opensslReadsAndVerifiesTheX509WeRebuildFromTLV() throws {
        let fabric = try TestFabric(fabricID: 0xFAB1, withICAC: true)
        let key = try P256.SigningKey()
        let noc = try fabric.noc(nodeID: 0x1111, key: key, tags: [0x0001_0002])
        let parsed = try X509Certificate(der: noc.x509DER)
        #expect(parsed.tbsDER == noc.tbsDER)
        #expect(parsed.isSigned(by: try #require(fabric.icacKey).publicKey))
        #expect(parsed.publicKey == key.publicKey)
        #expect(parsed.subjectValue(X509Attribute.matterNodeIdOID) == "0000000000001111")
        #expect(parsed.subjectValue(X509Attribute.matterFabricIdOID) == "000000000000FAB1")
        #expect(parsed.subjectValue(X509Attribute.matterNOCCATOID) == "00010002")
        #expect(parsed.notBefore == Int64(TestFabric.notBefore) + Int64(MatterTime.unixOffset))
        #expect(parsed.notAfter == X509Builder.noExpiry)
        #expect(parsed.basicConstraints?.isCA == false)
        #expect(parsed.keyUsage == .digitalSignature)
        #expect(parsed.extendedKeyUsage == [X509Extension.clientAuthOID, X509Extension.serverAuthOID])
        #expect(parsed.subjectKeyIdentifier == noc.subjectKeyIdentifier)
        #expect(parsed.authorityKeyIdentifier == fabric.icac?.subjectKeyIdentifier)
        let root = try X509Certificate(der: fabric.rcac.x509DER)
        #expect(root.isSigned(by: fabric.rootKey.publicKey))
        #expect(root.basicConstraints?.isCA == true)
    }

    @Test func x509MadeByOpenSSLReadsAsATLVCertificateWhoseChainChecks() throws {
        let fabric = try TestFabric(fabricID: 0xFAB1)
        let key = try P256.SigningKey()
        let keyID = Array(SHA256.hash(key.publicKey.x963Representation).prefix(20))
        // The root's subject: its RCAC id and fabric id, as upper-case hex UTF8Strings.
        let issuer = [
            X509Attribute(oid: X509Attribute.matterRCACIdOID, value: "0000000000000001"),
            X509Attribute(oid: X509Attribute.matterFabricIdOID, value: "000000000000FAB1"),
        ]
        let builder = X509Builder(
            serialNumber: [0x42], subject: [
                X509Attribute(oid: X509Attribute.matterNodeIdOID, value: "0000000000002222"),
                X509Attribute(oid: X509Attribute.matterFabricIdOID, value: "000000000000FAB1"),
            ], issuer: issuer, notBefore: 1_700_000_000, notAfter: X509Builder.noExpiry, publicKey: key.publicKey,
            extensions: [
                .basicConstraints(critical: true, isCA: false, pathLength: nil),
                .keyUsage(critical: true, .digitalSignature),
                .extendedKeyUsage(critical: true, [X509Extension.clientAuthOID, X509Extension.serverAuthOID]),
                .subjectKeyIdentifier(critical: false, keyID),
                .authorityKeyIdentifier(critical: false, try #require(fabric.rcac.subjectKeyIdentifier)),
            ])
        let der = try builder.sign(with: fabric.rootKey)
        let certificate = try MatterCertificate(x509DER: der)
        #expect(certificate.notBefore == UInt32(1_700_000_000 - MatterTime.unixOffset))
        #expect(certificate.notAfter == 0)
        let peer = try CertificateChain.validate(noc: certificate, icac: nil, rcac: fabric.rcac, time: nil)
        #expect(peer.nodeID == 0x2222)
        #expect(peer.publicKey == key.publicKey.x963Representation)
    }
}
