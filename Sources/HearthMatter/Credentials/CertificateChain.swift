// Operational certificate chains, NOC → (ICAC) → RCAC, checked by Matter's rules (6.5.x, 6.3): each certificate's
// kind from its subject, CA flags, key usages, path length, key identifiers, validity, fabric id consistency, and
// each signature over the X.509 TBS rebuilt from TLV.
public import HearthCrypto

/// What a valid chain vouches for: the NOC's subject.
public struct OperationalPeerIdentity: Sendable, Equatable {
    public var nodeID: UInt64
    public var fabricID: UInt64
    public var caseAuthenticatedTags: [UInt32]
    /// The NOC's public key (65 bytes), which signs the peer's CASE messages.
    public var publicKey: [UInt8]
}

public enum CertificateChain {
    /// Operational node ids (2.5.5.1): 0x0000_0000_0000_0001 through 0xFFFF_FFEF_FFFF_FFFF.
    public static let operationalNodeIDs: ClosedRange<UInt64> = 1...0xFFFF_FFEF_FFFF_FFFF

    /// Checks `noc` (issued by `icac` when given, else by `rcac`) against the trusted `rcac`.
    /// - Parameter time: now in Matter epoch seconds, or nil when the node does not know the time (validity is then
    ///   not checked, as the specification allows for a node without a trusted clock).
    public static func validate(
        noc: MatterCertificate, icac: MatterCertificate?, rcac: MatterCertificate, time: UInt32?
    ) throws(CertificateError) -> OperationalPeerIdentity {
        try checkRoot(rcac)
        var issuer = rcac
        var fabricIDs: [UInt64] = [rcac.subject.fabricID].compactMap(\.self)
        if let icac {
            guard icac.subject.icacID != nil, icac.subject.rcacID == nil, icac.subject.nodeID == nil else {
                throw CertificateError("intermediate's subject is not an ICAC's")
            }
            try checkCA(icac, "intermediate")
            if let pathLength = rcac.pathLengthConstraint, pathLength < 1 {
                throw CertificateError("root's path length forbids an intermediate")
            }
            try checkIssued(icac, by: rcac, "intermediate")
            if let fabricID = icac.subject.fabricID { fabricIDs.append(fabricID) }
            issuer = icac
        }
        guard let nodeID = noc.subject.nodeID, let fabricID = noc.subject.fabricID else {
            throw CertificateError("NOC's subject lacks a node id or a fabric id")
        }
        guard operationalNodeIDs.contains(nodeID) else { throw CertificateError("NOC's node id is not operational") }
        guard fabricID != 0 else { throw CertificateError("NOC's fabric id is 0") }
        guard fabricIDs.allSatisfy({ $0 == fabricID }) else {
            throw CertificateError("fabric ids differ along the chain")
        }
        guard noc.extensions.contains(where: { if case .basicConstraints = $0 { true } else { false } }) else {
            throw CertificateError("NOC lacks basic constraints")
        }
        guard !noc.isCA, noc.pathLengthConstraint == nil else { throw CertificateError("NOC is a CA") }
        guard let usage = noc.keyUsage, usage.contains(.digitalSignature), !usage.contains(.keyCertSign) else {
            throw CertificateError("NOC's key usage lacks digital signature or allows certificate signing")
        }
        guard let purposes = noc.extendedKeyUsage, purposes.contains(.clientAuth), purposes.contains(.serverAuth) else {
            throw CertificateError("NOC's extended key usage lacks client or server authentication")
        }
        let tags = noc.subject.caseAuthenticatedTags
        guard tags.count <= 3, tags.allSatisfy({ $0 & 0xFFFF != 0 }),
              Set(tags.map { $0 >> 16 }).count == tags.count
        else { throw CertificateError("NOC's CASE Authenticated Tags break the rules") }
        try checkIssued(noc, by: issuer, "NOC")
        for certificate in [rcac, icac, noc].compactMap(\.self) { try checkValidity(certificate, time: time) }
        return OperationalPeerIdentity(
            nodeID: nodeID, fabricID: fabricID, caseAuthenticatedTags: tags, publicKey: noc.publicKey)
    }

    /// A trusted root: self-issued, self-signed, a CA that may sign certificates.
    public static func checkRoot(_ rcac: MatterCertificate) throws(CertificateError) {
        guard rcac.subject.rcacID != nil, rcac.subject.nodeID == nil, rcac.subject.icacID == nil else {
            throw CertificateError("root's subject is not an RCAC's")
        }
        guard rcac.subject == rcac.issuer else { throw CertificateError("root is not self-issued") }
        try checkCA(rcac, "root")
        if let akid = rcac.authorityKeyIdentifier, akid != rcac.subjectKeyIdentifier {
            throw CertificateError("root's authority key id is not its subject key id")
        }
        try checkSignature(of: rcac, by: rcac.publicKey, "root")
    }

    private static func checkCA(_ certificate: MatterCertificate, _ what: String) throws(CertificateError) {
        guard certificate.isCA else { throw CertificateError("\(what) is not a CA") }
        guard let usage = certificate.keyUsage, usage.contains(.keyCertSign) else {
            throw CertificateError("\(what) may not sign certificates")
        }
        guard certificate.subjectKeyIdentifier != nil else { throw CertificateError("\(what) lacks a subject key id") }
    }

    private static func checkIssued(_ certificate: MatterCertificate, by issuer: MatterCertificate, _ what: String)
        throws(CertificateError)
    {
        guard certificate.issuer == issuer.subject else {
            throw CertificateError("\(what)'s issuer is not its CA's subject")
        }
        guard let akid = certificate.authorityKeyIdentifier, akid == issuer.subjectKeyIdentifier else {
            throw CertificateError("\(what)'s authority key id is not its CA's subject key id")
        }
        try checkSignature(of: certificate, by: issuer.publicKey, what)
    }

    private static func checkSignature(of certificate: MatterCertificate, by publicKey: [UInt8], _ what: String)
        throws(CertificateError)
    {
        do {
            let key = try P256.PublicKey(x963Representation: publicKey)
            let signature = try P256.Signature(rawRepresentation: certificate.signature)
            guard key.isValidSignature(signature, for: certificate.tbsDER) else {
                throw CertificateError("\(what)'s signature does not verify")
            }
        } catch let error as CertificateError {
            throw error
        } catch {
            throw CertificateError("\(what)'s signature cannot be checked: \(error)")
        }
    }

    private static func checkValidity(_ certificate: MatterCertificate, time: UInt32?) throws(CertificateError) {
        guard let time else { return }
        guard certificate.notBefore <= time else { throw CertificateError("certificate is not yet valid") }
        guard certificate.notAfter == 0 || time <= certificate.notAfter else {
            throw CertificateError("certificate has expired")
        }
    }
}

extension MatterCertificate {
    /// Signs the certificate with its issuer's key (a commissioner's job; the hub uses it in tests and tools).
    public mutating func sign(with issuerKey: P256.SigningKey) throws(CryptoError) {
        signature = try issuerKey.signature(for: tbsDER).rawRepresentation
    }
}
