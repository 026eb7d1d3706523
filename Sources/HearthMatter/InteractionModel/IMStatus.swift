// The Interaction Model's status codes (Matter 1.4 §8.10) and the error that carries one, so that every refusal —
// a malformed message, a missing path, a denied access, a cluster's own check — reaches the peer as the code the
// specification names, with a sentence for logs and tests.

/// An Interaction Model status code (`StatusIB.Status`, `StatusResponseMessage.Status`).
public struct IMStatusCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let success = IMStatusCode(rawValue: 0x00)
    public static let failure = IMStatusCode(rawValue: 0x01)
    public static let invalidSubscription = IMStatusCode(rawValue: 0x7D)
    public static let unsupportedAccess = IMStatusCode(rawValue: 0x7E)
    public static let unsupportedEndpoint = IMStatusCode(rawValue: 0x7F)
    public static let invalidAction = IMStatusCode(rawValue: 0x80)
    public static let unsupportedCommand = IMStatusCode(rawValue: 0x81)
    public static let invalidCommand = IMStatusCode(rawValue: 0x85)
    public static let unsupportedAttribute = IMStatusCode(rawValue: 0x86)
    public static let constraintError = IMStatusCode(rawValue: 0x87)
    public static let unsupportedWrite = IMStatusCode(rawValue: 0x88)
    public static let resourceExhausted = IMStatusCode(rawValue: 0x89)
    public static let notFound = IMStatusCode(rawValue: 0x8B)
    public static let unreportableAttribute = IMStatusCode(rawValue: 0x8C)
    public static let invalidDataType = IMStatusCode(rawValue: 0x8D)
    public static let unsupportedRead = IMStatusCode(rawValue: 0x8F)
    public static let dataVersionMismatch = IMStatusCode(rawValue: 0x92)
    public static let timeout = IMStatusCode(rawValue: 0x94)
    public static let unsupportedNode = IMStatusCode(rawValue: 0x9B)
    public static let busy = IMStatusCode(rawValue: 0x9C)
    public static let accessRestricted = IMStatusCode(rawValue: 0x9D)
    public static let unsupportedCluster = IMStatusCode(rawValue: 0xC3)
    public static let noUpstreamSubscription = IMStatusCode(rawValue: 0xC5)
    public static let needsTimedInteraction = IMStatusCode(rawValue: 0xC6)
    public static let unsupportedEvent = IMStatusCode(rawValue: 0xC7)
    public static let pathsExhausted = IMStatusCode(rawValue: 0xC8)
    public static let timedRequestMismatch = IMStatusCode(rawValue: 0xC9)
    public static let failsafeRequired = IMStatusCode(rawValue: 0xCA)
    public static let invalidInState = IMStatusCode(rawValue: 0xCB)
    public static let noCommandResponse = IMStatusCode(rawValue: 0xCC)
    public static let dynamicConstraintError = IMStatusCode(rawValue: 0xCF)
    public static let alreadyExists = IMStatusCode(rawValue: 0xD0)
    public static let invalidTransportType = IMStatusCode(rawValue: 0xD1)

    private static let names: [UInt8: String] = [
        0x00: "SUCCESS", 0x01: "FAILURE", 0x7D: "INVALID_SUBSCRIPTION", 0x7E: "UNSUPPORTED_ACCESS",
        0x7F: "UNSUPPORTED_ENDPOINT", 0x80: "INVALID_ACTION", 0x81: "UNSUPPORTED_COMMAND", 0x85: "INVALID_COMMAND",
        0x86: "UNSUPPORTED_ATTRIBUTE", 0x87: "CONSTRAINT_ERROR", 0x88: "UNSUPPORTED_WRITE", 0x89: "RESOURCE_EXHAUSTED",
        0x8B: "NOT_FOUND", 0x8C: "UNREPORTABLE_ATTRIBUTE", 0x8D: "INVALID_DATA_TYPE", 0x8F: "UNSUPPORTED_READ",
        0x92: "DATA_VERSION_MISMATCH", 0x94: "TIMEOUT", 0x9B: "UNSUPPORTED_NODE", 0x9C: "BUSY",
        0x9D: "ACCESS_RESTRICTED", 0xC3: "UNSUPPORTED_CLUSTER", 0xC5: "NO_UPSTREAM_SUBSCRIPTION",
        0xC6: "NEEDS_TIMED_INTERACTION", 0xC7: "UNSUPPORTED_EVENT", 0xC8: "PATHS_EXHAUSTED",
        0xC9: "TIMED_REQUEST_MISMATCH", 0xCA: "FAILSAFE_REQUIRED", 0xCB: "INVALID_IN_STATE",
        0xCC: "NO_COMMAND_RESPONSE", 0xCF: "DYNAMIC_CONSTRAINT_ERROR", 0xD0: "ALREADY_EXISTS",
        0xD1: "INVALID_TRANSPORT_TYPE",
    ]

    public var description: String {
        Self.names[rawValue] ?? "0x" + String(rawValue, radix: 16, uppercase: true)
    }
}

/// A refusal with its Interaction Model status: what the peer is told, and why (for logs and tests).
public struct IMError: Error, Sendable, Equatable, CustomStringConvertible {
    public var status: IMStatusCode
    /// A cluster-specific status (`StatusIB.ClusterStatus`), when the cluster defines one.
    public var clusterStatus: UInt8?
    public var message: String

    public init(_ status: IMStatusCode, clusterStatus: UInt8? = nil, _ message: String) {
        self.status = status
        self.clusterStatus = clusterStatus
        self.message = message
    }

    /// A message that does not have the shape of its kind: the specification's answer is INVALID_ACTION.
    public static func malformed(_ what: String) -> IMError { IMError(.invalidAction, what) }

    /// A TLV member error inside `what`, as INVALID_ACTION naming both.
    static func malformed(_ what: String, _ error: TLVFieldError) -> IMError {
        IMError(.invalidAction, "\(what): \(error)")
    }

    public var description: String {
        let cluster = clusterStatus.map { " (cluster status \($0))" } ?? ""
        return "\(status)\(cluster): \(message)"
    }
}

/// The Interaction Model revision this node speaks (Matter 1.4: 12), sent as member 0xFF of every message.
public let interactionModelRevision: UInt8 = 12
