// The keys and identifiers a fabric derives from its root and IPK: the compressed fabric identifier (4.3.2.2), the
// operational group key of the IPK epoch key (4.17.2), and CASE's destination identifier (4.14.2.4).
public import HearthCrypto

public enum FabricKeys {
    /// HKDF-SHA256(root public key without its 0x04 prefix, salt: fabric id big-endian, "CompressedFabric"), 8 bytes.
    public static func compressedFabricID(rootPublicKey: [UInt8], fabricID: UInt64) throws(CryptoError) -> [UInt8] {
        guard rootPublicKey.count == 65, rootPublicKey[0] == 0x04 else {
            throw CryptoError(operation: "compressed fabric id", reason: "root public key is not an uncompressed point")
        }
        return try HKDFSHA256.deriveKey(
            inputKeyMaterial: Array(rootPublicKey.dropFirst()), salt: bigEndian(fabricID),
            info: Array("CompressedFabric".utf8), outputByteCount: 8)
    }

    /// The compressed fabric identifier as the number DNS-SD names print in hex.
    public static func compressedFabricIDValue(rootPublicKey: [UInt8], fabricID: UInt64) throws(CryptoError) -> UInt64 {
        try compressedFabricID(rootPublicKey: rootPublicKey, fabricID: fabricID).reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// An operational group key from an epoch key: HKDF(epoch key, salt: compressed fabric id, "GroupKey v1.0"),
    /// 16 bytes. The IPK CASE uses is this key of the fabric's IPK epoch key.
    public static func operationalGroupKey(epochKey: [UInt8], compressedFabricID: [UInt8]) throws(CryptoError)
        -> [UInt8]
    {
        guard epochKey.count == 16, compressedFabricID.count == 8 else {
            throw CryptoError(
                operation: "operational group key", reason: "epoch key or compressed fabric id of the wrong size")
        }
        return try HKDFSHA256.deriveKey(
            inputKeyMaterial: epochKey, salt: compressedFabricID, info: Array("GroupKey v1.0".utf8), outputByteCount: 16
        )
    }

    /// CASE's destination identifier: HMAC-SHA256(IPK, initiator random ‖ root public key ‖ fabric id ‖ node id),
    /// the two ids little-endian.
    public static func destinationID(
        ipk: [UInt8], initiatorRandom: [UInt8], rootPublicKey: [UInt8], fabricID: UInt64, nodeID: UInt64
    ) -> [UInt8] {
        HMACSHA256.authenticationCode(
            key: ipk, data: initiatorRandom + rootPublicKey + littleEndian(fabricID) + littleEndian(nodeID))
    }

    static func bigEndian(_ v: UInt64) -> [UInt8] {
        (0..<8).reversed().map { UInt8(truncatingIfNeeded: v >> (8 * $0)) }
    }
    static func littleEndian(_ v: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
}
