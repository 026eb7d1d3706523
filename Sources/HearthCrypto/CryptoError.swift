// Why libcrypto and not swift-crypto: see the opening comment of the wrappers in this target.

/// A failure inside libcrypto, with the operation that failed and OpenSSL's own reason.
public struct CryptoError: Error, Sendable, Equatable, CustomStringConvertible {
    public var operation: String
    public var reason: String

    public init(operation: String, reason: String) {
        self.operation = operation
        self.reason = reason
    }

    public var description: String { "\(operation): \(reason)" }
}
