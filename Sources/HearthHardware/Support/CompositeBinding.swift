import HearthEngine
import HearthModel

/// Several bindings on one device type, as one: a plug's relay and its power meter (`binding: {kind: relay, …,
/// meter: {…}}`). A device type has one `binding:`; this lets that one drive a relay and read a meter.
///
/// The parts run side by side; they share the device's lane (a meter read and a relay write of one plug never
/// overlap, and neither waits for another device). The actuator is the one part that has one.
final class CompositeBinding: HardwareBinding {
    let parts: [any HardwareBinding]

    init(_ parts: [any HardwareBinding]) { self.parts = parts }

    var actuator: (any EndpointActuator)? { parts.lazy.compactMap(\.actuator).first }
    var extraTraits: [TraitConfiguration] { parts.flatMap(\.extraTraits) }

    var requiredFeatures: [TraitID: Set<String>] {
        parts.reduce(into: [:]) { all, part in all.merge(part.requiredFeatures) { $0.union($1) } }
    }

    var defaultAttributes: [TraitID: [String: Value]] {
        parts.reduce(into: [:]) { all, part in all.merge(part.defaultAttributes) { a, b in a.merging(b) { x, _ in x } }
        }
    }

    var wiring: String { parts.map(\.wiring).filter { !$0.isEmpty }.joined(separator: "; ") }

    /// The earliest of its parts'.
    var nextDeadline: EngineInstant? { parts.compactMap(\.nextDeadline).min() }
    func tick(at now: EngineInstant) { for part in parts { part.tick(at: now) } }

    func start(home: Home) { for part in parts { part.start(home: home) } }
    func refresh() { for part in parts { part.refresh() } }
    func stop() { for part in parts { part.stop() } }

    func run() async {
        await withDiscardingTaskGroup { group in
            for part in parts { group.addTask { await part.run() } }
        }
    }
}
