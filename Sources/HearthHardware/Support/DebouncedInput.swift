import HearthEngine
import HearthModel
import HearthSync

/// A GPIO input watched for edges and debounced: what every input binding (wall switch, door contact, PIR) shares.
///
/// It requests the line, takes the kernel's timestamped edges (a blocked thread, never polling) into `Debouncer`,
/// keeps the binding's traits online or offline, re-requests the line on `FaultRetry`'s schedule after a fault, and
/// carries the traits the backend serves for the line (`traits(forInput:)`: on a simulated board
/// `dev.hearth.simulatedSwitch`, whose commands move the simulated contact), handing their events back to the backend.
/// The binding that owns it says what a level means: it calls `tick(at:)` from its own and reports what comes back.
final class DebouncedInput: Sendable {
    let pin: PinAddress
    let bias: InputBias
    let activeLow: Bool
    let hardware: any HardwareBackend
    let runtime: BindingRuntime
    /// What the backend serves on this device type for the line.
    let backendTraits: [TraitConfiguration]

    /// What `tick` and `start` found.
    enum Level: Sendable, Hashable {
        /// The line was (re)requested and reads this: report it, it is no event of the input.
        case acquired(Bool)
        /// A debounced change to this level.
        case changed(Bool)
    }

    private struct State {
        var line: (any InputLine)?
        var debouncer: Debouncer
        var retry = FaultRetry()
        var observer: Int?
        /// Bumped at every (re)request, so events of a line given up on are ignored.
        var generation = 0
    }
    private let state: Locked<State>

    /// `kind` names the binding in log lines; `trait` is the one whose connectivity follows the line (with the
    /// backend's traits).
    init(pin: PinAddress, bias: InputBias, activeLow: Bool, debounce: Int64, kind: String, trait: TraitID,
         context: BindingContext) {
        self.pin = pin
        self.bias = bias
        self.activeLow = activeLow
        hardware = context.hardware
        backendTraits = (context.hardware as? any InputTraitsBackend)?.traits(forInput: pin) ?? []
        runtime = BindingRuntime(context: context, kind: kind, traits: [trait] + backendTraits.map(\.id))
        state = Locked(State(debouncer: Debouncer(window: debounce, level: false)))
    }

    /// Attaches to `home`, forwards the backend traits' events, requests the line; the level to report, or nil when
    /// the line could not be requested (offline, retried later).
    func start(home: Home) -> Bool? {
        runtime.attach(home)
        if !backendTraits.isEmpty {
            let deviceID = runtime.deviceID, typeName = runtime.typeName
            let hardware = self.hardware as? any InputTraitsBackend, pin = self.pin,
                served = Set(backendTraits.map(\.id))
            let id = home.observe { events in
                for event in events where event.deviceID == deviceID {
                    guard case .event(let type, let trait, let name, _) = event.change, type == typeName,
                          served.contains(trait) else { continue }
                    hardware?.traitEvent(name, of: trait, forInput: pin)
                }
            }
            state.withLock { $0.observer = id }
        }
        return acquire(at: home.clock.now)
    }

    /// The line's level now, when no change is being debounced and it is where the last report left it; nil
    /// otherwise (or when the line is not held), so a re-read never reports what debounce has not settled.
    func refresh() -> Bool? {
        guard let line = state.withLock({ $0.line }) else { return nil }
        do throws(HardwareError) {
            let level = try line.value()
            return state.withLock({ $0.debouncer.lastEdge == nil && $0.debouncer.stable == level }) ? level : nil
        } catch {
            fault("reading \(pin) failed: \(error.message)")
            return nil
        }
    }

    func stop() {
        runtime.markStopped()
        let (line, observer) = state.withLock { s -> ((any InputLine)?, Int?) in
            defer { s.line = nil; s.observer = nil; s.retry.cancel(); s.generation += 1 }
            return (s.line, s.observer)
        }
        if let observer { runtime.home?.removeObserver(observer) }
        line?.close()
        runtime.wake()
    }

    var nextDeadline: EngineInstant? {
        state.withLock { s in
            [s.debouncer.deadline, s.retry.retryAt].compactMap { $0 }.min()
        }
    }

    /// Reports a fault seen since, retries a request that is due, or settles the debouncer.
    func tick(at now: EngineInstant) -> Level? {
        guard !runtime.isStopped else { return nil }
        enum Step { case none, fault(String, (any InputLine)?), retry, change(Bool) }
        let step = state.withLock { s -> Step in
            let (fault, retry) = s.retry.due(at: now)
            if let fault {
                s.generation += 1
                defer { s.line = nil }
                return .fault(fault, s.line)
            }
            if retry { return .retry }
            if let level = s.debouncer.settle(at: now) { return .change(level) }
            return .none
        }
        switch step {
        case .none: return nil
        case .fault(let reason, let line):
            line?.close()
            runtime.goOffline(reason)
            return nil
        case .retry: return acquire(at: now).map(Level.acquired)
        case .change(let level): return .changed(level)
        }
    }

    private func fault(_ reason: String) {
        state.withLock { $0.retry.record(reason) }
        runtime.wake()
    }

    private func acquire(at now: EngineInstant) -> Bool? {
        guard let home = runtime.home, !runtime.isStopped else { return nil }
        let line: any InputLine
        let level: Bool
        do throws(HardwareError) {
            line = try hardware.openInput(pin, bias: bias, activeLow: activeLow, clock: home.clock)
            do throws(HardwareError) {
                level = try line.value()
            } catch {
                line.close()
                throw error
            }
        } catch {
            state.withLock { $0.retry.failed(at: now) }
            runtime.goOffline("requesting \(pin) failed: \(error.message)")
            return nil
        }
        let generation = state.withLock { s -> Int? in
            guard !runtime.isStopped else { return nil }
            s.generation += 1
            s.line = line
            s.retry.succeeded()
            s.debouncer.reset(to: level)
            return s.generation
        }
        guard let generation else {
            line.close()
            return nil
        }
        line.startEvents { [weak self] event in self?.receive(event, generation: generation) }
        runtime.goOnline()
        return level
    }

    private func receive(_ event: InputLineEvent, generation: Int) {
        state.withLock { s in
            guard s.generation == generation else { return }
            switch event {
            case .edges(let edges):
                for edge in edges { s.debouncer.edge(to: edge.level, at: edge.at) }
            case .failed(let error):
                s.retry.record("\(pin) stopped delivering events: \(error.message)")
            }
        }
        runtime.wake()
    }
}
