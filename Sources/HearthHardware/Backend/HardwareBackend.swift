public import HearthClock

// The seam between bindings and hardware: one small protocol per kind of device, in terms no platform owns, so
// the bindings here never see a Linux type, and only real operations, so a backend over real hardware implements
// nothing else (the simulator's hooks are `InputTraitsBackend`, beside this file). It speaks of time on the hub's
// clock (HearthClock), not the engine's types. The real implementation over the kernel is `LinuxHardware`
// (HearthHardwareLinux), the in-memory one `SimulatedHardware` (HearthSimulator); the daemon picks one per board
// and hands it to the bindings in their `BindingContext`.

/// Where a GPIO line is: a chip by label (`pinctrl-bcm2711`), kernel name (`gpiochip0`) or path, and a line by
/// offset or by its device-tree name (`GPIO17`).
public struct PinAddress: Sendable, Hashable, CustomStringConvertible {
    public enum Line: Sendable, Hashable {
        case offset(Int)
        case name(String)
    }
    public var chip: String
    public var line: Line
    /// The board's name for it (`relay-1`), for messages; empty when configured by chip and line.
    public var name: String

    public init(chip: String, line: Line, name: String) {
        self.chip = chip
        self.line = line
        self.name = name
    }

    /// The key the pin ledger and the simulated board use: the same wire gives the same key.
    public var key: String {
        switch line {
        case .offset(let o): "\(chip):\(o)"
        case .name(let n): "\(chip):\(n)"
        }
    }

    public var description: String {
        let where_ = switch line {
        case .offset(let o): "line \(o) of \(chip)"
        case .name(let n): "line \(n) of \(chip)"
        }
        return name.isEmpty ? where_ : "\(name) (\(where_))"
    }
}

/// A PWM channel: a chip number and a channel on it (sysfs `pwmchip<chip>/pwm<channel>` on Linux).
public struct PWMAddress: Sendable, Hashable, CustomStringConvertible {
    public var chip: Int
    public var channel: Int
    public var name: String

    public init(chip: Int, channel: Int, name: String) {
        self.chip = chip
        self.channel = channel
        self.name = name
    }

    public var key: String { "pwmchip\(chip)/pwm\(channel)" }
    public var description: String { name.isEmpty ? key : "\(name) (\(key))" }
}

/// What a sensor measures.
public enum SensorQuantity: String, Sendable, Hashable {
    case humidity, temperature
}

/// Where a sensor's readings come from.
public enum SensorAddress: Sendable, Hashable, CustomStringConvertible {
    /// A board's I2C device: found under `/sys/bus/i2c/devices/<bus>-<address>/`, else by driver name.
    case i2c(BoardSensor)
    /// An IIO device by its `name` attribute.
    case iio(String)
    /// A hwmon device by its `name` attribute.
    case hwmon(String)
    /// A 1-Wire thermometer (`w1_therm`: DS18B20 and kin) by its id (`28-0316a2791aff`), or `nil`: the only one.
    case oneWire(String?)

    public var description: String {
        switch self {
        case .i2c(let s): "\(s.name) (\(s.driver) at 0x\(String(s.address, radix: 16)) on i2c-\(s.bus))"
        case .iio(let n): "IIO device '\(n)'"
        case .hwmon(let n): "hwmon device '\(n)'"
        case .oneWire(let id?): "1-Wire thermometer \(id)"
        case .oneWire(nil): "the 1-Wire thermometer"
        }
    }
}

/// How an output line drives the wire.
public enum OutputDrive: Sendable, Hashable, CaseIterable {
    /// High and low: what a relay driver board or a MOSFET gate expects.
    case pushPull
    /// Low only, floating high: a load on another supply through an external pull-up.
    case openDrain
    /// High only, floating low.
    case openSource
}

/// The internal resistor on an input line.
public enum InputBias: Sendable, Hashable, CaseIterable {
    /// Whatever the firmware or device tree configured.
    case asIs
    /// No pull resistor.
    case disabled
    /// Towards the supply: a switch to ground.
    case pullUp
    /// Towards ground: a switch to the supply.
    case pullDown
}

/// Which part of a PWM period the duty cycle is.
public enum PWMOutputPolarity: String, Sendable, Hashable, CaseIterable {
    /// The high time.
    case normal
    /// The low time: for a driver stage that inverts.
    case inversed
}

/// A line this process drives (a relay).
public protocol OutputLine: AnyObject, Sendable {
    func set(_ value: Bool) throws(HardwareError)
    func value() throws(HardwareError) -> Bool
    /// Drives `safeValue` and gives the line back; the line is released even when setting fails.
    func release(leaving safeValue: Bool) throws(HardwareError)
}

/// What an input line reports, from whatever thread watches it.
public enum InputLineEvent: Sendable {
    /// Logical levels after each edge, with the instant (on the hub's clock) the edge happened.
    case edges([(level: Bool, at: HubInstant)])
    /// The line stopped working (the chip went away).
    case failed(HardwareError)
}

/// A line this process watches (a wall switch): edges come from the kernel, never from polling.
public protocol InputLine: AnyObject, Sendable {
    /// The current logical level.
    func value() throws(HardwareError) -> Bool
    /// Starts delivering edges to `handler` (from another thread, or synchronously for the simulation).
    func startEvents(_ handler: @escaping @Sendable (InputLineEvent) -> Void)
    /// Stops the events and gives the line back.
    func close()
}

/// A PWM output (a dimmer's MOSFET gate).
public protocol PWMOutput: AnyObject, Sendable {
    /// Sets period and polarity, then enables the channel at `dutyCycle`.
    func start(periodNanoseconds: UInt64, dutyCycleNanoseconds: UInt64, polarity: PWMOutputPolarity)
        throws(HardwareError)
    func setDutyCycle(_ nanoseconds: UInt64) throws(HardwareError)
    /// Duty 0, disabled, given back.
    func stop() throws(HardwareError)
}

/// A sensor reading source, in the IIO ABI's milli-units (m%RH, m°C).
public protocol SensorSource: AnyObject, Sendable {
    func read() throws(HardwareError) -> Double
}

/// One reading of a power monitor in the hwmon ABI's units.
public struct PowerMeterReading: Sendable, Hashable {
    /// `power1_input`.
    public var microwatts: Int
    /// `in1_input`: the bus voltage, what the load gets.
    public var millivolts: Int
    /// `curr1_input`, signed.
    public var milliamps: Int

    public init(microwatts: Int, millivolts: Int, milliamps: Int) {
        self.microwatts = microwatts
        self.millivolts = millivolts
        self.milliamps = milliamps
    }
}

/// A power monitor (an INA219/INA226 through `ina2xx`): each `read` is one reading of power, voltage and current.
public protocol PowerMeterSource: AnyObject, Sendable {
    func read() throws(HardwareError) -> PowerMeterReading
}

/// Opens hardware by address. Every failure is a `HardwareError` whose message says what to fix.
///
/// Every operation is required: a backend that has no power monitors says so in its own `openPowerMeter`.
public protocol HardwareBackend: Sendable {
    func openOutput(_ pin: PinAddress, initialValue: Bool, activeLow: Bool, drive: OutputDrive)
        throws(HardwareError) -> any OutputLine
    func openInput(_ pin: PinAddress, bias: InputBias, activeLow: Bool, clock: any HubClock)
        throws(HardwareError) -> any InputLine
    func openPWM(_ pwm: PWMAddress) throws(HardwareError) -> any PWMOutput
    func openSensor(_ sensor: SensorAddress, quantity: SensorQuantity) throws(HardwareError) -> any SensorSource
    /// A power monitor; `shuntMicroohms`, when given, is written to the driver before the first reading.
    func openPowerMeter(_ meter: SensorAddress, shuntMicroohms: Int?) throws(HardwareError) -> any PowerMeterSource
}

/// The sensor drivers Hearth knows, and which kernel subsystem reports their readings.
public enum SensorDrivers {
    public enum Kind: Sendable { case iio, hwmon }

    public static let iio = ["si7020", "htu21", "hdc100x", "hdc2010", "hts221", "bme680", "bme280", "dht11"]
    public static let hwmon = ["sht3x", "sht4x", "sht21", "aht10", "hih6130", "shtc1"]
    /// Power monitors (hwmon, `ina2xx`): what a plug's meter reads.
    public static let powerMeters = ["ina219", "ina220", "ina226", "ina230", "ina231"]
    public static var known: [String] { (iio + hwmon + powerMeters).sorted() }

    public static func kind(of driver: String) -> Kind? {
        if iio.contains(driver) { return .iio }
        if hwmon.contains(driver) || powerMeters.contains(driver) { return .hwmon }
        return nil
    }

    /// The temperatures a chip can report, in m°C; a reading outside is implausible.
    public static func temperatureRange(_ driver: String?) -> ClosedRange<Double> {
        switch driver {
        case "dht11": 0...50_000
        case "aht10", "hih6130": -40_000...85_000
        case "w1_therm": -55_000...125_000  // DS18B20
        default: -40_000...125_000
        }
    }
}
