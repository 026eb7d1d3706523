/// A hardware operation that failed, in terms every backend can give and a binding can act on.
///
/// A backend maps its platform's errors at its edge (`LinuxHardware` maps every `LinuxIOError`), keeping the
/// message, the call, what it was about and the errno, so a log line says as much as the platform's own error.
public struct HardwareError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure, for code that decides what to do next (a sensor that is gone is re-opened).
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// The chip, line, channel or device does not exist (`ENOENT`).
        case notFound
        /// Another program holds it (`EBUSY`).
        case busy
        /// This process may not use it (`EACCES`, `EPERM`).
        case permissionDenied
        /// The device did not answer (`EIO`): its wiring, power or bus.
        case io
        /// The device went away (`ENODEV`, `ENXIO`): unplugged, or its driver unloaded.
        case gone
        /// The request or what the device returned makes no sense (`EINVAL`, `ERANGE`, `ENOTTY`, …).
        case invalid
        /// Something did not happen in time (`ETIMEDOUT`: a PWM channel not exported in time).
        case timedOut
        /// Anything else; `errno` says what.
        case failed
    }

    public var kind: Kind
    /// A sentence for a person: what went wrong in their terms and what to fix.
    public var message: String
    /// The call that failed (`open`, `gpiod_line_request_output_flags`), for logs.
    public var operation: String
    /// What it failed on: a path, a chip, a line (`gpiochip0 line 17`).
    public var context: String
    /// The operating system's error number, when there was one.
    public var errno: Int32?
    /// That errno as the platform names it (`EBUSY (Device or resource busy)`), for logs.
    public var errnoDescription: String?

    public init(_ kind: Kind, message: String, operation: String, context: String, errno: Int32? = nil,
                errnoDescription: String? = nil) {
        self.kind = kind
        self.message = message
        self.operation = operation
        self.context = context
        self.errno = errno
        self.errnoDescription = errnoDescription
    }

    public var description: String {
        "\(message) [\(operation) on \(context): \(errnoDescription ?? errno.map { "errno \($0)" } ?? kind.rawValue)]"
    }
}
