// HomeError's code and status lists are the vocabulary a client shares; every user of the model names them.
@_exported public import HearthVocabulary

/// The one error type a client ever sees from Hearth.
///
/// It carries both vocabularies a client may know: the Google Home APIs' canonical `code` (what
/// an app branches on) and the Matter interaction-model `status` (what the cluster specification
/// says happened), plus a `message` written for the person who has to fix the request.
public struct HomeError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The Google Home APIs' canonical error codes (gRPC's): HearthVocabulary's, which clients share.
    public typealias Code = HomeErrorCode
    /// Matter interaction-model status codes (Matter Core §8.10), in lowerCamelCase: HearthVocabulary's.
    public typealias Status = HomeErrorStatus

    public var code: Code
    public var status: Status
    public var message: String

    public init(code: Code, status: Status, message: String) {
        self.code = code
        self.status = status
        self.message = message
    }

    /// An error whose code follows from its Matter status.
    public init(_ status: Status, _ message: String) {
        self.init(code: status.canonicalCode, status: status, message: message)
    }

    public var description: String { "\(code.rawValue) (\(status.rawValue)): \(message)" }
}

extension HomeError {
    public static func invalidCommand(_ message: String) -> HomeError { HomeError(.invalidCommand, message) }
    public static func constraintError(_ message: String) -> HomeError { HomeError(.constraintError, message) }
    public static func invalidDataType(_ message: String) -> HomeError { HomeError(.invalidDataType, message) }
    public static func unsupportedCommand(_ message: String) -> HomeError { HomeError(.unsupportedCommand, message) }
    public static func unsupportedAttribute(_ message: String) -> HomeError {
        HomeError(.unsupportedAttribute, message)
    }
    public static func unsupportedWrite(_ message: String) -> HomeError { HomeError(.unsupportedWrite, message) }
    public static func unsupportedCluster(_ message: String) -> HomeError { HomeError(.unsupportedCluster, message) }
    public static func invalidInState(_ message: String) -> HomeError { HomeError(.invalidInState, message) }
    public static func notFound(_ message: String) -> HomeError { HomeError(.notFound, message) }
    public static func failure(_ message: String) -> HomeError { HomeError(.failure, message) }
    /// The trait's source is offline or not heard from yet: nothing can be done until it is back.
    public static func unavailable(_ message: String) -> HomeError {
        HomeError(code: .unavailable, status: .failure, message: message)
    }
    /// Hardware I/O failed underneath a command.
    public static func hardware(_ message: String) -> HomeError {
        HomeError(code: .internal, status: .failure, message: message)
    }
}
