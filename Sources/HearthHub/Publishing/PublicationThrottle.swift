public import HearthEngine
import HearthSync

/// Publishes a retained document that many changes rewrite (a hub's device summary, its whole-home document)
/// at most once per window, always with the newest content, and never loses the last change.
///
/// Why: every metadata or connectivity change rewrote the summary at once, and every peer summary or status
/// rewrote the whole home (about 260 bytes a device): 100 `setRoom` on one hub of a 10-hub home of 1,000 devices
/// made 1,000 home documents, 259 MB through the broker (issue 21). A retained document only needs its last
/// value to arrive; the ones in between are read by nobody.
///
/// The rule: a change when nothing went out in the last `window` is published at once (a lone rename shows
/// without delay); a change within the window is held and published once at the window's end, with whatever
/// the content is then (`publish` builds it when it runs, so it is always the newest). A burst of any length
/// therefore costs one publication at its start and one per window after. `flush` (a clean stop) publishes
/// what is held at once.
///
/// The window runs on an injected `EngineClock` (the home's), so tests step a `ManualClock` instead of sleeping.
/// `publish` runs under a lock of its own, so two publications never overlap and the one built last is the one
/// sent last; it must only queue the message (libmosquitto's `publish` does), never wait on the network.
public final class PublicationThrottle: Sendable {
    private struct State {
        /// When the last publication went out; nil before the first.
        var lastSent: EngineInstant?
        /// A change arrived that no publication has carried yet.
        var held = false
        /// A task sleeps until the window's end to publish what is held.
        var timerRunning = false
        /// How many publications went out (for tests and benchmarks).
        var publications = 0
    }

    /// The window of the summary and the whole-home document, in milliseconds. Long enough that a burst (a
    /// script assigning rooms, a hub starting among nine others) costs about two publications, short enough
    /// that a home of 10 hubs still converges within its 300 ms goal and a lone rename is not delayed at all.
    public static let defaultWindow: Int64 = 100

    public let window: Int64
    let clock: any EngineClock
    private let state = Locked(State())
    private let sending = Locked(())
    private let publish: @Sendable () -> Void

    /// - Parameters:
    ///   - window: milliseconds; 0 publishes every change at once.
    ///   - publish: builds the newest content and queues it.
    public init(window: Int64, clock: any EngineClock, publish: @escaping @Sendable () -> Void) {
        self.window = max(0, window)
        self.clock = clock
        self.publish = publish
    }

    /// How many publications went out.
    public var publications: Int { state.withLock { $0.publications } }

    /// Whether a change is held for the window's end.
    public var isHolding: Bool { state.withLock { $0.held } }

    /// Something the document shows changed: publish now, or at the window's end.
    public func changed() {
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
