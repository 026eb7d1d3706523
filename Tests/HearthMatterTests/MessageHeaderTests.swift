import HearthMatter
import Testing

@Suite struct MessageHeaderTests {
    @Test func unsecuredHeaderWithSourceNode() throws {
        let header = MessageHeader(messageCounter: 0x0102_0304, sourceNodeID: 0x1122_3344_5566_7788)
        let bytes = header.encoded()
        #expect(bytes == hexBytes("04 0000 00 04030201 8877665544332211"))
        let (decoded, length) = try MessageHeader.decode(bytes + [0xAA])
        #expect(decoded == header)
        #expect(length == bytes.count)
        #expect(decoded.isUnsecured)
    }

    @Test func everyFieldRoundTrips() throws {
        let headers = [
            MessageHeader(sessionID: 0xBEEF, messageCounter: 7),
            MessageHeader(sessionID: 1, isControlMessage: true, messageCounter: .max, destination: .node(42)),
            MessageHeader(sessionID: 9, sessionType: .group, privacy: true, messageCounter: 3, sourceNodeID: 5,
                          destination: .group(0xFFFE), extensions: [1, 2, 3]),
            MessageHeader(messageCounter: 1, extensions: []),
        ]
        for header in headers {
            let bytes = header.encoded()
            let decodedHeader = try MessageHeader.decode(bytes)
            #expect(decodedHeader.header == header && decodedHeader.length == bytes.count)
        }
        #expect(headers[2].securityFlags == 0xA1)
        #expect(headers[1].securityFlags == 0x40)
    }

    @Test(arguments: [
        ("", MessageError(.truncated(needed: 1), at: 0)),
        ("00 00", MessageError(.truncated(needed: 1), at: 1)),
        ("00 0000 00 010000", MessageError(.truncated(needed: 1), at: 4)),
        ("04 0000 00 01000000 01", MessageError(.truncated(needed: 7), at: 8)),
        ("10 0000 00 01000000", MessageError(.unsupportedVersion(1), at: 0)),
        ("03 0000 00 01000000", MessageError(.reservedDestinationSize, at: 0)),
        ("00 0000 02 01000000", MessageError(.reservedSessionType(2), at: 3)),
        (
            "05 0100 01 01000000 0100000000000000 0200000000000000",
            MessageError(.groupMessageWithoutGroupDestination, at: 0)
        ),
        ("02 0100 01 01000000 0100", MessageError(.groupMessageWithoutSource, at: 0)),
        ("02 0100 00 01000000 0100", MessageError(.groupDestinationInUnicastMessage, at: 0)),
        ("00 0000 20 01000000 0300 01", MessageError(.truncated(needed: 2), at: 10))
    ])
    func malformedHeadersAreRefused(_ hex: String, _ error: MessageError) {
        #expect(throws: error) { try MessageHeader.decode(hexBytes(hex)) }
    }

    @Test func payloadHeaderRoundTripsAndFlags() throws {
        let header = PayloadHeader(isInitiator: true, needsAcknowledgement: true, opcode: 0x20, exchangeID: 0x1234,
                                   protocolID: .secureChannel, acknowledgedMessageCounter: 0xA0B0_C0D0)
        let bytes = header.encoded()
        #expect(bytes == hexBytes("07 20 3412 0000 D0C0B0A0"))
        let decodedHeader = try PayloadHeader.decode(bytes)
        #expect(decodedHeader.header == header && decodedHeader.length == bytes.count)
        let vendor = PayloadHeader(
            isInitiator: false, opcode: 1, exchangeID: 2, protocolID: ProtocolID(vendorID: 0xFFF1, 0x8000),
            securedExtensions: [9])
        let vendorBytes = vendor.encoded()
        #expect(vendorBytes == hexBytes("18 01 0200 F1FF 0080 0100 09"))
        let decodedVendor = try PayloadHeader.decode(vendorBytes)
        #expect(decodedVendor.header == vendor && decodedVendor.length == vendorBytes.count)
        #expect(throws: MessageError(.truncated(needed: 4), at: 16)) {
            try PayloadHeader.decode(hexBytes("02 10 0100 0000"), baseOffset: 10)
        }
    }

    @Test func statusReportCodesAndDecoding() throws {
        let report = StatusReport(.failure, .invalidParameter)
        #expect(report.encoded() == hexBytes("0100 00000000 0200"))
        #expect(try StatusReport(decoding: report.encoded()) == report)
        let im = StatusReport(.success, protocolID: .interactionModel, protocolCode: 0, protocolData: [1, 2])
        #expect(im.encoded() == hexBytes("0000 01000000 0000 0102"))
        #expect(try StatusReport(decoding: im.encoded()) == im)
        #expect(throws: MessageError(.truncated(needed: 1), at: 6)) {
            try StatusReport(decoding: hexBytes("0000 01000000 00"))
        }
        #expect(SecureChannelOpcode.standaloneAck.rawValue == 0x10)
        #expect(InteractionModelOpcode.invokeRequest.rawValue == 0x08)
    }

    @Test func unsecuredMessageRoundTrips() throws {
        let message = MatterMessage(
            header: MessageHeader(messageCounter: 100, sourceNodeID: 77),
            payloadHeader: PayloadHeader(isInitiator: true, needsAcknowledgement: true,
                                         opcode: SecureChannelOpcode.pbkdfParamRequest.rawValue, exchangeID: 5,
                                         protocolID: .secureChannel),
            payload: [0x15, 0x18])
        #expect(try MatterMessage.decodeUnsecured(message.encodedUnsecured()) == message)
    }

    @Test func nonceIsFlagsCounterAndSource() {
        #expect(
            MatterMessage.nonce(securityFlags: 0x01, messageCounter: 0x0403_0201, sourceNodeID: 0x0807_0605_0403_0201)
                == hexBytes("01 01020304 0102030405060708"))
    }

    @Test func securedMessageSealsAndOpens() throws {
        let cipher = ToyCipher()
        let key = Array(repeating: UInt8(7), count: 16)
        let message = MatterMessage(
            header: MessageHeader(sessionID: 0x55AA, messageCounter: 9),
            payloadHeader: PayloadHeader(isInitiator: false, opcode: 5, exchangeID: 3, protocolID: .interactionModel),
            payload: Array("hello".utf8))
        let bytes = try message.encodedSecured(key: key, sourceNodeID: 42, cipher: cipher)
        let (header, length) = try MessageHeader.decode(bytes)
        #expect(header == message.header)
        #expect(bytes.count == length + message.payloadHeader.encoded().count + 5 + MatterMessage.micLength)
        let opened = try MatterMessage.decodeSecured(
            bytes, header: header, headerLength: length, key: key, sourceNodeID: 42,
            cipher: cipher)
        #expect(opened == message)
        // Another source node id (another nonce), an altered header, an altered payload: refused.
        #expect(throws: MessageError(.authenticationFailed, at: length)) {
            try MatterMessage.decodeSecured(
                bytes, header: header, headerLength: length, key: key, sourceNodeID: 43, cipher: cipher)
        }
        var altered = bytes
        altered[2] ^= 1
        #expect(throws: MessageError(.authenticationFailed, at: length)) {
            try MatterMessage.decodeSecured(
                altered, header: header, headerLength: length, key: key, sourceNodeID: 42, cipher: cipher)
        }
        #expect(throws: MessageError(.missingIntegrityCheck, at: length)) {
            try MatterMessage.decodeSecured(
                Array(bytes.prefix(length + 15)), header: header, headerLength: length, key: key,
                sourceNodeID: 42, cipher: cipher)
        }
    }
}

/// A stand-in for AES-CCM in tests of the message layer's framing: XOR with a key stream, and a 16-byte tag that
/// depends on key, nonce, AAD and ciphertext. Not a cipher; HearthCrypto's AES-CCM is what runs.
struct ToyCipher: MessageCipher {
    struct BadTag: Error {}

    func tag(_ key: [UInt8], _ nonce: [UInt8], _ aad: [UInt8], _ ciphertext: [UInt8]) -> [UInt8] {
        var state: UInt64 = 0xCBF2_9CE4_8422_2325
        var out: [UInt8] = []
        // Built in steps: older compilers give up type-checking the one-expression concatenation.
        var input: [UInt8] = key + nonce
        input.append(0xFF)
        input += aad
        input.append(0xFE)
        input += ciphertext
        for round in 0..<16 {
            for b in input + [UInt8(round)] { state = (state ^ UInt64(b)) &* 0x100_0000_01B3 }
            out.append(UInt8(truncatingIfNeeded: state >> 29))
        }
        return out
    }

    func stream(_ key: [UInt8], _ nonce: [UInt8], _ count: Int) -> [UInt8] {
        (0..<count).map { key[$0 % key.count] ^ nonce[$0 % nonce.count] ^ UInt8(truncatingIfNeeded: $0) }
    }

    func seal(key: [UInt8], nonce: [UInt8], plaintext: [UInt8], authenticatedData: [UInt8]) throws -> [UInt8] {
        let ciphertext = zip(plaintext, stream(key, nonce, plaintext.count)).map { $0 ^ $1 }
        return ciphertext + tag(key, nonce, authenticatedData, ciphertext)
    }

    func open(key: [UInt8], nonce: [UInt8], ciphertextAndTag: [UInt8], authenticatedData: [UInt8]) throws -> [UInt8] {
        guard ciphertextAndTag.count >= 16 else { throw BadTag() }
        let ciphertext = Array(ciphertextAndTag.dropLast(16))
        guard tag(key, nonce, authenticatedData, ciphertext) == Array(ciphertextAndTag.suffix(16)) else {
            throw BadTag()
        }
        return zip(ciphertext, stream(key, nonce, ciphertext.count)).map { $0 ^ $1 }
    }
}

/// connectedhomeip's message vectors (src/transport/raw/tests/TestMessageHeader.cpp, src/transport/tests/
/// TestSessionManagerDispatch.cpp), through the real AES-CCM.
@Suite struct MessageVectorTests {
    @Test func specComplianceHeaders() throws {
        let secure = try MessageHeader.decode(hexBytes("00 8877 00 44332211"))
        #expect(secure.header == MessageHeader(sessionID: 0x7788, messageCounter: 0x1122_3344) && secure.length == 8)
        #expect(secure.header.encoded() == hexBytes("00 8877 00 44332211"))
        let unsecured = try MessageHeader.decode(hexBytes("00 0000 00 40302010"))
        #expect(unsecured.header.isUnsecured && unsecured.header.messageCounter == 0x1020_3040)
        // Its group vector has no source node id, which the specification requires of group messages.
        #expect(throws: MessageError(.groupMessageWithoutSource, at: 0)) {
            try MessageHeader.decode(hexBytes("02 EEDD C1 40302010 5634"))
        }
    }

    @Test func securePASEMessage() throws {
        let key = hexBytes("5ede d244 e553 2b3c dc23 409d bad0 52d2")
        let encrypted = hexBytes("00b80b00 39300000 5a989ae42e8d 847f535c3007e6150cd65867f2b817db")
        let (header, length) = try MessageHeader.decode(encrypted)
        #expect(header.sessionID == 3000 && header.messageCounter == 12345)
        #expect(
            MatterMessage.nonce(
                securityFlags: header.securityFlags, messageCounter: header.messageCounter, sourceNodeID: 0)
                == hexBytes("00 39300000 0000000000000000"))
        let message = try MatterMessage.decodeSecured(
            encrypted, header: header, headerLength: length, key: key, sourceNodeID: 0,
            cipher: AESCCMMessageCipher())
        #expect(
            message.payloadHeader
                == PayloadHeader(
                    isInitiator: true, needsAcknowledgement: true, opcode: 0x64, exchangeID: 0x0EEE,
                    protocolID: ProtocolID(0x7D20)))
        #expect(message.payload.isEmpty)
        #expect(try message.encodedSecured(key: key, sourceNodeID: 0, cipher: AESCCMMessageCipher()) == encrypted)
        var forged = encrypted
        forged[9] ^= 1
        #expect(throws: MessageError(.authenticationFailed, at: 8)) {
            try MatterMessage.decodeSecured(
                forged, header: header, headerLength: length, key: key, sourceNodeID: 0, cipher: AESCCMMessageCipher())
        }
    }
}

/// Any bytes: a typed error with an offset inside the input, or headers that encode back to the bytes they were read
/// from (reserved bits aside) and read back the same.
@Test func arbitraryHeaderBytesNeverCrashAndRoundTrip() throws {
    var generator = SplitMix64(seed: 44)
    var decoded = 0
    for _ in 0..<20_000 {
        let count = Int(generator.next() % 40)
        var bytes = (0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        // Mostly version 0, a known session type and no reserved bits, so that many inputs decode.
        if !bytes.isEmpty, generator.next() % 4 != 0 { bytes[0] &= 0x07 }
        if bytes.count > 3, generator.next() % 4 != 0 { bytes[3] &= 0xE1 }
        do {
            let (header, length) = try MessageHeader.decode(bytes)
            decoded += 1
            #expect(header.encoded().count == length)
            #expect(try MessageHeader.decode(header.encoded()).header == header)
            do {
                let (payloadHeader, payloadLength) = try PayloadHeader.decode(bytes[length...], baseOffset: length)
                #expect(payloadHeader.encoded().count == payloadLength)
                #expect(try PayloadHeader.decode(payloadHeader.encoded()).header == payloadHeader)
            } catch {
                #expect((length...bytes.count).contains(error.offset))
            }
        } catch {
            #expect((0...bytes.count).contains(error.offset))
        }
    }
    #expect(decoded > 1000)
}
