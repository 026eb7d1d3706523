// The Matter message header and the protocol (payload) header (core specification 4.4), with a strict decoder that
// says which byte is wrong, and the encoder. The message header travels in clear (it is the AAD of a secured
// message); the payload header is the first part of what a secure session encrypts.

/// What is wrong with a message's bytes, and where.
public struct MessageError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The message ends inside a field: `needed` more bytes were expected.
        case truncated(needed: Int)
        /// A message format version other than 0.
        case unsupportedVersion(UInt8)
        /// DSIZ 3, which the specification reserves.
        case reservedDestinationSize
        /// Session type 2 or 3, which the specification reserves.
        case reservedSessionType(UInt8)
        /// A group session message without the group id destination (DSIZ 2).
        case groupMessageWithoutGroupDestination
        /// A group session message without a source node id.
        case groupMessageWithoutSource
        /// A group id destination in a unicast session message.
        case groupDestinationInUnicastMessage
        /// A secured message too short to hold its 16-byte MIC.
        case missingIntegrityCheck
        /// The MIC did not verify: wrong key, or altered bytes.
        case authenticationFailed
    }

    public var kind: Kind
    /// The offset in the message of the field the problem is at.
    public var offset: Int

    public init(_ kind: Kind, at offset: Int) {
        self.kind = kind
        self.offset = offset
    }

    public var description: String {
        let what = switch kind {
        case .truncated(let n): "message ends \(n) byte\(n == 1 ? "" : "s") short"
        case .unsupportedVersion(let v): "message format version \(v) is not supported"
        case .reservedDestinationSize: "destination size 3 is reserved"
        case .reservedSessionType(let t): "session type \(t) is reserved"
        case .groupMessageWithoutGroupDestination: "group message without a group id"
        case .groupMessageWithoutSource: "group message without a source node id"
        case .groupDestinationInUnicastMessage: "unicast message addressed to a group"
        case .missingIntegrityCheck: "secured message shorter than its integrity check"
        case .authenticationFailed: "message integrity check failed"
        }
        return "Matter message: \(what) at byte \(offset)"
    }
}

/// A Matter message header.
public struct MessageHeader: Sendable, Equatable {
    /// Where the message goes, beyond the session: nobody named, a node, or a group.
    public enum Destination: Sendable, Equatable {
        case none
        case node(UInt64)
        case group(UInt16)
    }

    public enum SessionType: UInt8, Sendable {
        case unicast = 0
        case group = 1
    }

    /// 0 for an unsecured session (PASE and CASE handshakes), else the receiver's session id.
    public var sessionID: UInt16
    public var sessionType: SessionType
    /// P: the header after the session id is obfuscated (group privacy).
    public var privacy: Bool
    /// C: a control message (message counter synchronization), counted with the control counter.
    public var isControlMessage: Bool
    public var messageCounter: UInt32
    public var sourceNodeID: UInt64?
    public var destination: Destination
    /// MX: the message extensions' bytes, when present.
    public var extensions: [UInt8]?

    public init(sessionID: UInt16 = 0, sessionType: SessionType = .unicast, privacy: Bool = false,
                isControlMessage: Bool = false, messageCounter: UInt32, sourceNodeID: UInt64? = nil,
                destination: Destination = .none, extensions: [UInt8]? = nil) {
        self.sessionID = sessionID
        self.sessionType = sessionType
        self.privacy = privacy
        self.isControlMessage = isControlMessage
        self.messageCounter = messageCounter
        self.sourceNodeID = sourceNodeID
        self.destination = destination
        self.extensions = extensions
    }

    /// An unsecured session message (session id 0, unicast).
    public var isUnsecured: Bool { sessionID == 0 && sessionType == .unicast }

    /// The security flags byte: P, C, MX and the session type. The first byte of a secured message's nonce.
    public var securityFlags: UInt8 {
        (privacy ? 0x80 : 0) | (isControlMessage ? 0x40 : 0) | (extensions != nil ? 0x20 : 0) | sessionType.rawValue
    }

    public func encoded() -> [UInt8] {
        var out: [UInt8] = []
        encode(into: &out)
        return out
    }

    public func encode(into out: inout [UInt8]) {
        let dsiz: UInt8 = switch destination {
        case .none: 0
        case .node: 1
        case .group: 2
        }
        out.append((sourceNodeID != nil ? 0x04 : 0) | dsiz)
        out.appendLittleEndian(UInt64(sessionID), width: 2)
        out.append(securityFlags)
        out.appendLittleEndian(UInt64(messageCounter), width: 4)
        if let sourceNodeID { out.appendLittleEndian(sourceNodeID, width: 8) }
        switch destination {
        case .none: break
        case .node(let id): out.appendLittleEndian(id, width: 8)
        case .group(let id): out.appendLittleEndian(UInt64(id), width: 2)
        }
        if let extensions {
            out.appendLittleEndian(UInt64(extensions.count), width: 2)
            out.append(contentsOf: extensions)
        }
    }

    /// Reads the header at the start of `bytes`; returns it and its length (where the payload starts).
    /// Reserved flag bits are ignored, as the specification asks of a receiver.
    public static func decode(_ bytes: some Collection<UInt8>) throws(MessageError) -> (
        header: MessageHeader, length: Int
    ) {
        var cursor = ByteCursor(Array(bytes))
        let flags = try cursor.byte()
        let version = flags >> 4
        if version != 0 { throw MessageError(.unsupportedVersion(version), at: 0) }
        let sessionID = UInt16(try cursor.littleEndian(2))
        let securityFlags = try cursor.byte()
        guard let sessionType = SessionType(rawValue: securityFlags & 0x03) else {
            throw MessageError(.reservedSessionType(securityFlags & 0x03), at: 3)
        }
        let counter = UInt32(try cursor.littleEndian(4))
        let source = flags & 0x04 != 0 ? try cursor.littleEndian(8) : nil
        let destination: Destination
        switch flags & 0x03 {
        case 0: destination = .none
        case 1: destination = .node(try cursor.littleEndian(8))
        case 2: destination = .group(UInt16(try cursor.littleEndian(2)))
        default: throw MessageError(.reservedDestinationSize, at: 0)
        }
        switch (sessionType, destination) {
        case (.group, .none), (.group, .node): throw MessageError(.groupMessageWithoutGroupDestination, at: 0)
        case (.group, _) where source == nil: throw MessageError(.groupMessageWithoutSource, at: 0)
        case (.unicast, .group): throw MessageError(.groupDestinationInUnicastMessage, at: 0)
        default: break
        }
        var extensions: [UInt8]?
        if securityFlags & 0x20 != 0 {
            let length = Int(try cursor.littleEndian(2))
            extensions = Array(try cursor.take(length))
        }
        let header = MessageHeader(sessionID: sessionID, sessionType: sessionType, privacy: securityFlags & 0x80 != 0,
                                   isControlMessage: securityFlags & 0x40 != 0, messageCounter: counter,
                                   sourceNodeID: source, destination: destination, extensions: extensions)
        return (header, cursor.offset)
    }
}

/// A Matter protocol: its vendor (nil for the standard ones) and its id.
public struct ProtocolID: Hashable, Sendable, CustomStringConvertible {
    public var vendorID: UInt16?
    public var id: UInt16

    public init(vendorID: UInt16? = nil, _ id: UInt16) {
        self.vendorID = vendorID
        self.id = id
    }

    public static let secureChannel = ProtocolID(0x0000)
    public static let interactionModel = ProtocolID(0x0001)
    public static let bulkDataExchange = ProtocolID(0x0002)
    public static let userDirectedCommissioning = ProtocolID(0x0003)

    /// The 32-bit form a StatusReport carries: vendor id in the high half, protocol id in the low.
    public var fullID: UInt32 { UInt32(vendorID ?? 0) << 16 | UInt32(id) }

    public init(fullID: UInt32) {
        let vendor = UInt16(fullID >> 16)
        self.init(vendorID: vendor == 0 ? nil : vendor, UInt16(truncatingIfNeeded: fullID))
    }

    public var description: String {
        vendorID.map { "0x\(String($0, radix: 16)):0x\(String(id, radix: 16))" } ?? "0x\(String(id, radix: 16))"
    }
}

/// The protocol header at the start of a message's payload.
public struct PayloadHeader: Sendable, Equatable {
    /// I: sent by the exchange's initiator.
    public var isInitiator: Bool
    /// R: the sender wants an acknowledgement (MRP).
    public var needsAcknowledgement: Bool
    public var opcode: UInt8
    public var exchangeID: UInt16
    public var protocolID: ProtocolID
    /// A: the message counter this message acknowledges.
    public var acknowledgedMessageCounter: UInt32?
    /// SX: the secured extensions' bytes, when present.
    public var securedExtensions: [UInt8]?

    public init(isInitiator: Bool, needsAcknowledgement: Bool = false, opcode: UInt8, exchangeID: UInt16,
                protocolID: ProtocolID, acknowledgedMessageCounter: UInt32? = nil, securedExtensions: [UInt8]? = nil) {
        self.isInitiator = isInitiator
        self.needsAcknowledgement = needsAcknowledgement
        self.opcode = opcode
        self.exchangeID = exchangeID
        self.protocolID = protocolID
        self.acknowledgedMessageCounter = acknowledgedMessageCounter
        self.securedExtensions = securedExtensions
    }

    public func encoded() -> [UInt8] {
        var out: [UInt8] = []
        encode(into: &out)
        return out
    }

    public func encode(into out: inout [UInt8]) {
        out.append((isInitiator ? 0x01 : 0) | (acknowledgedMessageCounter != nil ? 0x02 : 0)
                   | (needsAcknowledgement ? 0x04 : 0) | (securedExtensions != nil ? 0x08 : 0)
                   | (protocolID.vendorID != nil ? 0x10 : 0))
        out.append(opcode)
        out.appendLittleEndian(UInt64(exchangeID), width: 2)
        if let vendor = protocolID.vendorID { out.appendLittleEndian(UInt64(vendor), width: 2) }
        out.appendLittleEndian(UInt64(protocolID.id), width: 2)
        if let acknowledgedMessageCounter { out.appendLittleEndian(UInt64(acknowledgedMessageCounter), width: 4) }
        if let securedExtensions {
            out.appendLittleEndian(UInt64(securedExtensions.count), width: 2)
            out.append(contentsOf: securedExtensions)
        }
    }

    /// Reads the header at the start of `bytes`; returns it and its length (where the application payload starts).
    /// `baseOffset` is added to error offsets, for a header that starts inside a message.
    public static func decode(_ bytes: some Collection<UInt8>, baseOffset: Int = 0) throws(MessageError)
        -> (header: PayloadHeader, length: Int)
    {
        var cursor = ByteCursor(Array(bytes), baseOffset: baseOffset)
        let flags = try cursor.byte()
        let opcode = try cursor.byte()
        let exchangeID = UInt16(try cursor.littleEndian(2))
        let vendor = flags & 0x10 != 0 ? UInt16(try cursor.littleEndian(2)) : nil
        let protocolID = ProtocolID(vendorID: vendor, UInt16(try cursor.littleEndian(2)))
        let ack = flags & 0x02 != 0 ? UInt32(try cursor.littleEndian(4)) : nil
        var extensions: [UInt8]?
        if flags & 0x08 != 0 {
            let length = Int(try cursor.littleEndian(2))
            extensions = Array(try cursor.take(length))
        }
        let header = PayloadHeader(
            isInitiator: flags & 0x01 != 0, needsAcknowledgement: flags & 0x04 != 0, opcode: opcode,
            exchangeID: exchangeID, protocolID: protocolID, acknowledgedMessageCounter: ack,
            securedExtensions: extensions)
        return (header, cursor.offset)
    }
}

/// A cursor over message bytes whose reads fail with `MessageError.truncated` at the field that is cut short.
struct ByteCursor {
    let bytes: [UInt8]
    let baseOffset: Int
    var offset = 0

    init(_ bytes: [UInt8], baseOffset: Int = 0) {
        self.bytes = bytes
        self.baseOffset = baseOffset
    }

    var remaining: Int { bytes.count - offset }

    mutating func take(_ count: Int) throws(MessageError) -> ArraySlice<UInt8> {
        if count > remaining { throw MessageError(.truncated(needed: count - remaining), at: baseOffset + offset) }
        defer { offset += count }
        return bytes[offset..<(offset + count)]
    }

    mutating func byte() throws(MessageError) -> UInt8 {
        let one = try take(1)
        return one[one.startIndex]
    }

    mutating func littleEndian(_ width: Int) throws(MessageError) -> UInt64 {
        var value: UInt64 = 0
        for (shift, b) in try take(width).enumerated() { value |= UInt64(b) << (8 * shift) }
        return value
    }
}

extension [UInt8] {
    mutating func appendLittleEndian(_ v: UInt64, width: Int) {
        for i in 0..<width { append(UInt8(truncatingIfNeeded: v >> (8 * i))) }
    }
}
