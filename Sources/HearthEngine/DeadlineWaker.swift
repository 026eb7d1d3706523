import Dispatch
import HearthSync

/// Lets a loop (the engine's timers, a binding's polling) sleep until a deadline and be woken early,
/// without polling.
public final class DeadlineWaker: Sendable {
    private struct State {
        var waiter: CheckedContinuation<Void, Never>?
        var pending = false
        /// Which wait a timer belongs to: a timer of an earlier wait wakes nothing.
        var generation: UInt64 = 0
    }
    private let state = Locked(State())
    private let coarse: Bool

    /// `coarse`: on the real clock, a deadline is a libdispatch timer (with its leeway, a tenth of the delay) instead
    /// of a sleeping task. For loops that wait seconds and do not mind a late wake-up (a binding's probe every 5 s):
    /// a sleeping task and its allocator's slabs cost kilobytes for each wait in flight, where a pending timer is a
    /// hundred bytes (docs/benchmarks.md, "1,000 devices"). The engine's timers (fade steps on a 20 ms grid) are not
    /// coarse.
    public init(coarse: Bool = false) { self.coarse = coarse }

    public func wake() {
        state.withLock { s -> CheckedContinuation<Void, Never>? in
            if let w = s.waiter { s.waiter = nil; return w }
            s.pending = true
            return nil
        }?.resume()
    }

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
