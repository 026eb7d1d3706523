public import HearthEngine
public import HearthModel
import HearthConfig
import HearthSync

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

    /// Traits the binding adds to its device type beyond the configured ones (e.g. those its backend serves
    /// for an input line: the simulated switch's `dev.hearth.simulatedSwitch`, pressed by a user over MQTT).
    var extraTraits: [TraitConfiguration] { get }

    /// Features the binding needs on traits of its device type (the wall switch's `switch` trait gets
    /// `momentarySwitch` + `momentarySwitchRelease`, or `latchingSwitch`). The daemon adds them to the
    /// trait's configured features, adding the trait if the configuration left it out.
    var requiredFeatures: [TraitID: Set<String>] { get }

    /// Attribute values the hardware fixes on traits of its device type (a CCT strip's two whites are the colour
    /// temperature's physical range). The daemon adds them to the trait's configured attributes; a configured value
    /// that differs is a configuration problem.
    var traitAttributes: [TraitID: [String: Value]] { get }
    /// Attribute values the binding knows from its hardware (a power meter's accuracy, from its chip's datasheet), by
    /// trait and attribute name. The daemon sets them on the traits unless the configuration gives its own.
    var defaultAttributes: [TraitID: [String: Value]] { get }

    /// Requests the hardware and begins reporting to `home`.
    func start(home: Home)

    /// Long-running work (polling, edge events, retries) until the task is cancelled: `tick(at:)` whenever
    /// `nextDeadline` passes or the hardware wakes it.
    func run() async

    /// When `tick(at:)` is next due (a sensor's next read, a debounce's end, a retry, a probe); nil when nothing is.
    var nextDeadline: EngineInstant? { get }

    /// Does what is due at `now`. `run()` calls it on the clock; a test steps a manual clock and calls it, whatever the
    /// binding's kind.
    func tick(at now: EngineInstant)

    /// Re-reads the hardware now (a client's `get`).
    func refresh()

    /// Releases the hardware, leaving outputs in their safe state.
    func stop()

    /// What it is wired to, in a few words (`relay-1 (line 17 of pinctrl-bcm2711), active low`), for
    /// `hearthd check-config`'s summary.
    var wiring: String { get }
}

extension HardwareBinding {
    public var wiring: String { "" }
    public var extraTraits: [TraitConfiguration] { [] }
    public var requiredFeatures: [TraitID: Set<String>] { [:] }
    public var traitAttributes: [TraitID: [String: Value]] { [:] }
    public var defaultAttributes: [TraitID: [String: Value]] { [:] }
}

/// Where a binding is, for its configuration and its log lines.
public struct BindingContext: Sendable {
    public var deviceID: String
    /// The device type's name, e.g. `DimmableLight`.
    public var typeName: String
    public var board: Board
    /// Where the binding opens its hardware: the kernel's (`LinuxHardware`) or a simulated board's memory
    /// (`SimulatedHardware`), chosen once per board by whoever assembles the hub.
    public var hardware: any HardwareBackend
    /// Shared by every binding of one configuration, so a pin used twice is reported with both places.
    public var pins: PinLedger
    /// One line per event worth logging (a fault, a recovery), with the device and trait in it.
    public var log: @Sendable (String) -> Void

    public init(deviceID: String, typeName: String, board: Board, hardware: any HardwareBackend, pins: PinLedger,
                log: @escaping @Sendable (String) -> Void) {
        self.deviceID = deviceID
        self.typeName = typeName
        self.board = board
        self.hardware = hardware
        self.pins = pins
        self.log = log
    }
}

/// Which binding holds each pin, PWM channel and GPIO line of one configuration.
///
/// Resources are recorded by the wire (chip label and offset, PWM chip and channel), so two board names for one
/// line, or a board name and a raw `chip`/`line`, still collide. Sensors are not exclusive: a humidity and a
/// temperature binding read the same chip.
public final class PinLedger: Sendable {
    public struct Use: Sendable, Hashable {
        public var deviceID: String
        public var typeName: String
        public var file: String
        public var line: Int
        public var column: Int
        public var path: String
    }

    private let uses = Locked<[String: Use]>([:])

    public init() {}

    /// Everything claimed so far, by resource key (`pinctrl-bcm2711:17`, `pwmchip0/pwm1`).
    public var claims: [String: Use] { uses.withLock { $0 } }

    /// Claims `resource` for the binding at `value`; records a problem naming both places if it is taken.
    func claim(_ resource: String, what: String, at value: ConfigValue, deviceID: String, typeName: String)
        -> Bool
    {
        let use = Use(deviceID: deviceID, typeName: typeName, file: value.file, line: value.line, column: value.column,
                      path: value.path)
        let first = uses.withLock { u -> Use? in
            if let first = u[resource] { return first }
            u[resource] = use
            return nil
        }
        guard let first else { return true }
        value.problem(
            "\(what) is already used by \(first.deviceID) \(first.typeName) at "
                + "\(first.file):\(first.line):\(first.column) "
                + "(\(first.path)); each pin can drive only one binding")
        return false
    }
}
