// Where commissioning meets the secure channel: operational certificates are checked with the Matter certificate
// code (`CertificateChain`), and the fabric table answers CASE as its `OperationalIdentityStore`.

import HearthCrypto

/// Checks operational certificates (Matter TLV) with `CertificateChain`.
public struct MatterCertificateVerifier: OperationalCertificateVerifier {
    /// Now in Matter epoch seconds, or nil when the node does not know the time (validity is then not checked).
    private let time: @Sendable () -> UInt32?

    public init(time: @escaping @Sendable () -> UInt32? = { nil }) { self.time = time }

    public func checkRoot(_ root: [UInt8]) throws(CredentialError) {
        do { try CertificateChain.checkRoot(try MatterCertificate(tlv: root)) } catch {
            throw CredentialError("root certificate: \(error)")
        }
    }

    public func verifyChain(noc: [UInt8], icac: [UInt8]?, root: [UInt8]) throws(CredentialError)
        -> OperationalCertificateIdentity
    {
        do {
            let rcac = try MatterCertificate(tlv: root)
            let intermediate = try icac.map { (bytes) throws(CertificateError) in try MatterCertificate(tlv: bytes) }
            let peer = try CertificateChain.validate(
                noc: try MatterCertificate(tlv: noc), icac: intermediate, rcac: rcac,
                time: time())
            return OperationalCertificateIdentity(
                fabricID: peer.fabricID, nodeID: peer.nodeID, publicKey: peer.publicKey,
                rootPublicKey: rcac.publicKey, cats: peer.caseAuthenticatedTags)
        } catch {
            throw CredentialError("\(error)")
        }
    }
}

extension CommissioningState: OperationalIdentityStore {
    /// Each fabric as CASE needs it: certificates, the operational key (a P-256 scalar, as `P256OperationalKeyFactory`
    /// keeps it) and the operational group key derived from the IPK epoch key. A fabric added under the fail-safe is
    /// included: the commissioner opens CASE on it before CommissioningComplete.
    public func operationalIdentities() -> [OperationalIdentity] {
        fabrics.compactMap { fabric in
            guard let key = try? P256.SigningKey(rawRepresentation: fabric.operationalKey),
                let compressed = try? FabricKeys.compressedFabricID(
                    rootPublicKey: fabric.identity.rootPublicKey,
                    fabricID: fabric.identity.fabricID),
                let ipk = try? FabricKeys.operationalGroupKey(
                    epochKey: fabric.identityProtectionKey, compressedFabricID: compressed)
            else { return nil }
            return OperationalIdentity(
                fabricIndex: fabric.index, fabricID: fabric.identity.fabricID, nodeID: fabric.identity.nodeID,
                rootPublicKey: fabric.identity.rootPublicKey, rcac: fabric.rootCertificate,
                noc: fabric.operationalCertificate,
                icac: fabric.intermediateCertificate, operationalKey: key, ipks: [ipk])
        }
    }
}
