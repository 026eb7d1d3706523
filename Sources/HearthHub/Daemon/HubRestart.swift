// The one way the hub restarts itself: something that changed what the hub runs (a configuration saved from the web
// page, a restored backup) asks for a restart; the hub's services stop as at SIGTERM (the state saved, the hardware
// released, `offline` published) and `hearthd run` exits with `HubRestart.exitStatus`. The systemd unit restarts on
// that status (Restart=on-failure) and scripts/run starts the hub again on it, so the new process reads the files
// afresh; nothing is re-read in place.
import HearthSync
import ServiceLifecycle

/// A restart asked for while the hub runs. The first request's reason is kept; later ones change nothing.
public final class HubRestart: Sendable {
    /// `EX_TEMPFAIL`: not a configuration error (78, which the unit does not restart on), not a crash.
    public static let exitStatus: Int32 = 75

    private struct State {
        var reason: String?
        var waiters: [CheckedContinuation<Void, Never>] = []
        /// The hub is shutting down anyway: waiting for a request is over.
        var released = false
    }
    private let state = Locked(State())

    public init() {}

    /// Asks the hub to restart: its services stop gracefully and `run()` returns `exitStatus`.
    public func request(reason: String) {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            guard s.reason == nil else { return [] }
            s.reason = reason
            defer { s.waiters = [] }
            return s.waiters
        }
        for w in waiters { w.resume() }
    }

    /// Why a restart was asked for, or nil while none was.
    public var reason: String? { state.withLock { $0.reason } }

    /// Returns once a restart is asked for.
    func requested() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if s.reason != nil || s.released { return true }
                s.waiters.append(c)
                return false
            }
            if now { c.resume() }
        }
    }
}

/// Waits for a restart request and then returns, which shuts the hub's service group down gracefully (it runs with
/// `successTerminationBehavior: .gracefullyShutdownGroup`); at SIGTERM it returns as well.
struct RestartService: Service {
    let restart: HubRestart

    func run() async throws {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await restart.requested() }
            group.addTask { try? await gracefulShutdown() }
            await group.next()
            // Whichever came first, the other waiter is let go: a cancelled task does not end a continuation.
            restart.wakeForShutdown()
            group.cancelAll()
        }
    }
}

extension HubRestart {
    /// Releases `requested()` waiters at shutdown without recording a restart.
    fileprivate func wakeForShutdown() {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.released = true
            defer { s.waiters = [] }
            return s.waiters
        }
        for w in waiters { w.resume() }
    }
}
