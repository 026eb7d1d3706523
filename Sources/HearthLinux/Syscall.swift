import Glibc

/// The funnel every syscall and libgpiod call in this module goes through.
///
/// C reports failure as -1 (or NULL) plus errno; reading errno anywhere but immediately after the call is a classic
/// source of wrong error messages, so the call and the errno read live together here and nowhere else.
enum Syscall {
    /// Runs `call` until it returns something other than -1, or fails with an errno other than `EINTR`.
    ///
    /// - Parameter retryOnInterrupt: pass `false` for calls that are unsafe to repeat after a signal (`close`).
    /// - Parameter explain: a call-site hint for the errno values it understands better than the default message.
    static func check<Result: FixedWidthInteger>(
        _ operation: String,
        _ context: LinuxIOError.Context,
        retryOnInterrupt: Bool = true,
        explain: (LinuxErrno) -> String? = { _ in nil },
        _ call: () -> Result
    ) throws(LinuxIOError) -> Result {
        while true {
            let result = call()
            if result != -1 { return result }
            let code = LinuxErrno.current
            if code == .interrupted && retryOnInterrupt { continue }
            throw LinuxIOError(operation: operation, context: context, errno: code, message: explain(code))
        }
    }

    /// The pointer-returning form of ``check(_:_:retryOnInterrupt:explain:_:)`` for libgpiod calls that return NULL.
    static func checkPointer(
        _ operation: String,
        _ context: LinuxIOError.Context,
        explain: (LinuxErrno) -> String? = { _ in nil },
        _ call: () -> OpaquePointer?
    ) throws(LinuxIOError) -> OpaquePointer {
        while true {
            Glibc.errno = 0
            if let pointer = call() { return pointer }
            var code = LinuxErrno.current
            if code == .interrupted { continue }
            // libgpiod returns NULL without setting errno on a few paths (e.g. malloc failure inside a lookup).
            if code.rawValue == 0 { code = .noSuchFileOrDirectory }
            throw LinuxIOError(operation: operation, context: context, errno: code, message: explain(code))
        }
    }

    /// Sleeps for `duration`, resuming after signals, without Foundation.
    static func sleep(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        guard seconds > 0 || attoseconds > 0 else { return }
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&request, &remaining) == -1 && Glibc.errno == EINTR {
            request = remaining
        }
    }

    /// `CLOCK_MONOTONIC` now, in nanoseconds: the clock GPIO edge timestamps use (kernel 5.7+).
    static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
    }
}
