// The node's glue between commissioning and the secure channel: the operational certificate checks commissioning
// asks for, done by `CertificateChain` on Matter TLV certificates, and the fabric table as CASE answers from it.

import HearthCrypto

/// Checks operational certificate chains with `MatterCertificate` and `CertificateChain`.
public struct MatterCertificateVerifier: OperationalCertificateVerifier {
    /// The time in Matter epoch seconds for validity checks, nil when the node has no trusted time.
    private let now: @Sendable () -> UInt32?

    public init(now: @escaping @Sendable () -> UInt32? = { nil }) { self.now = now }

    public func checkRoot(_ root: [UInt8]) throws(CredentialError) {
        do { try CertificateChain.checkRoot(try MatterCertificate(tlv: root)) } catch {
            throw CredentialError("the root certificate is refused: \(error.reason)")
        }
    }

    public func verifyChain(noc: [UInt8], icac: [UInt8]?, root: [UInt8]) throws(CredentialError) -> OperationalCertificateIdentity {
        do {
            let rcac = try MatterCertificate(tlv: root)
            let peer = try CertificateChain.validate(
                noc: try MatterCertificate(tlv: noc), icac: try icac.map { (bytes) throws(CertificateError) in try MatterCertificate(tlv: bytes) },
                rcac: rcac, time: now())
            return OperationalCertificateIdentity(fabricID: peer.fabricID, nodeID: peer.nodeID, publicKey: peer.publicKey,
                                       rootPublicKey: rcac.publicKey, cats: peer.caseAuthenticatedTags)
        } catch {
            throw CredentialError("the operational certificate chain is refused: \(error.reason)")
        }
    }
}

/// The fabrics of a node's commissioning state as CASE identities: the live table, so that a fabric AddNOC made
/// under the fail-safe answers CASE before CommissioningComplete (the commissioner checks it over CASE).
struct CommissioningIdentityStore: OperationalIdentityStore {
    let state: CommissioningState

    func operationalIdentities() -> [OperationalIdentity] {
        state.fabrics.compactMap { fabric in
            guard let key = try? P256.SigningKey(rawRepresentation: fabric.operationalKey),
                  let compressed = try? FabricKeys.compressedFabricID(rootPublicKey: fabric.identity.rootPublicKey,
                                                                      fabricID: fabric.identity.fabricID),
                  let ipk = try? FabricKeys.operationalGroupKey(epochKey: fabric.identityProtectionKey,
                                                                compressedFabricID: compressed)
            else { return nil }
            return OperationalIdentity(fabricIndex: fabric.index, fabricID: fabric.identity.fabricID, nodeID: fabric.identity.nodeID,
                                rootPublicKey: fabric.identity.rootPublicKey, rcac: fabric.rootCertificate,
                                noc: fabric.operationalCertificate, icac: fabric.intermediateCertificate,
                                operationalKey: key, ipks: [ipk])
        }
    }
}
