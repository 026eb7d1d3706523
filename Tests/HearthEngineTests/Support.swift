import HearthEngine
import HearthModel
import Testing
import HearthSync

/// Records every output the engine drives, and can be told to fail like broken hardware.
final class RecordingActuator: EndpointActuator {
    private let state = Locked<(outputs: [EndpointOutput], failing: Bool)>(([], false))
    var outputs: [EndpointOutput] { state.withLock { $0.outputs } }
    var last: EndpointOutput? { outputs.last }
    func fail(_ failing: Bool) { state.withLock { $0.failing = failing } }
    func drive(_ output: EndpointOutput) throws(HomeError) {
        let failing = state.withLock { s in
            if !s.failing { s.outputs.append(output) }
            return s.failing
        }
        if failing { throw .hardware("relay line write failed: EIO") }
    }
}

/// Collects the events of a home synchronously.
final class EventLog: Sendable {
    private let events = Locked<[HomeEvent]>([])
    init(_ home: Home) { home.observe { batch in self.events.withLock { $0 += batch } } }
    var all: [HomeEvent] { events.withLock { $0 } }
    func clear() { events.withLock { $0 = [] } }
    /// Values reported for one attribute, in order.
    func values(_ attribute: String) -> [Value] {
        all.compactMap { e in
            if case .attribute(_, _, let a, let v) = e.change, a == attribute { v } else { nil }
        }
    }
    func eventNames() -> [String] {
        all.compactMap { e in if case .event(_, _, let n, _) = e.change { n } else { nil } }
    }
}

/// A home on a manual clock, with helpers that read like the spec.
struct Rig {
    let clock = ManualClock()
    let home: Home
    let log: EventLog
    let actuator = RecordingActuator()
    let device: String

    init(_ type: DeviceTypeDescriptor = .dimmableLight, traits: [TraitConfiguration] = [],
         saved: SavedDevice? = nil) throws {
        device = "lamp"
        home = try Home(
            devices: [DeviceConfiguration(id: "lamp", name: "Lamp", types: [
                DeviceTypeConfiguration(type, traits: traits, actuator: actuator),
            ])],
            saved: saved.map { ["lamp": $0] } ?? [:], clock: clock)
        log = EventLog(home)
    }

    func invoke(_ trait: String, _ command: String, _ args: [String: Value] = [:]) throws {
        try home.invoke(device, trait: trait, command: command, arguments: args)
    }

    func update(_ trait: String, _ attributes: [String: Value]) throws {
        try home.update(device, trait: trait, attributes: attributes)
    }

    func read(_ trait: TraitID, _ attribute: String) throws -> Value? {
        try home.device(device).trait(trait)?[attribute]?.value
    }

    func onOff() throws -> Bool? { try read(.onOff, "onOff")?.boolValue }
    func level() throws -> Int? { try read(.levelControl, "currentLevel")?.intValue }

    /// Moves the clock 20 ms at a time (one output step, as the run loop wakes) and runs every timer due, waiting
    /// each time until the step's output has been written on the device's lane.
    func advance(_ ms: Int64) {
        var left = ms
        while left > 0 {
            let step = min(20, left)
            clock.advance(by: step)
            left -= step
            home.advance(to: clock.now)
            home.drainLanes()
        }
    }
}

/// The HomeError a throwing call produced, or nil.
func homeError(_ body: () throws -> Void) -> HomeError? {
    do { try body(); return nil } catch { return error as? HomeError }
}
