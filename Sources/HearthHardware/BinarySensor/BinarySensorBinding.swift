import HearthEngine
import HearthModel

/// A door contact (ContactSensor's `booleanState`) or a PIR module's output (OccupancySensor's `occupancySensing`) on a
/// GPIO input.
///
/// The line, its edges, debounce and fault retries are `DebouncedInput`'s, as for a wall switch; every level it settles
/// on goes to the trait as a binary state. What the state means over time — StateChange events, the occupancy hold
/// time — is the trait's, on the engine's clock.
final class BinarySensorBinding: TickingBinding {
    let configuration: BinarySensorConfiguration
    let input: DebouncedInput

    var runtime: BindingRuntime { input.runtime }

    var wiring: String { configuration.wiring }

    init(_ configuration: BinarySensorConfiguration, context: BindingContext) {
        self.configuration = configuration
        input = DebouncedInput(pin: configuration.pin, bias: configuration.bias, activeLow: configuration.activeLow,
                               debounce: configuration.debounce, kind: configuration.kind.rawValue,
                               trait: configuration.kind.trait, context: context)
    }

    var actuator: (any EndpointActuator)? { nil }

    var extraTraits: [TraitConfiguration] { input.backendTraits }

    var requiredFeatures: [TraitID: Set<String>] { configuration.features }

    func start(home: Home) {
        if let level = input.start(home: home) { report(level) }
    }

    func refresh() {
        if let level = input.refresh() { report(level) }
    }

    func stop() { input.stop() }

    var nextDeadline: EngineInstant? { input.nextDeadline }

    func tick(at now: EngineInstant) {
        switch input.tick(at: now) {
        case nil: break
        case .acquired(let level), .changed(let level): report(level)
        }
    }

    private func report(_ level: Bool) {
        guard let home = runtime.home else { return }
        do throws(HomeError) {
            try home.ingest(runtime.deviceID, type: runtime.typeName, trait: configuration.kind.trait.qualifiedName,
                            .binaryState(level))
        } catch {
            runtime.log("the engine refused the \(configuration.kind.what)'s state: \(error.message)")
        }
    }
}
