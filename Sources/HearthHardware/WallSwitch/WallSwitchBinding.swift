import HearthEngine
import HearthModel
import Synchronization

/// A wall switch or push button on a GPIO input (the GenericSwitch type's `switch` trait), bound locally to the
/// lights it `controls`.
///
/// Edges come from the kernel with their interrupt timestamps (a blocked thread, never polling) and go through
/// `Debouncer`; each debounced change is reported to the Switch trait (`currentPosition` and its events) and, by
/// mode, toggles or sets the controlled lights' `onOff` through the home. The binding also carries the traits its
/// backend serves for the line (`traits(forInput:)`: on a simulated board `dev.hearth.simulatedSwitch`, whose
/// commands move the simulated contact) and hands their events back to the backend.
final class WallSwitchBinding: TickingBinding {
    let configuration: WallSwitchConfiguration
    let hardware: any HardwareBackend
    let runtime: BindingRuntime
    /// What the backend serves on this device type for the line.
    let backendTraits: [TraitConfiguration]

    private struct State {
        var line: (any InputLine)?
        var debouncer: Debouncer
        var retry = FaultRetry()
        var observer: Int?
        /// Bumped at every (re)request, so events of a line given up on are ignored.
        var generation = 0
    }
    private let state: Mutex<State>

    var wiring: String { configuration.wiring }

    init(_ configuration: WallSwitchConfiguration, context: BindingContext) {
        self.configuration = configuration
        hardware = context.hardware
        backendTraits = context.hardware.traits(forInput: configuration.pin)
        runtime = BindingRuntime(context: context, kind: "wallSwitch", traits: [.switchTrait] + backendTraits.map(\.id))
        state = Mutex(State(debouncer: Debouncer(window: configuration.debounce, level: false)))
    }

    var actuator: (any EndpointActuator)? { nil }

    var extraTraits: [TraitConfiguration] { backendTraits }

    var requiredFeatures: [TraitID: Set<String>] { [.switchTrait: configuration.switchFeatures] }

    func start(home: Home) {
        runtime.attach(home)
        if !backendTraits.isEmpty {
            let deviceID = runtime.deviceID, typeName = runtime.typeName
            let hardware = self.hardware, pin = configuration.pin, served = Set(backendTraits.map(\.id))
            let id = home.observe { events in
                for event in events where event.deviceID == deviceID {
                    guard case .event(let type, let trait, let name, _) = event.change, type == typeName,
                          served.contains(trait) else { continue }
                    hardware.traitEvent(name, of: trait, forInput: pin)
                }
            }
            state.withLock { $0.observer = id }
        }
        acquire(at: home.clock.now)
    }

    /// Re-reads the line and reports its position.
    func refresh() {
        guard let line = state.withLock({ $0.line }) else { return }
        do throws(HardwareError) {
            let level = try line.value()
            if state.withLock({ $0.debouncer.lastEdge == nil && $0.debouncer.stable == level }) { report(level) }
        } catch {
            fault("reading \(configuration.pin) failed: \(error.message)")
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

    func tick(at now: EngineInstant) {
        guard !runtime.isStopped else { return }
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
        case .none: break
        case .fault(let reason, let line):
            line?.close()
            runtime.goOffline(reason)
        case .retry: acquire(at: now)
        case .change(let pressed): changed(to: pressed)
        }
    }

    private func fault(_ reason: String) {
        state.withLock { $0.retry.record(reason) }
        runtime.wake()
    }

    private func acquire(at now: EngineInstant) {
        guard let home = runtime.home, !runtime.isStopped else { return }
        let line: any InputLine
        let level: Bool
        do throws(HardwareError) {
            line = try hardware.openInput(configuration.pin, bias: configuration.bias, activeLow: configuration.activeLow,
                                          clock: home.clock)
            do throws(HardwareError) {
                level = try line.value()
            } catch {
                line.close()
                throw error
            }
        } catch {
            state.withLock { $0.retry.failed(at: now) }
            runtime.goOffline("requesting \(configuration.pin) failed: \(error.message)")
            return
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
            return
        }
        line.startEvents { [weak self] event in self?.receive(event, generation: generation) }
        runtime.goOnline()
        report(level)
    }

    private func receive(_ event: InputLineEvent, generation: Int) {
        state.withLock { s in
            guard s.generation == generation else { return }
            switch event {
            case .edges(let edges):
                for edge in edges { s.debouncer.edge(to: edge.level, at: edge.at) }
            case .failed(let error):
                s.retry.record("\(configuration.pin) stopped delivering events: \(error.message)")
            }
        }
        runtime.wake()
    }

    /// A debounced change: report it, then work the lights.
    private func changed(to pressed: Bool) {
        report(pressed)
        let command: String
        switch configuration.mode {
        case .momentary:
            guard pressed else { return }
            command = "toggle"
        case .latching: command = "toggle"
        case .follow: command = pressed ? "on" : "off"
        }
        guard let home = runtime.home else { return }
        let runtime = runtime
        for target in configuration.controls {
            // On the light's lane: its hardware may be slow, and the switch must not wait for it.
            let queued = home.enqueue(on: target) {
                do throws(HomeError) {
                    try home.invoke(target, trait: "onOff", command: command)
                } catch {
                    runtime.log("\(command) of '\(target)' failed: \(error.message)")
                }
            }
            if !queued { runtime.log("\(command) of '\(target)' failed: no such device") }
        }
    }

    private func report(_ pressed: Bool) {
        guard let home = runtime.home else { return }
        do throws(HomeError) {
            try home.ingest(runtime.deviceID, type: runtime.typeName, trait: TraitID.switchTrait.qualifiedName,
                            .switchPosition(pressed ? 1 : 0))
        } catch {
            runtime.log("the engine refused the switch position: \(error.message)")
        }
    }
}
