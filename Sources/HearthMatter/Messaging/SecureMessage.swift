// Secured and unsecured Matter messages (core specification 4.7 and 4.8): a secured message is its header in clear,
// then the payload header and payload under AES-CCM with a 16-byte MIC, the nonce being the security flags, the
// counter and the source node id, and the header the authenticated data.

import HearthCrypto

/// AES-CCM-128 with a 13-byte nonce and a 16-byte tag, as the message layer uses it: `AESCCMMessageCipher`
/// (HearthCrypto's `AESCCM128`) in use; a protocol so that tests of framing and sessions can stand in for it.
public protocol MessageCipher: Sendable {
    /// Ciphertext followed by the 16-byte tag.
    func seal(key: [UInt8], nonce: [UInt8], plaintext: [UInt8], authenticatedData: [UInt8]) throws -> [UInt8]
    /// The plaintext, or an error when the tag does not verify.
    func open(key: [UInt8], nonce: [UInt8], ciphertextAndTag: [UInt8], authenticatedData: [UInt8]) throws -> [UInt8]
}

/// A message: its header, its payload header and the application payload, as sent or as received.
public struct MatterMessage: Sendable, Equatable {
    public var header: MessageHeader
    public var payloadHeader: PayloadHeader
    public var payload: [UInt8]

    public init(header: MessageHeader, payloadHeader: PayloadHeader, payload: [UInt8]) {
        self.header = header
        self.payloadHeader = payloadHeader
        self.payload = payload
    }

    public static let micLength = 16

    /// The bytes of an unsecured message: nothing encrypted.
    public func encodedUnsecured() -> [UInt8] {
        var out = header.encoded()
        payloadHeader.encode(into: &out)
        out.append(contentsOf: payload)
        return out
    }

    /// Reads an unsecured message (the caller has seen from the header that the session is unsecured).
    public static func decodeUnsecured(_ bytes: [UInt8]) throws(MessageError) -> MatterMessage {
        let (header, headerLength) = try MessageHeader.decode(bytes)
        let (payloadHeader, length) = try PayloadHeader.decode(bytes[headerLength...], baseOffset: headerLength)
        return MatterMessage(
            header: header, payloadHeader: payloadHeader, payload: Array(bytes[(headerLength + length)...]))
    }

    /// The 13-byte nonce: security flags, message counter (LE), source node id (LE).
    public static func nonce(securityFlags: UInt8, messageCounter: UInt32, sourceNodeID: UInt64) -> [UInt8] {
        var nonce = [securityFlags]
        nonce.appendLittleEndian(UInt64(messageCounter), width: 4)
        nonce.appendLittleEndian(sourceNodeID, width: 8)
        return nonce
    }

    /// The bytes of a secured message. `sourceNodeID` is the sender's node id for the nonce (the header's when it
    /// has one; in a unicast session, the sender's operational node id, or 0 for a PASE session).
    public func encodedSecured(key: [UInt8], sourceNodeID: UInt64, cipher: some MessageCipher) throws -> [UInt8] {
        let aad = header.encoded()
        var plaintext = payloadHeader.encoded()
        plaintext.append(contentsOf: payload)
        let nonce = Self.nonce(securityFlags: header.securityFlags, messageCounter: header.messageCounter,
                               sourceNodeID: header.sourceNodeID ?? sourceNodeID)
        return aad + (try cipher.seal(key: key, nonce: nonce, plaintext: plaintext, authenticatedData: aad))
    }

    /// Opens a secured message whose header was read already (`MessageHeader.decode` gave `header` and
    /// `headerLength`). A MIC that does not verify is `authenticationFailed`; a payload header that does not parse
    /// after decryption is refused with its offset in the plaintext's place in the message.
    public static func decodeSecured(
        _ bytes: [UInt8], header: MessageHeader, headerLength: Int, key: [UInt8],
        sourceNodeID: UInt64, cipher: some MessageCipher
    ) throws(MessageError) -> MatterMessage
    {
        guard bytes.count - headerLength >= micLength else {
            throw MessageError(.missingIntegrityCheck, at: headerLength)
        }
        let aad = Array(bytes[..<headerLength])
        let nonce = nonce(securityFlags: header.securityFlags, messageCounter: header.messageCounter,
                          sourceNodeID: header.sourceNodeID ?? sourceNodeID)
        let plaintext: [UInt8]
        do {
            plaintext = try cipher.open(key: key, nonce: nonce, ciphertextAndTag: Array(bytes[headerLength...]),
                                        authenticatedData: aad)
        } catch {
            throw MessageError(.authenticationFailed, at: headerLength)
        }
        let (payloadHeader, length) = try PayloadHeader.decode(plaintext, baseOffset: headerLength)
        return MatterMessage(header: header, payloadHeader: payloadHeader, payload: Array(plaintext[length...]))
    }
}

/// The message cipher in use: HearthCrypto's AES-CCM-128 (libcrypto).
public struct AESCCMMessageCipher: MessageCipher {
    public init() {}

    public func seal(key: [UInt8], nonce: [UInt8], plaintext: [UInt8], authenticatedData: [UInt8]) throws -> [UInt8] {
        try AESCCM128.seal(key: key, nonce: nonce, plaintext: plaintext, authenticatedData: authenticatedData)
    }

    public func open(key: [UInt8], nonce: [UInt8], ciphertextAndTag: [UInt8], authenticatedData: [UInt8]) throws
        -> [UInt8]
    {
        try AESCCM128.open(
            key: key, nonce: nonce, ciphertextAndTag: ciphertextAndTag, authenticatedData: authenticatedData)
    }
}
