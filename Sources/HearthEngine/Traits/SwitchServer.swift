public import HearthModel

/// Matter Switch (0x003B): a wall rocker (latching) or a push button (momentary), as an input.
///
/// The trait only reports what the hardware did; what a press does to a light is a binding's job.
public struct SwitchServer: TraitServer {
    public enum Attribute {
        public static let numberOfPositions = AttributeDescriptor(id: 0x0000, name: "numberOfPositions", type: .uint8,
                                                                  constraint: 2...255)
        public static let currentPosition = AttributeDescriptor(id: 0x0001, name: "currentPosition", type: .uint8)
        public static let multiPressMax = AttributeDescriptor(id: 0x0002, name: "multiPressMax", type: .uint8)
    }

    public static let descriptor = TraitDescriptor(
        id: .switchTrait, clusterID: 0x003B, revision: 2,
        features: [
            .init(bit: 0, "latchingSwitch"), .init(bit: 1, "momentarySwitch"),
            .init(bit: 2, "momentarySwitchRelease"), .init(bit: 3, "momentarySwitchLongPress"),
            .init(bit: 4, "momentarySwitchMultiPress"), .init(bit: 5, "actionSwitch"),
        ],
        attributes: [Attribute.numberOfPositions, Attribute.currentPosition, Attribute.multiPressMax],
        events: [
            EventDescriptor(id: 0x00, name: "switchLatched", fields: [FieldDescriptor("newPosition", .uint8)]),
            EventDescriptor(id: 0x01, name: "initialPress", fields: [FieldDescriptor("newPosition", .uint8)]),
            EventDescriptor(id: 0x03, name: "shortRelease", fields: [FieldDescriptor("previousPosition", .uint8)]),
        ])

    /// LS: the switch stays where it is put; MS: it springs back, MSR: it also reports the release.
    public let isLatching: Bool
    public let reportsRelease: Bool
    public private(set) var numberOfPositions = 2
    public private(set) var currentPosition = 0

    public init(features: Set<String>) throws(HomeError) {
        let known: Set = ["latchingSwitch", "momentarySwitch", "momentarySwitchRelease"]
        if let f = features.subtracting(known).first {
            throw .constraintError(
                "switch has no feature '\(f)'; its features are \(known.sorted().joined(separator: ", "))")
        }
        isLatching = features.contains("latchingSwitch")
        guard isLatching != features.contains("momentarySwitch") else {
            throw .constraintError("switch needs exactly one of latchingSwitch and momentarySwitch")
        }
        reportsRelease = features.contains("momentarySwitchRelease")
    }

    public func read(_ id: UInt32) -> Value? {
        switch id {
        case Attribute.numberOfPositions.id: .int(numberOfPositions)
        case Attribute.currentPosition.id: .int(currentPosition)
        default: nil
        }
    }

    public mutating func load(_ attribute: AttributeDescriptor, _ value: Value) throws(HomeError) {
        switch (attribute.id, value) {
        case (Attribute.numberOfPositions.id, .int(let n)): numberOfPositions = n
        case (Attribute.currentPosition.id, _): break  // the hardware says where it is
        default: throw Self.unknownAttribute(attribute)
        }
    }

    public mutating func ingest(_ input: TraitInput, context: inout TraitContext) throws(HomeError) {
        guard case .switchPosition(let position) = input else {
            throw .invalidCommand("switch takes positions, not \(input)")
        }
        guard (0..<numberOfPositions).contains(position) else {
            throw .constraintError("switch position \(position) is outside 0…\(numberOfPositions - 1)")
        }
        let previous = currentPosition
        guard position != previous else { return }
        currentPosition = position
        if isLatching {
            context.emit("switchLatched", ["newPosition": .int(position)])
        } else if position != 0 {
            context.emit("initialPress", ["newPosition": .int(position)])
        } else if reportsRelease {
            context.emit("shortRelease", ["previousPosition": .int(previous)])
        }
    }
}
