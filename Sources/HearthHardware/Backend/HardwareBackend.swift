import HearthEngine
import HearthLinux

// The seam between bindings and hardware: one small protocol per kind of device, a real implementation over
// HearthLinux (LinuxHardware.swift) and an in-memory one (SimulatedHardware.swift). Bindings see only these.

/// Where a GPIO line is: a chip by label (`pinctrl-bcm2711`), kernel name (`gpiochip0`) or path, and a line by
/// offset or by its device-tree name (`GPIO17`).
struct PinAddress: Sendable, Hashable, CustomStringConvertible {
    enum Line: Sendable, Hashable {
        case offset(Int)
        case name(String)
    }
    var chip: String
    var line: Line
    /// The board's name for it (`relay-1`), for messages; empty when configured by chip and line.
    var name: String

    /// The key the pin ledger and the simulated board use: the same wire gives the same key.
    var key: String {
        switch line {
        case .offset(let o): "\(chip):\(o)"
        case .name(let n): "\(chip):\(n)"
        }
    }

    var description: String {
        let where_ = switch line {
        case .offset(let o): "line \(o) of \(chip)"
        case .name(let n): "line \(n) of \(chip)"
        }
        return name.isEmpty ? where_ : "\(name) (\(where_))"
    }
}

/// A sysfs PWM channel.
struct PWMAddress: Sendable, Hashable, CustomStringConvertible {
    var chip: Int
    var channel: Int
    var name: String
    var key: String { "pwmchip\(chip)/pwm\(channel)" }
    var description: String { name.isEmpty ? key : "\(name) (\(key))" }
}

/// What a sensor measures.
enum SensorQuantity: String, Sendable, Hashable {
    case humidity, temperature
}

/// Where a sensor's readings come from.
enum SensorAddress: Sendable, Hashable, CustomStringConvertible {
    /// A board's I2C device: found under `/sys/bus/i2c/devices/<bus>-<address>/`, else by driver name.
    case i2c(BoardSensor)
    /// An IIO device by its `name` attribute.
    case iio(String)
    /// A hwmon device by its `name` attribute.
    case hwmon(String)

    var description: String {
        switch self {
        case .i2c(let s): "\(s.name) (\(s.driver) at 0x\(String(s.address, radix: 16)) on i2c-\(s.bus))"
        case .iio(let n): "IIO device '\(n)'"
        case .hwmon(let n): "hwmon device '\(n)'"
        }
    }

    var simulationKey: String {
        switch self {
        case .i2c(let s): s.name
        case .iio(let n): "iio:\(n)"
        case .hwmon(let n): "hwmon:\(n)"
        }
    }
}

/// A line this process drives (a relay).
protocol OutputLine: AnyObject, Sendable {
    func set(_ value: Bool) throws(LinuxIOError)
    func value() throws(LinuxIOError) -> Bool
    /// Drives `safeValue` and gives the line back; the line is released even when setting fails.
    func release(leaving safeValue: Bool) throws(LinuxIOError)
}

/// What an input line reports, from whatever thread watches it.
enum InputLineEvent: Sendable {
    /// Logical levels after each edge, with the instant (on the engine's clock) the edge happened.
    case edges([(level: Bool, at: EngineInstant)])
    /// The line stopped working (the chip went away).
    case failed(LinuxIOError)
}

/// A line this process watches (a wall switch): edges come from the kernel, never from polling.
protocol InputLine: AnyObject, Sendable {
    /// The current logical level.
    func value() throws(LinuxIOError) -> Bool
    /// Starts delivering edges to `handler` (from another thread, or synchronously for the simulation).
    func startEvents(_ handler: @escaping @Sendable (InputLineEvent) -> Void)
    /// Stops the events and gives the line back.
    func close()
}

/// A PWM output (a dimmer's MOSFET gate).
protocol PWMOutput: AnyObject, Sendable {
    /// Sets period and polarity, then enables the channel at `dutyCycle`.
    func start(periodNanoseconds: UInt64, dutyCycleNanoseconds: UInt64, polarity: PWMPolarity) throws(LinuxIOError)
    func setDutyCycle(_ nanoseconds: UInt64) throws(LinuxIOError)
    /// Duty 0, disabled, given back.
    func stop() throws(LinuxIOError)
}

/// A sensor reading source, in the IIO ABI's milli-units (m%RH, m°C).
protocol SensorSource: AnyObject, Sendable {
    func read() throws(LinuxIOError) -> Double
}

/// Opens hardware by address. Every failure is a `LinuxIOError` whose message says what to fix.
protocol HardwareBackend: Sendable {
    func openOutput(_ pin: PinAddress, initialValue: Bool, activeLow: Bool, drive: GPIODrive)
        throws(LinuxIOError) -> any OutputLine
    func openInput(_ pin: PinAddress, bias: GPIOBias, activeLow: Bool, clock: any EngineClock)
        throws(LinuxIOError) -> any InputLine
    func openPWM(_ pwm: PWMAddress) throws(LinuxIOError) -> any PWMOutput
    func openSensor(_ sensor: SensorAddress, quantity: SensorQuantity) throws(LinuxIOError) -> any SensorSource
}

/// The sensor drivers Hearth knows, and which kernel subsystem reports their readings.
enum SensorDrivers {
    enum Kind: Sendable { case iio, hwmon }

    static let iio = ["si7020", "htu21", "hdc100x", "hdc2010", "hts221", "bme680", "bme280", "dht11"]
    static let hwmon = ["sht3x", "sht4x", "sht21", "aht10", "hih6130", "shtc1"]
    static var known: [String] { (iio + hwmon).sorted() }

    static func kind(of driver: String) -> Kind? {
        if iio.contains(driver) { return .iio }
        if hwmon.contains(driver) { return .hwmon }
        return nil
    }

    /// The temperatures a chip can report, in m°C; a reading outside is implausible.
    static func temperatureRange(_ driver: String?) -> ClosedRange<Double> {
        switch driver {
        case "dht11": 0...50_000
        case "aht10", "hih6130": -40_000...85_000
        default: -40_000...125_000
        }
    }
}
