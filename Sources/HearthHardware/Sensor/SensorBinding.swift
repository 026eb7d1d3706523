import HearthEngine
import HearthModel
import HearthSync

/// A humidity or temperature sensor read every `interval` through IIO or hwmon (or the simulated board).
///
/// Readings go through `SensorFilter` (plausibility, median, delta threshold, throttle) before they reach the
/// measurement trait. A sensor that fails or returns nothing plausible for `staleAfter` intervals goes offline and
/// its value becomes null; the next plausible reading brings it back. A sensor that cannot even be opened goes
/// offline at once and is retried with backoff.
final class SensorBinding: TickingBinding {
    let configuration: SensorConfiguration
    let hardware: any HardwareBackend
    let runtime: BindingRuntime
    let trait: TraitID

    private struct State {
        var source: (any SensorSource)?
        var filter: SensorFilter
        var nextPoll: EngineInstant?
        var retryAt: EngineInstant?
        var backoff = Backoff()
        /// Intervals in a row without a plausible reading.
        var misses = 0
        var isStale = false
        var lastProblem: String?
    }
    private let state: Locked<State>

    var wiring: String { configuration.wiring }

    init(_ configuration: SensorConfiguration, context: BindingContext) {
        self.configuration = configuration
        hardware = context.hardware
        trait = configuration.quantity == .humidity ? .relativeHumidityMeasurement : .temperatureMeasurement
        runtime = BindingRuntime(context: context, kind: "\(configuration.quantity.rawValue)Sensor", traits: [trait])
        state = Locked(State(filter: SensorFilter(configuration)))
    }

    var actuator: (any EndpointActuator)? { nil }

    func start(home: Home) {
        runtime.attach(home)
        guard !configuration.readsSlowly else {
            // A 1-Wire conversion takes 750 ms: the first one runs on this device's lane, not on the caller's path
            // (the daemon starts every binding in turn, then connects to the broker).
            home.enqueue(on: runtime.deviceID) { [self] in
                let now = home.clock.now
                open(at: now)
                tick(at: now)
            }
            return
        }
        let now = home.clock.now
        open(at: now)
        tick(at: now)
    }

    /// Reads now and publishes a plausible reading even if the filters would hold it back.
    func refresh() {
        guard let home = runtime.home, !runtime.isStopped else { return }
        let now = home.clock.now
        if state.withLock({ $0.source == nil }) { open(at: now) }
        poll(at: now, force: true)
    }

    func stop() {
        runtime.markStopped()
        state.withLock { s in
            s.source = nil
            s.nextPoll = nil
            s.retryAt = nil
        }
        runtime.wake()
    }

    var nextDeadline: EngineInstant? {
        state.withLock { s in
            switch (s.nextPoll, s.retryAt) {
            case let (p?, r?): min(p, r)
            case let (p?, nil): p
            case let (nil, r?): r
            case (nil, nil): nil
            }
        }
    }

    func tick(at now: EngineInstant) {
        guard !runtime.isStopped else { return }
        let (retry, poll) = state.withLock { s in
            (s.retryAt.map { $0 <= now } ?? false, s.source != nil && (s.nextPoll.map { $0 <= now } ?? true))
        }
        if retry { open(at: now) }
        if poll || (retry && state.withLock({ $0.source != nil })) { self.poll(at: now, force: false) }
    }

    private func open(at now: EngineInstant) {
        do throws(HardwareError) {
            let source = try hardware.openSensor(configuration.sensor, quantity: configuration.quantity)
            state.withLock { s in
                s.source = source
                s.retryAt = nil
                s.backoff.reset()
            }
        } catch {
            state.withLock { s in
                s.source = nil
                s.retryAt = now + s.backoff.next()
                s.nextPoll = nil
            }
            markStale("opening \(configuration.sensor) failed: \(error.message)")
        }
    }

    private func poll(at now: EngineInstant, force: Bool) {
        guard let source = state.withLock({ s -> (any SensorSource)? in
            s.nextPoll = now + configuration.interval
            return s.source
        }) else { return }
        let outcome: SensorFilter.Outcome
        var gone = false
        do throws(HardwareError) {
            let raw = try source.read()
            outcome = state.withLock { $0.filter.take(raw, at: now, force: force) }
        } catch {
            outcome = .drop("reading \(configuration.sensor) failed: \(error.message)")
            gone = error.kind == .gone || error.kind == .notFound
        }
        switch outcome {
        case .drop(let reason):
            let (first, stale) = state.withLock { s -> (Bool, Bool) in
                if gone { s.source = nil; s.retryAt = now + configuration.interval }
                s.misses += 1
                defer { s.lastProblem = reason }
                return (s.lastProblem != reason, s.misses >= configuration.staleAfter && !s.isStale)
            }
            if first { runtime.log("reading dropped: \(reason)") }
            if stale { markStale("no plausible reading for \(configuration.staleAfter) intervals (last: \(reason))") }
        case .hold:
            recovered()
        case .publish(let value):
            recovered()
            ingest(.int(value))
        }
    }

    /// After a plausible reading: back online if the sensor was stale.
    private func recovered() {
        let wasStale = state.withLock { s -> Bool in
            defer { s.misses = 0; s.isStale = false; s.lastProblem = nil }
            return s.isStale
        }
        if wasStale || runtime.offlineReason != nil { runtime.goOnline() }
    }

    private func markStale(_ reason: String) {
        state.withLock { s in
            s.isStale = true
            s.filter.reset()
        }
        runtime.goOffline(reason)
        ingest(.null)
    }

    private func ingest(_ value: Value) {
        guard let home = runtime.home else { return }
        do throws(HomeError) {
            try home.ingest(runtime.deviceID, type: runtime.typeName, trait: trait.qualifiedName, .measurement(value))
        } catch {
            runtime.log("the engine refused \(value): \(error.message)")
        }
    }
}
