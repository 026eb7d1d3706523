import Dispatch
public import HearthEngine
public import HearthModel
import HearthSync

/// A gate a test holds shut: work that reaches it blocks until the test opens it, so "while the device is
/// stuck" is a state the test controls, not a duration it guesses. Every wait is bounded.
public final class Latch: Sendable {
    private struct State {
        var isOpen = false
        var arrived = 0
        var waiting = 0
    }
    private let state = Locked(State())
    private let arrivals = DispatchSemaphore(value: 0)
    private let release = DispatchSemaphore(value: 0)

    public init() {}

    /// Called by the blocked work: blocks until `open()` (at most `limit`, so a broken test cannot hang forever).
    public func pass(limit: Duration = .seconds(60)) {
        let mustWait = state.withLock { s -> Bool in
            s.arrived += 1
            if s.isOpen { return false }
            s.waiting += 1
            return true
        }
        arrivals.signal()
        if mustWait { _ = release.wait(timeout: .now() + .nanoseconds(Int(limit.components.seconds) * 1_000_000_000)) }
    }

    /// Waits until some work is blocked in `pass()`; false if none arrived within `timeout`.
    public func waitForArrival(timeout: Duration = .seconds(15)) -> Bool {
        arrivals.wait(timeout: .now() + .nanoseconds(Int(timeout.components.seconds) * 1_000_000_000)) == .success
    }

    /// Lets everything through, now and from now on.
    public func open() {
        let waiting = state.withLock { s -> Int in
            s.isOpen = true
            defer { s.waiting = 0 }
            return s.waiting
        }
        for _ in 0..<waiting { release.signal() }
    }

    public var arrivedCount: Int { state.withLock { $0.arrived } }
}

/// A relay whose line write hangs (a wedged GPIO expander, a driver stuck on a bus) while the test holds it; it can
/// also refuse like broken hardware.
public final class BlockingActuator: EndpointActuator {
    private struct State {
        var outputs: [EndpointOutput] = []
        var failing = false
        var hold: Latch?
    }
    private let state = Locked(State())

    public init() {}

    public var outputs: [EndpointOutput] { state.withLock { $0.outputs } }
    public func fail(_ failing: Bool) { state.withLock { $0.failing = failing } }

    /// From now on every write blocks until the returned latch is opened.
    public func hold() -> Latch {
        let latch = Latch()
        state.withLock { $0.hold = latch }
        return latch
    }

    public func drive(_ output: EndpointOutput) throws(HomeError) {
        state.withLock { $0.hold }?.pass()
        let failing = state.withLock { s in
            if !s.failing { s.outputs.append(output) }
            return s.failing
        }
        if failing { throw .hardware("relay line write failed: EIO") }
    }
}
