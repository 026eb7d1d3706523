import Glibc

/// A failure of the environment — a missing node, a busy line, a sensor that stopped answering — as opposed to a
/// bug in the caller, which traps instead.
///
/// Every syscall and libgpiod call in this module reaches the caller through this one type, so a log line always
/// carries the same four things: what was attempted, on what, the kernel's errno, and what a person should do next.
public struct LinuxIOError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What the error is about: a file, a GPIO chip, or one line on a chip.
    public enum Context: Sendable, Hashable, CustomStringConvertible {
        /// A filesystem path (a sysfs attribute, a device node, a directory).
        case path(String)
        /// A GPIO chip, as the caller named it (name, path or label).
        case gpioChip(String)
        /// One line of a GPIO chip, by the chip's name and the line's offset.
        case gpioLine(chip: String, offset: Int)

        public var description: String {
            switch self {
            case .path(let path): path
            case .gpioChip(let chip): chip
            case .gpioLine(let chip, let offset): "\(chip) line \(offset)"
            }
        }
    }

    /// The syscall or libgpiod operation that failed, e.g. `"open"` or `"gpiod_line_request"` (libgpiod operations
    /// are named the same whether Hearth was built against libgpiod 1 or 2).
    public var operation: String
    /// What it failed on.
    public var context: Context
    /// The kernel's (or libgpiod's) errno.
    public var errno: LinuxErrno
    /// A sentence for a person: what went wrong in their terms and what to fix.
    public var message: String

    public init(operation: String, context: Context, errno: LinuxErrno, message: String? = nil) {
        self.operation = operation
        self.context = context
        self.errno = errno
        self.message = message ?? Self.defaultMessage(operation: operation, context: context, errno: errno)
    }

    public var description: String {
        "\(message) [\(operation) on \(context): \(errno)]"
    }

    /// The hint used when the call site has nothing more specific to say.
    static func defaultMessage(operation: String, context: Context, errno: LinuxErrno) -> String {
        switch errno {
        case .noSuchFileOrDirectory:
            "\(context) does not exist: is the driver loaded and the device tree overlay enabled?"
        case .permissionDenied, .operationNotPermitted:
            "permission denied on \(context): run hearthd as root or grant its user access (udev rule, gpio group)"
        case .busy:
            "\(context) is busy: another program holds it"
        case .ioError:
            "the device behind \(context) did not answer (I/O error): check its wiring, power and bus"
        case .noSuchDevice, .noSuchDeviceOrAddress:
            "the device behind \(context) is gone: was it unplugged or its driver unloaded?"
        default:
            "\(operation) on \(context) failed: \(errno.text)"
        }
    }
}

/// A Linux errno value.
///
/// A struct rather than an enum because the kernel can return any errno; the named constants are the ones this
/// module's callers are expected to branch on.
public struct LinuxErrno: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int32

    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// `EPERM`
    public static let operationNotPermitted = LinuxErrno(rawValue: EPERM)
    /// `ENOENT`
    public static let noSuchFileOrDirectory = LinuxErrno(rawValue: ENOENT)
    /// `EINTR`
    public static let interrupted = LinuxErrno(rawValue: EINTR)
    /// `EIO`: what most I²C/SPI sensor drivers return when the chip stops acknowledging.
    public static let ioError = LinuxErrno(rawValue: EIO)
    /// `ENXIO`
    public static let noSuchDeviceOrAddress = LinuxErrno(rawValue: ENXIO)
    /// `EAGAIN`
    public static let tryAgain = LinuxErrno(rawValue: EAGAIN)
    /// `EACCES`
    public static let permissionDenied = LinuxErrno(rawValue: EACCES)
    /// `EBUSY`: a GPIO line requested by someone else, or a PWM attribute that cannot change while enabled.
    public static let busy = LinuxErrno(rawValue: EBUSY)
    /// `ENODEV`
    public static let noSuchDevice = LinuxErrno(rawValue: ENODEV)
    /// `ENOTDIR`
    public static let notADirectory = LinuxErrno(rawValue: ENOTDIR)
    /// `EISDIR`
    public static let isADirectory = LinuxErrno(rawValue: EISDIR)
    /// `EINVAL`: also used by this module for sysfs content it cannot parse.
    public static let invalidArgument = LinuxErrno(rawValue: EINVAL)
    /// `ENOTTY`: what libgpiod reports for a path that is not a GPIO character device.
    public static let notATypewriter = LinuxErrno(rawValue: ENOTTY)
    /// `ERANGE`
    public static let outOfRange = LinuxErrno(rawValue: ERANGE)
    /// `ETIMEDOUT`: used by this module when the kernel did not create a sysfs node in time.
    public static let timedOut = LinuxErrno(rawValue: ETIMEDOUT)

    /// The errno of the calling thread, read immediately after a failed call.
    static var current: LinuxErrno { LinuxErrno(rawValue: Glibc.errno) }

    /// The C macro name for the common values, so logs can be grepped for `EBUSY` rather than localized text.
    public var symbol: String? {
        switch rawValue {
        case EPERM: "EPERM"
        case ENOENT: "ENOENT"
        case EINTR: "EINTR"
        case EIO: "EIO"
        case ENXIO: "ENXIO"
        case EAGAIN: "EAGAIN"
        case EACCES: "EACCES"
        case EBUSY: "EBUSY"
        case ENODEV: "ENODEV"
        case ENOTDIR: "ENOTDIR"
        case EISDIR: "EISDIR"
        case EINVAL: "EINVAL"
        case ENOTTY: "ENOTTY"
        case ERANGE: "ERANGE"
        case ETIMEDOUT: "ETIMEDOUT"
        default: nil
        }
    }

    /// `strerror` text, via the thread-safe `strerror_r`.
    public var text: String {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 256) { buffer in
            guard let base = buffer.baseAddress, strerror_r(rawValue, base, buffer.count) == 0 else {
                return "Unknown error \(rawValue)"
            }
            return String(cString: base)
        }
    }

    public var description: String {
        "\(symbol ?? "errno \(rawValue)") (\(text))"
    }
}
