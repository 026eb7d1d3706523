public import HearthConfig
import HearthModel

/// The binding kinds a configuration may name, in the order messages and the JSON Schema list them.
public struct BindingKindRegistry: Sendable {
    public let kinds: [BindingKind]

    public init(_ kinds: [BindingKind]) { self.kinds = kinds }

    /// Every kind Hearth has: the one list a new kind is added to.
    public static let standard = BindingKindRegistry([
        .relay, .pwmDimmer, .cctDimmer, .humiditySensor, .temperatureSensor, .wallSwitch, .contact, .pir,
        .pwmFan, .relayFan, .relayCover,
    ])

    public func kind(named name: String) -> BindingKind? { kinds.first { $0.name == name } }

    /// The kinds that can drive a device type of this name, in registration order.
    public func kinds(fitting typeName: String) -> [BindingKind] { kinds.filter { $0.fits(typeName) } }

    /// Reads `config` (a `binding:` mapping) for the device type `context.typeName`. Records every problem in
    /// `config.diagnostics` with file, line and key path, and returns `nil` if there was any. A kind's factory that
    /// makes nothing without saying why is recorded as a problem too, so no device runs without its hardware unsaid.
    public func make(_ config: ConfigValue, context: BindingContext) -> (any HardwareBinding)? {
        let before = config.diagnostics.problems.count
        let names = kinds.map(\.name).joined(separator: ", ")
        guard case .mapping(let entries) = config.node.value else {
            config.problem("expected a mapping with a 'kind' (one of \(names))")
            return nil
        }
        guard let kindEntry = entries.first(where: { $0.key == "kind" }) else {
            config.problem("missing 'kind'; for \(context.typeName) use \(advice(for: context.typeName))")
            return nil
        }
        let kindValue = config.child(kindEntry.value, "kind")
        guard let name = kindValue.string else { return nil }
        guard let kind = self.kind(named: name) else {
            kindValue.problem("unknown binding kind '\(name)'; kinds: \(names)")
            return nil
        }
        guard kind.fits(context.typeName) else {
            kindValue.problem("a \(name) binding does not fit a \(context.typeName) (it fits "
                              + "\(kind.deviceTypes.map(\.name).joined(separator: ", "))); "
                              + "for \(context.typeName) use \(advice(for: context.typeName))")
            return nil
        }
        let binding = kind.factory(BindingReader(config: config, context: context, section: kind.section))
        guard config.diagnostics.problems.count == before else { return nil }
        guard let binding else {
            config.problem(
                "the \(name) binding kind made no binding and named no problem in this section; "
                    + "this is a fault in hearthd, not in the file (the \(context.typeName) would run without hardware)"
            )
            return nil
        }
        return binding
    }

    private func advice(for typeName: String) -> String {
        let fitting = kinds(fitting: typeName).map(\.name)
        return fitting.isEmpty ? "no binding (no hardware binding drives a \(typeName))"
            : "kind: " + fitting.joined(separator: " or ")
    }
}
