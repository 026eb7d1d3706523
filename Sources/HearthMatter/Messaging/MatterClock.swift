// The time the message layer runs on, injected so that retransmissions, acknowledgement timers and session activity
// are tested step by step without sleeping (the same shape as the engine's clock).

#if canImport(Glibc)
import Glibc
#endif
import HearthSync

/// A point on a monotonic timeline, in milliseconds (MRP's intervals are whole milliseconds).
public struct MatterInstant: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var milliseconds: Int64

    public init(milliseconds: Int64) { self.milliseconds = milliseconds }

    public static func < (a: Self, b: Self) -> Bool { a.milliseconds < b.milliseconds }
    public static func + (a: Self, ms: Int64) -> Self { Self(milliseconds: a.milliseconds + ms) }
    public static func - (a: Self, b: Self) -> Int64 { a.milliseconds - b.milliseconds }
    public var description: String { "\(milliseconds) ms" }
}

public protocol MatterClock: Sendable {
    var now: MatterInstant { get }
    /// Returns once `now >= deadline`, or throws `CancellationError` when the task is cancelled.
    func sleep(until deadline: MatterInstant) async throws
}

/// CLOCK_MONOTONIC, which never jumps when the wall clock is set.
public struct MatterMonotonicClock: MatterClock {
    public init() {}

    public var now: MatterInstant {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return MatterInstant(milliseconds: Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000)
    }

    public func sleep(until deadline: MatterInstant) async throws {
        let remaining = deadline - now
        if remaining > 0 { try await Task.sleep(for: .milliseconds(remaining), tolerance: .zero, clock: SuspendingClock()) }
        while now < deadline { try await Task.sleep(for: .milliseconds(1), tolerance: .zero, clock: SuspendingClock()) }
    }
}

/// A clock that moves only when a test says so; sleepers wake when `advance` passes their deadline.
public final class MatterManualClock: MatterClock {
    private struct State {
        var now: MatterInstant
        var sleepers: [(deadline: MatterInstant, continuation: CheckedContinuation<Void, Never>)] = []
    }
    private let state: Locked<State>

    public init(now: MatterInstant = MatterInstant(milliseconds: 0)) { state = Locked(State(now: now)) }

    public var now: MatterInstant { state.withLock { $0.now } }

    /// How many sleepers wait for the clock to move.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    public func advance(by milliseconds: Int64) {
        let due = state.withLock { s in
            s.now = s.now + milliseconds
            let now = s.now
            let due = s.sleepers.filter { $0.deadline <= now }.map(\.continuation)
            s.sleepers.removeAll { $0.deadline <= now }
            return due
        }
        for continuation in due { continuation.resume() }
    }

    public func sleep(until deadline: MatterInstant) async throws {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { s in
                if s.now >= deadline { return true }
                s.sleepers.append((deadline, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
        try Task.checkCancellation()
    }
}
