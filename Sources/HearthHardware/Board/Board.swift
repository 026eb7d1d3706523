public import HearthConfig

/// A board description (`boards/*.yaml`): the named pins, PWM channels and sensors a configuration
/// refers to, and whether the hardware behind them is real or simulated.
///
/// The shape is `boards/qemu-gpio-sim.yaml`'s: `name`, `gpio.chips[].{label, lines, named[]}`,
/// `i2c.buses[].{bus, devices[]}`, `pwm.chips[].{chip, channels[]}`, plus `simulated: true` (and an
/// optional `seed:`) for a board whose hardware lives in memory.
public struct Board: Sendable {
    public var name: String
    public var isSimulated: Bool
    public var description: String?
    /// The file it was read from (empty when built in code).
    public var file: String
    public var gpioChips: [BoardGPIOChip]
    /// Every named GPIO line, across chips, in file order.
    public var pins: [BoardPin]
    /// Every named PWM channel.
    public var pwmChannels: [BoardPWMChannel]
    /// Every I2C device (sensors), across buses.
    public var sensors: [BoardSensor]
    /// The 1-Wire bus, when the board has one: its GPIO line, how it is enabled, and (simulated boards) its
    /// thermometers.
    public var oneWire: BoardOneWire?
    /// Seeds the simulated backend's randomness (a sensor's drift), so a simulated run can be replayed.
    public var seed: UInt64

    /// A board with nothing named on it (tests, or a daemon run without hardware).
    public init(name: String, isSimulated: Bool) {
        self.name = name
        self.isSimulated = isSimulated
        file = ""
        gpioChips = []
        pins = []
        pwmChannels = []
        sensors = []
        seed = 1
    }

    public func pin(named name: String) -> BoardPin? { pins.first { $0.name == name } }
    public func pwmChannel(named name: String) -> BoardPWMChannel? { pwmChannels.first { $0.name == name } }
    public func sensor(named name: String) -> BoardSensor? { sensors.first { $0.name == name } }
}

/// One GPIO chip of a board, found at run time by its kernel label (`pinctrl-bcm2711`).
public struct BoardGPIOChip: Sendable, Hashable {
    public var label: String
    public var lineCount: Int
}

/// A named GPIO line: the chip's label and the line's offset on it.
public struct BoardPin: Sendable, Hashable {
    public enum Direction: String, Sendable, Hashable { case input, output }
    public var name: String
    public var chipLabel: String
    public var offset: Int
    /// What the board's wiring expects; `nil` when the board leaves it open.
    public var direction: Direction?
    /// A free-form hint (`relay`, `wall-switch`).
    public var use: String?
    /// The line of the board file that names it.
    public var line: Int
}

/// A board's 1-Wire bus (`w1:`).
public struct BoardOneWire: Sendable, Hashable {
    public var gpio: Int?
    public var overlay: String?
    /// Thermometers by id, with a simulated first reading in m°C.
    public var devices: [(id: String, milliCelsius: Double)]

    public static func == (a: Self, b: Self) -> Bool {
        a.gpio == b.gpio && a.overlay == b.overlay
            && a.devices.elementsEqual(b.devices) { $0.id == $1.id && $0.milliCelsius == $1.milliCelsius }
    }
    public func hash(into hasher: inout Hasher) { hasher.combine(gpio); hasher.combine(overlay) }
}

/// A named channel of a sysfs PWM chip (`/sys/class/pwm/pwmchip<chip>/pwm<channel>`).
public struct BoardPWMChannel: Sendable, Hashable {
    public var name: String
    public var chip: Int
    public var channel: Int
    public var line: Int
}

/// A sensor on an I2C bus, read through its kernel driver (IIO or hwmon).
public struct BoardSensor: Sendable, Hashable {
    public var name: String
    /// The kernel driver, e.g. `si7020` (IIO) or `sht3x` (hwmon).
    public var driver: String
    public var bus: Int
    public var address: Int
    /// Register words (simulated boards start their readings from them; the HIL harness loads them).
    public var registers: [Int: Int]
    public var line: Int
}

extension Board {
    /// Reads a board file; records every problem in `diagnostics` (with file, line and key path) and
    /// returns `nil` if there was any.
    public static func load(file: String, diagnostics: ConfigDiagnostics) -> Board? {
        // The YAML's own problems (a key given twice, a bad escape) count too, not only the reader's.
        let before = diagnostics.problems.count
        guard let root = ConfigValue.load(file: file, diagnostics: diagnostics), let board = read(root) else {
            return nil
        }
        return diagnostics.problems.count == before ? board : nil
    }

    /// Reads a board from an already parsed document.
    public static func read(_ root: ConfigValue) -> Board? {
        let diagnostics = root.diagnostics
        let before = diagnostics.problems.count
        guard let top = root.mapping(Keys.root) else { return nil }
        var board = Board(name: "", isSimulated: false)
        board.file = root.file
        if let name = top.text("name", required: true) { board.name = name }
        board.description = top.text("description")
        _ = top.text("arch")
        if let simulated = top.bool("simulated") { board.isSimulated = simulated }
        if let seed = top["seed"] {
            if let value = top.int("seed") { board.seed = UInt64(value) }
            if !board.isSimulated { seed.problem("'seed' only applies to a simulated board (simulated: true)") }
        }

        var names: [String: (kind: String, line: Int)] = [:]
        func claim(_ name: String, kind: String, at value: ConfigValue) -> Bool {
            if let first = names[name] {
                value.problem("the name '\(name)' is already used by a \(first.kind) on line \(first.line); "
                              + "names on a board must be unique")
                return false
            }
            names[name] = (kind, value.line)
            return true
        }

        if let gpio = top["gpio"], !gpio.isNull, let map = gpio.mapping(Keys.gpio) {
            for chipValue in map["chips"]?.list ?? [] {
                guard let chip = chipValue.mapping(Keys.gpioChip) else { continue }
                guard let label = chip.text("label", required: true) else { continue }
                if board.gpioChips.contains(where: { $0.label == label }) {
                    chip["label"]?.problem("the GPIO chip '\(label)' is listed twice")
                }
                let lineCount = chip.int("lines", required: true) ?? 0
                board.gpioChips.append(BoardGPIOChip(label: label, lineCount: lineCount))
                var offsets: [Int: String] = [:]
                for named in chip["named"]?.list ?? [] {
                    guard let pin = named.mapping(Keys.namedLine) else { continue }
                    let offset = pin.int("offset", required: true)
                    let name = pin.text("name", required: true)
                    let direction = pin.text("direction").flatMap(BoardPin.Direction.init)
                    let use = pin.text("use")
                    guard let offset, let name else { continue }
                    if lineCount > 0 && offset >= lineCount {
                        pin["offset"]?.problem("offset \(offset) is beyond the chip's \(lineCount) lines "
                                               + "(0…\(lineCount - 1))")
                        continue
                    }
                    if let other = offsets[offset] {
                        pin["offset"]?.problem("offset \(offset) of '\(label)' is already named '\(other)'")
                        continue
                    }
                    guard claim(name, kind: "GPIO line", at: pin["name"] ?? named) else { continue }
                    offsets[offset] = name
                    board.pins.append(BoardPin(name: name, chipLabel: label, offset: offset, direction: direction,
                                               use: use, line: named.line))
                }
            }
        }

        if let i2c = top["i2c"], !i2c.isNull, let map = i2c.mapping(Keys.i2c) {
            for busValue in map["buses"]?.list ?? [] {
                guard let bus = busValue.mapping(Keys.i2cBus) else { continue }
                guard let number = bus.int("bus", required: true) else { continue }
                for deviceValue in bus["devices"]?.list ?? [] {
                    guard let device = deviceValue.mapping(Keys.i2cDevice) else { continue }
                    let name = device.text("name", required: true)
                    // Read as text: an unknown driver gets the message below, which lists the known ones.
                    let driver = device.required("driver")?.string
                    let address = device.int("address", required: true)
                    var registers: [Int: Int] = [:]
                    if let regs = device["registers"], !regs.isNull, let map = regs.anyMapping {
                        for (key, value) in map.values {
                            let parsed = key.hasPrefix("0x") ? Int(key.dropFirst(2), radix: 16) : Int(key)
                            guard let register = parsed, (0...0xff).contains(register) else {
                                value.problem("'\(key)' is not a register number (0x00…0xff)")
                                continue
                            }
                            if let word = value.int(in: 0...0xffff) { registers[register] = word }  // Keys.i2cDevice
                        }
                    }
                    if let driver, let driverValue = device["driver"], SensorDrivers.kind(of: driver) == nil {
                        driverValue.problem("unknown sensor driver '\(driver)'; known: "
                                            + SensorDrivers.known.joined(separator: ", "))
                    }
                    guard let name, let driver, let address else { continue }
                    guard claim(name, kind: "sensor", at: device["name"] ?? deviceValue) else { continue }
                    board.sensors.append(BoardSensor(name: name, driver: driver, bus: number, address: address,
                                                     registers: registers, line: deviceValue.line))
                }
            }
        }

        if let pwm = top["pwm"], !pwm.isNull, let map = pwm.mapping(Keys.pwm) {
            for chipValue in map["chips"]?.list ?? [] {
                guard let chip = chipValue.mapping(Keys.pwmChip) else { continue }
                guard let number = chip.int("chip", required: true) else { continue }
                var used: Set<Int> = []
                for channelValue in chip["channels"]?.list ?? [] {
                    guard let channel = channelValue.mapping(Keys.pwmChannel) else { continue }
                    let index = channel.int("channel", required: true)
                    let name = channel.text("name", required: true)
                    guard let index, let name else { continue }
                    guard used.insert(index).inserted else {
                        channel["channel"]?.problem("channel \(index) of pwmchip\(number) is listed twice")
                        continue
                    }
                    guard claim(name, kind: "PWM channel", at: channel["name"] ?? channelValue) else { continue }
                    board.pwmChannels.append(BoardPWMChannel(name: name, chip: number, channel: index,
                                                             line: channelValue.line))
                }
            }
        }

        if let w1 = top["w1"], !w1.isNull, let map = w1.mapping(Keys.w1) {
            var bus = BoardOneWire(gpio: map.int("gpio"), overlay: map.text("overlay"), devices: [])
            for deviceValue in map["devices"]?.list ?? [] {
                guard let device = deviceValue.mapping(Keys.w1Device), let id = device.text("id", required: true) else {
                    continue
                }
                if bus.devices.contains(where: { $0.id == id }) {
                    device["id"]?.problem("the 1-Wire id \(id) is listed twice")
                    continue
                }
                bus.devices.append((id, (device.double("temperature") ?? 21) * 1000))
            }
            board.oneWire = bus
        }

        guard diagnostics.problems.count == before else { return nil }
        return board
    }
}
