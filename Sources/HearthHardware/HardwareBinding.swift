public import HearthEngine

/// Binds one device type of a device (an endpoint) to hardware: a relay, a dimmer, a sensor, a switch.
///
/// The daemon builds every binding from the configuration before the `Home` exists (outputs hand their
/// `actuator` to the engine), then calls `start` once the engine has applied start-up behaviour, so a
/// relay is requested already in its start-up state and never glitches. A binding never throws after
/// configuration: a fault (missing chip, busy line, read error) takes its traits offline with a logged
/// reason, and `run` retries with backoff until the hardware is back.
public protocol HardwareBinding: AnyObject, Sendable {
    /// Drives the endpoint's outputs; `nil` for inputs and sensors.
    var actuator: (any EndpointActuator)? { get }

    /// Traits the binding adds to its device type beyond the configured ones (e.g. the simulated
    /// switch's `dev.hearth.simulatedSwitch`, through which a user presses it over MQTT).
    var extraTraits: [TraitConfiguration] { get }

    /// Requests the hardware and begins reporting to `home`.
    func start(home: Home)

    /// Long-running work (polling, edge events, retries) until the task is cancelled.
    func run() async

    /// Re-reads the hardware now (a client's `get`).
    func refresh()

    /// Releases the hardware, leaving outputs in their safe state.
    func stop()
}

extension HardwareBinding {
    public var extraTraits: [TraitConfiguration] { [] }
}

/// Where a binding is, for its configuration and its log lines.
public struct BindingContext: Sendable {
    public var deviceID: String
    /// The device type's name, e.g. `DimmableLight`.
    public var typeName: String
    public var board: Board
    /// One line per event worth logging (a fault, a recovery), with the device and trait in it.
    public var log: @Sendable (String) -> Void

    public init(deviceID: String, typeName: String, board: Board, log: @escaping @Sendable (String) -> Void) {
        self.deviceID = deviceID
        self.typeName = typeName
        self.board = board
        self.log = log
    }
}
