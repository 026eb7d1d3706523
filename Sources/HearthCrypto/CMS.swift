// CMS SignedData (RFC 5652) the way Matter envelopes a Certification Declaration (Matter 1.4 §6.3.1): the content
// as id-data, one signer named by its subject key identifier, no signed attributes, no certificates, ECDSA with
// SHA-256 over the content itself. Built and read with libcrypto's CMS functions.
import COpenSSL

/// A CMS SignedData message of Matter's shape.
public struct CMSSignedMessage: Sendable {
    /// The message as given, DER (a ContentInfo).
    public let der: [UInt8]
    /// The encapsulated content (for a Certification Declaration, its TLV).
    public let content: [UInt8]
    /// The signer's subject key identifier.
    public let signerKeyIdentifier: [UInt8]
    /// The signer's ECDSA signature over `content`, DER.
    public let signature: [UInt8]

    /// Signs `content` with `key`, naming the signer by `subjectKeyIdentifier`; DER.
    public static func sign(content: [UInt8], subjectKeyIdentifier: [UInt8],
                            key: P256.SigningKey) throws(CryptoError) -> [UInt8] {
        let operation = "CMS sign"
        try requireIntLengths(operation, content.count)
        // CMS_sign takes the signer's identifier from a certificate: a throwaway one carrying the identifier and key.
        let holder = X509Builder(
            serialNumber: [1], subject: [X509Attribute(oid: X509Attribute.commonNameOID, value: "CMS signer")],
            issuer: [X509Attribute(oid: X509Attribute.commonNameOID, value: "CMS signer")], notBefore: 0,
            notAfter: X509Builder.noExpiry, publicKey: key.publicKey,
            extensions: [.subjectKeyIdentifier(critical: false, subjectKeyIdentifier)])
        let holderDER = try holder.sign(with: key)
        let certificate = try X509Handle(
            try derDecoded(operation, holderDER, { d2i_X509(nil, $0, $1) }, free: { X509_free($0) }), operation)
        let signer = try key.evpKey()
        clearOpenSSLErrors()
        let flags = UInt32(CMS_BINARY | CMS_NOATTR | CMS_NOCERTS | CMS_USE_KEYID | CMS_NOSMIMECAP)
        let message: OpaquePointer? = content.withNonNullBytes { bytes, count in
            guard let input = BIO_new_mem_buf(bytes, Int32(count)) else { return nil }
            defer { BIO_free(input) }
            return CMS_sign(certificate.pointer, signer.pointer, nil, input, flags)
        }
        let signed = try requireHandle(message, operation)
        defer { CMS_ContentInfo_free(signed) }
        return try derEncoded("CMS encode") { i2d_CMS_ContentInfo(signed, $0) }
    }

    /// Reads a message, checking it has Matter's shape; the signature is checked by `isSigned(by:)`.
    public init(der: [UInt8]) throws(CryptoError) {
        let operation = "CMS parse"
        let message = try derDecoded(operation, der, { d2i_CMS_ContentInfo(nil, $0, $1) },
                                     free: { CMS_ContentInfo_free($0) })
        defer { CMS_ContentInfo_free(message) }
        guard OBJ_obj2nid(CMS_get0_type(message)) == NID_pkcs7_signed else {
            throw CryptoError(operation: operation, reason: "not SignedData")
        }
        guard OBJ_obj2nid(CMS_get0_eContentType(message)) == NID_pkcs7_data,
              let contentPointer = CMS_get0_content(message), let octets = contentPointer.pointee else {
            throw CryptoError(operation: operation, reason: "no id-data content")
        }
        guard let signers = CMS_get0_SignerInfos(message), OPENSSL_sk_num(signers) == 1,
              let signerRaw = OPENSSL_sk_value(signers, 0) else {
            throw CryptoError(operation: operation, reason: "not exactly one signer")
        }
        let signerInfo = OpaquePointer(signerRaw)
        guard CMS_signed_get_attr_count(signerInfo) < 0 else {
            throw CryptoError(operation: operation, reason: "signed attributes present")
        }
        var digest: UnsafeMutablePointer<X509_ALGOR>? = nil, algorithm: UnsafeMutablePointer<X509_ALGOR>? = nil
        CMS_SignerInfo_get0_algs(signerInfo, nil, nil, &digest, &algorithm)
        guard algorithmNID(digest) == NID_sha256, algorithmNID(algorithm) == NID_ecdsa_with_SHA256 else {
            throw CryptoError(operation: operation, reason: "not ECDSA with SHA-256")
        }
        var keyIdentifier: UnsafeMutablePointer<ASN1_OCTET_STRING>? = nil
        var issuer: OpaquePointer? = nil
        var serial: UnsafeMutablePointer<ASN1_INTEGER>? = nil
        guard CMS_SignerInfo_get0_signer_id(signerInfo, &keyIdentifier, &issuer, &serial) == 1,
              let keyIdentifier else {
            clearOpenSSLErrors()
            throw CryptoError(operation: operation, reason: "signer not named by a key identifier")
        }
        guard let signatureOctets = CMS_SignerInfo_get0_signature(signerInfo) else {
            throw CryptoError(operation: operation, reason: "no signature")
        }
        self.der = der
        content = asn1StringBytes(octets)
        signerKeyIdentifier = asn1StringBytes(keyIdentifier)
        signature = asn1StringBytes(signatureOctets)
    }

    /// Whether the signature is `key`'s ECDSA-with-SHA-256 signature of `content`.
    public func isSigned(by key: P256.PublicKey) -> Bool {
        guard let evpKey = try? key.evpKey() else { return false }
        return key.isValidDERSignature(signature, for: content, key: evpKey)
    }
}

private func algorithmNID(_ algorithm: UnsafeMutablePointer<X509_ALGOR>?) -> Int32 {
    guard let algorithm else { return NID_undef }
    var object: OpaquePointer? = nil
    X509_ALGOR_get0(&object, nil, nil, algorithm)
    return object.map { OBJ_obj2nid($0) } ?? NID_undef
}
