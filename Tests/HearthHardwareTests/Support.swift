import Glibc
import HearthConfig
import HearthEngine
@testable import HearthHardware
import HearthHardwareLinux
import HearthLinux
@testable import HearthSimulator
import HearthModel
import HearthTestKit
import Testing
import HearthSync

func boardFile(_ name: String) -> String { Repository.path("boards/\(name).yaml") }

/// Loads a shipped board, failing the test with its problems if it does not load.
func shippedBoard(_ name: String) throws -> Board {
    let diagnostics = ConfigDiagnostics()
    let board = Board.load(file: boardFile(name), diagnostics: diagnostics)
    #expect(diagnostics.problems.isEmpty, "\(diagnostics.problems)")
    return try #require(board)
}

/// Parses a board from text.
func parseBoard(_ text: String, file: String = "board.yaml") -> (Board?, [ConfigProblem]) {
    let diagnostics = ConfigDiagnostics()
    guard let root = ConfigValue.parse(text, file: file, diagnostics: diagnostics) else {
        return (nil, diagnostics.problems)
    }
    return (Board.read(root), diagnostics.problems)
}

/// Collects log lines.
final class LogSink: Sendable {
    private let lines = Locked<[String]>([])
    var all: [String] { lines.withLock { $0 } }
    var log: @Sendable (String) -> Void { { [self] line in lines.withLock { $0.append(line) } } }
    func contains(_ text: String) -> Bool { all.contains { $0.contains(text) } }
}

/// GPIO from the simulated board, PWM and sensors from a sysfs-shaped tree: for bindings whose sysfs half is
/// tested for real and whose GPIO half runs against the simulation (the real GPIO is tested in the HIL VM).
struct MixedHardware: InputTraitsBackend {
    let gpio: SimulatedHardware
    let sysfs: LinuxHardware
    /// Every duty cycle written to a PWM channel, in order, when given (the real channel is written as well).
    var dutyWrites: Recorder<UInt64>?

    func openOutput(_ pin: PinAddress, initialValue: Bool, activeLow: Bool, drive: OutputDrive)
        throws(HardwareError) -> any OutputLine
    {
        try gpio.openOutput(pin, initialValue: initialValue, activeLow: activeLow, drive: drive)
    }
    func openInput(_ pin: PinAddress, bias: InputBias, activeLow: Bool, clock: any EngineClock)
        throws(HardwareError) -> any InputLine
    {
        try gpio.openInput(pin, bias: bias, activeLow: activeLow, clock: clock)
    }
    func openPWM(_ pwm: PWMAddress) throws(HardwareError) -> any PWMOutput {
        let channel = try sysfs.openPWM(pwm)
        guard let dutyWrites else { return channel }
        return RecordingPWM(channel: channel, writes: dutyWrites)
    }

    func openSensor(_ sensor: SensorAddress, quantity: SensorQuantity) throws(HardwareError) -> any SensorSource {
        try sysfs.openSensor(sensor, quantity: quantity)
    }
    func openPowerMeter(_ meter: SensorAddress, shuntMicroohms: Int?) throws(HardwareError) -> any PowerMeterSource {
        try sysfs.openPowerMeter(meter, shuntMicroohms: shuntMicroohms)
    }
    func traits(forInput pin: PinAddress) -> [TraitConfiguration] { gpio.traits(forInput: pin) }
    func traitEvent(_ event: String, of trait: TraitID, forInput pin: PinAddress) {
        gpio.traitEvent(event, of: trait, forInput: pin)
    }
}

/// The real sysfs channel, with each duty cycle written noted first.
final class RecordingPWM: PWMOutput {
    let channel: any PWMOutput
    let writes: Recorder<UInt64>
    init(channel: any PWMOutput, writes: Recorder<UInt64>) {
        self.channel = channel
        self.writes = writes
    }
    func start(periodNanoseconds: UInt64, dutyCycleNanoseconds: UInt64, polarity: PWMOutputPolarity)
        throws(HardwareError)
    {
        try channel.start(
            periodNanoseconds: periodNanoseconds, dutyCycleNanoseconds: dutyCycleNanoseconds, polarity: polarity)
    }
    func setDutyCycle(_ nanoseconds: UInt64) throws(HardwareError) {
        writes.append(nanoseconds)
        try channel.setDutyCycle(nanoseconds)
    }
    func stop() throws(HardwareError) { try channel.stop() }
}

/// The backend the daemon gives a board's bindings (`BoardHardware.backend(for:)` in HearthHub).
func backend(for board: Board) -> any HardwareBackend {
    board.isSimulated ? SimulatedHardware(board: board, seed: board.seed) : LinuxHardware()
}

/// A small hub: a board, bindings read from YAML, a home on a manual clock, as the daemon assembles them.
final class Rig {
    let clock = ManualClock()
    var board: Board
    /// Where the bindings made from now on open their hardware.
    var hardware: any HardwareBackend

    /// Records every output write from now on and checks `group` (board pin names) is never on twice at once.
    func recordInterlock(_ group: Set<String>) -> InterlockRecorder {
        let recorder = InterlockRecorder(sim: simulation, clock: clock, group: group)
        hardware = recorder
        return recorder
    }
    let pins = PinLedger()
    let logs = LogSink()
    let diagnostics = ConfigDiagnostics()
    var devices: [DeviceConfiguration] = []
    var bindings: [any HardwareBinding] = []
    private(set) var home: Home!

    init(board: Board) {
        self.board = board
        hardware = backend(for: board)
    }

    convenience init(_ boardName: String = "sim") throws {
        self.init(board: try shippedBoard(boardName))
    }

    /// The simulated board whose sensors and PWM are read from a sysfs-shaped tree through the real `LinuxHardware`
    /// (looking for an exported PWM channel `pwmExportAttempts` times), and whose GPIO stays simulated.
    convenience init(sysfs tree: SysfsTree, pwmExportAttempts: Int = 50) throws {
        try self.init()
        let gpio = try #require(hardware as? SimulatedHardware)
        hardware = MixedHardware(
            gpio: gpio, sysfs: LinuxHardware(root: SysfsRoot(tree.root), pwmExportAttempts: pwmExportAttempts))
    }

    var simulation: SimulatedHardware {
        if let sim = hardware as? SimulatedHardware { return sim }
        if let recorder = hardware as? InterlockRecorder { return recorder.sim }
        return (hardware as! MixedHardware).gpio
    }

    /// Reads one binding (`{kind: relay, pin: relay-1}`) for a device type, as `BindingKindRegistry.standard.make`
    /// does.
    func makeBinding(_ yaml: String, device: String, type: String, file: String = "hub.yaml")
        -> (any HardwareBinding)?
    {
        guard let value = ConfigValue.parse(yaml, file: file, diagnostics: diagnostics) else { return nil }
        let context = BindingContext(deviceID: device, typeName: type, board: board, hardware: hardware, pins: pins,
                                     log: logs.log)
        return BindingKindRegistry.standard.make(value, context: context)
    }

    /// Adds a device with one bound type (and optional extra trait configurations).
    @discardableResult
    func add(_ device: String, _ type: DeviceTypeDescriptor, binding yaml: String?,
             traits: [TraitConfiguration] = []) throws -> (any HardwareBinding)? {
        var binding: (any HardwareBinding)?
        var traitConfigs = traits
        if let yaml {
            binding = makeBinding(yaml, device: device, type: type.name)
            #expect(diagnostics.problems.isEmpty, "\(diagnostics.problems)")
            let b = try #require(binding)
            traitConfigs += b.extraTraits
            for (id, features) in b.requiredFeatures {
                if let i = traitConfigs.firstIndex(where: { $0.id == id }) {
                    traitConfigs[i].features.formUnion(features)
                } else {
                    traitConfigs.append(TraitConfiguration(id, features: features))
                }
            }
            // As the daemon does: the hardware's own values (a CCT strip's range) join the trait's configuration.
            for (id, attributes) in b.traitAttributes {
                if let i = traitConfigs.firstIndex(where: { $0.id == id }) {
                    traitConfigs[i].attributes.merge(attributes) { $1 }
                } else {
                    traitConfigs.append(TraitConfiguration(id, attributes: attributes))
                }
            }
            for (id, attributes) in b.defaultAttributes {
                if let i = traitConfigs.firstIndex(where: { $0.id == id }) {
                    traitConfigs[i].attributes.merge(attributes) { configured, _ in configured }
                } else {
                    traitConfigs.append(TraitConfiguration(id, attributes: attributes))
                }
            }
            bindings.append(b)
        }
        devices.append(DeviceConfiguration(id: device, name: device, types: [
            DeviceTypeConfiguration(type, traits: traitConfigs, actuator: binding?.actuator),
        ]))
        return binding
    }

    /// Builds the home (start-up state applied) and starts every binding.
    func start(saved: [String: SavedDevice] = [:]) throws {
        var registry = TraitRegistry.standard
        for server in SimulatedHardware.traitServers { registry.register(server) }
        home = try Home(devices: devices, saved: saved, clock: clock, registry: registry)
        for binding in bindings { binding.start(home: home) }
    }

    /// Moves the clock, runs the engine's timers and every binding's due work, as the run loops would.
    func advance(by milliseconds: Int64) {
        clock.advance(by: milliseconds)
        home.advance(to: clock.now)
        // Timer steps are written on each device's lane; wait until they have reached the hardware.
        home.drainLanes()
        tick()
    }

    /// Runs every binding's due work now.
    func tick() {
        for binding in bindings { binding.tick(at: clock.now) }
        // What the bindings queued on devices' lanes (a wall switch's command to its light) has run.
        home.drainLanes()
    }

    func value(_ device: String, _ trait: String, _ attribute: String) throws -> Value? {
        let d = try home.device(device)
        for type in d.types {
            for t in type.traits where t.descriptor.id.qualifiedName == trait {
                return t.attributes.first { $0.descriptor.name == attribute }?.value
            }
        }
        return nil
    }

    func connectivity(_ device: String, _ trait: String) throws -> SourceConnectivity? {
        let d = try home.device(device)
        for type in d.types {
            for t in type.traits where t.descriptor.id.qualifiedName == trait { return t.sourceConnectivity }
        }
        return nil
    }

    func isOn(_ device: String) throws -> Bool { try value(device, "onOff", "onOff") == .bool(true) }
}

/// A simulated line's key from its board name.
func key(_ rig: Rig, _ pin: String) throws -> String {
    try #require(rig.simulation.key(ofPin: pin))
}
