// Device attestation with real keys: the DAC made under the public test PAI, the Certification Declaration signed
// with the public test CD key, and commissioning whose CSR and signatures a commissioner can check.

import HearthCrypto
@testable import HearthMatter
import Testing

@Suite struct DeviceAttestationTests {
    /// The public key of connectedhomeip's "Matter Test CD Signing Authority"
    /// (credentials/test/certification-declaration/Chip-Test-CD-Signing-Cert.pem), which controllers trust.
    static let cdSigningPublicKey = hex(
        "043c398922452b55caf389c25bd1bca4656952ccb90e8869249ad8474653014c"
            + "bf95d687965e036b521c51037e6b8cedefca1eb44046694fa08882eed6519decba"
    )

    @Test func theDACChainsToTheTestPAIAndIsKept() throws {
        let storage = InMemoryNodeStorage()
        let attestation = try DeviceAttestation.development(storage: storage)
        let dac = try X509Certificate(der: attestation.deviceAttestationCertificate)
        let pai = try X509Certificate(der: attestation.productAttestationIntermediate)
        #expect(dac.isSigned(by: pai.publicKey))
        #expect(dac.issuerDER == pai.subjectDER)
        #expect(dac.subjectValue(X509Attribute.matterVendorIdOID) == "FFF1")
        #expect(dac.subjectValue(X509Attribute.matterProductIdOID) == "8000")
        #expect(dac.basicConstraints?.isCA == false)
        #expect(dac.keyUsage == .digitalSignature)
        #expect(dac.authorityKeyIdentifier == pai.subjectKeyIdentifier)
        #expect(dac.subjectKeyIdentifier?.count == 20)
        #expect(pai.subjectValue(X509Attribute.matterVendorIdOID) == "FFF1")

        // Its key signs what attestation signs, and the next start finds the same DAC.
        let message: [UInt8] = Array("attestation elements and challenge".utf8)
        let signature = try P256.Signature(rawRepresentation: try attestation.signWithDeviceAttestationKey(message))
        #expect(dac.publicKey.isValidSignature(signature, for: message))
        let again = try DeviceAttestation.development(storage: storage)
        #expect(again.deviceAttestationCertificate == attestation.deviceAttestationCertificate)
        let signatureAgain = try P256.Signature(rawRepresentation: try again.signWithDeviceAttestationKey(message))
        #expect(dac.publicKey.isValidSignature(signatureAgain, for: message))
    }

    @Test func theCertificationDeclarationIsSignedWithTheTestCDKey() throws {
        let declaration = try CMSSignedMessage(der: try CertificationDeclaration.developmentHub())
        let content = CertificationElements.developmentHub.encoded()
        #expect(declaration.content == content)
        #expect(declaration.signerKeyIdentifier == TestAttestationMaterial.certificationDeclarationSigningKeyIdentifier)
        #expect(declaration.isSigned(by: try P256.PublicKey(x963Representation: Self.cdSigningPublicKey)))
        // The elements, read back.
        let elements = try TLVElement(decoding: content)
        #expect(elements[context: 1]?.unsignedValue == 0xFFF1)
        #expect(elements[context: 2]?.arrayMembers?.map(\.unsignedValue) == [0x8000])
        #expect(elements[context: 4]?.stringValue?.utf8.count == 19)
        #expect(elements[context: 8]?.unsignedValue == 0)
    }

    @Test func commissioningWithRealKeysGivesACheckableCSR() throws {
        let storage = InMemoryNodeStorage()
        let attestation = try DeviceAttestation.development(storage: storage)
        let clock = TestClock()
        let node = try MatterNodeCore(
            configuration: MatterNodeConfiguration(
                basicInformation: BasicInformationConfiguration(serialNumber: "S", uniqueID: "U"),
                networkInterfaces: { [] }, initialDataVersion: 1),
            storage: storage, keys: P256OperationalKeyFactory(), verifier: StandInVerifier(), attestation: attestation,
            started: clock.start, now: { [clock] in clock.now })
        let challenge = [UInt8](repeating: 0x3C, count: 16)
        let pase = SubjectDescriptor.pase(attestationChallenge: challenge)
        func invoke(_ cluster: ClusterID, _ command: CommandID, _ fields: [TLVElement]) throws -> TLVElement {
            let answer = try firstAnswer(of: node, cluster, command, fields, as: pase, now: clock.now)
            guard case .command(let data) = answer else { throw IMError(.failure, "no response command: \(answer)") }
            return try #require(data.fields)
        }
        _ = try invoke(0x30, 0, [TLVElement(context: 0, .uint(UInt16(60))), TLVElement(context: 1, .uint(UInt64(0)))])
        let dac = try X509Certificate(der: attestation.deviceAttestationCertificate)

        let csrResponse = try invoke(0x3E, 4, [TLVElement(context: 0, .bytes([UInt8](repeating: 9, count: 32)))])
        let elements = try #require(csrResponse[context: 0]?.bytesValue)
        let signature = try P256.Signature(rawRepresentation: try #require(csrResponse[context: 1]?.bytesValue))
        #expect(dac.publicKey.isValidSignature(signature, for: elements + challenge))
        let csr = try CertificateSigningRequest(
            der: try #require(try TLVElement(decoding: elements)[context: 1]?.bytesValue))
        #expect(csr.publicKey.x963Representation.count == 65)

        let attestationResponse = try invoke(
            0x3E, 0, [TLVElement(context: 0, .bytes([UInt8](repeating: 8, count: 32)))])
        let attestationElements = try #require(attestationResponse[context: 0]?.bytesValue)
        let attestationSignature = try P256.Signature(
            rawRepresentation: try #require(attestationResponse[context: 1]?.bytesValue))
        #expect(dac.publicKey.isValidSignature(attestationSignature, for: attestationElements + challenge))
        #expect(
            try TLVElement(decoding: attestationElements)[context: 1]?.bytesValue
                == attestation.certificationDeclaration)
    }
}

/// Invokes a command of endpoint 0 on `node`; the first answer (a response command or a status).
private func firstAnswer(
    of node: MatterNodeCore, _ cluster: ClusterID, _ command: CommandID, _ fields: [TLVElement],
    as subject: SubjectDescriptor, now: MatterInstant
) throws -> InvokeResponseIB {
    var exchange = IMExchangeState()
    let request = InvokeRequest(invokeRequests: [
        CommandDataIB(
            path: CommandPath(endpoint: 0, cluster: cluster, command: command), fields: TLVElement(.structure(fields)))
    ])
    let reply = node.receive(
        opcode: InteractionModelOpcode.invokeRequest.rawValue, payload: request.encoded().encoded(),
        exchange: &exchange, subject: subject, now: now)
    let response = try InvokeResponse(decoding: try #require(reply.message).payload)
    return try #require(response.invokeResponses.first)
}

private func hex(_ text: String) -> [UInt8] {
    var out: [UInt8] = []
    var iterator = text.utf8.makeIterator()
    while let high = iterator.next(), let low = iterator.next() {
        func value(_ c: UInt8) -> UInt8 { c <= 57 ? c - 48 : (c | 0x20) - 87 }
        out.append(value(high) << 4 | value(low))
    }
    return out
}

/// Commissioning with every real part: P-256 keys, Matter certificates checked by `CertificateChain`, and the fabric
/// handed to CASE.
@Suite struct RealCredentialsCommissioningTests {
    @Test(arguments: [false, true])
    func aFabricMadeWithRealCertificatesIsWhatCASESees(withICAC: Bool) throws {
        let storage = InMemoryNodeStorage()
        let clock = TestClock()
        let node = try MatterNodeCore(
            configuration: MatterNodeConfiguration(
                basicInformation: BasicInformationConfiguration(serialNumber: "S", uniqueID: "U"),
                networkInterfaces: { [] }, initialDataVersion: 1),
            storage: storage, keys: P256OperationalKeyFactory(), verifier: MatterCertificateVerifier(),
            attestation: try DeviceAttestation.development(storage: storage), started: clock.start,
            now: { [clock] in clock.now })
        let pase = SubjectDescriptor.pase(attestationChallenge: [UInt8](repeating: 1, count: 16))
        func invoke(_ cluster: ClusterID, _ command: CommandID, _ fields: [TLVElement]) throws -> InvokeResponseIB {
            try firstAnswer(of: node, cluster, command, fields, as: pase, now: clock.now)
        }
        _ = try invoke(0x30, 0, [TLVElement(context: 0, .uint(UInt16(60))), TLVElement(context: 1, .uint(UInt64(0)))])
        guard
            case .command(let csrData) = try invoke(
                0x3E, 4, [TLVElement(context: 0, .bytes([UInt8](repeating: 2, count: 32)))]),
              let csrFields = csrData.fields, let elements = csrFields[context: 0]?.bytesValue,
              let csrBytes = try TLVElement(decoding: elements)[context: 1]?.bytesValue else {
            Issue.record("no CSRResponse")
            return
        }
        let csr = try CertificateSigningRequest(der: csrBytes)
        let fabric = try TestFabric(fabricID: 0xFAB1, withICAC: withICAC)
        guard
            case .status(let rootStatus) = try invoke(
                0x3E, 0x0B, [TLVElement(context: 0, .bytes(fabric.rcac.tlvEncoded))])
        else {
            Issue.record("AddTrustedRootCertificate answered a command")
            return
        }
        #expect(rootStatus.status == .success)

        // A NOC for another key is refused; the CSR's key is taken.
        let stranger = try P256.SigningKey()
        func addNOC(_ noc: MatterCertificate) throws -> TLVElement? {
            var fields = [TLVElement(context: 0, .bytes(noc.tlvEncoded))]
            if let icac = fabric.icac { fields.append(TLVElement(context: 1, .bytes(icac.tlvEncoded))) }
            fields += [TLVElement(context: 2, .bytes([UInt8](repeating: 0x42, count: 16))),
                       TLVElement(context: 3, .uint(UInt64(112233))), TLVElement(context: 4, .uint(UInt16(0xFFF1)))]
            guard case .command(let data) = try invoke(0x3E, 6, fields) else { return nil }
            return data.fields
        }
        let wrongKey = try addNOC(try fabric.noc(nodeID: 0x55, key: stranger))
        #expect(wrongKey?[context: 0]?.unsignedValue == UInt64(NOCStatus.invalidPublicKey.rawValue))
        // A NOC signed by another root does not verify.
        let otherFabric = try TestFabric(fabricID: 0xFAB1, withICAC: withICAC)
        let csrKeyNOC = try fabric.noc(nodeID: 0x55, key: stranger)
        var forged = csrKeyNOC
        forged.publicKey = csr.publicKey.x963Representation
        try forged.sign(with: otherFabric.icacKey ?? otherFabric.rootKey)
        #expect(try addNOC(forged)?[context: 0]?.unsignedValue == UInt64(NOCStatus.invalidNOC.rawValue))

        // The real one: the node's NOC for the CSR's public key.
        var noc = csrKeyNOC
        noc.publicKey = csr.publicKey.x963Representation
        try noc.sign(with: fabric.icacKey ?? fabric.rootKey)
        let added = try addNOC(noc)
        #expect(added?[context: 0]?.unsignedValue == 0)
        #expect(added?[context: 1]?.unsignedValue == 1)

        let identities = node.commissioning.operationalIdentities()
        try #require(identities.count == 1)
        #expect(identities[0].fabricIndex == 1)
        #expect(identities[0].nodeID == 0x55)
        #expect(identities[0].fabricID == 0xFAB1)
        #expect(identities[0].operationalKey.publicKey == csr.publicKey)
        #expect(identities[0].ipks == [fabric.ipk])
        #expect(identities[0].icac == fabric.icac?.tlvEncoded)
    }
}
