// The words a client and the hub share: an answer's canonical error code and Matter status, and a source's
// connectivity and locality. HearthModel (the hub's side) and HearthKit (a client's) both re-export this module, so
// a client names exactly the values a hub answers with and neither side keeps a copy of the other's lists.

/// The Google Home APIs' canonical error codes (gRPC's).
public enum HomeErrorCode: String, Sendable, Hashable, CaseIterable {
    case cancelled, unknown, invalidArgument, deadlineExceeded, notFound, alreadyExists, permissionDenied
    case resourceExhausted, failedPrecondition, aborted, outOfRange, unimplemented, `internal`, unavailable
    case dataLoss, unauthenticated
}

/// Matter interaction-model status codes (Matter Core §8.10), in lowerCamelCase.
public enum HomeErrorStatus: String, Sendable, Hashable, CaseIterable {
    case success, failure, unsupportedAccess, unsupportedEndpoint, unsupportedCommand, invalidCommand
    case unsupportedAttribute, constraintError, unsupportedWrite, resourceExhausted, notFound
    case invalidDataType, timeout, busy, unsupportedCluster, invalidInState

    /// The status byte on the wire (`Protocols::InteractionModel::Status`).
    public var rawStatus: UInt8 {
        switch self {
        case .success: 0x00
        case .failure: 0x01
        case .unsupportedAccess: 0x7E
        case .unsupportedEndpoint: 0x7F
        case .unsupportedCommand: 0x81
        case .invalidCommand: 0x85
        case .unsupportedAttribute: 0x86
        case .constraintError: 0x87
        case .unsupportedWrite: 0x88
        case .resourceExhausted: 0x89
        case .notFound: 0x8B
        case .invalidDataType: 0x8D
        case .timeout: 0x94
        case .busy: 0x9C
        case .unsupportedCluster: 0xC3
        case .invalidInState: 0xCB
        }
    }

    /// The canonical code a status maps to (`shared/spec/home-api.md`, "Errors").
    public var canonicalCode: HomeErrorCode {
        switch self {
        case .success: .unknown
        case .invalidCommand, .constraintError, .invalidDataType: .invalidArgument
        case .unsupportedCommand, .unsupportedAttribute, .unsupportedCluster: .unimplemented
        case .unsupportedWrite, .invalidInState: .failedPrecondition
        case .notFound, .unsupportedEndpoint: .notFound
        case .timeout: .deadlineExceeded
        case .busy, .resourceExhausted: .resourceExhausted
        case .unsupportedAccess: .permissionDenied
        case .failure: .internal
        }
    }
}
