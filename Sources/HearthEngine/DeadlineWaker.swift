import HearthSync

/// Lets a loop (the engine's timers, a binding's polling) sleep until a deadline and be woken early,
/// without polling.
public final class DeadlineWaker: Sendable {
    private struct State {
        var waiter: CheckedContinuation<Void, Never>?
        var pending = false
    }
    private let state = Locked(State())

    public init() {}

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
        let sleeper = deadline.map { deadline in
            Task { [self] in
                try? await clock.sleep(until: deadline)
                if !Task.isCancelled { wake() }
            }
        }
        await signal()
        sleeper?.cancel()
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
