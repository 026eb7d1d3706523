public import HearthEngine
public import HearthHardware
public import HearthModel
import HearthSync

/// A board that lives in memory (`simulated: true`): lines, PWM channels and sensors behind the same protocols
/// the real ones implement, so a simulated hub runs the real binding code — debounce, gamma, filters, faults.
///
/// Humidity and temperature drift as a bounded random walk around the values the board's registers give (an
/// si7020's `0xe5`/`0xe3` words), seeded by the board so a run can be replayed. Tests (and the simulated switch
/// trait) play the outside world through `act(_:on:)`, `fail…` and the inspection methods.
///
/// Each wall switch's device type gets `dev.hearth.simulatedSwitch` (`traits(forInput:)`), whose command events come
/// back through `traitEvent(_:of:forInput:)` and move the contact, so a press over MQTT runs the real debounce.
public final class SimulatedHardware: InputTraitsBackend {
    /// The manufacturer traits this backend serves; registered next to `TraitRegistry.standard`.
    public static let traitServers: [any TraitServer.Type] = [SimulatedSwitchServer.self]

    public struct Output: Sendable {
        public var value: Bool
        public var activeLow: Bool
        public var drive: OutputDrive
        /// Every logical value the line was given, starting with the one it was requested with (the newest
        /// `recordLimit` at least, on a board that runs for long: `Array.appendRecord`).
        public var history: [Bool]
        public var isHeld: Bool
        /// The electrical level.
        public var wire: Bool { value != activeLow }
    }

    public struct Input: Sendable {
        public var level = false
        public var isOpen = false
        var handler: (@Sendable (InputLineEvent) -> Void)?
        var clock: (any EngineClock)?
    }

    public struct PWM: Sendable {
        public var periodNanoseconds: UInt64 = 0
        public var dutyCycleNanoseconds: UInt64 = 0
        public var polarity: PWMOutputPolarity = .normal
        public var isEnabled = false
        public var isExported = false
        /// Every duty cycle written, in order (the newest `recordLimit` at least).
        public var dutyHistory: [UInt64] = []
    }

    /// A write that reached the simulated hardware; `operations` keeps them in order, across lines and channels,
    /// so a test can check an order between devices (a dimmer's relay closes only while its PWM is dark).
    public enum Operation: Sendable, Hashable {
        /// An output line was requested at, set to or released at `value` (logical).
        case output(key: String, value: Bool)
        /// A PWM channel was configured and enabled at `dutyCycleNanoseconds`.
        case pwmStart(key: String, dutyCycleNanoseconds: UInt64)
        /// A running PWM channel's duty cycle changed.
        case pwmDuty(key: String, nanoseconds: UInt64)
        /// A PWM channel was set to duty 0, disabled and given back.
        case pwmStop(key: String)
    }

    struct Sensor: Sendable {
        var humidity: Double
        var temperature: Double
        let baseHumidity: Double
        let baseTemperature: Double
        var random: SplitMix64
        /// Fixed readings in milli-units, set by a test; `nan` is a reading too.
        var fixed: [SensorQuantity: Double] = [:]
        var readFault: HardwareError?
    }

    /// A simulated power monitor: a 12 V load of about 18 W (an LED strip) that wanders a little.
    struct Meter: Sendable {
        var milliwatts: Double = 18_000
        var random: SplitMix64
        /// A fixed reading set by a test.
        var fixed: PowerMeterReading?
        var readFault: HardwareError?
        var shuntMicroohms: Int?
    }

    struct State: Sendable {
        var meters: [String: Meter] = [:]
        var outputs: [String: Output] = [:]
        var inputs: [String: Input] = [:]
        var pwm: [String: PWM] = [:]
        var sensors: [String: Sensor] = [:]
        /// Lines another (simulated) program holds, by key, with its consumer label.
        var heldBy: [String: String] = [:]
        /// Failures the next opens of a key meet (a missing chip, a PWM channel that cannot be exported).
        var openFaults: [String: HardwareError] = [:]
        /// Inputs whose chip is unplugged (`SwitchAction.unplug`), until when on their clock.
        var unpluggedUntil: [String: EngineInstant] = [:]
        /// Failures every write to a key meets until cleared.
        var writeFaults: [String: HardwareError] = [:]
        /// Every write that succeeded, in order.
        var operations: [Operation] = []
    }

    private let state = Locked(State())
    let seed: UInt64
    let pins: [BoardPin]
    let boardSensors: [BoardSensor]
    /// The board's simulated 1-Wire thermometers (`w1.devices`).
    let thermometers: [(id: String, milliCelsius: Double)]

    public init(board: Board?, seed: UInt64) {
        self.seed = seed
        pins = board?.pins ?? []
        boardSensors = board?.sensors ?? []
        thermometers = board?.oneWire?.devices ?? []
    }

    // MARK: HardwareBackend

    public func openOutput(_ pin: PinAddress, initialValue: Bool, activeLow: Bool, drive: OutputDrive)
        throws(HardwareError) -> any OutputLine
    {
        let key = try resolve(pin)
        try state.withLock { (s) throws(HardwareError) in
            try Self.checkOpen(key, pin: pin, in: s)
            if s.outputs[key]?.isHeld == true || s.inputs[key]?.isOpen == true {
                throw Self.busy(pin, holder: "hearthd")
            }
            var output = s.outputs[key] ?? Output(value: initialValue, activeLow: activeLow, drive: drive, history: [],
                                                  isHeld: true)
            output.value = initialValue
            output.activeLow = activeLow
            output.drive = drive
            output.isHeld = true
            output.history.appendRecord(initialValue)
            s.operations.appendRecord(.output(key: key, value: initialValue))
            s.outputs[key] = output
        }
        return SimulatedOutputLine(world: self, key: key, pin: pin)
    }

    public func openInput(_ pin: PinAddress, bias: InputBias, activeLow: Bool, clock: any EngineClock)
        throws(HardwareError) -> any InputLine
    {
        let key = try resolve(pin)
        try state.withLock { (s) throws(HardwareError) in
            try Self.checkOpen(key, pin: pin, in: s)
            if s.outputs[key]?.isHeld == true || s.inputs[key]?.isOpen == true {
                throw Self.busy(pin, holder: "hearthd")
            }
            var input = s.inputs[key] ?? Input()
            input.isOpen = true
            input.handler = nil
            input.clock = clock
            s.inputs[key] = input
        }
        return SimulatedInputLine(world: self, key: key)
    }

    public func openPWM(_ pwm: PWMAddress) throws(HardwareError) -> any PWMOutput {
        let key = pwm.key
        try state.withLock { (s) throws(HardwareError) in
            if let fault = s.openFaults[key] { throw fault }
            var channel = s.pwm[key] ?? PWM()
            channel.isExported = true
            s.pwm[key] = channel
        }
        return SimulatedPWMOutput(world: self, key: key)
    }

    public func openSensor(_ sensor: SensorAddress, quantity: SensorQuantity) throws(HardwareError) -> any SensorSource
    {
        if case .oneWire(let id) = sensor {
            // As the kernel's w1 bus: the id must be on it, and "the only one" needs exactly one.
            let ids = thermometers.map(\.id)
            let found = ids.isEmpty ? "there are none (list them under w1.devices in the board file)"
                : "found \(ids.joined(separator: ", "))"
            if let id, !ids.contains(id) {
                throw HardwareError(.notFound, message: "no 1-Wire thermometer \(id) on the simulated bus: \(found)",
                                    operation: "lookup", context: "w1")
            }
            if id == nil && ids.count != 1 {
                throw HardwareError(
                    ids.isEmpty ? .notFound : .invalid,
                    message:
                        "\(ids.count) 1-Wire thermometers on the simulated bus (\(found)): name the one to read (w1: "
                            + "<id>)",
                    operation: "lookup", context: "w1")
            }
        }
        let key = sensor.simulationKey
        try state.withLock { (s) throws(HardwareError) in
            if let fault = s.openFaults[key] { throw fault }
            if s.sensors[key] == nil { s.sensors[key] = makeSensor(sensor) }
        }
        return SimulatedSensor(world: self, key: key, quantity: quantity)
    }

    public func openPowerMeter(_ meter: SensorAddress, shuntMicroohms: Int?) throws(HardwareError)
        -> any PowerMeterSource
    {
        let key = meter.simulationKey
        try state.withLock { (s) throws(HardwareError) in
            if let fault = s.openFaults[key] { throw fault }
            if s.meters[key] == nil { s.meters[key] = makeMeter(key: key) }
            s.meters[key]?.shuntMicroohms = shuntMicroohms
        }
        return SimulatedPowerMeter(world: self, key: key)
    }

    /// `dev.hearth.simulatedSwitch` on every wall switch's device type.
    public func traits(forInput pin: PinAddress) -> [TraitConfiguration] {
        [TraitConfiguration(SimulatedSwitchServer.id)]
    }

    /// A `dev.hearth.simulatedSwitch` command (its event has the command's name) moves the line's contact.
    public func traitEvent(_ event: String, of trait: TraitID, forInput pin: PinAddress) {
        guard trait == SimulatedSwitchServer.id, let action = SwitchAction(rawValue: event), let key = key(for: pin)
        else { return }
        act(action, on: key)
    }

    // MARK: Playing the outside world

    /// What a person does to a simulated switch.
    public enum SwitchAction: String, Sendable, CaseIterable {
        /// The contact closes (logical high).
        case press
        /// The contact opens.
        case release
        /// The rocker goes to its other position.
        case flip
        /// The contact closes with bounce: it flips five times in a row and stays closed.
        case bounce
        /// The input's chip goes away (a cable pulled) for `unpluggedTime`: the line fails, and the binding's
        /// attempts to open it again fail until then. (It comes back by itself: while it is away the device is
        /// offline, and an offline device takes no command that could plug it back.)
        case unplug
    }

    /// How long an `unplug` lasts, in milliseconds of the input's clock.
    public static let unpluggedTime: Int64 = 5_000

    static func unplugged(_ key: String) -> HardwareError {
        HardwareError(.gone, message: "the simulated chip was unplugged", operation: "read", context: key)
    }

    /// Moves the contact of the input at `key` and reports the edges at the input's clock's instant.
    public func act(_ action: SwitchAction, on key: String) {
        switch action {
        case .unplug:
            state.withLock { s in
                let now = s.inputs[key]?.clock?.now ?? EngineInstant(milliseconds: 0)
                s.unpluggedUntil[key] = EngineInstant(milliseconds: now.milliseconds + Self.unpluggedTime)
            }
            failInput(key: key, Self.unplugged(key))
            return
        case .press, .release, .flip, .bounce: break
        }
        let (handler, events) = state.withLock {
            s -> ((@Sendable (InputLineEvent) -> Void)?, [(level: Bool, at: EngineInstant)]) in
            var input = s.inputs[key] ?? Input()
            let now = input.clock?.now ?? EngineInstant(milliseconds: 0)
            var levels: [Bool] = []
            switch action {
            case .press: levels = input.level ? [] : [true]
            case .release: levels = input.level ? [false] : []
            case .flip: levels = [!input.level]
            case .bounce: levels = input.level ? [false, true, false, true] : [true, false, true, false, true]
            case .unplug: levels = []
            }
            if let last = levels.last { input.level = last }
            s.inputs[key] = input
            return (input.isOpen ? input.handler : nil, levels.map { ($0, now) })
        }
        if let handler, !events.isEmpty { handler(.edges(events)) }
    }

    /// Sets the contact of an input without edges going anywhere (the state before a binding opens it).
    public func setInputLevel(_ level: Bool, key: String) {
        state.withLock { s in s.inputs[key, default: Input()].level = level }
    }

    /// The input fails as an unplugged chip would.
    public func failInput(key: String, _ error: HardwareError) {
        let handler = state.withLock { s in s.inputs[key]?.handler }
        handler?(.failed(error))
    }

    /// Another program holds the line (or stops holding it, with `nil`).
    public func hold(key: String, by consumer: String?) {
        state.withLock { s in s.heldBy[key] = consumer }
    }

    /// Opens of `key` (a pin key, a PWM key, a sensor name) fail with `error` until cleared with `nil`.
    public func failOpens(key: String, _ error: HardwareError?) {
        state.withLock { s in s.openFaults[key] = error }
    }

    /// Writes to `key` (a pin or PWM key) fail with `error` until cleared with `nil`.
    public func failWrites(key: String, _ error: HardwareError?) {
        state.withLock { s in s.writeFaults[key] = error }
    }

    /// Fixes a sensor's reading (milli-units; `nil` returns to drifting).
    public func setReading(sensor key: String, _ quantity: SensorQuantity, milli value: Double?) {
        state.withLock { s in
            if s.sensors[key] == nil { s.sensors[key] = makeSensor(key: key) }
            s.sensors[key]?.fixed[quantity] = value
        }
    }

    /// Reads of a sensor fail with `error` until cleared with `nil`.
    public func failReads(sensor key: String, _ error: HardwareError?) {
        state.withLock { s in
            if s.sensors[key] == nil { s.sensors[key] = makeSensor(key: key) }
            s.sensors[key]?.readFault = error
        }
    }

    /// Fixes a power monitor's reading (`nil` returns to wandering).
    public func setReading(meter key: String, _ reading: PowerMeterReading?) {
        state.withLock { s in
            if s.meters[key] == nil { s.meters[key] = makeMeter(key: key) }
            s.meters[key]?.fixed = reading
        }
    }

    /// Reads of a power monitor fail with `error` until cleared with `nil`.
    public func failReads(meter key: String, _ error: HardwareError?) {
        state.withLock { s in
            if s.meters[key] == nil { s.meters[key] = makeMeter(key: key) }
            s.meters[key]?.readFault = error
        }
    }

    /// The shunt a meter was opened with (what the Linux backend writes to the driver).
    public func shunt(meter key: String) -> Int? { state.withLock { $0.meters[key]?.shuntMicroohms } }

    func makeMeter(key: String) -> Meter {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in key.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return Meter(random: SplitMix64(seed: seed ^ hash))
    }

    func read(meter key: String) throws(HardwareError) -> PowerMeterReading {
        try state.withLock { (s) throws(HardwareError) -> PowerMeterReading in
            guard var meter = s.meters[key] else {
                throw HardwareError(.gone, message: "the device behind \(key) is gone: was it unplugged or its driver "
                                    + "unloaded?", operation: "read", context: key)
            }
            if let fault = meter.readFault { throw fault }
            if let fixed = meter.fixed { return fixed }
            let step = (meter.random.nextUnit() - 0.5) * 400 + (18_000 - meter.milliwatts) * 0.05
            meter.milliwatts = min(max(meter.milliwatts + step, 15_000), 21_000)
            s.meters[key] = meter
            let millivolts = 12_000
            return PowerMeterReading(microwatts: Int((meter.milliwatts * 1000).rounded()), millivolts: millivolts,
                                     milliamps: Int((meter.milliwatts * 1000 / Double(millivolts)).rounded()))
        }
    }

    public func output(_ key: String) -> Output? { state.withLock { $0.outputs[key] } }
    public func pwm(_ key: String) -> PWM? { state.withLock { $0.pwm[key] } }
    public func input(_ key: String) -> Input? { state.withLock { $0.inputs[key] } }
    /// Every write to the simulated lines and PWM channels so far, in order.
    public var operations: [Operation] { state.withLock { $0.operations } }

    /// The key of a board pin by its name (`relay-1` → `hearth-sim-main:0`).
    public func key(ofPin name: String) -> String? {
        pins.first { $0.name == name }.map { "\($0.chipLabel):\($0.offset)" }
    }

    /// The key of a pin address (`chip:offset`), resolving a line given by name; `nil` if the board has no such line.
    public func key(for pin: PinAddress) -> String? { try? resolve(pin) }

    // MARK: For the simulated devices

    func withState<R>(_ body: (inout State) throws(HardwareError) -> R) throws(HardwareError) -> R {
        try state.withLock { (s) throws(HardwareError) -> R in try body(&s) }
    }

    func setHandler(_ key: String, _ handler: (@Sendable (InputLineEvent) -> Void)?) {
        state.withLock { s in s.inputs[key]?.handler = handler }
    }

    /// A reading: a step of the walk, or what a test fixed.
    func read(sensor key: String, _ quantity: SensorQuantity) throws(HardwareError) -> Double {
        try state.withLock { (s) throws(HardwareError) -> Double in
            guard var sensor = s.sensors[key] else {
                throw HardwareError(.gone, message: "the device behind \(key) is gone: was it unplugged or its driver "
                                    + "unloaded?", operation: "read", context: key)
            }
            if let fault = sensor.readFault { throw fault }
            if let fixed = sensor.fixed[quantity] { return fixed }
            let value: Double
            switch quantity {
            case .humidity:
                let step = (sensor.random.nextUnit() - 0.5) * 600 + (sensor.baseHumidity - sensor.humidity) * 0.02
                sensor.humidity = min(max(sensor.humidity + step, max(1_000, sensor.baseHumidity - 15_000)),
                                      min(99_000, sensor.baseHumidity + 15_000))
                value = sensor.humidity
            case .temperature:
                let step = (sensor.random.nextUnit() - 0.5) * 100 + (sensor.baseTemperature - sensor.temperature) * 0.02
                sensor.temperature = min(max(sensor.temperature + step, sensor.baseTemperature - 5_000),
                                         sensor.baseTemperature + 5_000)
                value = sensor.temperature
            }
            s.sensors[key] = sensor
            return value.rounded()
        }
    }

    private func resolve(_ pin: PinAddress) throws(HardwareError) -> String {
        switch pin.line {
        case .offset: return pin.key
        case .name(let name):
            guard let p = pins.first(where: { $0.chipLabel == pin.chip && $0.name == name }) else {
                throw HardwareError(.notFound, message: "the simulated chip '\(pin.chip)' has no line named '\(name)'",
                                    operation: "gpiod_chip_find_line", context: pin.chip)
            }
            return "\(p.chipLabel):\(p.offset)"
        }
    }

    private static func checkOpen(_ key: String, pin: PinAddress, in s: State) throws(HardwareError) {
        if let fault = s.openFaults[key] { throw fault }
        if let until = s.unpluggedUntil[key], let now = s.inputs[key]?.clock?.now, now < until {
            throw unplugged(key)
        }
        if let holder = s.heldBy[key] { throw busy(pin, holder: holder) }
    }

    static func busy(_ pin: PinAddress, holder: String) -> HardwareError {
        HardwareError(.busy, message: "GPIO \(pin) is busy: another program ('\(holder)') holds it",
                      operation: "gpiod_line_request", context: pin.chip)
    }

    private func makeSensor(_ address: SensorAddress) -> Sensor {
        if case .i2c(let s) = address { return makeSensor(key: s.name, registers: s.registers) }
        if case .oneWire(let id) = address, let t = thermometers.first(where: { id == nil || $0.id == id }) {
            let walk = makeSensor(key: address.simulationKey)
            return Sensor(humidity: walk.humidity, temperature: t.milliCelsius, baseHumidity: walk.baseHumidity,
                          baseTemperature: t.milliCelsius, random: walk.random)
        }
        return makeSensor(key: address.simulationKey)
    }

    private func makeSensor(key: String, registers: [Int: Int]? = nil) -> Sensor {
        let registers = registers ?? boardSensors.first { $0.name == key }?.registers ?? [:]
        // si7020 conversions (datasheet §5.1.1, §5.1.2), in milli-units.
        let humidity = registers[0xe5].map { (Double($0) * 125 / 65536 - 6) * 1000 } ?? 45_000
        let temperature = registers[0xe3].map { (Double($0) * 175.72 / 65536 - 46.85) * 1000 } ?? 21_000
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in key.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return Sensor(humidity: humidity, temperature: temperature, baseHumidity: humidity,
                      baseTemperature: temperature, random: SplitMix64(seed: seed ^ hash))
    }
}

/// A small, fast, seedable generator (Steele, Lea, Flood 2014).
struct SplitMix64: Sendable, Hashable {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    mutating func nextUnit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}

final class SimulatedOutputLine: OutputLine {
    let world: SimulatedHardware
    let key: String
    let pin: PinAddress
    init(world: SimulatedHardware, key: String, pin: PinAddress) {
        self.world = world
        self.key = key
        self.pin = pin
    }

    func set(_ value: Bool) throws(HardwareError) {
        try world.withState { (s) throws(HardwareError) in
            if let fault = s.writeFaults[key] { throw fault }
            precondition(s.outputs[key]?.isHeld == true, "set on simulated GPIO \(pin) after release")
            s.outputs[key]?.value = value
            s.outputs[key]?.history.appendRecord(value)
            s.operations.appendRecord(.output(key: key, value: value))
        }
    }

    func value() throws(HardwareError) -> Bool {
        try world.withState { (s) throws(HardwareError) -> Bool in
            if let fault = s.writeFaults[key] { throw fault }
            return s.outputs[key]?.value ?? false
        }
    }

    func release(leaving safeValue: Bool) throws(HardwareError) {
        try world.withState { (s) throws(HardwareError) in
            s.outputs[key]?.isHeld = false
            if let fault = s.writeFaults[key] { throw fault }
            s.outputs[key]?.value = safeValue
            s.outputs[key]?.history.appendRecord(safeValue)
            s.operations.appendRecord(.output(key: key, value: safeValue))
        }
    }
}

final class SimulatedInputLine: InputLine {
    let world: SimulatedHardware
    let key: String
    init(world: SimulatedHardware, key: String) {
        self.world = world
        self.key = key
    }

    func value() throws(HardwareError) -> Bool { world.input(key)?.level ?? false }

    func startEvents(_ handler: @escaping @Sendable (InputLineEvent) -> Void) { world.setHandler(key, handler) }

    func close() {
        try? world.withState { (s) throws(HardwareError) in
            s.inputs[key]?.isOpen = false
            s.inputs[key]?.handler = nil
        }
    }
}

final class SimulatedPWMOutput: PWMOutput {
    let world: SimulatedHardware
    let key: String
    init(world: SimulatedHardware, key: String) {
        self.world = world
        self.key = key
    }

    func start(periodNanoseconds: UInt64, dutyCycleNanoseconds: UInt64, polarity: PWMOutputPolarity)
        throws(HardwareError)
    {
        try world.withState { (s) throws(HardwareError) in
            if let fault = s.writeFaults[key] { throw fault }
            s.pwm[key]?.periodNanoseconds = periodNanoseconds
            s.pwm[key]?.dutyCycleNanoseconds = dutyCycleNanoseconds
            s.pwm[key]?.dutyHistory.appendRecord(dutyCycleNanoseconds)
            s.pwm[key]?.polarity = polarity
            s.pwm[key]?.isEnabled = true
            s.operations.appendRecord(.pwmStart(key: key, dutyCycleNanoseconds: dutyCycleNanoseconds))
        }
    }

    func setDutyCycle(_ nanoseconds: UInt64) throws(HardwareError) {
        try world.withState { (s) throws(HardwareError) in
            if let fault = s.writeFaults[key] { throw fault }
            s.pwm[key]?.dutyCycleNanoseconds = nanoseconds
            s.pwm[key]?.dutyHistory.appendRecord(nanoseconds)
            s.operations.appendRecord(.pwmDuty(key: key, nanoseconds: nanoseconds))
        }
    }

    func stop() throws(HardwareError) {
        try world.withState { (s) throws(HardwareError) in
            s.pwm[key]?.dutyCycleNanoseconds = 0
            s.pwm[key]?.isEnabled = false
            s.pwm[key]?.isExported = false
            s.operations.appendRecord(.pwmStop(key: key))
        }
    }
}

final class SimulatedSensor: SensorSource {
    let world: SimulatedHardware
    let key: String
    let quantity: SensorQuantity
    init(world: SimulatedHardware, key: String, quantity: SensorQuantity) {
        self.world = world
        self.key = key
        self.quantity = quantity
    }
    func read() throws(HardwareError) -> Double { try world.read(sensor: key, quantity) }
}

final class SimulatedPowerMeter: PowerMeterSource {
    let world: SimulatedHardware
    let key: String
    init(world: SimulatedHardware, key: String) {
        self.world = world
        self.key = key
    }
    func read() throws(HardwareError) -> PowerMeterReading { try world.read(meter: key) }
}

extension SensorAddress {
    /// The simulated board's name for a sensor: a board sensor by its name, others by subsystem and name.
    var simulationKey: String {
        switch self {
        case .i2c(let s): s.name
        case .iio(let n): "iio:\(n)"
        case .hwmon(let n): "hwmon:\(n)"
        case .oneWire(let id): "w1:\(id ?? "only")"
        }
    }
}

fileprivate extension Array {
    /// How many writes a simulated board remembers of each line and channel, and in `operations`, at least: the
    /// records are for tests, and a board that runs for weeks (`scripts/run`, the soak) must not keep every write
    /// of every fade.
    static var recordLimit: Int { 4096 }

    /// Appends `element`; once the record holds twice `recordLimit`, the older half goes (amortised: one move per
    /// `recordLimit` appends).
    mutating func appendRecord(_ element: Element) {
        append(element)
        if count >= 2 * Self.recordLimit { removeFirst(count - Self.recordLimit) }
    }
}
