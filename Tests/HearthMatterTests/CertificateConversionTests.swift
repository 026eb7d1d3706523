@testable import HearthMatter
import Testing

@Suite struct CertificateConversionTests {
    @Test(arguments: ChipTestCertificates.all.map(\.name))
    func tlvToX509IsConnectedhomeipsDER(name: String) throws {
        let pair = try #require(ChipTestCertificates.all.first { $0.name == name })
        let certificate = try MatterCertificate(tlv: pair.tlv)
        #expect(Hex.string(certificate.x509DER) == Hex.string(pair.der))
    }

    @Test(arguments: ChipTestCertificates.all.map(\.name))
    func x509ToTLVIsConnectedhomeipsTLV(name: String) throws {
        let pair = try #require(ChipTestCertificates.all.first { $0.name == name })
        let certificate = try MatterCertificate(x509DER: pair.der)
        #expect(Hex.string(certificate.tlvEncoded) == Hex.string(pair.tlv))
    }

    @Test func subjectsCarryMatterIdentities() throws {
        let node = try MatterCertificate(tlv: ChipTestCertificates.node01_01.tlv)
        #expect(node.subject.nodeID == 0xDEDE_DEDE_0001_0001)
        #expect(node.subject.fabricID == 0xFAB0_0000_0000_001D)
        #expect(node.issuer.icacID == 0xCACA_CACA_0000_0003)
        #expect(node.extendedKeyUsage == [.clientAuth, .serverAuth])
        #expect(node.keyUsage == .digitalSignature)
        #expect(!node.isCA)
        let root = try MatterCertificate(tlv: ChipTestCertificates.root01.tlv)
        #expect(root.subject.rcacID == 0xCACA_CACA_0000_0001)
        #expect(root.isCA)
        #expect(root.keyUsage == [.keyCertSign, .crlSign])
        #expect(root.subjectKeyIdentifier == root.authorityKeyIdentifier)
    }

    @Test func zeroNotAfterIsNoExpiry() throws {
        let root = try MatterCertificate(tlv: ChipTestCertificates.root03.tlv)
        #expect(root.notAfter == 0)
        #expect(root.pathLengthConstraint == 1)
    }

    @Test func matterTimeMatchesCalendar() throws {
        // 2020-10-15 14:23:43 UTC, the test certificates' not-before.
        #expect(MatterTime.daysFromCivil(year: 2000, month: 1, day: 1) * 86_400 == Int(MatterTime.unixOffset))
        let certificate = try MatterCertificate(tlv: ChipTestCertificates.root01.tlv)
        let (y, mo, d, h, mi, s) = MatterTime.calendar(fromMatterSeconds: certificate.notBefore)
        #expect([y, mo, d, h, mi, s] == [2020, 10, 15, 14, 23, 43])
    }

    @Test func everyTruncationIsRefusedWithoutCrashing() {
        for pair in ChipTestCertificates.all {
            let tlv = pair.tlv, der = pair.der
            for length in stride(from: 0, to: tlv.count, by: 7) {
                #expect(throws: CertificateError.self) { try MatterCertificate(tlv: tlv.prefix(length)) }
            }
            for length in stride(from: 0, to: der.count, by: 7) {
                #expect(throws: CertificateError.self) { try MatterCertificate(x509DER: Array(der.prefix(length))) }
            }
        }
    }

    @Test func everyFlippedDERByteIsRefusedOrRoundTrips() {
        // A changed byte either makes input the profile refuses, or a certificate that converts back to exactly it.
        let der = ChipTestCertificates.node01_01.der
        for index in der.indices {
            var changed = der
            changed[index] ^= 0x41
            if let certificate = try? MatterCertificate(x509DER: changed) {
                #expect(certificate.x509DER == changed)
            }
        }
    }

    @Test func keyUsageMarkedNonCriticalIsRefused() throws {
        // Matter's profile makes key usage critical; the TLV form cannot say otherwise, so such X.509 is refused.
        var der = ChipTestCertificates.node01_01.der
        let criticalKeyUsage: [UInt8] = [0x06, 0x03, 0x55, 0x1D, 0x0F, 0x01, 0x01, 0xFF]
        let at = try #require(der.firstRange(of: criticalKeyUsage))
        der[at.upperBound - 1] = 0x00
        #expect(throws: CertificateError.self) { try MatterCertificate(x509DER: der) }
    }
}
