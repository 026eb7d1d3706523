import HearthEngine
import HearthModel
import HearthSync

/// A window covering's motor on two relays, up and down, with its position estimated from the travel times.
///
/// The relays are interlocked here: a relay goes on only after the other was set off, a run in one direction ends
/// before one in the other starts, and between the two both stay off for `reversePause` (a motor reversed while it
/// turns, or two phases powered at once, burns it). Every run stops at the cut-off, `maxRunTime`. Timing runs on the
/// home's clock in `tick(at:)`, never by sleeping, so tests step it.
///
/// The position is the last known one moved by the time run over the travel time of that direction. A move to an end
/// runs `endOverrun` past where the estimate puts the end (or until that end's stop switch closes) and then knows
/// the position exactly: that is the calibration, and a covering whose position is unknown (its first start) opens
/// fully before it goes to a position in between. Window Covering keeps the position across restarts; on start the
/// binding takes it from there, requests both relays off and waits a pause before it runs, whatever a killed process
/// left the lines at.
final class CoverBinding: RetryingOutputBinding, EndpointActuator {
    let configuration: CoverConfiguration
    let hardware: any HardwareBackend
    let runtime: BindingRuntime

    enum Direction: Sendable, Equatable {
        case up, down

        /// Window Covering's MovementStatus: 1 opening, 2 closing.
        var motion: Int { self == .up ? 1 : 2 }
    }

    struct Run: Sendable {
        var direction: Direction
        /// The relay that runs it (`lines` index: 0 up, 1 down, swapped when the motor is reversed).
        var line: Int
        var since: EngineInstant
        /// The position at `since`, nil when unknown.
        var from: Double?
        /// Where it stops: the target, or an end (after the overrun).
        var stopAt: EngineInstant
        var cutOffAt: EngineInstant
        /// Whether it runs to an end (and calibrates there).
        var toEnd: Bool
        var target: Int
    }

    private struct State {
        /// Up, then down.
        var lines: [any OutputLine] = []
        var stops: [(line: any InputLine, atOpen: Bool)] = []
        /// Whether each end's stop switch is active: open, closed.
        var stopActive = [false, false]
        /// The position (100ths closed) when not running; nil while unknown.
        var position: Double?
        var run: Run?
        /// A run that waits for the pause after the last one (or after the lines were requested).
        var waiting: (direction: Direction, target: Int, at: EngineInstant)?
        /// When the motor last stopped, and which way it had turned (nil: unknown, as after a start).
        var stoppedAt: EngineInstant?
        var lastDirection: Direction?
        /// The target the client asked for, which the report names; a middle target after calibrating first.
        var goal: Int?
        var afterCalibration: Int?
        var reversed = false
        var nextReport: EngineInstant?
        var reportNow = false
        var started = false
        var retry = FaultRetry()
    }
    private let state = Locked(State())

    var wiring: String { configuration.wiring }

    init(_ configuration: CoverConfiguration, context: BindingContext) {
        self.configuration = configuration
        hardware = context.hardware
        runtime = BindingRuntime(context: context, kind: "relayCover", traits: [.windowCovering])
    }

    var actuator: (any EndpointActuator)? { self }
    var requiredFeatures: [TraitID: Set<String>] { [.windowCovering: ["lift", "positionAwareLift"]] }

    /// How often a moving covering reports where it is.
    static let reportInterval: Int64 = 1_000

    func travel(_ direction: Direction) -> Int64 { direction == .up ? configuration.openTime : configuration.closeTime }

    /// Where a run is at `now`: nil while the start was unknown.
    private func estimate(_ run: Run, at now: EngineInstant) -> Double? {
        guard let from = run.from else { return nil }
        let moved = Double(now - run.since) / Double(travel(run.direction)) * 10_000
        return min(10_000, max(0, run.direction == .up ? from - moved : from + moved))
    }

    // MARK: EndpointActuator

    func drive(_ output: EndpointOutput) throws(HomeError) {
        let now = runtime.home?.clock.now ?? EngineInstant(milliseconds: 0)
        try state.withLock { (s) throws(HomeError) in
            guard !s.lines.isEmpty else {
                guard s.started else { return }
                throw .unavailable("the cover's relays are not available: "
                                   + (runtime.offlineReason ?? s.retry.pendingFault ?? "they are being re-requested"))
            }
            s.reversed = output.coverReversed
            do throws(HardwareError) {
                if let target = output.coverTarget {
                    try plan(Int(target), &s, now: now)
                } else {
                    s.afterCalibration = nil
                    s.waiting = nil
                    try halt(&s, now: now)
                }
            } catch {
                fail(&s, "switching the cover's relays failed: \(error.message)")
                throw .hardware("cover relays: \(error.message)")
            }
            s.reportNow = true
        }
        runtime.wake()
    }

    /// Sets the motor going towards `target` from where it is: on in the same direction, or stopped, a pause, and
    /// the other direction.
    private func plan(_ target: Int, _ s: inout State, now: EngineInstant) throws(HardwareError) {
        let position = s.run.map { estimate($0, at: now) } ?? s.position
        s.goal = target
        s.afterCalibration = nil
        let direction: Direction
        let toEnd: Bool
        switch (position, target) {
        case (_, 0): (direction, toEnd) = (.up, true)
        case (_, 10_000): (direction, toEnd) = (.down, true)
        case (nil, _):
            // Unknown: calibrate at the open end first.
            (direction, toEnd) = (.up, true)
            s.afterCalibration = target
        case (let p?, _):
            if abs(p - Double(target)) < 1 {
                s.waiting = nil
                try halt(&s, now: now)
                return
            }
            (direction, toEnd) = (Double(target) < p ? .up : .down, false)
        }
        if var run = s.run, run.direction == direction {
            // On the way already: only where it stops changes.
            run.toEnd = toEnd
            run.target = toEnd ? (direction == .up ? 0 : 10_000) : target
            run.stopAt = stopTime(direction, from: position, since: now, toEnd: toEnd, target: target)
            run.stopAt = min(run.stopAt, run.cutOffAt)
            run.from = position
            run.since = now
            s.run = run
            return
        }
        try halt(&s, now: now)
        let pauseEnd = s.stoppedAt.map { $0 + configuration.reversePause } ?? now
        if s.lastDirection != direction && pauseEnd > now {
            s.waiting = (direction, target, pauseEnd)
        } else {
            s.waiting = nil
            try start(direction, target: target, toEnd: toEnd, &s, now: now)
        }
    }

    private func stopTime(_ direction: Direction, from position: Double?, since: EngineInstant, toEnd: Bool,
                          target: Int) -> EngineInstant {
        let full = Double(travel(direction))
        guard let position else { return since + Int64(full) + configuration.endOverrun }
        if toEnd {
            let left = direction == .up ? position : 10_000 - position
            return since + Int64((left / 10_000 * full).rounded(.up)) + configuration.endOverrun
        }
        return since + Int64((abs(Double(target) - position) / 10_000 * full).rounded())
    }

    /// Runs the motor: the other relay is set off first, so the two are never on together.
    private func start(_ direction: Direction, target: Int, toEnd: Bool, _ s: inout State, now: EngineInstant)
        throws(HardwareError)
    {
        guard s.run == nil else { return }
        if s.stopActive[direction == .up ? 0 : 1] {
            // Already at that end, as its stop switch says.
            s.position = direction == .up ? 0 : 10_000
            return
        }
        let line = (direction == .up) != s.reversed ? 0 : 1
        try s.lines[1 - line].set(false)
        try s.lines[line].set(true)
        let position = s.position
        let stopAt = stopTime(direction, from: position, since: now, toEnd: toEnd, target: target)
        s.run = Run(direction: direction, line: line, since: now, from: position,
                    stopAt: min(stopAt, now + configuration.maxRunTime), cutOffAt: now + configuration.maxRunTime,
                    toEnd: toEnd, target: toEnd ? (direction == .up ? 0 : 10_000) : target)
        s.nextReport = now + Self.reportInterval
    }

    /// Stops the motor where it is (if it runs), recording the position and when it stopped.
    private func halt(_ s: inout State, now: EngineInstant, at position: Double?? = .none) throws(HardwareError) {
        guard let run = s.run else { return }
        s.run = nil
        s.position = position ?? estimate(run, at: now)
        s.stoppedAt = now
        s.lastDirection = run.direction
        s.nextReport = nil
        try s.lines[run.line].set(false)
    }

    private func fail(_ s: inout State, _ reason: String) {
        for line in s.lines { try? line.release(leaving: false) }
        for stop in s.stops { stop.line.close() }
        s.lines = []
        s.stops = []
        if let run = s.run { s.position = nil; s.lastDirection = run.direction }
        s.run = nil
        s.waiting = nil
        s.retry.record(reason)
        runtime.wake()
    }

    // MARK: Timers

    var nextDeadline: EngineInstant? {
        let own = state.withLock { s -> EngineInstant? in
            [
                s.waiting?.at, s.run?.stopAt, s.run?.cutOffAt, s.nextReport,
                s.reportNow ? EngineInstant(milliseconds: .min / 2) : nil
            ]
            .compactMap { $0 }.min()
        }
        return [own, retryDeadline].compactMap { $0 }.min()
    }

    func tick(at now: EngineInstant) {
        let report = state.withLock { s -> [String: Value]? in
            guard !s.lines.isEmpty else { return nil }
            do throws(HardwareError) { try step(&s, now: now) } catch {
                fail(&s, "switching the cover's relays failed: \(error.message)")
                return nil
            }
            let due = s.reportNow || (s.nextReport.map { $0 <= now } ?? false)
            guard due else { return nil }
            s.reportNow = false
            if s.run != nil { s.nextReport = now + Self.reportInterval }
            let position = s.run.map { estimate($0, at: now) } ?? s.position
            let motion = s.run?.direction.motion ?? s.waiting?.direction.motion ?? 0
            return ["position": position.map { .int(Int($0.rounded())) } ?? .null, "motion": .int(motion),
                    "target": s.goal.map(Value.int) ?? .null]
        }
        if let report, let home = runtime.home {
            do throws(HomeError) {
                try home.ingest(runtime.deviceID, type: runtime.typeName, trait: TraitID.windowCovering.qualifiedName,
                                .report(report))
            } catch {
                runtime.log("cannot report the position: \(error.message)")
            }
        }
        retryTick(at: now)
    }

    /// What is due at `now`: a waiting run starts, a run arrives, reaches its end stop or is cut off.
    private func step(_ s: inout State, now: EngineInstant) throws(HardwareError) {
        if let w = s.waiting, w.at <= now {
            s.waiting = nil
            let toEnd = w.target == 0 || w.target == 10_000 || s.afterCalibration != nil
            try start(w.direction, target: w.target, toEnd: toEnd, &s, now: now)
            s.reportNow = true
        }
        guard let run = s.run else { return }
        let endStop = run.direction == .up ? s.stopActive[0] : s.stopActive[1]
        if endStop {
            try halt(&s, now: now, at: .some(Double(run.direction == .up ? 0 : 10_000)))
        } else if now >= run.stopAt && run.stopAt < run.cutOffAt {
            try halt(&s, now: now, at: .some(run.toEnd ? Double(run.target) : estimate(run, at: now)))
        } else if now >= run.cutOffAt {
            runtime.log("cut off after running \(configuration.maxRunTime) ms")
            // A run to an end that lasted the cut-off got there; another is where the estimate says.
            try halt(&s, now: now, at: .some(run.toEnd ? Double(run.target) : estimate(run, at: now)))
        } else {
            return
        }
        s.reportNow = true
        if let then = s.afterCalibration, s.position != nil {
            s.afterCalibration = nil
            try plan(then, &s, now: now)
        }
    }

    // MARK: Lifecycle

    func withRetry<R: Sendable>(_ body: (inout FaultRetry) -> R) -> R { state.withLock { body(&$0.retry) } }
    func markStarted() { state.withLock { $0.started = true } }

    func stop() {
        runtime.markStopped()
        let now = runtime.home?.clock.now ?? EngineInstant(milliseconds: 0)
        let (lines, stops, stoppedAt) = state.withLock { s -> ([any OutputLine], [any InputLine], Double??) in
            defer { s.lines = []; s.stops = []; s.run = nil; s.waiting = nil; s.retry.cancel() }
            return (s.lines, s.stops.map(\.line), s.run.map { estimate($0, at: now) })
        }
        // Stopped mid-run: where it stopped is kept, as a report between the periodic ones would have it.
        if let stoppedAt, let home = runtime.home {
            try? home.ingest(
                runtime.deviceID, type: runtime.typeName, trait: TraitID.windowCovering.qualifiedName,
                .report(["position": stoppedAt.map { .int(Int($0.rounded())) } ?? .null, "motion": .int(0)]))
        }
        // Both off before either is let go.
        for line in lines { try? line.set(false) }
        for (line, pin) in zip(lines, [configuration.up, configuration.down]) {
            do throws(HardwareError) { try line.release(leaving: false) } catch {
                runtime.log("releasing \(pin) failed: \(error.message)")
            }
        }
        for line in stops { line.close() }
        runtime.wake()
    }

    func probe() -> String? {
        state.withLock { s -> String? in
            for line in s.lines {
                do throws(HardwareError) { _ = try line.value() } catch {
                    fail(&s, "the cover's relays stopped answering: \(error.message)")
                    return "the cover's relays stopped answering: \(error.message)"
                }
            }
            return nil
        }
    }

    /// Requests both relays off and the end stops; takes the position Window Covering kept.
    func acquire(at now: EngineInstant) {
        guard let home = runtime.home, !runtime.isStopped else { return }
        var lines: [any OutputLine] = []
        var stops: [(line: any InputLine, atOpen: Bool)] = []
        var levels = [false, false]
        do throws(HardwareError) {
            for pin in [configuration.up, configuration.down] {
                lines.append(try hardware.openOutput(pin, initialValue: false, activeLow: configuration.activeLow,
                                                     drive: .pushPull))
            }
            for (pin, atOpen) in [(configuration.openStop, true), (configuration.closedStop, false)] {
                guard let pin else { continue }
                let line = try hardware.openInput(pin, bias: configuration.stopActiveLow ? .pullUp : .pullDown,
                                                  activeLow: configuration.stopActiveLow, clock: home.clock)
                stops.append((line, atOpen))
                levels[atOpen ? 0 : 1] = try line.value()
            }
        } catch {
            for line in lines { try? line.release(leaving: false) }
            for stop in stops { stop.line.close() }
            state.withLock { $0.retry.failed(at: now) }
            runtime.goOffline("requesting the cover's relays failed: \(error.message)")
            return
        }
        let kept = (try? home.device(runtime.deviceID))?.type(named: runtime.typeName)?.trait(.windowCovering)?
            .attributes.first { $0.descriptor.name == "currentPositionLiftPercent100ths" }?.value?.intValue
        let accepted = state.withLock { s -> Bool in
            guard !runtime.isStopped else { return false }
            s.lines = lines
            s.stops = stops
            s.stopActive = levels
            if s.position == nil { s.position = kept.map(Double.init) }
            if levels[0] { s.position = 0 }
            if levels[1] { s.position = 10_000 }
            s.run = nil
            s.waiting = nil
            // Whatever the lines were before, the motor may still turn: a pause before any run.
            s.stoppedAt = now
            s.lastDirection = nil
            s.retry.succeeded(probingAt: runtime.firstProbe(after: now))
            return true
        }
        guard accepted else {
            for line in lines { try? line.release(leaving: false) }
            for stop in stops { stop.line.close() }
            return
        }
        for stop in stops {
            let end = stop.atOpen ? 0 : 1
            stop.line.startEvents { [weak self] event in
                guard let self else { return }
                self.state.withLock { s in
                    switch event {
                    case .edges(let edges): if let last = edges.last { s.stopActive[end] = last.level }
                    case .failed(let error): s.retry.record("the end stop stopped delivering events: \(error.message)")
                    }
                }
                self.runtime.wake()
            }
        }
        if let output = try? home.output(runtime.deviceID, type: runtime.typeName) { try? drive(output) }
        runtime.goOnline()
    }
}
