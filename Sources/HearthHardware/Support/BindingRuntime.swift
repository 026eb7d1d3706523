import HearthEngine
import HearthModel
import HearthSync

/// What every binding shares: the home it reports to, its log, the connectivity of its traits, and the loop
/// that runs its timers (polls, debounce, retries) on the home's clock.
///
/// A binding is a small state machine with `nextDeadline` and `tick(at:)`; `run()` only sleeps until the next
/// deadline or until something (an edge, a fault seen by the actuator) wakes it. Tests drive `tick` directly on a
/// `ManualClock`, so nothing is ever tested by sleeping.
final class BindingRuntime: Sendable {
    let deviceID: String
    let typeName: String
    /// The traits whose connectivity this binding answers for.
    let traits: [TraitID]
    private let logLine: @Sendable (String) -> Void
    /// Coarse: its deadlines are polls, retries and probes seconds apart (a few ms late is nothing to them).
    private let waker = DeadlineWaker(coarse: true)

    private struct State {
        var home: Home?
        var offlineReason: String?
        var isStopped = false
    }
    private let state = Locked(State())

    init(context: BindingContext, kind: String, traits: [TraitID]) {
        deviceID = context.deviceID
        typeName = context.typeName
        self.traits = traits
        let prefix = "\(context.deviceID) \(context.typeName) (\(kind)): "
        let log = context.log
        logLine = { log(prefix + $0) }
    }

    var home: Home? { state.withLock { $0.home } }
    var isStopped: Bool { state.withLock { $0.isStopped } }
    var offlineReason: String? { state.withLock { $0.offlineReason } }

    func attach(_ home: Home) { state.withLock { $0.home = home } }
    func markStopped() { state.withLock { $0.isStopped = true } }

    func log(_ message: String) { logLine(message) }

    /// Wakes `run()` early (an edge arrived, the actuator saw a fault).
    func wake() { waker.wake() }

    /// Takes the traits offline, logging the reason once per outage. Never call with the engine's lock held.
    func goOffline(_ reason: String) {
        let (home, changed) = state.withLock { s in
            defer { s.offlineReason = reason }
            return (s.home, s.offlineReason != reason)
        }
        if changed { log("offline: \(reason)") }
        setConnectivity(home, SourceConnectivity(.offline, .direct))
    }

    /// Brings the traits back online, logging the recovery if they were offline.
    func goOnline() {
        let (home, wasOffline) = state.withLock { s in
            defer { s.offlineReason = nil }
            return (s.home, s.offlineReason != nil)
        }
        if wasOffline { log("back online") }
        setConnectivity(home, .directOnline)
    }

    private func setConnectivity(_ home: Home?, _ connectivity: SourceConnectivity) {
        guard let home else { return }
        for trait in traits {
            do throws(HomeError) {
                try home.setConnectivity(deviceID, type: typeName, trait: trait.qualifiedName, connectivity)
            } catch {
                log("cannot set \(trait) \(connectivity): \(error.message)")
            }
        }
    }

    /// Runs `tick` whenever `nextDeadline` passes or `wake()` is called, until the task is cancelled.
    ///
    /// `tick` does the binding's blocking I/O (a sensor read, a line request), so it runs on the device's lane, never
    /// on a thread of Swift's cooperative pool: a read that stalls for seconds delays only this device.
    /// `tickFirst`: whether the loop ticks at once or first waits for a deadline or a wake (an output, which
    /// `start(home:)` already requested, has nothing to do before then; every binding hopping to its lane at the
    /// same instant made libdispatch start a thread per lane: 200 threads for 200 relays).
    func run(tickFirst: Bool = true, tick: @escaping @Sendable (EngineInstant) -> Void,
             nextDeadline: () -> EngineInstant?) async {
        guard let home else { return }
        let clock = home.clock
        if !tickFirst { await waker.wait(until: nextDeadline(), clock: clock) }
        while !Task.isCancelled && !isStopped {
            _ = await home.onLane(of: deviceID) { tick(clock.now) }
            await waker.wait(until: nextDeadline(), clock: clock)
        }
    }

    /// When an output that was just requested or written at `now` is first checked: within `outputProbeInterval`,
    /// earlier by up to half of it by a fixed amount per device, so that the outputs of a hub that started together
    /// are not probed together: each probe hops to its device's lane, and 200 lanes made busy at the same instant
    /// made libdispatch start 200 threads every 5 s (their stacks and malloc arenas were most of the Private_Dirty
    /// of a hub with 200 relays).
    func firstProbe(after now: EngineInstant) -> EngineInstant {
        now + (outputProbeInterval - probeOffset)
    }

    /// FNV-1a of the device id, not `Hasher`: the same device keeps the same offset from run to run.
    private var probeOffset: Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in deviceID.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return Int64(hash % UInt64(outputProbeInterval / 2))
    }
}

/// A binding driven by `BindingRuntime.run`: `tick(at:)` whenever `nextDeadline` passes or something wakes it.
protocol TickingBinding: HardwareBinding {
    var runtime: BindingRuntime { get }
}

extension TickingBinding {
    func run() async {
        await runtime.run(tick: { [self] now in tick(at: now) }, nextDeadline: { nextDeadline })
    }
}

/// An output (relay, dimmer): requested in the home's start-up state once started, and after a fault re-requested
/// on `FaultRetry`'s schedule. The binding supplies its lock-held schedule and how to request its hardware.
protocol RetryingOutputBinding: TickingBinding {
    /// Runs `body` on the binding's retry schedule under its lock.
    func withRetry<R: Sendable>(_ body: (inout FaultRetry) -> R) -> R
    /// From now on a missing output is a fault, not the start-up state settling.
    func markStarted()
    /// Requests the hardware in the output the home renders now; on failure goes offline and schedules a retry.
    func acquire(at now: EngineInstant)
    /// Checks that the held hardware still answers (a read, or the last value written again), on the schedule
    /// `FaultRetry.succeeded(probingAt:)` started; on failure lets go of it and returns the fault. An output is
    /// otherwise only written when commanded, so a chip that went away would show at the next command only.
    func probe() -> String?
}

extension RetryingOutputBinding {
    func start(home: Home) {
        runtime.attach(home)
        markStarted()
        acquire(at: home.clock.now)
    }

    func refresh() {
        guard let home = runtime.home else { return }
        tick(at: home.clock.now)
    }

    /// The loop waits first: `start(home:)` has requested the hardware, and a fault the actuator records wakes it.
    func run() async {
        await runtime.run(tickFirst: false, tick: { [self] now in tick(at: now) }, nextDeadline: { nextDeadline })
    }

    var nextDeadline: EngineInstant? { retryDeadline }

    /// When the retry schedule is next due: `nextDeadline`, unless the binding has timers of its own too.
    var retryDeadline: EngineInstant? {
        withRetry { r in
            switch (r.retryAt, r.probeAt) {
            case let (a?, b?): min(a, b)
            case let (a?, nil): a
            case let (nil, b?): b
            case (nil, nil): nil
            }
        }
    }

    func probe() -> String? { nil }

    func tick(at now: EngineInstant) { retryTick(at: now) }

    /// Reports a fault, retries and probes as the schedule says: `tick(at:)`, unless the binding has timers of its own.
    func retryTick(at now: EngineInstant) {
        guard !runtime.isStopped else { return }
        let (fault, retry, probing) = withRetry { r in
            let (fault, retry) = r.due(at: now)
            return (fault, retry, r.probeDue(at: now))
        }
        if let fault { runtime.goOffline(fault) }
        if retry { acquire(at: now) }
        if probing, let problem = probe() {
            let fault = withRetry { r -> String? in
                r.record(problem)
                return r.due(at: now).fault
            }
            if let fault { runtime.goOffline(fault) }
        }
    }
}

/// How often an output that can tell (`RetryingOutputBinding.probe`) checks that its hardware is still there: a
/// relay reads its line, a dimmer writes its duty cycle again. One ioctl or sysfs write per device every 5 s.
let outputProbeInterval: Int64 = 5_000

/// An output binding's fault-and-retry schedule. A fault the actuator sees under the engine's lock is only
/// recorded; the binding's loop reports it (offline) and retries the hardware with capped backoff.
struct FaultRetry: Sendable {
    /// A fault seen but not reported yet.
    private(set) var pendingFault: String?
    private(set) var retryAt: EngineInstant?
    /// When to check next that the held hardware still answers; nil while nothing is held or nothing checks.
    private(set) var probeAt: EngineInstant?
    private var backoff = Backoff()

    mutating func record(_ fault: String) {
        pendingFault = fault
        probeAt = nil
    }

    /// Whether a probe is due at `now` (the next one is then scheduled).
    mutating func probeDue(at now: EngineInstant) -> Bool {
        guard let at = probeAt, at <= now else { return false }
        probeAt = now + outputProbeInterval
        return true
    }

    /// The held hardware answered a write at `now`: the next probe comes an interval after it, so an output that is
    /// written often is never probed, and one that stops being written is probed within an interval of its death.
    mutating func answered(at now: EngineInstant) {
        if probeAt != nil { probeAt = now + outputProbeInterval }
    }

    /// At `now`: the fault to report (its retry is scheduled), and whether a retry is due.
    mutating func due(at now: EngineInstant) -> (fault: String?, retry: Bool) {
        if let fault = pendingFault {
            pendingFault = nil
            retryAt = now + backoff.next()
            return (fault, false)
        }
        return (nil, retryAt.map { $0 <= now } ?? false)
    }

    /// An attempt failed: try again later, a little later each time.
    mutating func failed(at now: EngineInstant) {
        retryAt = now + backoff.next()
        probeAt = nil
    }

    /// The hardware is back: no retry, and the next fault starts from the shortest delay. `probingAt`: when to
    /// first check that it still answers (outputs that probe), then every `outputProbeInterval`.
    mutating func succeeded(probingAt firstProbe: EngineInstant? = nil) {
        retryAt = nil
        backoff.reset()
        probeAt = firstProbe
    }

    /// Stopped: nothing more to retry.
    mutating func cancel() {
        retryAt = nil
        probeAt = nil
    }
}

/// Capped exponential backoff for retries after a fault: 1 s, 2 s, 4 s … at most a minute.
struct Backoff: Sendable, Hashable {
    var initial: Int64 = 1_000
    var maximum: Int64 = 60_000
    private(set) var current: Int64?

    init(initial: Int64 = 1_000, maximum: Int64 = 60_000) {
        self.initial = initial
        self.maximum = maximum
    }

    /// The delay before the next attempt; each call doubles it up to `maximum`.
    mutating func next() -> Int64 {
        let delay = current.map { min(maximum, $0 * 2) } ?? initial
        current = delay
        return delay
    }

    mutating func reset() { current = nil }
}

