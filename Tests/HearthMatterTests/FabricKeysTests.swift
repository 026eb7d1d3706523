import HearthCrypto
@testable import HearthMatter
import Testing

/// The worked examples of the core specification (4.3.2.2, 4.17.2, 4.14.2.4), as connectedhomeip's tests also use
/// them (TestChipCryptoPAL, TestGroupDataProvider, TestCASESession).
@Suite struct FabricKeysTests {
    static let rootPublicKey = Hex.bytes("""
        044a9f42b1ca4840d37292bbc7f6a7e11e22200c976fc900dbc98a7a383a641cb8254a2e56d4e295a847943b4e3897c4a773e930277b4d9f
        bede8a052686bfacfa
        """)
    static let fabricID: UInt64 = 0x2906_C908_D115_D362

    @Test func compressedFabricIDMatchesTheSpecification() throws {
        let id = try FabricKeys.compressedFabricID(rootPublicKey: Self.rootPublicKey, fabricID: Self.fabricID)
        #expect(Hex.string(id) == "87e1b004e235a130")
        #expect(try FabricKeys.compressedFabricIDValue(rootPublicKey: Self.rootPublicKey, fabricID: Self.fabricID)
            == 0x87E1_B004_E235_A130)
    }

    @Test func ipkFromEpochKeyMatchesTheSpecification() throws {
        let key = try FabricKeys.operationalGroupKey(epochKey: Hex.bytes("235bf7e62823d358dca4ba50b1535f4b"),
                                                     compressedFabricID: Hex.bytes("87e1b004e235a130"))
        #expect(Hex.string(key) == "a6f5306baf6d050af23ba4bd6b9dd960")
    }

    @Test func destinationIDMatchesTheSpecification() {
        let id = FabricKeys.destinationID(
            ipk: Hex.bytes("9bc61cd9c62a2df6d64dfcaa9dc472d4"),
            initiatorRandom: Hex.bytes("7e171231568dfa17206b3accf8faec2f4d21b580113196f47c7c4deb810a73dc"),
            rootPublicKey: Self.rootPublicKey, fabricID: Self.fabricID, nodeID: 0xCD55_44AA_7B13_EF14)
        #expect(Hex.string(id) == "dc35dd5fc9134cc5544538c9c3fc4297c1ec3370c839136a80e10796451d4c53")
    }

    @Test func malformedInputsAreRefused() {
        #expect(throws: CryptoError.self) { try FabricKeys.compressedFabricID(rootPublicKey: [4, 1, 2], fabricID: 1) }
        #expect(throws: CryptoError.self) { try FabricKeys.operationalGroupKey(epochKey: [1], compressedFabricID: [2]) }
    }
}

/// Chains of connectedhomeip's published certificates, and the ways a chain can break.
@Suite struct CertificateChainTests {
    static func load(_ pair: ChipTestCertificates.Pair) throws -> MatterCertificate {
        try MatterCertificate(tlv: pair.tlv)
    }

    /// 2030-01-01, inside the test certificates' validity (2020-10-15 to 2040-10-15).
    static let year2030: UInt32 = 946_684_800

    @Test func nocThroughICACToRootIsValid() throws {
        let identity = try CertificateChain.validate(
            noc: Self.load(ChipTestCertificates.node01_01), icac: Self.load(ChipTestCertificates.ica01),
            rcac: Self.load(ChipTestCertificates.root01), time: Self.year2030)
        #expect(identity.nodeID == 0xDEDE_DEDE_0001_0001)
        #expect(identity.fabricID == 0xFAB0_0000_0000_001D)
        #expect(identity.caseAuthenticatedTags.isEmpty)
    }

    @Test func nocDirectlyUnderRootIsValid() throws {
        let identity = try CertificateChain.validate(
            noc: Self.load(ChipTestCertificates.node01_02), icac: nil, rcac: Self.load(ChipTestCertificates.root01),
            time: nil)
        #expect(identity.nodeID == 0xDEDE_DEDE_0001_0002)
    }

    @Test func brokenChainsAreRefused() throws {
        let root = try Self.load(ChipTestCertificates.root01)
        let ica = try Self.load(ChipTestCertificates.ica01)
        let node = try Self.load(ChipTestCertificates.node01_01)
        // Issued by the ICAC, presented without it.
        #expect(throws: CertificateError.self) {
            try CertificateChain.validate(noc: node, icac: nil, rcac: root, time: nil)
        }
        // Against another root.
        let otherRoot = try Self.load(ChipTestCertificates.root03)
        #expect(throws: CertificateError.self) {
            try CertificateChain.validate(noc: node, icac: ica, rcac: otherRoot, time: nil)
        }
        // Before and after the validity period.
        #expect(throws: CertificateError.self) {
            try CertificateChain.validate(noc: node, icac: ica, rcac: root, time: 1000)
        }
        #expect(throws: CertificateError.self) {
            try CertificateChain.validate(noc: node, icac: ica, rcac: root, time: UInt32.max)
        }
        // A changed signature, and a changed subject the signature no longer covers.
        var forged = node
        forged.signature[10] ^= 1
        #expect(throws: CertificateError.self) {
            try CertificateChain.validate(noc: forged, icac: ica, rcac: root, time: nil)
        }
        var renamed = node
        renamed.subject.attributes[0] = .matter(.matterNodeID, 1)
        #expect(throws: CertificateError.self) {
            try CertificateChain.validate(noc: renamed, icac: ica, rcac: root, time: nil)
        }
        // A CA certificate presented as a NOC.
        #expect(throws: CertificateError.self) {
            try CertificateChain.validate(noc: ica, icac: nil, rcac: root, time: nil)
        }
        // A NOC as a root.
        #expect(throws: CertificateError.self) { try CertificateChain.checkRoot(node) }
    }

    @Test func rootsOfTheTestSetAreValidRoots() throws {
        try CertificateChain.checkRoot(Self.load(ChipTestCertificates.root01))
        try CertificateChain.checkRoot(Self.load(ChipTestCertificates.root03))
    }
}
