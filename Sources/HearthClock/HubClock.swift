// Time as the hub sees it: instants on one monotonic timeline, the clock protocol every timer of the hub runs on,
// the real (monotonic) clock and the manual one tests step. A target of its own so that the engine and the layers
// below it (the Linux backend's edge timestamps) share one timeline without importing each other.

#if canImport(Glibc)
import Glibc
#endif
import HearthSync

/// A point on the hub's monotonic timeline, in milliseconds.
///
/// Milliseconds are fine enough for Matter's 1/10 s units and a 50 Hz output rate, and an integer
/// keeps transition arithmetic exact and allocation-free.
public struct HubInstant: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var milliseconds: Int64

    public init(milliseconds: Int64) { self.milliseconds = milliseconds }

    public static func < (a: Self, b: Self) -> Bool { a.milliseconds < b.milliseconds }
    public static func + (a: Self, ms: Int64) -> Self { Self(milliseconds: a.milliseconds + ms) }
    public static func - (a: Self, b: Self) -> Int64 { a.milliseconds - b.milliseconds }
    public var description: String { "\(milliseconds) ms" }
}

/// The time source the hub runs on (the engine's transitions, the bindings' polls and retries), injected so that
/// timers and timeouts are tested step by step without sleeping.
public protocol HubClock: Sendable {
    var now: HubInstant { get }
    /// Returns once `now >= deadline`, or throws `CancellationError` when the task is cancelled.
    func sleep(until deadline: HubInstant) async throws
}

/// The real clock: CLOCK_MONOTONIC, which never jumps when NTP or a user sets the wall clock.
public struct MonotonicClock: HubClock {
    public init() {}

    public var now: HubInstant {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return HubInstant(milliseconds: Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000)
    }

    /// Sleeps until CLOCK_MONOTONIC reaches the deadline's millisecond, to the nanosecond, without leeway.
    ///
    /// Why not `Task.sleep(for: .milliseconds(deadline - now))`: `now` is truncated to the millisecond, so that
    /// woke up to 1 ms late; and a sleep without a tolerance goes through `dispatch_after`, whose leeway is a
    /// tenth of the delay (at least 1 ms), so a 20 ms fade step could wake 2 ms late more, and a fade's duty
    /// writes fell behind its grid. The suspending clock is
    /// CLOCK_MONOTONIC on Linux, the clock `now` reads.
    public func sleep(until deadline: HubInstant) async throws {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        let remaining = deadline.milliseconds &* 1_000_000 &- (Int64(ts.tv_sec) &* 1_000_000_000 &+ Int64(ts.tv_nsec))
        if remaining > 0 {
            let clock = SuspendingClock()
            try await Task.sleep(until: clock.now.advanced(by: .nanoseconds(remaining)), tolerance: .zero, clock: clock)
        }
        // Never report a deadline unreached, whatever the sleep did.
        while now < deadline { try await Task.sleep(for: .milliseconds(1), tolerance: .zero, clock: SuspendingClock()) }
    }
}

/// A clock that moves only when a test says so. Sleepers wake when `advance` passes their deadline.
public final class ManualClock: HubClock {
    private struct State {
        var now: HubInstant
        var sleepers: [(deadline: HubInstant, continuation: CheckedContinuation<Void, Never>)] = []
    }
    private let state: Locked<State>

    public init(now: HubInstant = HubInstant(milliseconds: 0)) { state = Locked(State(now: now)) }

    public var now: HubInstant { state.withLock { $0.now } }

    /// How many sleepers wait for the clock to move (a cancelled one counts until `advance` passes its
    /// deadline): a test waits on this to know that a loop is asleep before it moves the clock.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    public func advance(by milliseconds: Int64) {
        let due = state.withLock { s in
            s.now = s.now + milliseconds
            let now = s.now
            let due = s.sleepers.filter { $0.deadline <= now }.map(\.continuation)
            s.sleepers.removeAll { $0.deadline <= now }
            return due
        }
        for c in due { c.resume() }
    }

    public func sleep(until deadline: HubInstant) async throws {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { s in
                if deadline <= s.now { return true }
                s.sleepers.append((deadline, c))
                return false
            }
            if ready { c.resume() }
        }
        try Task.checkCancellation()
    }
}
