import HearthContract
import HearthJSON
import HearthEngine
import HearthHardware
import HearthMQTT
import Logging
import ServiceLifecycle
import Dispatch
import HearthSync

/// Runs the engine's timers (transitions, countdowns) until shutdown.
struct EngineService: Service {
    let home: Home

    func run() async throws {
        // Transitions in flight are cancelled at shutdown; their latest state is what gets saved.
        await cancelWhenGracefulShutdown { await home.run() }
    }
}

/// Runs every binding's loop (polling, edge events, retries); at shutdown releases the hardware in its
/// safe state.
struct BindingsService: Service {
    let bindings: [any HardwareBinding]

    func run() async throws {
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                for b in bindings { group.addTask { await b.run() } }
            }
        }
        try? await gracefulShutdown()  // with no bindings (or all done) there is still a hub to serve
        for b in bindings { b.stop() }
    }
}

/// Connects to the broker, publishes the home and takes requests until shutdown; then publishes
/// `offline` and disconnects, so no request is taken after that.
struct MQTTService: Service {
    let hub: MQTTHub

    func run() async throws {
        try hub.start()
        if let router = hub.router {
            await cancelWhenGracefulShutdown { await router.run() }
        } else {
            try? await gracefulShutdown()
        }
        hub.stop()
    }
}

/// Saves the home's state after changes: at most once per `interval`, always the latest state, and
/// once more at shutdown, so a dimmer transition does not write flash fifty times a second.
///
/// Only the devices that changed are read and re-encoded (each under the engine's lock for one device,
/// not a hundred), so a save never holds up a command for long. The interval runs on `clock` (the home's),
/// so that tests step it instead of sleeping.
///
/// A save that fails (a full disk, a file system remounted read-only, a failing SD card) leaves the old file
/// whole (``StateStore/save(bytes:)`` is atomic), is logged once — again only when the reason changes — and
/// is retried on its own, with a backoff from `interval` up to `maxRetryInterval`, without waiting for the next
/// change; the first save that succeeds after a failure is logged too. The hub serves on meanwhile.
struct PersistenceService: Service {
    let home: Home
    let store: StateStore
    let interval: Duration
    let clock: any EngineClock
    let logger: Logger
    var maxRetryInterval: Duration = .seconds(60)

    func run() async throws {
        let (dirty, signal) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let changed = Locked(Set<String>())
        let observer = home.observe { events in
            changed.withLock { ids in for e in events { ids.insert(e.deviceID) } }
            signal.yield()
        }
        defer { home.removeObserver(observer) }
        let order = home.deviceIDs.sorted()
        // Every device's entry, encoded at the first save, not at start-up: at 1,000 devices that is about 60 million
        // instructions, which competed with the documents the hub publishes on its way to `online`.
        var entries: [String: [UInt8]] = [:]
        var encoded = false
        var unsaved = false
        var failure = SaveFailure()
        /// `everything`: at shutdown, when a quiet attribute (a level mid-fade) may have changed unreported.
        func flush(everything: Bool = false) async {
            let reported = changed.withLock { ids in defer { ids.removeAll() }; return ids }
            // Nothing changes unreported until something has been reported (a quiet attribute moves only in a
            // transition a command started): with nothing reported there is nothing to save yet. The first save
            // encodes every device; each is new to `entries`, so it is written.
            if !encoded && reported.isEmpty { return }
            let all = everything || !encoded
            encoded = true
            for id in all ? order : Array(reported) {
                guard let saved = try? home.saved(id) else { continue }
                let entry = StateStore.entry(id, saved)
                if entry != entries[id] {
                    entries[id] = entry
                    unsaved = true
                }
            }
            guard unsaved else { return }
            let bytes = StateStore.file(order.compactMap { entries[$0] })
            // fsync on an SD card can take long: the write runs on a thread of its own, never on a thread of the
            // cooperative pool, which the engine's timers and the bindings' loops share.
            let error = await withCheckedContinuation { (done: CheckedContinuation<StateStoreError?, Never>) in
                Self.writer.async { [store] in
                    do throws(StateStoreError) { try store.save(bytes: bytes); done.resume(returning: nil) } catch {
                        done.resume(returning: error)
                    }
                }
            }
            if let error {
                if failure.record(error) {
                    logger.error(
                        """
                        state not saved: \(error); the previous state file is kept, the hub goes on serving and \
                        retries on its own
                        """,
                        metadata: ["file": "\(store.file)"])
                }
            } else {
                unsaved = false
                if let attempts = failure.clear() {
                    logger.notice(
                        "state saved again after \(attempts) failed attempts", metadata: ["file": "\(store.file)"])
                }
            }
        }
        /// Sleeps on the clock for `duration`, or until shutdown (the waker's wait ends when the task is
        /// cancelled, even on a clock that ignores cancellation).
        func pause(_ duration: Duration) async {
            let ms = duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
            await cancelWhenGracefulShutdown { [clock] in
                await DeadlineWaker().wait(until: clock.now + ms, clock: clock)
            }
        }
        var changes = dirty.cancelOnGracefulShutdown().makeAsyncIterator()
        while !Task.isShuttingDownGracefully {
            if unsaved {
                // The last save failed: try again after the backoff, whether or not anything changed.
                await pause(min(interval * (1 << min(failure.attempts, 16)), maxRetryInterval))
                if Task.isShuttingDownGracefully { break }
            } else {
                guard await changes.next() != nil else { break }
            }
            await flush()
            await pause(interval)
        }
        await flush(everything: true)
    }

    /// Where state files are written (blocking: write, fsync, rename, fsync of the directory).
    static let writer = DispatchQueue(label: "hearth.persistence")
}

/// The saves that failed in a row, so that a full disk is logged once, not at every retry.
struct SaveFailure {
    private(set) var attempts = 0
    private var reason: String?

    /// Counts a failed save; true when it should be logged: the first, or one whose reason differs.
    mutating func record(_ error: StateStoreError) -> Bool {
        attempts += 1
        defer { reason = error.description }
        return reason != error.description
    }

    /// Ends a run of failures: how many there were, or nil if the last save did not fail.
    mutating func clear() -> Int? {
        defer { attempts = 0; reason = nil }
        return attempts > 0 ? attempts : nil
    }
}

/// Pings systemd's watchdog from the service's own loop, so a hung hub is restarted.
struct WatchdogService: Service {
    let notifier: SystemdNotifier
    let interval: Duration

    func run() async throws {
        try await cancelWhenGracefulShutdown {
            while true {
                notifier.notify("WATCHDOG=1")
                try await Task.sleep(for: interval)
            }
        }
    }
}
