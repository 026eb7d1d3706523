public import HearthEngine
public import HearthModel

/// `dev.hearth.simulatedSwitch`: presses a simulated wall switch over MQTT.
///
/// Its commands only emit a trait event; the wall-switch binding observes it and hands it to its backend
/// (`SimulatedHardware.traitEvent`), which moves the simulated line, so a press runs through the same debounce and
/// switch code as a real one. Served on every wall switch of a simulated board (`SimulatedHardware.traits(forInput:)`).
public struct SimulatedSwitchServer: TraitServer {
    public static let id = TraitID(namespace: "dev.hearth", name: "simulatedSwitch")

    public enum Command {
        /// Closes the contact.
        public static let press = CommandDescriptor(id: 0x00, name: "press")
        /// Opens the contact.
        public static let release = CommandDescriptor(id: 0x01, name: "release")
        /// Moves a rocker to its other position.
        public static let flip = CommandDescriptor(id: 0x02, name: "flip")
        /// Closes the contact with bounce (five flips in a row), as a worn switch does.
        public static let bounce = CommandDescriptor(id: 0x03, name: "bounce")
        /// Unplugs the input's chip for five seconds: the line fails (the device goes offline), then comes back.
        public static let unplug = CommandDescriptor(id: 0x04, name: "unplug")
    }

    public static let descriptor = TraitDescriptor(
        id: id, clusterID: 0xFFF1_FC01, attributes: [],
        commands: [Command.press, Command.release, Command.flip, Command.bounce, Command.unplug],
        events: [EventDescriptor(id: 0x00, name: "press"), EventDescriptor(id: 0x01, name: "release"),
                 EventDescriptor(id: 0x02, name: "flip"), EventDescriptor(id: 0x03, name: "bounce"),
                 EventDescriptor(id: 0x04, name: "unplug")])

    public init(features: Set<String>) throws(HomeError) {
        if let f = features.first { throw .constraintError("\(Self.id) has no feature '\(f)'") }
    }

    public func read(_ id: UInt32) -> Value? { nil }

    public mutating func load(_ attribute: AttributeDescriptor, _ value: Value) throws(HomeError) {
        throw Self.unknownAttribute(attribute)
    }

    public mutating func invoke(_ arguments: CommandArguments, context: inout TraitContext) throws(HomeError) {
        context.emit(arguments.command.name)
    }
}
