public import HearthHardware
public import HearthLinux

extension HardwareError {
    /// The same failure in the hardware layer's terms: HearthLinux's message (what went wrong and what to fix),
    /// the call, what it was about and the errno are kept, so a log line says exactly what it said before.
    public init(_ error: LinuxIOError) {
        self.init(Self.kind(of: error.errno), message: error.message, operation: error.operation,
                  context: error.context.description, errno: error.errno.rawValue,
                  errnoDescription: error.errno.description)
    }

    /// What a binding can decide on, from the kernel's errno.
    static func kind(of errno: LinuxErrno) -> Kind {
        switch errno {
        case .noSuchFileOrDirectory: .notFound
        case .busy: .busy
        case .permissionDenied, .operationNotPermitted: .permissionDenied
        case .ioError: .io
        case .noSuchDevice, .noSuchDeviceOrAddress: .gone
        case .invalidArgument, .outOfRange, .notATypewriter, .notADirectory, .isADirectory: .invalid
        case .timedOut: .timedOut
        default: .failed
        }
    }
}

/// Runs HearthLinux calls, turning their `LinuxIOError` into a `HardwareError` at the backend's edge.
func mapLinuxErrors<R>(_ body: () throws(LinuxIOError) -> R) throws(HardwareError) -> R {
    do throws(LinuxIOError) {
        return try body()
    } catch {
        throw HardwareError(error)
    }
}

extension GPIODrive {
    init(_ drive: OutputDrive) {
        switch drive {
        case .pushPull: self = .pushPull
        case .openDrain: self = .openDrain
        case .openSource: self = .openSource
        }
    }
}

extension GPIOBias {
    init(_ bias: InputBias) {
        switch bias {
        case .asIs: self = .asIs
        case .disabled: self = .disabled
        case .pullUp: self = .pullUp
        case .pullDown: self = .pullDown
        }
    }
}

extension PWMPolarity {
    init(_ polarity: PWMOutputPolarity) {
        switch polarity {
        case .normal: self = .normal
        case .inversed: self = .inversed
        }
    }
}
