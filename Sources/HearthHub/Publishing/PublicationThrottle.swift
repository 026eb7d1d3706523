public import HearthEngine
import HearthSync

/// Publishes a retained document that many changes rewrite (a hub's device summary, its whole-home document)
/// at most once per window, always with the newest content, and never loses the last change.
///
/// Why: every metadata or connectivity change rewrote the summary at once, and every peer summary or status
/// rewrote the whole home: a burst of renames on one hub of a large home made as many whole-home documents on
/// every hub. A retained document only needs its last value to arrive; the ones in between are read by nobody.
///
/// Two rules (`Rule`):
/// - `.leadingEdge` (the device summary): a change when nothing went out in the last `window` is published at
///   once (a lone rename shows without delay); a change within the window is held and published once at the
///   window's end, with whatever the content is then (`publish` builds it when it runs, so it is always the
///   newest). A burst of any length costs one publication at its start and one per window after.
/// - `.settled(maximumDelay:)` (the whole-home document): a change is held until nothing has changed for a
///   `window`, or until `maximumDelay` has passed since the first held change, whichever comes first. Why: a
///   hub's home document reacts to every peer's summary, and the peers' summaries of a burst arrive spread
///   over several windows; under the leading-edge rule each hub published two or three whole-home documents for
///   one burst. Settled, it publishes one. Nobody waits on this document to act (forwarding reads the summaries), so a
///   lone change showing a window late costs nothing; `maximumDelay` bounds how long a steady stream of
///   changes can keep it unpublished.
///
/// `flush` (a clean stop) publishes what is held at once, under either rule.
///
/// The window runs on an injected `EngineClock` (the home's), so tests step a `ManualClock` instead of sleeping.
/// `publish` runs under a lock of its own, so two publications never overlap and the one built last is the one
/// sent last; it must only queue the message (libmosquitto's `publish` does), never wait on the network.
public final class PublicationThrottle: Sendable {
    /// When a change is published: see the type's comment.
    public enum Rule: Sendable, Equatable {
        case leadingEdge
        case settled(maximumDelay: Int64)
    }

    private struct State {
        /// When the last publication went out; nil before the first.
        var lastSent: EngineInstant?
        /// When the first change that no publication has carried arrived (`.settled`).
        var firstHeld: EngineInstant?
        /// When the latest change arrived (`.settled`).
        var lastChange: EngineInstant?
        /// A change arrived that no publication has carried yet.
        var held = false
        /// A task sleeps until the window's end to publish what is held.
        var timerRunning = false
        /// How many publications went out (for tests and benchmarks).
        var publications = 0
    }

    /// The device summary's window (`.leadingEdge`), in milliseconds: a burst (a script assigning rooms) costs a
    /// publication at its start and one per window after, and a lone rename's summary is not delayed at all.
    public static let defaultWindow: Int64 = 50

    /// The whole-home document's quiet period (`.settled`), in milliseconds. Longer than the summary's window, so
    /// that a peer's summaries of one burst (one at its start, one a window later) make one home document on every
    /// hub, not two; short, because every home in a home of hubs waits this long after the last peer it hears of
    /// before it shows the whole home (a 10-hub home's convergence goal is 300 ms).
    public static let defaultSettleWindow: Int64 = 75

    /// The home document's longest delay under `.settled`: a steady stream of peer changes still shows
    /// within a second.
    public static let defaultMaximumDelay: Int64 = 1_000

    public let window: Int64
    public let rule: Rule
    let clock: any EngineClock
    private let state = Locked(State())
    private let sending = Locked(())
    private let publish: @Sendable () -> Void

    /// - Parameters:
    ///   - window: milliseconds; 0 publishes every change at once.
    ///   - rule: when a change within a window goes out (`.leadingEdge` unless given).
    ///   - publish: builds the newest content and queues it.
    public init(window: Int64, rule: Rule = .leadingEdge, clock: any EngineClock,
                publish: @escaping @Sendable () -> Void) {
        self.window = max(0, window)
        if case .settled(let maximumDelay) = rule {
            self.rule = .settled(maximumDelay: max(self.window, maximumDelay))
        } else {
            self.rule = rule
        }
        self.clock = clock
        self.publish = publish
    }

    /// How many publications went out.
    public var publications: Int { state.withLock { $0.publications } }

    /// Whether a change is held for the window's end.
    public var isHolding: Bool { state.withLock { $0.held } }

    /// Whether a timer task is alive (it may still be starting, asleep, or ending).
    var isTimerRunning: Bool { state.withLock { $0.timerRunning } }

    /// Something the document shows changed: publish now, or at the window's end.
    public func changed() {
        if case .settled = rule, window > 0 { return changedSettled() }
        let now = clock.now
        enum Next { case now, hold(EngineInstant), nothing }
        let next = state.withLock { s -> Next in
            if s.timerRunning {
                s.held = true
                return .nothing
            }
            if let last = s.lastSent, now - last < window {
                s.held = true
                s.timerRunning = true
                return .hold(last + window)
            }
            s.lastSent = now
            s.publications += 1
            return .now
        }
        switch next {
        case .now: send()
        case .hold(let deadline):
            Task { [self] in
                try? await clock.sleep(until: deadline)
                windowEnded()
            }
        case .nothing: break
        }
    }

    /// `.settled`: hold the change; one timer task publishes once the changes settle or the longest delay ends.
    private func changedSettled() {
        let now = clock.now
        let startTimer = state.withLock { s -> Bool in
            s.held = true
            s.lastChange = now
            if s.firstHeld == nil { s.firstHeld = now }
            guard !s.timerRunning else { return false }
            s.timerRunning = true
            return true
        }
        guard startTimer else { return }
        Task { [self] in
            while true {
                // Sleep until the earliest moment the held change may go out; changes meanwhile move it.
                let deadline = state.withLock { s -> EngineInstant? in
                    guard s.held, let first = s.firstHeld, let last = s.lastChange,
                          case .settled(let maximumDelay) = rule else {
                        s.timerRunning = false
                        return nil
                    }
                    return min(last + window, first + maximumDelay)
                }
                guard let deadline else { return }
                if clock.now < deadline {
                    try? await clock.sleep(until: deadline)
                    continue
                }
                sendHeld(endingWindow: true)
                return
            }
        }
    }

    /// Publishes what is held now (a clean stop: nothing is lost). Does nothing when nothing is held.
    public func flush() {
        sendHeld(endingWindow: false)
    }

    /// Publishes now whether or not anything is held, without starting a window: a (re)connection republishes
    /// everything (the broker may have lost the retained copy), and the first change after it still goes out
    /// at once. Through the same lock as every other publication, so an older content never overtakes it.
    public func publishNow() {
        state.withLock { s in
            s.held = false
            s.firstHeld = nil
            s.lastChange = nil
            s.publications += 1
        }
        send()
    }

    private func windowEnded() {
        sendHeld(endingWindow: true)
    }

    /// Publishes what is held, if anything, as the start of a new window; `endingWindow`: the window's timer is done.
    private func sendHeld(endingWindow: Bool) {
        let now = clock.now
        let due = state.withLock { s -> Bool in
            if endingWindow { s.timerRunning = false }
            guard s.held else { return false }
            s.held = false
            s.firstHeld = nil
            s.lastChange = nil
            s.lastSent = now
            s.publications += 1
            return true
        }
        if due { send() }
    }

    private func send() {
        sending.withLock { _ in publish() }
    }
}
