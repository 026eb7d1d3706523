import HearthMatter

/// Matter TLV's promises (core specification appendix A): any bytes are either refused with a `TLVError` whose
/// offset lies within the input, or read as an element that the writer turns into bytes the reader takes back as the
/// same element; the writer is canonical (writing what it read back gives the same bytes again); and reading the
/// input as a prefix gives the same element, having read all of it.
enum MatterTLVTarget {
    static func run(_ bytes: [UInt8]) throws(FuzzFailure) {
        let element: TLVElement
        do {
            element = try TLVElement(decoding: bytes)
        } catch {
            try require((0...bytes.count).contains(error.offset), "\(error) is outside the \(bytes.count)-byte input")
            return
        }
        let encoded = element.encoded()
        let again: TLVElement
        do { again = try TLVElement(decoding: encoded) } catch {
            throw FuzzFailure("\(element) was written as bytes the reader refuses: \(error)")
        }
        try require(again == element, "\(element) read back as \(again)")
        try require(again.encoded() == encoded, "\(element) is not written the same way twice")
        try require(
            encoded.count <= bytes.count, "\(element) was written in \(encoded.count) bytes, read from \(bytes.count)")
        guard let prefix = try? TLVElement.decodePrefix(of: bytes) else {
            throw FuzzFailure("'\(shown(bytes))' decodes whole but not as a prefix")
        }
        try require(
            prefix.element == element && prefix.length == bytes.count, "the prefix reading of '\(shown(bytes))' differs"
        )
    }
}

/// The Matter message header's and payload header's promises (core specification 4.4): any bytes are either
/// refused with a `MessageError` whose offset lies within the input, or read as headers that encode to exactly the
/// bytes they were read from, apart from the reserved flag bits a receiver ignores; and an unsecured message read
/// whole is the headers and the rest.
enum MatterMessageTarget {
    static func run(_ bytes: [UInt8]) throws(FuzzFailure) {
        let header: MessageHeader, headerLength: Int
        do {
            (header, headerLength) = try MessageHeader.decode(bytes)
        } catch {
            try require((0...bytes.count).contains(error.offset), "\(error) is outside the \(bytes.count)-byte input")
            return
        }
        let encodedHeader = header.encoded()
        try require(
            encodedHeader.count == headerLength,
            "\(header) read from \(headerLength) bytes, written in \(encodedHeader.count)")
        try require(
            withoutReserved(encodedHeader, messageFlags: true)
                == withoutReserved(Array(bytes[..<headerLength]), messageFlags: true),
            "\(header) is written as other bytes than '\(shown(bytes[..<headerLength]))'")
        guard let (reread, _) = try? MessageHeader.decode(encodedHeader), reread == header else {
            throw FuzzFailure("\(header) does not read back")
        }

        let rest = Array(bytes[headerLength...])
        let payloadHeader: PayloadHeader, payloadLength: Int
        do {
            (payloadHeader, payloadLength) = try PayloadHeader.decode(rest, baseOffset: headerLength)
        } catch {
            try require(
                (headerLength...bytes.count).contains(error.offset), "\(error) is outside the payload header's bytes")
            return
        }
        let encodedPayloadHeader = payloadHeader.encoded()
        try require(
            encodedPayloadHeader.count == payloadLength,
            "\(payloadHeader) read from \(payloadLength) bytes, written in \(encodedPayloadHeader.count)")
        try require(
            withoutReserved(encodedPayloadHeader, messageFlags: false)
                == withoutReserved(Array(rest[..<payloadLength]), messageFlags: false),
            "\(payloadHeader) is written as other bytes")
        guard let message = try? MatterMessage.decodeUnsecured(bytes) else {
            throw FuzzFailure("'\(shown(bytes))' has both headers but is not read as a message")
        }
        try require(
            message.header == header && message.payloadHeader == payloadHeader
                && message.payload == Array(rest[payloadLength...]), "the message read whole differs from its parts")
        if let report = try? StatusReport(decoding: message.payload) {
            try require(report.encoded() == message.payload, "\(report) is not written as it was read")
        }
    }

    /// The bytes with the reserved bits of their first byte cleared (message flags: bit 3; exchange flags: 5–7) and,
    /// for a message header, those of the security flags (bits 2–4).
    static func withoutReserved(_ bytes: [UInt8], messageFlags: Bool) -> [UInt8] {
        var out = bytes
        guard !out.isEmpty else { return out }
        if messageFlags {
            out[0] &= 0xF7
            if out.count > 3 { out[3] &= 0xE3 }
        } else {
            out[0] &= 0x1F
        }
        return out
    }
}
