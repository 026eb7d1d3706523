// What commissioning needs from cryptography and certificates, as protocols the node is given: operational keys and
// their CSRs, the check of an operational certificate chain (Matter TLV certificates, done by the secure channel's
// certificate code), and the device attestation credentials. The commissioning logic stays testable without them.

/// An operational key pair made for a CSRRequest, kept until AddNOC binds it to a fabric.
public protocol OperationalKeyPair: Sendable {
    /// The public key, SEC1 uncompressed (65 bytes).
    var publicKey: [UInt8] { get }
    /// A PKCS #10 CSR (DER) for this key, signed by it.
    func certificateSigningRequest() throws(CredentialError) -> [UInt8]
    /// The private key as the store keeps it (the provider reads it back with `restoreKey`).
    var serialized: [UInt8] { get }
}

/// Makes and restores operational keys.
public protocol OperationalKeyFactory: Sendable {
    func makeKey() throws(CredentialError) -> any OperationalKeyPair
    func restoreKey(_ serialized: [UInt8]) throws(CredentialError) -> any OperationalKeyPair
}

/// What a valid NOC chain says about the node's identity on its fabric.
public struct OperationalCertificateIdentity: Sendable, Equatable {
    public var fabricID: UInt64
    public var nodeID: NodeID
    /// The NOC's subject public key, SEC1 uncompressed.
    public var publicKey: [UInt8]
    /// The root's public key, SEC1 uncompressed.
    public var rootPublicKey: [UInt8]
    public var cats: [UInt32]

    public init(fabricID: UInt64, nodeID: NodeID, publicKey: [UInt8], rootPublicKey: [UInt8], cats: [UInt32] = []) {
        self.fabricID = fabricID
        self.nodeID = nodeID
        self.publicKey = publicKey
        self.rootPublicKey = rootPublicKey
        self.cats = cats
    }
}

/// Checks Matter TLV operational certificates.
public protocol OperationalCertificateVerifier: Sendable {
    /// Whether `root` is a well-formed, self-signed root CA certificate (Matter TLV).
    func checkRoot(_ root: [UInt8]) throws(CredentialError)
    /// Checks NOC → (ICAC →) root: encodings, signatures, validity, the NOC's node and fabric ids.
    func verifyChain(noc: [UInt8], icac: [UInt8]?, root: [UInt8]) throws(CredentialError)
        -> OperationalCertificateIdentity
}

/// The device attestation credentials: DAC and PAI certificates, the Certification Declaration, the DAC's key.
public protocol DeviceAttestationCredentials: Sendable {
    /// The DAC, X.509 DER.
    var deviceAttestationCertificate: [UInt8] { get }
    /// The PAI, X.509 DER.
    var productAttestationIntermediate: [UInt8] { get }
    /// The Certification Declaration (CMS SignedData, DER).
    var certificationDeclaration: [UInt8] { get }
    /// An ECDSA P-256 SHA-256 signature with the DAC's key, raw r ‖ s (64 bytes).
    func signWithDeviceAttestationKey(_ message: [UInt8]) throws(CredentialError) -> [UInt8]
}

/// A failure of a credential operation: a key that cannot be made, a chain that does not verify.
public struct CredentialError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
