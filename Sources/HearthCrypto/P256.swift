// NIST P-256 over libcrypto: keys, ECDSA with SHA-256 and ECDH for Matter's CASE, attestation and certificates, and
// the point and scalar arithmetic SPAKE2+ needs (EC_POINT and BN; no field arithmetic is written here).
import COpenSSL

/// NIST P-256 (secp256r1, prime256v1).
public enum P256 {
    /// Bytes of a scalar or of a coordinate.
    public static let scalarByteCount = 32
}

// MARK: - Owned handles

/// P-256's `EC_GROUP` and its order n, made once and only read afterwards.
final class CurveGroup: @unchecked Sendable {
    let group: OpaquePointer
    let order: BigNumber

    static let shared: Result<CurveGroup, CryptoError> = {
        do throws(CryptoError) { return .success(try CurveGroup()) } catch { return .failure(error) }
    }()

    static func get() throws(CryptoError) -> CurveGroup { try shared.get() }

    private init() throws(CryptoError) {
        clearOpenSSLErrors()
        group = try requireHandle(EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1), "P-256 group")
        do throws(CryptoError) {
            order = try BigNumber(EC_GROUP_get0_order(group).flatMap { BN_dup($0) }, "P-256 order")
        } catch {
            EC_GROUP_free(group)
            throw error
        }
    }

    deinit { EC_GROUP_free(group) }
}

/// An owned `BIGNUM`, cleared when freed (scalars may be secret).
final class BigNumber {
    let pointer: OpaquePointer

    init(_ pointer: OpaquePointer?, _ operation: String) throws(CryptoError) {
        self.pointer = try requireHandle(pointer, operation)
    }

    convenience init() throws(CryptoError) { try self.init(BN_new(), "BIGNUM") }

    convenience init(bigEndian bytes: [UInt8]) throws(CryptoError) {
        clearOpenSSLErrors()
        try self.init(bytes.withNonNullBytes { BN_bin2bn($0, Int32($1), nil) }, "BIGNUM from bytes")
    }

    deinit { BN_clear_free(pointer) }

    /// Big-endian, left-padded to `count` bytes; throws if the number does not fit.
    func bytes(count: Int, _ operation: String) throws(CryptoError) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: count)
        let written = output.withUnsafeMutableBufferPointer { BN_bn2binpad(pointer, $0.baseAddress, Int32(count)) }
        guard written == count else {
            throw CryptoError(operation: operation, reason: "number does not fit in \(count) bytes")
        }
        return output
    }
}

/// An owned `BN_CTX` for temporaries.
final class BigNumberContext {
    let pointer: OpaquePointer

    init() throws(CryptoError) {
        clearOpenSSLErrors()
        pointer = try requireHandle(BN_CTX_new(), "BN_CTX")
    }

    deinit { BN_CTX_free(pointer) }
}

/// An owned `EC_POINT` on P-256.
final class ECPointHandle {
    let pointer: OpaquePointer

    init(_ curve: CurveGroup) throws(CryptoError) {
        clearOpenSSLErrors()
        pointer = try requireHandle(EC_POINT_new(curve.group), "EC point")
    }

    deinit { EC_POINT_free(pointer) }
}

/// An owned `EVP_PKEY`.
final class EVPKey {
    let pointer: OpaquePointer

    init(_ pointer: OpaquePointer?, _ operation: String) throws(CryptoError) {
        self.pointer = try requireHandle(pointer, operation)
    }

    deinit { EVP_PKEY_free(pointer) }

    /// A P-256 key from OSSL_PARAMs: the public point and, for a key pair, the private scalar.
    static func p256(publicPoint: [UInt8], privateScalar: BigNumber?) throws(CryptoError) -> EVPKey {
        let operation = "P-256 key"
        clearOpenSSLErrors()
        let builder = try requireHandle(OSSL_PARAM_BLD_new(), operation)
        defer { OSSL_PARAM_BLD_free(builder) }
        // The builder keeps the value pointers it is given until `to_param` copies them, so everything is pushed
        // and converted while the strings and bytes are lent; the keys it never copies are static C literals.
        let made: UnsafeMutablePointer<OSSL_PARAM>? = "prime256v1".withCString { groupName in
            publicPoint.withNonNullBytes { bytes, count in
                guard OSSL_PARAM_BLD_push_utf8_string(builder, hearth_param_group_name(), groupName, 0) == 1,
                    OSSL_PARAM_BLD_push_octet_string(builder, hearth_param_public_key(), bytes, count) == 1
                else { return nil }
                if let privateScalar,
                    OSSL_PARAM_BLD_push_BN(builder, hearth_param_private_key(), privateScalar.pointer) != 1
                {
                    return nil
                }
                return OSSL_PARAM_BLD_to_param(builder)
            }
        }
        let params = try requireHandle(made, operation)
        defer { OSSL_PARAM_free(params) }
        let context = try requireHandle(EVP_PKEY_CTX_new_from_name(nil, hearth_key_type_ec(), nil), operation)
        defer { EVP_PKEY_CTX_free(context) }
        try requireOne(EVP_PKEY_fromdata_init(context), operation)
        var key: OpaquePointer? = nil
        let selection = privateScalar == nil ? hearth_evp_pkey_public_key : hearth_evp_pkey_keypair
        try requireOne(EVP_PKEY_fromdata(context, &key, selection, params), operation)
        return try EVPKey(key, operation)
    }
}

// MARK: - Scalars and points

extension P256 {
    /// An integer modulo the group order n, as SPAKE2+ uses them (w0, w1, x, y). Its bytes are not printed.
    public struct Scalar: Sendable, Equatable, CustomStringConvertible, CustomReflectable {
        /// Big-endian, 32 bytes, less than n.
        public let rawRepresentation: [UInt8]

        /// Any number of big-endian bytes, reduced modulo n (as Matter reduces PBKDF2's 40-byte w0s and w1s).
        public init(reducing bytes: [UInt8]) throws(CryptoError) {
            let curve = try CurveGroup.get()
            let context = try BigNumberContext()
            let value = try BigNumber(bigEndian: bytes)
            let reduced = try BigNumber()
            try requireOne(BN_nnmod(reduced.pointer, value.pointer, curve.order.pointer, context.pointer),
                           "scalar reduction")
            rawRepresentation = try reduced.bytes(count: P256.scalarByteCount, "scalar reduction")
        }

        /// Exactly 32 big-endian bytes of a number less than n; throws otherwise.
        public init(rawRepresentation bytes: [UInt8]) throws(CryptoError) {
            guard bytes.count == P256.scalarByteCount else {
                throw CryptoError(operation: "P-256 scalar", reason: "\(bytes.count) bytes, not 32")
            }
            let curve = try CurveGroup.get()
            let value = try BigNumber(bigEndian: bytes)
            guard BN_cmp(value.pointer, curve.order.pointer) < 0 else {
                throw CryptoError(operation: "P-256 scalar", reason: "not less than the group order")
            }
            rawRepresentation = bytes
        }

        private init(unchecked bytes: [UInt8]) { rawRepresentation = bytes }

        /// A uniformly random scalar in 1..<n.
        public static func random() throws(CryptoError) -> Scalar {
            let curve = try CurveGroup.get()
            let value = try BigNumber()
            repeat {
                clearOpenSSLErrors()
                try requireOne(BN_priv_rand_range(value.pointer, curve.order.pointer), "random scalar")
            } while BN_is_zero(value.pointer) == 1
            return Scalar(unchecked: try value.bytes(count: P256.scalarByteCount, "random scalar"))
        }

        public var isZero: Bool { rawRepresentation.allSatisfy { $0 == 0 } }

        var bigNumber: BigNumber { get throws(CryptoError) { try BigNumber(bigEndian: rawRepresentation) } }

        private static func combine(
            _ a: Scalar, _ b: Scalar, _ operation: String,
            _ body: (OpaquePointer, OpaquePointer, OpaquePointer, OpaquePointer, OpaquePointer) -> Int32
        ) throws(CryptoError) -> Scalar {
            let curve = try CurveGroup.get()
            let context = try BigNumberContext()
            let result = try BigNumber()
            let left = try a.bigNumber, right = try b.bigNumber
            clearOpenSSLErrors()
            try requireOne(body(result.pointer, left.pointer, right.pointer, curve.order.pointer, context.pointer),
                           operation)
            return Scalar(unchecked: try result.bytes(count: P256.scalarByteCount, operation))
        }

        public static func + (a: Scalar, b: Scalar) throws(CryptoError) -> Scalar {
            try combine(a, b, "scalar addition") { BN_mod_add($0, $1, $2, $3, $4) }
        }

        public static func * (a: Scalar, b: Scalar) throws(CryptoError) -> Scalar {
            try combine(a, b, "scalar multiplication") { BN_mod_mul($0, $1, $2, $3, $4) }
        }

        public static prefix func - (a: Scalar) throws(CryptoError) -> Scalar {
            try combine(Scalar(unchecked: [UInt8](repeating: 0, count: 32)), a, "scalar negation") {
                BN_mod_sub($0, $1, $2, $3, $4)
            }
        }

        public static func == (a: Scalar, b: Scalar) -> Bool {
            constantTimeEqual(a.rawRepresentation, b.rawRepresentation)
        }
        public var description: String { "P256.Scalar(redacted)" }
        public var customMirror: Mirror { Mirror(self, children: []) }
    }

    /// A point of P-256, possibly the point at infinity (which sums and products can give, and outside input cannot).
    public struct Point: Sendable, Equatable {
        /// SEC1 encoding: 65 bytes uncompressed (0x04 ‖ x ‖ y), or the single byte 0x00 for the point at infinity.
        private let encoding: [UInt8]

        /// A point from its SEC1 encoding (uncompressed, 65 bytes, or compressed, 33 bytes), checked to be on the
        /// curve; the point at infinity is refused.
        public init(sec1 bytes: [UInt8]) throws(CryptoError) {
            let operation = "P-256 point"
            guard bytes.count == 65 && bytes[0] == 0x04 || bytes.count == 33 && (bytes[0] == 0x02 || bytes[0] == 0x03)
            else {
                throw CryptoError(operation: operation, reason: "not a SEC1 point encoding (\(bytes.count) bytes)")
            }
            let curve = try CurveGroup.get()
            let point = try ECPointHandle(curve)
            let context = try BigNumberContext()
            clearOpenSSLErrors()
            try requireOne(EC_POINT_oct2point(curve.group, point.pointer, bytes, bytes.count, context.pointer),
                           operation)
            guard EC_POINT_is_on_curve(curve.group, point.pointer, context.pointer) == 1 else {
                throw CryptoError(operation: operation, reason: "point is not on the curve")
            }
            guard EC_POINT_is_at_infinity(curve.group, point.pointer) == 0 else {
                throw CryptoError(operation: operation, reason: "point at infinity")
            }
            encoding = try Point.encode(point, curve, context)
        }

        private init(encoding: [UInt8]) { self.encoding = encoding }

        /// The generator G.
        public static var generator: Point {
            get throws(CryptoError) {
                let curve = try CurveGroup.get()
                let context = try BigNumberContext()
                guard let generator = EC_GROUP_get0_generator(curve.group) else {
                    throw CryptoError.openSSL("P-256 generator")
                }
                let point = try ECPointHandle(curve)
                try requireOne(EC_POINT_copy(point.pointer, generator), "P-256 generator")
                return Point(encoding: try encode(point, curve, context))
            }
        }

        public var isInfinity: Bool { encoding == [0x00] }

        /// 0x04 ‖ x ‖ y, 65 bytes; throws for the point at infinity, which has no such encoding.
        public var sec1Uncompressed: [UInt8] {
            get throws(CryptoError) {
                guard !isInfinity else {
                    throw CryptoError(operation: "P-256 point encoding", reason: "point at infinity")
                }
                return encoding
            }
        }

        /// k·P.
        public static func * (point: Point, scalar: Scalar) throws(CryptoError) -> Point {
            try operate("point multiplication") { curve, result, context throws(CryptoError) in
                let p = try point.handle(curve, context)
                let k = try scalar.bigNumber
                return EC_POINT_mul(curve.group, result, nil, p.pointer, k.pointer, context)
            }
        }

        public static func * (scalar: Scalar, point: Point) throws(CryptoError) -> Point { try point * scalar }

        /// P + Q.
        public static func + (a: Point, b: Point) throws(CryptoError) -> Point {
            try operate("point addition") { curve, result, context throws(CryptoError) in
                let p = try a.handle(curve, context), q = try b.handle(curve, context)
                return EC_POINT_add(curve.group, result, p.pointer, q.pointer, context)
            }
        }

        /// −P.
        public static prefix func - (a: Point) throws(CryptoError) -> Point {
            try operate("point negation") { curve, result, context throws(CryptoError) in
                let p = try a.handle(curve, context)
                guard EC_POINT_copy(result, p.pointer) == 1 else { return 0 }
                return EC_POINT_invert(curve.group, result, context)
            }
        }

        public static func - (a: Point, b: Point) throws(CryptoError) -> Point { try a + (try -b) }

        /// k1·P1 + k2·P2.
        public static func multiplyAdd(_ k1: Scalar, _ p1: Point, _ k2: Scalar, _ p2: Point) throws(CryptoError)
            -> Point
        {
            try (p1 * k1) + (p2 * k2)
        }

        private static func operate(
            _ operation: String, _ body: (CurveGroup, OpaquePointer, OpaquePointer) throws(CryptoError) -> Int32
        ) throws(CryptoError) -> Point {
            let curve = try CurveGroup.get()
            let context = try BigNumberContext()
            let result = try ECPointHandle(curve)
            clearOpenSSLErrors()
            try requireOne(try body(curve, result.pointer, context.pointer), operation)
            return Point(encoding: try encode(result, curve, context))
        }

        func handle(_ curve: CurveGroup, _ context: OpaquePointer) throws(CryptoError) -> ECPointHandle {
            let point = try ECPointHandle(curve)
            if isInfinity {
                try requireOne(EC_POINT_set_to_infinity(curve.group, point.pointer), "P-256 point")
            } else {
                try requireOne(EC_POINT_oct2point(curve.group, point.pointer, encoding, encoding.count, context),
                               "P-256 point")
            }
            return point
        }

        private static func encode(_ point: ECPointHandle, _ curve: CurveGroup,
                                   _ context: BigNumberContext) throws(CryptoError) -> [UInt8] {
            try encode(point, curve, context.pointer)
        }

        private static func encode(_ point: ECPointHandle, _ curve: CurveGroup,
                                   _ context: OpaquePointer) throws(CryptoError) -> [UInt8] {
            if EC_POINT_is_at_infinity(curve.group, point.pointer) == 1 { return [0x00] }
            var output = [UInt8](repeating: 0, count: 65)
            let written = output.withUnsafeMutableBufferPointer {
                EC_POINT_point2oct(
                    curve.group, point.pointer, POINT_CONVERSION_UNCOMPRESSED, $0.baseAddress, 65, context)
            }
            guard written == 65 else { throw CryptoError.openSSL("P-256 point encoding") }
            return output
        }
    }
}

// MARK: - Keys and signatures

extension P256 {
    /// An ECDSA signature: r and s.
    public struct Signature: Sendable, Equatable {
        /// r ‖ s, 32 bytes each (Matter's encoding in TLV certificates and attestation).
        public let rawRepresentation: [UInt8]

        public init(rawRepresentation: [UInt8]) throws(CryptoError) {
            guard rawRepresentation.count == 64 else {
                throw CryptoError(operation: "ECDSA signature", reason: "\(rawRepresentation.count) bytes, not 64")
            }
            self.rawRepresentation = rawRepresentation
        }

        /// From the DER `ECDSA-Sig-Value` X.509 uses.
        public init(derRepresentation der: [UInt8]) throws(CryptoError) {
            let operation = "ECDSA signature DER"
            let signature = try derDecoded(operation, der, { d2i_ECDSA_SIG(nil, $0, $1) }, free: { ECDSA_SIG_free($0) })
            defer { ECDSA_SIG_free(signature) }
            var r: OpaquePointer? = nil, s: OpaquePointer? = nil
            ECDSA_SIG_get0(signature, &r, &s)
            guard let r, let s else { throw CryptoError(operation: operation, reason: "missing r or s") }
            var raw = [UInt8](repeating: 0, count: 64)
            let fits = raw.withUnsafeMutableBufferPointer {
                BN_bn2binpad(r, $0.baseAddress, 32) == 32 && BN_bn2binpad(s, $0.baseAddress! + 32, 32) == 32
            }
            guard fits else { throw CryptoError(operation: operation, reason: "r or s longer than 32 bytes") }
            rawRepresentation = raw
        }

        /// The DER `ECDSA-Sig-Value` (SEQUENCE of INTEGER r, INTEGER s).
        public var derRepresentation: [UInt8] {
            get throws(CryptoError) {
                let operation = "ECDSA signature DER"
                clearOpenSSLErrors()
                let signature = try requireHandle(ECDSA_SIG_new(), operation)
                defer { ECDSA_SIG_free(signature) }
                let r = rawRepresentation.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, 32, nil) }
                let s = rawRepresentation.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress! + 32, 32, nil) }
                guard let r, let s, ECDSA_SIG_set0(signature, r, s) == 1 else {
                    BN_free(r)
                    BN_free(s)
                    throw CryptoError.openSSL(operation)
                }
                return try derEncoded(operation) { i2d_ECDSA_SIG(signature, $0) }
            }
        }
    }

    /// A P-256 public key.
    public struct PublicKey: Sendable, Equatable, Hashable {
        /// 0x04 ‖ x ‖ y, 65 bytes.
        public let x963Representation: [UInt8]

        /// From 65 uncompressed bytes, checked to be a point on the curve (not infinity).
        public init(x963Representation bytes: [UInt8]) throws(CryptoError) {
            guard bytes.count == 65 else {
                throw CryptoError(operation: "P-256 public key", reason: "\(bytes.count) bytes, not 65")
            }
            x963Representation = try Point(sec1: bytes).sec1Uncompressed
        }

        public init(point: Point) throws(CryptoError) { x963Representation = try point.sec1Uncompressed }

        /// The public key of an `EVP_PKEY`, which must be a P-256 key.
        init(evpKey: OpaquePointer) throws(CryptoError) {
            let operation = "P-256 public key"
            guard EVP_PKEY_is_a(evpKey, "EC") == 1 else {
                throw CryptoError(operation: operation, reason: "not an EC key")
            }
            var name = [CChar](repeating: 0, count: 64)
            var nameLength = 0
            guard EVP_PKEY_get_utf8_string_param(evpKey, "group", &name, name.count, &nameLength) == 1,
                  String(decoding: name.prefix(nameLength).map { UInt8(bitPattern: $0) }, as: UTF8.self) == "prime256v1"
            else {
                clearOpenSSLErrors()
                throw CryptoError(operation: operation, reason: "not on P-256")
            }
            var bytes = [UInt8](repeating: 0, count: 65)
            var length = 0
            clearOpenSSLErrors()
            try requireOne(EVP_PKEY_get_octet_string_param(evpKey, "encoded-pub-key", &bytes, 65, &length), operation)
            guard length == 65 else {
                throw CryptoError(operation: operation, reason: "encoded point is \(length) bytes, not 65")
            }
            try self.init(x963Representation: bytes)
        }

        public var point: Point { get throws(CryptoError) { try Point(sec1: x963Representation) } }

        func evpKey() throws(CryptoError) -> EVPKey {
            try EVPKey.p256(publicPoint: x963Representation, privateScalar: nil)
        }

        /// Whether `signature` is an ECDSA-with-SHA-256 signature of `message` by this key.
        public func isValidSignature(_ signature: Signature, for message: [UInt8]) -> Bool {
            guard let der = try? signature.derRepresentation, let key = try? evpKey() else { return false }
            return isValidDERSignature(der, for: message, key: key)
        }

        func isValidDERSignature(_ der: [UInt8], for message: [UInt8], key: EVPKey) -> Bool {
            guard let context = EVP_MD_CTX_new() else { return false }
            defer {
                EVP_MD_CTX_free(context)
                clearOpenSSLErrors()
            }
            guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key.pointer) == 1 else { return false }
            return der.withNonNullBytes { derBytes, derCount in
                message.withNonNullBytes { messageBytes, messageCount in
                    EVP_DigestVerify(context, derBytes, derCount, messageBytes, messageCount) == 1
                }
            }
        }
    }

    /// A P-256 private key. Its bytes are never printed.
    public struct SigningKey: Sendable, CustomStringConvertible, CustomReflectable {
        private let scalar: Scalar
        public let publicKey: PublicKey

        /// A fresh random key.
        public init() throws(CryptoError) {
            try self.init(scalar: try Scalar.random())
        }

        /// From its 32-byte big-endian private scalar, which must be in 1..<n.
        public init(rawRepresentation: [UInt8]) throws(CryptoError) {
            let scalar = try Scalar(rawRepresentation: rawRepresentation)
            guard !scalar.isZero else { throw CryptoError(operation: "P-256 private key", reason: "zero scalar") }
            try self.init(scalar: scalar)
        }

        private init(scalar: Scalar) throws(CryptoError) {
            self.scalar = scalar
            publicKey = try PublicKey(point: try Point.generator * scalar)
        }

        /// The 32-byte big-endian private scalar, for storing the key.
        public var rawRepresentation: [UInt8] { scalar.rawRepresentation }

        func evpKey() throws(CryptoError) -> EVPKey {
            try EVPKey.p256(publicPoint: publicKey.x963Representation, privateScalar: try scalar.bigNumber)
        }

        /// ECDSA with SHA-256 over `message`.
        public func signature(for message: [UInt8]) throws(CryptoError) -> Signature {
            try Signature(derRepresentation: try derSignature(for: message))
        }

        func derSignature(for message: [UInt8]) throws(CryptoError) -> [UInt8] {
            let operation = "ECDSA sign"
            let key = try evpKey()
            clearOpenSSLErrors()
            let context = try requireHandle(EVP_MD_CTX_new(), operation)
            defer { EVP_MD_CTX_free(context) }
            try requireOne(EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key.pointer), operation)
            var length = 0
            try message.withNonNullBytes { (bytes, count) throws(CryptoError) in
                try requireOne(EVP_DigestSign(context, nil, &length, bytes, count), operation)
            }
            var der = [UInt8](repeating: 0, count: length)
            try message.withNonNullBytes { (bytes, count) throws(CryptoError) in
                try requireOne(
                    der.withUnsafeMutableBufferPointer {
                        EVP_DigestSign(context, $0.baseAddress, &length, bytes, count)
                    },
                    operation)
            }
            return Array(der.prefix(length))
        }

        /// ECDH: the x coordinate (32 bytes) of this key's scalar times `publicKey`.
        public func sharedSecret(with publicKey: PublicKey) throws(CryptoError) -> [UInt8] {
            let operation = "ECDH"
            let key = try evpKey(), peer = try publicKey.evpKey()
            clearOpenSSLErrors()
            let context = try requireHandle(EVP_PKEY_CTX_new_from_pkey(nil, key.pointer, nil), operation)
            defer { EVP_PKEY_CTX_free(context) }
            try requireOne(EVP_PKEY_derive_init(context), operation)
            try requireOne(EVP_PKEY_derive_set_peer(context, peer.pointer), operation)
            var length = 32
            var secret = [UInt8](repeating: 0, count: 32)
            try requireOne(secret.withUnsafeMutableBufferPointer { EVP_PKEY_derive(context, $0.baseAddress, &length) },
                           operation)
            guard length == 32 else { throw CryptoError(operation: operation, reason: "secret is \(length) bytes") }
            return secret
        }

        public var description: String { "P256.SigningKey(redacted)" }
        public var customMirror: Mirror { Mirror(self, children: ["publicKey": publicKey]) }
    }
}
