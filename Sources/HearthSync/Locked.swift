// The one lock every Hearth module uses. It is Synchronization's `Mutex`, plus, in a ThreadSanitizer build, the two
// annotations TSan needs to see it. Why not `Mutex` itself: on Linux a contended `Mutex` is handed from one thread to
// the next by the kernel (`FUTEX_LOCK_PI` / `FUTEX_UNLOCK_PI`, in the uninstrumented runtime), so TSan sees no
// happens-before edge between the two critical sections and reports a race on whatever state the lock guards —
// every report followed contention, not a bug (docs/reliability.md, "Sanitizers"). With `-DHEARTH_TSAN` (scripts/
// test-sanitizers) each critical section tells TSan it acquires and releases the lock; in every other build this is
// `Mutex` and nothing more, inlined into the caller.
public import Synchronization

/// A value that is only ever touched under its lock.
@frozen
public struct Locked<Value>: ~Copyable {
    @usableFromInline let mutex: Mutex<Value>
    #if HEARTH_TSAN
    @usableFromInline let token = ThreadSanitizerToken()
    #endif

    @inlinable
    public init(_ initialValue: consuming sending Value) {
        mutex = Mutex(initialValue)
    }

    /// Runs `body` with the value while holding the lock: what `Mutex.withLock` does.
    @inlinable
    public borrowing func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        #if HEARTH_TSAN
        return try mutex.withLock { (value: inout sending Value) throws(E) -> sending Result in
            threadSanitizerAcquire(token.address)
            defer { threadSanitizerRelease(token.address) }
            return try body(&value)
        }
        #else
        return try mutex.withLock(body)
        #endif
    }
}

extension Locked: @unchecked Sendable {}

#if HEARTH_TSAN
/// A distinct address for TSan to key the lock on (a `Mutex` has no stable address to take).
public final class ThreadSanitizerToken: Sendable {
    @inlinable public init() {}
    @inlinable public var address: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }
}

// The TSan runtime's annotation entry points (compiler-rt's tsan_interface.h); linked in by -sanitize=thread.
@usableFromInline @_silgen_name("__tsan_acquire") func threadSanitizerAcquire(_ address: UnsafeMutableRawPointer)
@usableFromInline @_silgen_name("__tsan_release") func threadSanitizerRelease(_ address: UnsafeMutableRawPointer)
#endif
