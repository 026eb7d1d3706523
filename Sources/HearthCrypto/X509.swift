// X.509 certificates and PKCS#10 certificate signing requests over libcrypto's X509 and X509_REQ: reading Matter's
// attestation and operational certificates (subject and issuer attributes including Matter's own OIDs, validity,
// key, the extensions Matter profiles), verifying their signatures, building and signing new ones (a DAC per hub
// under a PAI), and the CSR a commissioner asks for.
import COpenSSL

/// One attribute of a distinguished name: its OID in dotted form and its string value.
public struct X509Attribute: Sendable, Equatable {
    public enum StringType: Sendable, Equatable {
        case utf8String
        case printableString
        /// Any other ASN.1 string type, by its universal tag number.
        case other(Int)
    }

    public var oid: String
    public var value: String
    public var type: StringType

    public init(oid: String, value: String, type: StringType = .utf8String) {
        self.oid = oid
        self.value = value
        self.type = type
    }

    /// Well-known attribute OIDs.
    public static let commonNameOID = "2.5.4.3"
    public static let organizationOID = "2.5.4.10"
    public static let organizationalUnitOID = "2.5.4.11"
    /// Matter's DN attributes (Matter 1.4 §6.1.1 and §6.5.6): node id, firmware signing id, ICA id, root id, fabric
    /// id, NOC CATs, and the attestation attributes vendor id and product id.
    public static let matterNodeIdOID = "1.3.6.1.4.1.37244.1.1"
    public static let matterFirmwareSigningIdOID = "1.3.6.1.4.1.37244.1.2"
    public static let matterICACIdOID = "1.3.6.1.4.1.37244.1.3"
    public static let matterRCACIdOID = "1.3.6.1.4.1.37244.1.4"
    public static let matterFabricIdOID = "1.3.6.1.4.1.37244.1.5"
    public static let matterNOCCATOID = "1.3.6.1.4.1.37244.1.6"
    public static let matterVendorIdOID = "1.3.6.1.4.1.37244.2.1"
    public static let matterProductIdOID = "1.3.6.1.4.1.37244.2.2"
}

/// A certificate extension, in the form Matter profiles them.
public enum X509Extension: Sendable, Equatable {
    case basicConstraints(critical: Bool, isCA: Bool, pathLength: Int?)
    /// The KeyUsage bits, bit 0 (digitalSignature) being the most significant bit of the DER BIT STRING.
    case keyUsage(critical: Bool, KeyUsage)
    /// Key purpose OIDs in dotted form.
    case extendedKeyUsage(critical: Bool, [String])
    case subjectKeyIdentifier(critical: Bool, [UInt8])
    case authorityKeyIdentifier(critical: Bool, [UInt8])
    /// Any other extension: its OID and its DER value (the contents of the extnValue OCTET STRING).
    case other(oid: String, critical: Bool, value: [UInt8])

    public var isCritical: Bool {
        switch self {
        case .basicConstraints(let critical, _, _), .keyUsage(let critical, _), .extendedKeyUsage(let critical, _),
             .subjectKeyIdentifier(let critical, _), .authorityKeyIdentifier(let critical, _),
             .other(_, let critical, _):
            return critical
        }
    }

    public struct KeyUsage: OptionSet, Sendable, Hashable {
        public let rawValue: UInt16
        public init(rawValue: UInt16) { self.rawValue = rawValue }
        public static let digitalSignature = KeyUsage(rawValue: 1 << 0)
        public static let nonRepudiation = KeyUsage(rawValue: 1 << 1)
        public static let keyEncipherment = KeyUsage(rawValue: 1 << 2)
        public static let dataEncipherment = KeyUsage(rawValue: 1 << 3)
        public static let keyAgreement = KeyUsage(rawValue: 1 << 4)
        public static let keyCertSign = KeyUsage(rawValue: 1 << 5)
        public static let cRLSign = KeyUsage(rawValue: 1 << 6)
        public static let encipherOnly = KeyUsage(rawValue: 1 << 7)
        public static let decipherOnly = KeyUsage(rawValue: 1 << 8)
    }

    /// Key purposes Matter uses.
    public static let serverAuthOID = "1.3.6.1.5.5.7.3.1"
    public static let clientAuthOID = "1.3.6.1.5.5.7.3.2"
}

/// An owned `X509`.
final class X509Handle {
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer?, _ operation: String) throws(CryptoError) {
        self.pointer = try requireHandle(pointer, operation)
    }
    deinit { X509_free(pointer) }
}

/// A parsed DER X.509 certificate. Parsing checks the structure only; `isSigned(by:)` checks the signature.
public struct X509Certificate: Sendable {
    /// The certificate as given.
    public let der: [UInt8]
    /// The TBSCertificate exactly as it appears in `der` (what the signature covers).
    public let tbsDER: [UInt8]
    /// The X.509 version number as encoded (2 for v3).
    public let version: Int
    /// The serial number's magnitude, big-endian, without the 0x00 DER puts before a high first bit (what
    /// `X509Builder.serialNumber` takes back).
    public let serialNumber: [UInt8]
    public let subjectDER: [UInt8]
    public let issuerDER: [UInt8]
    public let subject: [X509Attribute]
    public let issuer: [X509Attribute]
    /// Validity bounds in seconds since 1970-01-01T00:00:00Z; `X509Builder.noExpiry` is 99991231235959Z.
    public let notBefore: Int64
    public let notAfter: Int64
    public let publicKey: P256.PublicKey
    /// The signature algorithm's OID in dotted form (1.2.840.10045.4.3.2 for ecdsa-with-SHA256).
    public let signatureAlgorithmOID: String
    /// The signature as encoded in the certificate (for ECDSA, the DER ECDSA-Sig-Value).
    public let signature: [UInt8]
    /// The extensions in the order they appear.
    public let extensions: [X509Extension]

    public init(der: [UInt8]) throws(CryptoError) {
        let operation = "X.509 parse"
        let certificate = try X509Handle(
            try derDecoded(operation, der, { d2i_X509(nil, $0, $1) }, free: { X509_free($0) }), operation)
        let x = certificate.pointer
        self.der = der
        tbsDER = try DERReader.firstElementOfSequence(der, operation)
        version = Int(X509_get_version(x)) + 1
        guard let serial = X509_get0_serialNumber(x) else {
            throw CryptoError(operation: operation, reason: "no serial number")
        }
        guard ASN1_STRING_type(serial) == V_ASN1_INTEGER else {
            throw CryptoError(operation: operation, reason: "negative serial number")
        }
        serialNumber = asn1StringBytes(serial)
        guard let subjectName = X509_get_subject_name(x), let issuerName = X509_get_issuer_name(x) else {
            throw CryptoError(operation: operation, reason: "no subject or issuer")
        }
        subjectDER = try derEncoded("X.509 subject") { i2d_X509_NAME(subjectName, $0) }
        issuerDER = try derEncoded("X.509 issuer") { i2d_X509_NAME(issuerName, $0) }
        subject = try attributes(of: subjectName, operation)
        issuer = try attributes(of: issuerName, operation)
        guard let before = X509_get0_notBefore(x), let after = X509_get0_notAfter(x) else {
            throw CryptoError(operation: operation, reason: "no validity")
        }
        notBefore = try secondsSinceEpoch(before, operation)
        notAfter = try secondsSinceEpoch(after, operation)
        guard let key = X509_get0_pubkey(x) else { throw CryptoError.openSSL("X.509 public key") }
        publicKey = try P256.PublicKey(evpKey: key)
        var signatureBits: UnsafePointer<ASN1_BIT_STRING>? = nil
        var algorithm: UnsafePointer<X509_ALGOR>? = nil
        X509_get0_signature(&signatureBits, &algorithm, x)
        guard let signatureBits, let algorithm else {
            throw CryptoError(operation: operation, reason: "no signature")
        }
        signature = asn1StringBytes(signatureBits)
        var algorithmObject: OpaquePointer? = nil
        X509_ALGOR_get0(&algorithmObject, nil, nil, algorithm)
        signatureAlgorithmOID = try objectText(algorithmObject, operation)
        extensions = try readExtensions(x, operation)
    }

    /// Whether the signature is ecdsa-with-SHA256 by `issuerKey` over `tbsDER`.
    public func isSigned(by issuerKey: P256.PublicKey) -> Bool {
        guard signatureAlgorithmOID == "1.2.840.10045.4.3.2", let key = try? issuerKey.evpKey() else { return false }
        return issuerKey.isValidDERSignature(signature, for: tbsDER, key: key)
    }

    /// The signature as r ‖ s, 64 bytes (Matter's TLV certificate form).
    public var rawSignature: [UInt8] {
        get throws(CryptoError) { try P256.Signature(derRepresentation: signature).rawRepresentation }
    }

    public var basicConstraints: (isCA: Bool, pathLength: Int?)? {
        for case .basicConstraints(_, let isCA, let pathLength) in extensions { return (isCA, pathLength) }
        return nil
    }

    public var keyUsage: X509Extension.KeyUsage? {
        for case .keyUsage(_, let usage) in extensions { return usage }
        return nil
    }

    public var extendedKeyUsage: [String]? {
        for case .extendedKeyUsage(_, let purposes) in extensions { return purposes }
        return nil
    }

    public var subjectKeyIdentifier: [UInt8]? {
        for case .subjectKeyIdentifier(_, let identifier) in extensions { return identifier }
        return nil
    }

    public var authorityKeyIdentifier: [UInt8]? {
        for case .authorityKeyIdentifier(_, let identifier) in extensions { return identifier }
        return nil
    }

    /// The value of the first subject attribute with `oid`.
    public func subjectValue(_ oid: String) -> String? { subject.first { $0.oid == oid }?.value }
}

/// Builds and signs an X.509 v3 certificate with ecdsa-with-SHA256.
public struct X509Builder: Sendable {
    /// 9999-12-31T23:59:59Z, the GeneralizedTime 99991231235959Z that RFC 5280 and Matter use for "no expiry".
    public static let noExpiry: Int64 = 253_402_300_799

    public var serialNumber: [UInt8]
    public var subject: [X509Attribute]
    public var issuer: [X509Attribute]
    /// Seconds since 1970-01-01T00:00:00Z.
    public var notBefore: Int64
    public var notAfter: Int64
    public var publicKey: P256.PublicKey
    /// In the order they are to appear.
    public var extensions: [X509Extension]

    /// - Parameter serialNumber: big-endian bytes of a positive serial (up to 20 bytes).
    public init(serialNumber: [UInt8], subject: [X509Attribute], issuer: [X509Attribute], notBefore: Int64,
                notAfter: Int64, publicKey: P256.PublicKey, extensions: [X509Extension]) {
        self.serialNumber = serialNumber
        self.subject = subject
        self.issuer = issuer
        self.notBefore = notBefore
        self.notAfter = notAfter
        self.publicKey = publicKey
        self.extensions = extensions
    }

    /// The TBSCertificate these fields make, DER, exactly as a signature covers it: what a certificate received in
    /// another form (Matter's TLV) is checked against. The signature algorithm inside it is ecdsa-with-SHA256 for any
    /// P-256 key, so it is the TBS of a certificate signed with a throwaway key.
    public func tbsDER() throws(CryptoError) -> [UInt8] {
        try DERReader.firstElementOfSequence(try sign(with: try P256.SigningKey()), "X.509 TBS")
    }

    /// The signed certificate, DER.
    public func sign(with issuerKey: P256.SigningKey) throws(CryptoError) -> [UInt8] {
        let operation = "X.509 build"
        guard !serialNumber.isEmpty, serialNumber.count <= 20 else {
            throw CryptoError(operation: operation, reason: "serial number is \(serialNumber.count) bytes, not 1...20")
        }
        clearOpenSSLErrors()
        let certificate = try X509Handle(X509_new(), operation)
        let x = certificate.pointer
        try requireOne(X509_set_version(x, 2), operation)
        let serial = try BigNumber(bigEndian: serialNumber)
        let serialInteger = try requireHandle(BN_to_ASN1_INTEGER(serial.pointer, nil), operation)
        defer { ASN1_INTEGER_free(serialInteger) }
        try requireOne(X509_set_serialNumber(x, serialInteger), operation)
        let subjectName = try makeName(subject, operation)
        defer { X509_NAME_free(subjectName) }
        let issuerName = try makeName(issuer, operation)
        defer { X509_NAME_free(issuerName) }
        try requireOne(X509_set_subject_name(x, subjectName), operation)
        try requireOne(X509_set_issuer_name(x, issuerName), operation)
        for (seconds, setter) in [(notBefore, X509_set1_notBefore), (notAfter, X509_set1_notAfter)] {
            let time = try requireHandle(ASN1_TIME_set(nil, time_t(seconds)), "X.509 validity")
            defer { ASN1_TIME_free(time) }
            try requireOne(setter(x, time), "X.509 validity")
        }
        let key = try publicKey.evpKey()
        try requireOne(X509_set_pubkey(x, key.pointer), operation)
        for item in extensions { try addExtension(item, to: x) }
        let signer = try issuerKey.evpKey()
        guard X509_sign(x, signer.pointer, EVP_sha256()) > 0 else { throw CryptoError.openSSL("X.509 sign") }
        return try derEncoded("X.509 encode") { i2d_X509(x, $0) }
    }

    private func addExtension(_ item: X509Extension, to x: OpaquePointer) throws(CryptoError) {
        let operation = "X.509 extension"
        switch item {
        case .basicConstraints(let critical, let isCA, let pathLength):
            let constraints = try requireHandle(BASIC_CONSTRAINTS_new(), operation)
            defer { BASIC_CONSTRAINTS_free(constraints) }
            constraints.pointee.ca = isCA ? 0xFF : 0
            if let pathLength {
                let length = try requireHandle(ASN1_INTEGER_new(), operation)
                constraints.pointee.pathlen = length
                try requireOne(ASN1_INTEGER_set(length, pathLength), operation)
            }
            try requireOne(X509_add1_ext_i2d(x, NID_basic_constraints, constraints, critical ? 1 : 0, 0), operation)
        case .keyUsage(let critical, let usage):
            let bits = try requireHandle(ASN1_BIT_STRING_new(), operation)
            defer { ASN1_BIT_STRING_free(bits) }
            for bit in 0..<9 where usage.rawValue & (1 << bit) != 0 {
                try requireOne(ASN1_BIT_STRING_set_bit(bits, Int32(bit), 1), operation)
            }
            try requireOne(X509_add1_ext_i2d(x, NID_key_usage, UnsafeMutableRawPointer(bits), critical ? 1 : 0, 0),
                           operation)
        case .extendedKeyUsage(let critical, let purposes):
            let stack = try requireHandle(OPENSSL_sk_new_null(), operation)
            defer { OPENSSL_sk_pop_free(stack) { ASN1_OBJECT_free(OpaquePointer($0)) } }
            for purpose in purposes {
                let object = try requireHandle(OBJ_txt2obj(purpose, 1), "X.509 OID \(purpose)")
                guard OPENSSL_sk_push(stack, UnsafeRawPointer(object)) > 0 else {
                    ASN1_OBJECT_free(object)
                    throw CryptoError.openSSL(operation)
                }
            }
            try requireOne(X509_add1_ext_i2d(x, NID_ext_key_usage, UnsafeMutableRawPointer(stack), critical ? 1 : 0, 0),
                           operation)
        case .subjectKeyIdentifier(let critical, let identifier):
            let octets = try makeOctetString(identifier, operation)
            defer { ASN1_OCTET_STRING_free(octets) }
            try requireOne(X509_add1_ext_i2d(x, NID_subject_key_identifier, UnsafeMutableRawPointer(octets),
                                             critical ? 1 : 0, 0), operation)
        case .authorityKeyIdentifier(let critical, let identifier):
            let keyIdentifier = try requireHandle(AUTHORITY_KEYID_new(), operation)
            defer { AUTHORITY_KEYID_free(keyIdentifier) }
            keyIdentifier.pointee.keyid = try makeOctetString(identifier, operation)
            try requireOne(X509_add1_ext_i2d(x, NID_authority_key_identifier, keyIdentifier, critical ? 1 : 0, 0),
                           operation)
        case .other(let oid, let critical, let value):
            let object = try requireHandle(OBJ_txt2obj(oid, 1), "X.509 OID \(oid)")
            defer { ASN1_OBJECT_free(object) }
            let octets = try makeOctetString(value, operation)
            defer { ASN1_OCTET_STRING_free(octets) }
            let extensionHandle = try requireHandle(
                X509_EXTENSION_create_by_OBJ(nil, object, critical ? 1 : 0, octets), operation)
            defer { X509_EXTENSION_free(extensionHandle) }
            try requireOne(X509_add_ext(x, extensionHandle, -1), operation)
        }
    }
}

/// A PKCS#10 certificate signing request (what Matter's CSRRequest returns inside its NOCSR elements).
public struct CertificateSigningRequest: Sendable {
    public let der: [UInt8]
    public let subject: [X509Attribute]
    public let publicKey: P256.PublicKey

    /// A CSR for `key`'s public key with `subject`, self-signed with ecdsa-with-SHA256; DER.
    public static func make(key: P256.SigningKey, subject: [X509Attribute]) throws(CryptoError) -> [UInt8] {
        let operation = "CSR build"
        clearOpenSSLErrors()
        let request = try requireHandle(X509_REQ_new(), operation)
        defer { X509_REQ_free(request) }
        try requireOne(X509_REQ_set_version(request, 0), operation)
        let name = try makeName(subject, operation)
        defer { X509_NAME_free(name) }
        try requireOne(X509_REQ_set_subject_name(request, name), operation)
        let publicKey = try key.publicKey.evpKey()
        try requireOne(X509_REQ_set_pubkey(request, publicKey.pointer), operation)
        let signer = try key.evpKey()
        guard X509_REQ_sign(request, signer.pointer, EVP_sha256()) > 0 else { throw CryptoError.openSSL("CSR sign") }
        return try derEncoded("CSR encode") { i2d_X509_REQ(request, $0) }
    }

    /// Parses a DER CSR and checks its self-signature; throws if it is malformed, not P-256, or not signed by its key.
    public init(der: [UInt8]) throws(CryptoError) {
        let operation = "CSR parse"
        let request = try derDecoded(operation, der, { d2i_X509_REQ(nil, $0, $1) }, free: { X509_REQ_free($0) })
        defer { X509_REQ_free(request) }
        guard let key = X509_REQ_get0_pubkey(request) else { throw CryptoError.openSSL(operation) }
        publicKey = try P256.PublicKey(evpKey: key)
        clearOpenSSLErrors()
        guard X509_REQ_verify(request, key) == 1 else {
            clearOpenSSLErrors()
            throw CryptoError(operation: operation, reason: "self-signature does not verify")
        }
        guard let name = X509_REQ_get_subject_name(request) else {
            throw CryptoError(operation: operation, reason: "no subject")
        }
        subject = try attributes(of: name, operation)
        self.der = der
    }
}

// MARK: - Helpers

/// The content bytes of an ASN1_STRING (or ASN1_INTEGER, ASN1_BIT_STRING, ASN1_OCTET_STRING).
func asn1StringBytes(_ string: UnsafePointer<ASN1_STRING>) -> [UInt8] {
    let count = Int(ASN1_STRING_length(string))
    guard count > 0, let data = ASN1_STRING_get0_data(string) else { return [] }
    return Array(UnsafeBufferPointer(start: data, count: count))
}

private func makeOctetString(_ bytes: [UInt8],
                             _ operation: String) throws(CryptoError) -> UnsafeMutablePointer<ASN1_OCTET_STRING> {
    let octets = try requireHandle(ASN1_OCTET_STRING_new(), operation)
    guard bytes.withNonNullBytes({ ASN1_OCTET_STRING_set(octets, $0, Int32($1)) }) == 1 else {
        ASN1_OCTET_STRING_free(octets)
        throw CryptoError.openSSL(operation)
    }
    return octets
}

/// An OID in dotted form.
private func objectText(_ object: OpaquePointer?, _ operation: String) throws(CryptoError) -> String {
    guard let object else { throw CryptoError(operation: operation, reason: "missing OID") }
    var buffer = [CChar](repeating: 0, count: 128)
    let length = OBJ_obj2txt(&buffer, Int32(buffer.count), object, 1)
    guard length > 0, Int(length) < buffer.count else { throw CryptoError(operation: operation, reason: "bad OID") }
    return String(decoding: buffer.prefix(Int(length)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

private func attributes(of name: OpaquePointer, _ operation: String) throws(CryptoError) -> [X509Attribute] {
    var result: [X509Attribute] = []
    for index in 0..<X509_NAME_entry_count(name) {
        guard let entry = X509_NAME_get_entry(name, index), let data = X509_NAME_ENTRY_get_data(entry) else {
            throw CryptoError(operation: operation, reason: "unreadable name entry")
        }
        let oid = try objectText(X509_NAME_ENTRY_get_object(entry), operation)
        let type: X509Attribute.StringType
        switch ASN1_STRING_type(data) {
        case V_ASN1_UTF8STRING: type = .utf8String
        case V_ASN1_PRINTABLESTRING: type = .printableString
        case let other: type = .other(Int(other))
        }
        let bytes = asn1StringBytes(data)
        guard let value = String(validating: bytes, as: UTF8.self) else {
            throw CryptoError(operation: operation, reason: "name attribute \(oid) is not valid UTF-8")
        }
        result.append(X509Attribute(oid: oid, value: value, type: type))
    }
    return result
}

private func makeName(_ attributes: [X509Attribute], _ operation: String) throws(CryptoError) -> OpaquePointer {
    let name = try requireHandle(X509_NAME_new(), operation)
    for attribute in attributes {
        guard let object = OBJ_txt2obj(attribute.oid, 1) else {
            X509_NAME_free(name)
            throw CryptoError(operation: operation, reason: "bad OID \(attribute.oid)")
        }
        defer { ASN1_OBJECT_free(object) }
        let type: Int32
        switch attribute.type {
        case .utf8String: type = V_ASN1_UTF8STRING
        case .printableString: type = V_ASN1_PRINTABLESTRING
        case .other(let tag): type = Int32(tag)
        }
        let bytes = Array(attribute.value.utf8)
        let added = bytes.withNonNullBytes { X509_NAME_add_entry_by_OBJ(name, object, type, $0, Int32($1), -1, 0) }
        guard added == 1 else {
            let error = CryptoError.openSSL("\(operation): attribute \(attribute.oid)")
            X509_NAME_free(name)
            throw error
        }
    }
    return name
}

/// Seconds since the Unix epoch of an ASN1_TIME, computed by OpenSSL's own calendar (ASN1_TIME_diff).
private func secondsSinceEpoch(_ time: UnsafePointer<ASN1_TIME>, _ operation: String) throws(CryptoError) -> Int64 {
    guard let epoch = ASN1_TIME_set(nil, 0) else { throw CryptoError.openSSL(operation) }
    defer { ASN1_TIME_free(epoch) }
    var days: Int32 = 0, seconds: Int32 = 0
    guard ASN1_TIME_diff(&days, &seconds, epoch, time) == 1 else {
        throw CryptoError(operation: operation, reason: "invalid time")
    }
    return Int64(days) * 86_400 + Int64(seconds)
}

private func readExtensions(_ x: OpaquePointer, _ operation: String) throws(CryptoError) -> [X509Extension] {
    var result: [X509Extension] = []
    for index in 0..<X509_get_ext_count(x) {
        guard let item = X509_get_ext(x, index), let data = X509_EXTENSION_get_data(item) else {
            throw CryptoError(operation: operation, reason: "unreadable extension")
        }
        let critical = X509_EXTENSION_get_critical(item) == 1
        let object = X509_EXTENSION_get_object(item)
        let value = asn1StringBytes(data)
        let decoded = try decodeExtension(OBJ_obj2nid(object), critical: critical, item: item, operation)
        result.append(try decoded ?? .other(oid: objectText(object, operation), critical: critical, value: value))
    }
    return result
}

/// Decodes the extensions Matter profiles with OpenSSL's own decoders; nil for any other.
private func decodeExtension(_ nid: Int32, critical: Bool, item: OpaquePointer,
                             _ operation: String) throws(CryptoError) -> X509Extension? {
    let reason = "malformed extension \(String(cString: OBJ_nid2sn(nid)))"
    switch nid {
    case NID_basic_constraints:
        guard let raw = X509V3_EXT_d2i(item) else { throw CryptoError(operation: operation, reason: reason) }
        let constraints = raw.assumingMemoryBound(to: BASIC_CONSTRAINTS.self)
        defer { BASIC_CONSTRAINTS_free(constraints) }
        var pathLength: Int? = nil
        if let length = constraints.pointee.pathlen {
            let value = ASN1_INTEGER_get(length)
            guard value >= 0 else { throw CryptoError(operation: operation, reason: reason) }
            pathLength = value
        }
        return .basicConstraints(critical: critical, isCA: constraints.pointee.ca != 0, pathLength: pathLength)
    case NID_key_usage:
        guard let raw = X509V3_EXT_d2i(item) else { throw CryptoError(operation: operation, reason: reason) }
        let bits = raw.assumingMemoryBound(to: ASN1_BIT_STRING.self)
        defer { ASN1_BIT_STRING_free(bits) }
        var usage: UInt16 = 0
        for bit in 0..<9 where ASN1_BIT_STRING_get_bit(bits, Int32(bit)) == 1 { usage |= 1 << bit }
        return .keyUsage(critical: critical, X509Extension.KeyUsage(rawValue: usage))
    case NID_ext_key_usage:
        guard let raw = X509V3_EXT_d2i(item) else { throw CryptoError(operation: operation, reason: reason) }
        let stack = OpaquePointer(raw)
        defer { OPENSSL_sk_pop_free(stack) { ASN1_OBJECT_free(OpaquePointer($0)) } }
        var purposes: [String] = []
        for index in 0..<OPENSSL_sk_num(stack) {
            purposes.append(try objectText(OPENSSL_sk_value(stack, index).map { OpaquePointer($0) }, operation))
        }
        return .extendedKeyUsage(critical: critical, purposes)
    case NID_subject_key_identifier:
        guard let raw = X509V3_EXT_d2i(item) else { throw CryptoError(operation: operation, reason: reason) }
        let octets = raw.assumingMemoryBound(to: ASN1_OCTET_STRING.self)
        defer { ASN1_OCTET_STRING_free(octets) }
        return .subjectKeyIdentifier(critical: critical, asn1StringBytes(octets))
    case NID_authority_key_identifier:
        guard let raw = X509V3_EXT_d2i(item) else { throw CryptoError(operation: operation, reason: reason) }
        let keyIdentifier = raw.assumingMemoryBound(to: AUTHORITY_KEYID.self)
        defer { AUTHORITY_KEYID_free(keyIdentifier) }
        // Matter's authority key identifier carries only keyIdentifier; one without it stays a raw extension.
        guard let identifier = keyIdentifier.pointee.keyid, keyIdentifier.pointee.issuer == nil,
              keyIdentifier.pointee.serial == nil else { return nil }
        return .authorityKeyIdentifier(critical: critical, asn1StringBytes(identifier))
    default:
        return nil
    }
}

/// Just enough DER to find the TBSCertificate inside a certificate without re-encoding it (OpenSSL's
/// `i2d_re_X509_tbs` re-encodes, which must not be trusted to reproduce the signed bytes).
enum DERReader {
    /// The first element (header and content) inside the outer SEQUENCE of `der`.
    static func firstElementOfSequence(_ der: [UInt8], _ operation: String) throws(CryptoError) -> [UInt8] {
        let outer = try header(der, at: 0, operation)
        guard der[0] == 0x30, outer.contentStart + outer.length == der.count else {
            throw CryptoError(operation: operation, reason: "not a single DER SEQUENCE")
        }
        let inner = try header(der, at: outer.contentStart, operation)
        guard der[outer.contentStart] == 0x30 else {
            throw CryptoError(operation: operation, reason: "TBSCertificate is not a SEQUENCE")
        }
        let end = inner.contentStart + inner.length
        guard end <= der.count else { throw CryptoError(operation: operation, reason: "truncated TBSCertificate") }
        return Array(der[outer.contentStart..<end])
    }

    /// The tag's content start and length at `offset` (single-byte tags, definite lengths up to 4 bytes).
    private static func header(_ der: [UInt8], at offset: Int,
                               _ operation: String) throws(CryptoError) -> (contentStart: Int, length: Int) {
        guard offset + 2 <= der.count else { throw CryptoError(operation: operation, reason: "truncated DER") }
        let first = Int(der[offset + 1])
        if first < 0x80 { return (offset + 2, first) }
        let count = first & 0x7F
        guard count >= 1, count <= 4, offset + 2 + count <= der.count else {
            throw CryptoError(operation: operation, reason: "unsupported DER length")
        }
        var length = 0
        for byte in der[(offset + 2)..<(offset + 2 + count)] { length = length << 8 | Int(byte) }
        let contentStart = offset + 2 + count
        guard length <= der.count - contentStart else {
            throw CryptoError(operation: operation, reason: "truncated DER")
        }
        return (contentStart, length)
    }
}
