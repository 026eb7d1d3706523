import Dispatch
#if canImport(Glibc)
import Glibc
#endif
import HearthSync

/// Lets a loop (the engine's timers, a binding's polling) sleep until a deadline and be woken early,
/// without polling: a task with `wait(until:clock:)`, or a thread of its own with `block(until:)`.
public final class DeadlineWaker: Sendable {
    private struct State {
        var waiter: CheckedContinuation<Void, Never>?
        var pending = false
        /// Which wait a timer belongs to: a timer of an earlier wait wakes nothing.
        var generation: UInt64 = 0
        /// A thread is in `block(until:)`: a wake signals `semaphore`.
        var blocking = false
    }
    private let state = Locked(State())
    /// What `block(until:)` waits on.
    private let semaphore = DispatchSemaphore(value: 0)
    private let coarse: Bool

    /// `coarse`: on the real clock, a deadline is a libdispatch timer (with its leeway, a tenth of the delay) instead
    /// of a sleeping task. For loops that wait seconds and do not mind a late wake-up (a binding's probe every 5 s):
    /// a sleeping task and its allocator's slabs are about 3 kB for each wait in flight, 600 kB for 200 relays,
    /// where a pending timer is a hundred bytes. The engine's timers (fade steps on a 20 ms grid) are not coarse.
    public init(coarse: Bool = false) { self.coarse = coarse }

    public func wake() {
        let (waiter, blocking) = state.withLock { s -> (CheckedContinuation<Void, Never>?, Bool) in
            if let w = s.waiter { s.waiter = nil; return (w, false) }
            if s.blocking { s.blocking = false; return (nil, true) }
            s.pending = true
            return (nil, false)
        }
        waiter?.resume()
        if blocking { semaphore.signal() }
    }

    /// Blocks the calling thread until CLOCK_MONOTONIC (the clock `MonotonicClock` reads) reaches `deadline`, to the
    /// nanosecond, or until a `wake()`; without a deadline, until a `wake()`. For a loop on a thread of its own (the
    /// engine's timers on the real clock): it wakes in the kernel, without a task or a pool's thread in between.
    /// A `wake()` while no one waits is kept for the next wait, as with `wait(until:clock:)`.
    public func block(until deadline: EngineInstant?) {
        let mustWait = state.withLock { s -> Bool in
            if s.pending { s.pending = false; return false }
            s.blocking = true
            return true
        }
        guard mustWait else { return }
        guard let deadline else {
            semaphore.wait()
            return
        }
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        let remaining = deadline.milliseconds &* 1_000_000 &- (Int64(ts.tv_sec) &* 1_000_000_000 &+ Int64(ts.tv_nsec))
        // libdispatch's time is CLOCK_MONOTONIC on Linux.
        guard semaphore.wait(timeout: .now() + .nanoseconds(Int(max(0, remaining)))) == .timedOut else { return }
        // Timed out. A `wake()` that came meanwhile found `blocking` set and signals: take that signal now, or it
        // would end the next wait at once (one extra, harmless tick).
        let signalled = state.withLock { s -> Bool in
            defer { s.blocking = false }
            return !s.blocking
        }
        if signalled { semaphore.wait() }
    }

    /// Whether a thread is in `block(until:)`: a test waits on this to know that the thread is asleep before it
    /// wakes it.
    public var isBlocking: Bool { state.withLock { $0.blocking } }

    /// Returns at `deadline`, at a `wake()`, or when the task is cancelled. The sleeper is a separate task so a
    /// clock that ignores cancellation (a test's `ManualClock`) never holds up an early wake; a late sleeper only
    /// causes one extra, harmless tick.
    public func wait(until deadline: EngineInstant?, clock: any EngineClock) async {
        if coarse, let deadline, clock is MonotonicClock {
            let generation = state.withLock { s in
                s.generation &+= 1
                return s.generation
            }
            let delay = max(0, deadline - clock.now)
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(Int(delay))) { [weak self] in
                self?.wake(ifStill: generation)
            }
            await signal()
            state.withLock { $0.generation &+= 1 }
            return
        }
        let sleeper = deadline.map { deadline in
            Task { [self] in
                try? await clock.sleep(until: deadline)
                if !Task.isCancelled { wake() }
            }
        }
        await signal()
        sleeper?.cancel()
    }

    /// `wake()`, unless the wait the timer was set for has ended.
    private func wake(ifStill generation: UInt64) {
        state.withLock { s -> CheckedContinuation<Void, Never>? in
            guard s.generation == generation else { return nil }
            if let w = s.waiter { s.waiter = nil; return w }
            s.pending = true
            return nil
        }?.resume()
    }

    private func signal() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { s -> Bool in
                    if s.pending || Task.isCancelled { s.pending = false; return true }
                    s.waiter = c
                    return false
                }
                if resumeNow { c.resume() }
            }
        } onCancel: {
            state.withLock { s -> CheckedContinuation<Void, Never>? in
                defer { s.waiter = nil }
                return s.waiter
            }?.resume()
        }
    }
}
