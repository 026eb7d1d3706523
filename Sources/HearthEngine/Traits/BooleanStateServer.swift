public import HearthModel

/// Matter Boolean State (0x0045, docs/clusters/boolean-state.md): one boolean the hardware reports, whose meaning the
/// device type gives — on a ContactSensor `true` is "closed, in contact" and `false` "open".
///
/// StateValue is read-only and volatile: it is never configured or restored, only reported by the binding below. The
/// first reading after start-up sets it without a StateChange event, since the `false` it held before was not a state
/// anyone saw; every later change emits StateChange (optional in Matter, implemented here).
public struct BooleanStateServer: TraitServer {
    public enum Attribute {
        public static let stateValue = AttributeDescriptor(id: 0x0000, name: "stateValue", type: .bool)
    }

    public enum Event {
        public static let stateChange = EventDescriptor(id: 0x00, name: "stateChange", fields: [
            FieldDescriptor("stateValue", .bool),
        ])
    }

    public static let descriptor = TraitDescriptor(
        id: .booleanState, clusterID: 0x0045, revision: 1, attributes: [Attribute.stateValue],
        events: [Event.stateChange])

    public private(set) var stateValue = false
    /// Whether the hardware has reported yet.
    public private(set) var hasReading = false

    public init(features: Set<String>) throws(HomeError) {
        if let f = features.first { throw .constraintError("booleanState has no feature '\(f)'; it has none") }
    }

    public func read(_ id: UInt32) -> Value? {
        id == Attribute.stateValue.id ? .bool(stateValue) : nil
    }

    public mutating func load(_ attribute: AttributeDescriptor, _ value: Value) throws(HomeError) {
        // The hardware says what the state is: a configured or saved value would be a guess.
        guard attribute.id == Attribute.stateValue.id else { throw Self.unknownAttribute(attribute) }
    }

    public mutating func ingest(_ input: TraitInput, context: inout TraitContext) throws(HomeError) {
        guard case .binaryState(let state) = input else {
            throw .invalidCommand("booleanState takes a binary state, not \(input)")
        }
        defer { hasReading = true }
        guard state != stateValue else { return }
        stateValue = state
        if hasReading { context.emit(Event.stateChange.name, ["stateValue": .bool(state)]) }
    }
}
