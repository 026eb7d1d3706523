import Glibc
public import HearthClock
public import HearthHardware
public import HearthLinux
import HearthSync

/// The real hardware: GPIO through libgpiod, PWM/IIO/hwmon through sysfs, all via HearthLinux.
///
/// Every `LinuxIOError` becomes a `HardwareError` here, at the edge, with its message, errno and context kept;
/// Linux's types (`GPIODrive`, `GPIOBias`, `PWMPolarity`) never leave this module.
public struct LinuxHardware: HardwareBackend {
    /// Where `/sys` is (a temporary tree in tests).
    public var root: SysfsRoot
    /// Where the `gpiochipN` character devices are.
    public var deviceDirectory: String
    /// The label other programs see on lines this process holds.
    public var consumer: String
    /// How many times to look for an exported PWM channel (10 ms apart) before giving up.
    public var pwmExportAttempts: Int

    public init(root: SysfsRoot = .system, deviceDirectory: String = "/dev", consumer: String = "hearthd",
                pwmExportAttempts: Int = 50) {
        self.root = root
        self.deviceDirectory = deviceDirectory
        self.consumer = consumer
        self.pwmExportAttempts = pwmExportAttempts
    }

    func openChip(_ reference: String) throws(LinuxIOError) -> GPIOChip {
        if reference.hasPrefix("/") { return try GPIOChip(path: reference) }
        if reference.hasPrefix("gpiochip"), Int(reference.dropFirst("gpiochip".count)) != nil {
            return try GPIOChip(name: reference)
        }
        return try GPIOChip(label: reference, deviceDirectory: deviceDirectory)
    }

    func offset(_ pin: PinAddress, on chip: GPIOChip) throws(LinuxIOError) -> Int {
        switch pin.line {
        case .offset(let o): o
        case .name(let n): try chip.lineOffset(named: n)
        }
    }

    public func openOutput(_ pin: PinAddress, initialValue: Bool, activeLow: Bool, drive: OutputDrive)
        throws(HardwareError) -> any OutputLine
    {
        try mapLinuxErrors { () throws(LinuxIOError) in
            let chip = try openChip(pin.chip)
            return LinuxOutputLine(
                try GPIOOutputLine(
                    chip: chip, offset: offset(pin, on: chip), initialValue: initialValue,
                    activeLow: activeLow, drive: GPIODrive(drive), consumer: consumer))
        }
    }

    public func openInput(_ pin: PinAddress, bias: InputBias, activeLow: Bool, clock: any HubClock)
        throws(HardwareError) -> any InputLine
    {
        try mapLinuxErrors { () throws(LinuxIOError) in
            let chip = try openChip(pin.chip)
            let line = try GPIOInputLine(chip: chip, offset: offset(pin, on: chip), bias: GPIOBias(bias),
                                         activeLow: activeLow, consumer: consumer)
            return LinuxInputLine(line: line, clock: clock)
        }
    }

    public func openPWM(_ pwm: PWMAddress) throws(HardwareError) -> any PWMOutput {
        try mapLinuxErrors { () throws(LinuxIOError) in
            LinuxPWMOutput(channel: try PWMChannel(chip: pwm.chip, channel: pwm.channel, root: root,
                                                   exportAttempts: pwmExportAttempts))
        }
    }

    public func openSensor(_ sensor: SensorAddress, quantity: SensorQuantity) throws(HardwareError) -> any SensorSource
    {
        try mapLinuxErrors { () throws(LinuxIOError) in try openLinuxSensor(sensor, quantity: quantity) }
    }

    func openLinuxSensor(_ sensor: SensorAddress, quantity: SensorQuantity) throws(LinuxIOError) -> any SensorSource {
        switch sensor {
        case .iio(let name):
            return IIOSensor(device: try IIODevice(named: name, root: root), quantity: quantity)
        case .hwmon(let name):
            return HwmonSensor(device: try HwmonDevice(named: name, root: root), quantity: quantity)
        case .oneWire(let id):
            guard quantity == .temperature else {
                throw LinuxIOError(
                    operation: "open", context: .path(root.path("/sys/bus/w1/devices")), errno: .invalidArgument,
                    message: "a 1-Wire thermometer measures temperature, not \(quantity.rawValue)")
            }
            return OneWireSensor(try OneWireThermometer(id: id, root: root))
        case .i2c(let s):
            // The device's own directory first: IIO names are not unique (si7020 names itself after its bus
            // address), and two sensors of one kind may share a bus.
            let client = root.path("/sys/bus/i2c/devices/\(s.bus)-\(hex4(s.address))")
            if let device = try IIODevice.registered(by: client) {
                return IIOSensor(device: device, quantity: quantity)
            }
            if let device = try HwmonDevice.registered(by: client) {
                return HwmonSensor(device: device, quantity: quantity)
            }
            switch SensorDrivers.kind(of: s.driver) {
            case .hwmon?:
                return HwmonSensor(device: try HwmonDevice(named: s.driver, root: root), quantity: quantity)
            case .iio?, nil:
                do throws(LinuxIOError) {
                    return IIOSensor(device: try IIODevice(named: s.driver, root: root), quantity: quantity)
                } catch {
                    throw LinuxIOError(
                        operation: error.operation, context: .path(client), errno: error.errno,
                        message: "no \(s.driver) sensor at 0x\(String(s.address, radix: 16)) on i2c-\(s.bus) "
                            + "(\(client) has no IIO or hwmon device): is the overlay enabled "
                            + "(dtoverlay=i2c-sensor,\(s.driver)) and the chip wired to that bus? "
                            + "(\(error.message))")
                }
            }
        }
    }

    public func openPowerMeter(_ meter: SensorAddress, shuntMicroohms: Int?) throws(HardwareError)
        -> any PowerMeterSource
    {
        try mapLinuxErrors { () throws(LinuxIOError) in
            let device: HwmonDevice
            switch meter {
            case .hwmon(let name):
                device = try HwmonDevice(named: name, root: root)
            case .i2c(let s):
                // The chip's own directory first: two monitors of one kind on one bus have the same hwmon name.
                let client = root.path("/sys/bus/i2c/devices/\(s.bus)-\(hex4(s.address))")
                if let own = try HwmonDevice.registered(by: client) {
                    device = own
                } else {
                    do throws(LinuxIOError) {
                        device = try HwmonDevice(named: s.driver, root: root)
                    } catch {
                        throw LinuxIOError(
                            operation: error.operation, context: .path(client), errno: error.errno,
                            message: "no \(s.driver) power monitor at 0x\(String(s.address, radix: 16)) on "
                                + "i2c-\(s.bus) (\(client) has no hwmon device): is the ina2xx driver loaded and "
                                + "the chip declared (a device-tree overlay, or echo \(s.driver) "
                                    + "0x\(String(s.address, radix: 16)) "
                                + "> /sys/bus/i2c/devices/i2c-\(s.bus)/new_device)? (\(error.message))")
                    }
                }
            case .iio, .oneWire:
                throw LinuxIOError(operation: "open", context: .path("\(meter)"), errno: .invalidArgument,
                                   message: "\(meter) is not a power monitor (an ina2xx hwmon device)")
            }
            if let shuntMicroohms { try device.write(.shuntResistor, shuntMicroohms) }
            return HwmonPowerMeter(device: device)
        }
    }

    private func hex4(_ value: Int) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}

/// A GPIO output line.
final class LinuxOutputLine: OutputLine {
    let line: GPIOOutputLine
    init(_ line: GPIOOutputLine) { self.line = line }

    func set(_ value: Bool) throws(HardwareError) {
        try mapLinuxErrors { () throws(LinuxIOError) in try line.set(value) }
    }
    func value() throws(HardwareError) -> Bool { try mapLinuxErrors { () throws(LinuxIOError) in try line.value() } }
    func release(leaving safeValue: Bool) throws(HardwareError) {
        try mapLinuxErrors { () throws(LinuxIOError) in try line.release(leaving: safeValue) }
    }
}

/// An IIO channel in milli-units.
final class IIOSensor: SensorSource {
    let device: IIODevice
    let channel: IIOChannel
    init(device: IIODevice, quantity: SensorQuantity) {
        self.device = device
        channel = quantity == .humidity ? .humidityRelative : .temperature
    }
    func read() throws(HardwareError) -> Double {
        try mapLinuxErrors { () throws(LinuxIOError) in try device.read(channel) }
    }
}

/// A hwmon `humidity1_input` / `temp1_input` in milli-units.
final class HwmonSensor: SensorSource {
    let device: HwmonDevice
    let attribute: HwmonAttribute
    init(device: HwmonDevice, quantity: SensorQuantity) {
        self.device = device
        attribute = quantity == .humidity ? .humidity1Input : .temp1Input
    }
    func read() throws(HardwareError) -> Double {
        try mapLinuxErrors { () throws(LinuxIOError) in Double(try device.read(attribute)) }
    }
}

/// A sysfs PWM channel.
final class LinuxPWMOutput: PWMOutput {
    let channel: PWMChannel
    init(channel: PWMChannel) { self.channel = channel }

    func start(periodNanoseconds: UInt64, dutyCycleNanoseconds: UInt64, polarity: PWMOutputPolarity)
        throws(HardwareError)
    {
        try mapLinuxErrors { () throws(LinuxIOError) in
            try channel.apply(
                PWMSettings(
                    periodNanoseconds: periodNanoseconds, dutyCycleNanoseconds: dutyCycleNanoseconds,
                    polarity: PWMPolarity(polarity), isEnabled: true))
        }
    }

    func setDutyCycle(_ nanoseconds: UInt64) throws(HardwareError) {
        try mapLinuxErrors { () throws(LinuxIOError) in try channel.setDutyCycle(nanoseconds) }
    }

    func stop() throws(HardwareError) {
        var first: LinuxIOError?
        do throws(LinuxIOError) { try channel.setDutyCycle(0) } catch { first = first ?? error }
        do throws(LinuxIOError) { try channel.setEnabled(false) } catch { first = first ?? error }
        do throws(LinuxIOError) { try channel.unexport() } catch { first = first ?? error }
        if let first { throw HardwareError(first) }
    }
}

/// A GPIO input whose edges are read by a dedicated thread blocked in the kernel (`poll` on the line's event
/// descriptor), so a switch costs nothing while nobody touches it and never ties up a Swift concurrency thread.
final class LinuxInputLine: InputLine {
    let line: GPIOInputLine
    let clock: any HubClock
    private let thread = Locked<pthread_t?>(nil)

    init(line: GPIOInputLine, clock: any HubClock) {
        self.line = line
        self.clock = clock
    }

    func value() throws(HardwareError) -> Bool { try mapLinuxErrors { () throws(LinuxIOError) in try line.value() } }

    func startEvents(_ handler: @escaping @Sendable (InputLineEvent) -> Void) {
        let line = self.line
        let clock = self.clock
        let body: @Sendable () -> Void = {
            while true {
                do throws(LinuxIOError) {
                    let events = try line.waitForEvents(timeout: nil)
                    if line.isInterrupted { return }
                    guard !events.isEmpty else { continue }
                    let now = clock.now
                    // Kernel timestamps are CLOCK_MONOTONIC, the hub's clock; an old kernel's CLOCK_REALTIME
                    // stamps would lie in the future, so never trust one beyond now.
                    handler(.edges(events.map { event in
                        let at = HubInstant(milliseconds: Int64(clamping: event.timestampNanoseconds / 1_000_000))
                        return (event.edge == .rising, min(at, now))
                    }))
                } catch {
                    if !line.isInterrupted { handler(.failed(HardwareError(error))) }
                    return
                }
            }
        }
        let context = LinuxIOError.Context.gpioLine(chip: line.chip.name, offset: line.offset).description
        let failure = thread.withLock { thread -> HardwareError? in
            precondition(thread == nil, "events of a GPIO input started twice")
            do throws(HardwareError) {
                thread = try Thread.start(body, for: context)
                return nil
            } catch {
                return error
            }
        }
        // No thread (EAGAIN: the system's limit on threads, or memory): the binding hears of it as of any
        // other failure of its events, rather than the hub trapping.
        if let failure { handler(.failed(failure)) }
    }

    func close() {
        line.release()
        if let t = thread.withLock({ t -> pthread_t? in defer { t = nil }; return t }) { pthread_join(t, nil) }
    }
}

/// A bare POSIX thread (no Foundation in this module).
enum Thread {
    private final class Box {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }

    typealias Routine = @convention(c) (UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer?

    /// Starts `body` on a new thread; `context` names what the thread is for, in the error. `create` is
    /// `pthread_create` (a test passes one that fails as the system does when it has no thread to give).
    static func start(
        _ body: @escaping @Sendable () -> Void, for context: String = "a thread",
        create: (inout pthread_t, Routine, UnsafeMutableRawPointer) -> Int32 = { pthread_create(&$0, nil, $1, $2) }
    )
        throws(HardwareError) -> pthread_t
    {
        var thread = pthread_t()
        let box = Unmanaged.passRetained(Box(body)).toOpaque()
        let result = create(&thread, { argument in
            let box = Unmanaged<Box>.fromOpaque(argument!).takeRetainedValue()
            box.body()
            return nil
        }, box)
        guard result == 0 else {
            Unmanaged<Box>.fromOpaque(box).release()
            throw HardwareError(.failed, message: "cannot start a thread to wait for the line's edges "
                                    + "(the system is at its limit of threads or out of memory)",
                                operation: "pthread_create", context: context, errno: result,
                                errnoDescription: LinuxErrno(rawValue: result).description)
        }
        return thread
    }
}

/// An ina2xx hwmon device: `power1_input` (µW), `in1_input` (bus voltage, mV), `curr1_input` (mA).
final class HwmonPowerMeter: PowerMeterSource {
    let device: HwmonDevice
    init(device: HwmonDevice) { self.device = device }
    func read() throws(HardwareError) -> PowerMeterReading {
        try mapLinuxErrors { () throws(LinuxIOError) in
            PowerMeterReading(microwatts: try device.read(.power1Input), millivolts: try device.read(.in1Input),
                              milliamps: try device.read(.curr1Input))
        }
    }
}

/// A `w1_therm` thermometer's `temperature` in m°C; each read waits for the conversion (750 ms for a DS18B20).
final class OneWireSensor: SensorSource {
    let thermometer: OneWireThermometer
    init(_ thermometer: OneWireThermometer) { self.thermometer = thermometer }
    func read() throws(HardwareError) -> Double {
        try mapLinuxErrors { () throws(LinuxIOError) in Double(try thermometer.temperature()) }
    }
}
