import HearthEngine
import HearthModel
import HearthSync

/// A plug's power monitor, read every `interval` on the device's lane (never on another device's path): each reading
/// goes to ElectricalPowerMeasurement (power in mW, voltage in mV, current in mA) and to ElectricalEnergyMeasurement,
/// which integrates it on the engine's clock.
///
/// A read that fails is logged once per reason; after `staleAfter` failures in a row both traits go offline with the
/// reason and the readings become null (the energy total stays, and no energy is counted across the gap); the next
/// good reading brings them back on its own. A monitor that cannot be opened is offline at once and retried with
/// backoff; one that went away (ENODEV) is opened again.
final class PowerMeterBinding: TickingBinding {
    let configuration: PowerMeterConfiguration
    let hardware: any HardwareBackend
    let runtime: BindingRuntime

    private struct State {
        var source: (any PowerMeterSource)?
        var nextPoll: EngineInstant?
        var retryAt: EngineInstant?
        var backoff = Backoff()
        var misses = 0
        var isStale = false
        var lastProblem: String?
    }
    private let state = Locked(State())

    var wiring: String { configuration.wiring }
    var actuator: (any EndpointActuator)? { nil }
    var requiredFeatures: [TraitID: Set<String>] { PowerMeterConfiguration.features }
    var defaultAttributes: [TraitID: [String: Value]] { configuration.accuracyAttributes }

    init(_ configuration: PowerMeterConfiguration, context: BindingContext) {
        self.configuration = configuration
        hardware = context.hardware
        runtime = BindingRuntime(context: context, kind: "meter",
                                 traits: [.electricalPowerMeasurement, .electricalEnergyMeasurement])
    }

    func start(home: Home) {
        runtime.attach(home)
        let now = home.clock.now
        open(at: now)
        tick(at: now)
    }

    func refresh() {
        guard let home = runtime.home, !runtime.isStopped else { return }
        let now = home.clock.now
        if state.withLock({ $0.source == nil }) { open(at: now) }
        poll(at: now)
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
        state.withLock { s in [s.nextPoll, s.retryAt].compactMap { $0 }.min() }
    }

    func tick(at now: EngineInstant) {
        guard !runtime.isStopped else { return }
        let (retry, due) = state.withLock { s in
            (s.retryAt.map { $0 <= now } ?? false, s.source != nil && (s.nextPoll.map { $0 <= now } ?? true))
        }
        if retry { open(at: now) }
        if due || (retry && state.withLock({ $0.source != nil })) { poll(at: now) }
    }

    private func open(at now: EngineInstant) {
        do throws(HardwareError) {
            let source = try hardware.openPowerMeter(configuration.meter, shuntMicroohms: configuration.shuntMicroohms)
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
            markStale("opening \(configuration.meter) failed: \(error.message)")
        }
    }

    private func poll(at now: EngineInstant) {
        guard let source = state.withLock({ s -> (any PowerMeterSource)? in
            s.nextPoll = now + configuration.interval
            return s.source
        }) else { return }
        let reading: PowerMeterReading
        do throws(HardwareError) {
            reading = try source.read()
        } catch {
            let reason = "reading \(configuration.meter) failed: \(error.message)"
            let gone = error.kind == .gone || error.kind == .notFound
            let (first, stale) = state.withLock { s -> (Bool, Bool) in
                if gone { s.source = nil; s.retryAt = now + configuration.interval }
                s.misses += 1
                defer { s.lastProblem = reason }
                return (s.lastProblem != reason, s.misses >= configuration.staleAfter && !s.isStale)
            }
            if first { runtime.log("reading dropped: \(reason)") }
            if stale { markStale("\(configuration.staleAfter) reads in a row failed (last: \(reason))") }
            return
        }
        let wasStale = state.withLock { s -> Bool in
            defer { s.misses = 0; s.isStale = false; s.lastProblem = nil }
            return s.isStale
        }
        if wasStale || runtime.offlineReason != nil { runtime.goOnline() }
        // hwmon's µW to Matter's mW, rounded half away from zero.
        let milliwatts = (reading.microwatts + (reading.microwatts >= 0 ? 500 : -500)) / 1000
        ingest(ElectricalReading(activePower: milliwatts, voltage: reading.millivolts, activeCurrent: reading.milliamps,
                                 snapshotInterval: configuration.snapshotInterval))
    }

    private func markStale(_ reason: String) {
        state.withLock { $0.isStale = true }
        runtime.goOffline(reason)
        ingest(.unknown)
    }

    private func ingest(_ reading: ElectricalReading) {
        guard let home = runtime.home else { return }
        for trait in runtime.traits {
            do throws(HomeError) {
                try home.ingest(runtime.deviceID, type: runtime.typeName, trait: trait.qualifiedName,
                                .electricalPower(reading))
            } catch {
                runtime.log("the engine refused the reading for \(trait): \(error.message)")
            }
        }
    }
}
