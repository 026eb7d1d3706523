import HearthEngine
import HearthModel

/// A wall switch or push button on a GPIO input (the GenericSwitch type's `switch` trait), bound locally to the
/// lights it `controls`.
///
/// The line, its edges, debounce and fault retries are `DebouncedInput`'s; each debounced change is reported to the
/// Switch trait (`currentPosition` and its events) and, by mode, toggles or sets the controlled lights' `onOff`
/// through the home.
final class WallSwitchBinding: TickingBinding {
    let configuration: WallSwitchConfiguration
    let input: DebouncedInput

    var runtime: BindingRuntime { input.runtime }

    var wiring: String { configuration.wiring }

    init(_ configuration: WallSwitchConfiguration, context: BindingContext) {
        self.configuration = configuration
        input = DebouncedInput(pin: configuration.pin, bias: configuration.bias, activeLow: configuration.activeLow,
                               debounce: configuration.debounce, kind: "wallSwitch", trait: .switchTrait,
                               context: context)
    }

    var actuator: (any EndpointActuator)? { nil }

    var extraTraits: [TraitConfiguration] { input.backendTraits }

    var requiredFeatures: [TraitID: Set<String>] { [.switchTrait: configuration.switchFeatures] }

    func start(home: Home) {
        if let level = input.start(home: home) { report(level) }
    }

    /// Re-reads the line and reports its position.
    func refresh() {
        if let level = input.refresh() { report(level) }
    }

    func stop() { input.stop() }

    var nextDeadline: EngineInstant? { input.nextDeadline }

    func tick(at now: EngineInstant) {
        switch input.tick(at: now) {
        case nil: break
        case .acquired(let level): report(level)
        case .changed(let pressed): changed(to: pressed)
        }
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
