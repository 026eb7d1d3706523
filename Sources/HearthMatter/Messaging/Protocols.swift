// The opcodes of the Secure Channel and Interaction Model protocols (core specification 4.11.1 and 10.2.1), and the
// Secure Channel's StatusReport message (appendix D).

/// Secure Channel (protocol 0x0000) opcodes.
public enum SecureChannelOpcode: UInt8, Sendable, CaseIterable {
    case messageCounterSyncRequest = 0x00
    case messageCounterSyncResponse = 0x01
    case standaloneAck = 0x10
    case pbkdfParamRequest = 0x20
    case pbkdfParamResponse = 0x21
    case pasePake1 = 0x22
    case pasePake2 = 0x23
    case pasePake3 = 0x24
    case caseSigma1 = 0x30
    case caseSigma2 = 0x31
    case caseSigma3 = 0x32
    case caseSigma2Resume = 0x33
    case statusReport = 0x40
    case icdCheckIn = 0x50
}

/// Interaction Model (protocol 0x0001) opcodes.
public enum InteractionModelOpcode: UInt8, Sendable, CaseIterable {
    case statusResponse = 0x01
    case readRequest = 0x02
    case subscribeRequest = 0x03
    case subscribeResponse = 0x04
    case reportData = 0x05
    case writeRequest = 0x06
    case writeResponse = 0x07
    case invokeRequest = 0x08
    case invokeResponse = 0x09
    case timedRequest = 0x0A
}

/// A StatusReport's general code (appendix D.3.1).
public enum GeneralStatusCode: UInt16, Sendable, CaseIterable {
    case success = 0
    case failure = 1
    case badPrecondition = 2
    case outOfRange = 3
    case badRequest = 4
    case unsupported = 5
    case unexpected = 6
    case resourceExhausted = 7
    case busy = 8
    case timeout = 9
    case `continue` = 10
    case aborted = 11
    case invalidArgument = 12
    case notFound = 13
    case alreadyExists = 14
    case permissionDenied = 15
    case dataLoss = 16
    case messageTooLarge = 17
}

/// Protocol codes of the Secure Channel protocol in a StatusReport (4.11.1.4).
public enum SecureChannelStatusCode: UInt16, Sendable, CaseIterable {
    case sessionEstablishmentSuccess = 0x0000
    case noSharedTrustRoots = 0x0001
    case invalidParameter = 0x0002
    case closeSession = 0x0003
    case busy = 0x0004
}

/// A StatusReport: a general code, the protocol it concerns, that protocol's code, and optional protocol data.
public struct StatusReport: Sendable, Equatable {
    /// The general code as sent; `general` reads it when it is one the specification names.
    public var generalCode: UInt16
    public var protocolID: ProtocolID
    public var protocolCode: UInt16
    public var protocolData: [UInt8]

    public init(generalCode: UInt16, protocolID: ProtocolID, protocolCode: UInt16, protocolData: [UInt8] = []) {
        self.generalCode = generalCode
        self.protocolID = protocolID
        self.protocolCode = protocolCode
        self.protocolData = protocolData
    }

    public init(_ general: GeneralStatusCode, protocolID: ProtocolID = .secureChannel, protocolCode: UInt16,
                protocolData: [UInt8] = []) {
        self.init(generalCode: general.rawValue, protocolID: protocolID, protocolCode: protocolCode,
                  protocolData: protocolData)
    }

    /// A Secure Channel status: `StatusReport(.success, .sessionEstablishmentSuccess)`.
    public init(_ general: GeneralStatusCode, _ code: SecureChannelStatusCode) {
        self.init(general, protocolID: .secureChannel, protocolCode: code.rawValue)
    }

    public var general: GeneralStatusCode? { GeneralStatusCode(rawValue: generalCode) }

    public func encoded() -> [UInt8] {
        var out: [UInt8] = []
        out.appendLittleEndian(UInt64(generalCode), width: 2)
        out.appendLittleEndian(UInt64(protocolID.fullID), width: 4)
        out.appendLittleEndian(UInt64(protocolCode), width: 2)
        out.append(contentsOf: protocolData)
        return out
    }

    public init(decoding bytes: some Collection<UInt8>) throws(MessageError) {
        var cursor = ByteCursor(Array(bytes))
        let general = UInt16(try cursor.littleEndian(2))
        let protocolID = ProtocolID(fullID: UInt32(try cursor.littleEndian(4)))
        let code = UInt16(try cursor.littleEndian(2))
        self.init(generalCode: general, protocolID: protocolID, protocolCode: code,
                  protocolData: Array(try cursor.take(cursor.remaining)))
    }
}
