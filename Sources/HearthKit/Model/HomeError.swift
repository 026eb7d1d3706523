/// Every failure HearthKit reports: the Google Home APIs' canonical `code`, Hearth's Matter `status`, and a
/// `message` that says what to fix. The hub's own errors arrive as they were answered; the library adds its own
/// for what only a client can see (the broker is unreachable, a device is offline, a hub does not answer).
///
/// `Code` and `Status` are the hub's own (HearthModel's, `SharedVocabulary.swift`), so a client never meets a code it
/// cannot name.
public struct HomeError: Error, Sendable, Hashable, CustomStringConvertible {
    public var code: Code
    public var status: Status
    public var message: String
    /// Set when the broker could not be reached or refused the connection: what went wrong, in the transport's
    /// words, so a tool can phrase its own advice (the `hearth` CLI names its flags).
    public var connectionFailure: ConnectionFailure?

    public init(code: Code, status: Status, message: String, connectionFailure: ConnectionFailure? = nil) {
        self.code = code
        self.status = status
        self.message = message
        self.connectionFailure = connectionFailure
    }

    public var description: String { "\(code.rawValue) (\(status.rawValue)): \(message)" }

    /// The device, its hub or the broker cannot be reached now; nothing was sent.
    static func unavailable(_ message: String) -> HomeError {
        HomeError(code: .unavailable, status: .failure, message: message)
    }
    static func notFound(_ message: String) -> HomeError {
        HomeError(code: .notFound, status: .notFound, message: message)
    }
    static func cancelled(_ message: String) -> HomeError {
        HomeError(code: .cancelled, status: .failure, message: message)
    }
    static func deadlineExceeded(_ message: String) -> HomeError {
        HomeError(code: .deadlineExceeded, status: .timeout, message: message)
    }
    static func invalidArgument(_ message: String) -> HomeError {
        HomeError(code: .invalidArgument, status: .invalidCommand, message: message)
    }

    /// The error a hub answered with (`{"code":…,"status":…,"message":…}`).
    init(answer: JSON?) {
        let code = answer?["code"]?.stringValue.flatMap(Code.init(rawValue:)) ?? .unknown
        let status = answer?["status"]?.stringValue.flatMap(Status.init(rawValue:)) ?? .failure
        self.init(code: code, status: status, message: answer?["message"]?.stringValue ?? "(the hub gave no message)")
    }
}

/// Why the connection to the broker failed, for tools that explain it in their own terms.
public struct ConnectionFailure: Sendable, Hashable {
    public enum Kind: Sendable, Hashable {
        /// The client could not be set up (a TLS file that cannot be read, a bad option).
        case setup
        /// The broker refused the connection (user name, password, not authorised).
        case refused
        /// The TLS handshake or certificate check failed.
        case tls
        /// The broker's host name could not be resolved.
        case hostLookup
        /// No connection (refused at TCP level, unreachable, closed).
        case unreachable
        /// No connection within the time allowed.
        case timedOut
        /// A request could not be sent on an established connection.
        case sendFailed
    }

    public var kind: Kind
    /// The transport's own words (`Connection refused`, `Not authorized`).
    public var detail: String
    /// What was being done (`connect to 127.0.0.1:1883`).
    public var context: String
}
