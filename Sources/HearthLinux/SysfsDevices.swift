import Glibc

/// Finding a device directory in a sysfs class by the driver's `name` attribute.
///
/// The numbers in `iio:deviceN` and `hwmonN` follow probe order and change between boots; the `name` a driver
/// reports does not.
enum SysfsLookup {
    /// The lowest-numbered `directory/<prefix>N` whose name file (the first of `nameFiles` that exists) reads `name`.
    static func find(name: String, in directory: String, prefix: String, nameFiles: [String],
                     kind: String) throws(LinuxIOError) -> String {
        let entries: [(name: String, index: Int)]
        do {
            entries = try FileIO.numberedEntries(directory, prefix: prefix)
        } catch where error.errno == .noSuchFileOrDirectory {
            throw LinuxIOError(operation: "opendir", context: .path(directory), errno: .noSuchFileOrDirectory,
                               message: "no \(kind) device named '\(name)': \(directory) does not exist "
                                   + "(is the subsystem built into this kernel?)")
        }
        var seen: [String] = []
        for entry in entries {
            let path = directory + "/" + entry.name
            guard let found = readName(path, nameFiles: nameFiles) else { continue }
            if found == name { return path }
            seen.append("\(entry.name) '\(found)'")
        }
        let inventory = seen.isEmpty ? "there are no \(kind) devices" : "found \(seen.joined(separator: ", "))"
        throw LinuxIOError(operation: "lookup", context: .path(directory), errno: .noSuchFileOrDirectory,
                           message: "no \(kind) device named '\(name)' in \(directory): \(inventory); is the sensor's "
                               + "driver loaded and its overlay (e.g. dtoverlay=i2c-sensor) enabled?")
    }

    /// The device's reported name, or `nil` if it has none readable.
    static func readName(_ path: String, nameFiles: [String]) -> String? {
        for file in nameFiles {
            if let name = try? FileIO.readTrimmed(path + "/" + file) { return name }
        }
        return nil
    }

    /// The lowest-numbered `directory/<prefix>N`, or nil when there is none (or no such directory).
    static func firstNumbered(in directory: String, prefix: String) -> String? {
        (try? FileIO.numberedEntries(directory, prefix: prefix))?.first.map { directory + "/" + $0.name }
    }

    /// A directory given by path must exist; the error says which.
    static func requireDirectory(_ path: String, kind: String) throws(LinuxIOError) {
        guard FileIO.isDirectory(path) else {
            throw LinuxIOError(operation: "stat", context: .path(path), errno: .noSuchFileOrDirectory,
                               message: "no \(kind) device at \(path)")
        }
    }
}

/// An IIO channel type, as it appears in attribute names (`in_<channel>_raw`).
public struct IIOChannel: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String

    /// - Parameter rawValue: e.g. `temp`, `temp0`, `humidityrelative`.
    public init(rawValue: String) {
        precondition(!rawValue.isEmpty && !rawValue.contains("/"), "invalid IIO channel '\(rawValue)'")
        self.rawValue = rawValue
    }

    /// Relative humidity; the IIO ABI's processed unit is milli-percent (`45000` = 45 %RH).
    public static let humidityRelative = IIOChannel(rawValue: "humidityrelative")
    /// Temperature; the IIO ABI's processed unit is milli-degrees Celsius.
    public static let temperature = IIOChannel(rawValue: "temp")

    /// The channel type without its index (`temp0` → `temp`): IIO shares `_scale` and `_offset` by type.
    var type: String {
        var type = Substring(rawValue)
        while let last = type.last, last.isASCII, last.isNumber { type.removeLast() }
        return type.isEmpty ? rawValue : String(type)
    }

    public var description: String { rawValue }
}

/// An Industrial I/O device: `/sys/bus/iio/devices/iio:deviceN` (e.g. an si7020 humidity sensor).
public final class IIODevice: Sendable {
    public let path: String
    /// The driver's `name`, e.g. `si7020`; `nil` if the device has no name attribute.
    public let name: String?

    /// The lowest-numbered IIO device whose `name` is `name`.
    ///
    /// - Throws: `ENOENT` listing the devices that were found.
    public convenience init(named name: String, root: SysfsRoot = .system) throws(LinuxIOError) {
        let path = try SysfsLookup.find(name: name, in: root.path("/sys/bus/iio/devices"), prefix: "iio:device",
                                        nameFiles: ["name"], kind: "IIO")
        self.init(verifiedPath: path, name: name)
    }

    /// The IIO device directory at `path` (absolute, not under a root).
    public convenience init(path: String) throws(LinuxIOError) {
        try SysfsLookup.requireDirectory(path, kind: "IIO")
        self.init(verifiedPath: path, name: SysfsLookup.readName(path, nameFiles: ["name"]))
    }

    /// The IIO device a bus device registered (`<device>/iio:deviceN`, e.g. an I2C client's), if it has one:
    /// IIO names are not unique, so a sensor known by its bus address is found through its own directory.
    public static func registered(by device: String) throws(LinuxIOError) -> IIODevice? {
        guard let path = SysfsLookup.firstNumbered(in: device, prefix: "iio:device") else { return nil }
        return try IIODevice(path: path)
    }

    private init(verifiedPath path: String, name: String?) {
        self.path = path
        self.name = name
    }

    /// The channel's value in the IIO ABI's processed units (milli-%RH, m°C).
    ///
    /// Uses `in_<channel>_input` when the driver provides a processed value; otherwise
    /// `(in_<channel>_raw + offset) × scale`, where offset and scale come from the channel's own attribute or the one
    /// shared by its type (`in_temp_scale` for `temp0`), defaulting to 0 and 1.
    ///
    /// - Throws: `ENOENT` if the device has no such channel; `EIO`/`ENODEV` from a driver whose chip stopped answering.
    public func read(_ channel: IIOChannel) throws(LinuxIOError) -> Double {
        let prefix = path + "/in_" + channel.rawValue
        if let processed = try readOptional(prefix + "_input") { return processed }
        guard let raw = try readOptional(prefix + "_raw") else {
            let available = availableChannels()
            throw LinuxIOError(
                operation: "read", context: .path(prefix + "_raw"), errno: .noSuchFileOrDirectory,
                message:
                    "\(label) has no '\(channel)' channel: neither in_\(channel)_input nor in_\(channel)_raw exists"
                    + (available.isEmpty ? "" : " (it has: \(available.joined(separator: ", ")))"))
        }
        let offset = try readShared(channel, "offset") ?? 0
        let scale = try readShared(channel, "scale") ?? 1
        return (raw + offset) * scale
    }

    /// The channels this device reports a value for, from its `in_*_raw` and `in_*_input` attributes.
    public func availableChannels() -> [String] {
        let entries = (try? FileIO.directoryEntries(path)) ?? []
        var channels = Set<String>()
        for entry in entries where entry.hasPrefix("in_") {
            for suffix in ["_raw", "_input"] where entry.hasSuffix(suffix) {
                channels.insert(String(entry.dropFirst(3).dropLast(suffix.count)))
            }
        }
        return channels.sorted()
    }

    private var label: String {
        let directory = path.split(separator: "/").last.map(String.init) ?? path
        return name.map { "\($0) (\(directory))" } ?? directory
    }

    private func readShared(_ channel: IIOChannel, _ attribute: String) throws(LinuxIOError) -> Double? {
        if let own = try readOptional(path + "/in_\(channel.rawValue)_\(attribute)") { return own }
        guard channel.type != channel.rawValue else { return nil }
        return try readOptional(path + "/in_\(channel.type)_\(attribute)")
    }

    /// A number, or `nil` if the attribute does not exist; every other failure (EIO from the sensor) throws.
    private func readOptional(_ file: String) throws(LinuxIOError) -> Double? {
        let text: String
        do {
            text = try FileIO.readTrimmed(file)
        } catch where error.errno == .noSuchFileOrDirectory {
            return nil
        } catch {
            throw LinuxIOError(operation: error.operation, context: error.context, errno: error.errno,
                               message: Self.explainReadFailure(error, device: label))
        }
        return try FileIO.parseDecimal(text, from: file)
    }

    static func explainReadFailure(_ error: LinuxIOError, device: String) -> String {
        switch error.errno {
        case .ioError, .tryAgain, .timedOut, LinuxErrno(rawValue: EREMOTEIO):
            "\(device) did not answer reading \(error.context): check the sensor's wiring, power and I²C bus"
        case .noSuchDevice, .noSuchDeviceOrAddress:
            "\(device) is gone (reading \(error.context)): was it unplugged or its driver unbound?"
        default:
            error.message
        }
    }
}

/// A hwmon attribute name, e.g. `temp1_input`.
public struct HwmonAttribute: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) {
        precondition(!rawValue.isEmpty && !rawValue.contains("/"), "invalid hwmon attribute '\(rawValue)'")
        self.rawValue = rawValue
    }

    /// Relative humidity in milli-percent.
    public static let humidity1Input = HwmonAttribute(rawValue: "humidity1_input")
    /// Temperature in milli-degrees Celsius.
    public static let temp1Input = HwmonAttribute(rawValue: "temp1_input")
    /// Power in microwatts (a power monitor: ina2xx's from the chip's power register).
    public static let power1Input = HwmonAttribute(rawValue: "power1_input")
    /// The second voltage channel in millivolts (ina2xx: the bus voltage, what the load gets).
    public static let in1Input = HwmonAttribute(rawValue: "in1_input")
    /// Current in milliamps, signed.
    public static let curr1Input = HwmonAttribute(rawValue: "curr1_input")
    /// ina2xx: the shunt resistor the driver computes current and power with, in micro-ohms (writable).
    public static let shuntResistor = HwmonAttribute(rawValue: "shunt_resistor")

    public var description: String { rawValue }
}

/// A hardware-monitoring device: `/sys/class/hwmon/hwmonN` (e.g. an sht3x or aht20 humidity sensor).
public final class HwmonDevice: Sendable {
    public let path: String
    public let name: String?

    /// The lowest-numbered hwmon device whose `name` is `name`.
    public convenience init(named name: String, root: SysfsRoot = .system) throws(LinuxIOError) {
        let path = try SysfsLookup.find(name: name, in: root.path("/sys/class/hwmon"), prefix: "hwmon",
                                        nameFiles: ["name", "device/name"], kind: "hwmon")
        self.init(verifiedPath: path, name: name)
    }

    /// The hwmon device directory at `path` (absolute, not under a root).
    public convenience init(path: String) throws(LinuxIOError) {
        try SysfsLookup.requireDirectory(path, kind: "hwmon")
        self.init(verifiedPath: path, name: SysfsLookup.readName(path, nameFiles: ["name", "device/name"]))
    }

    /// The hwmon device a bus device registered (`<device>/hwmon/hwmonN`), if it has one.
    public static func registered(by device: String) throws(LinuxIOError) -> HwmonDevice? {
        guard let path = SysfsLookup.firstNumbered(in: device + "/hwmon", prefix: "hwmon") else { return nil }
        return try HwmonDevice(path: path)
    }

    private init(verifiedPath path: String, name: String?) {
        self.path = path
        self.name = name
    }

    /// An integer attribute, in hwmon's units (milli-%RH, m°C, …).
    public func read(_ attribute: HwmonAttribute) throws(LinuxIOError) -> Int {
        let file = path + "/" + attribute.rawValue
        let device = name.map { "\($0) (\(path))" } ?? path
        let text: String
        do {
            text = try FileIO.readTrimmed(file)
        } catch where error.errno == .noSuchFileOrDirectory {
            throw LinuxIOError(operation: error.operation, context: error.context, errno: error.errno,
                               message: "\(device) has no \(attribute) attribute: does this sensor measure it?")
        } catch {
            throw LinuxIOError(operation: error.operation, context: error.context, errno: error.errno,
                               message: IIODevice.explainReadFailure(error, device: device))
        }
        return try FileIO.parseInteger(text, from: file)
    }

    /// Writes an integer attribute (ina2xx's `shunt_resistor`).
    public func write(_ attribute: HwmonAttribute, _ value: Int) throws(LinuxIOError) {
        let device = name.map { "\($0) (\(path))" } ?? path
        try FileIO.write(String(value), to: path + "/" + attribute.rawValue) { errno in
            switch errno {
            case .noSuchFileOrDirectory: "\(device) has no \(attribute) attribute"
            case .invalidArgument: "\(device) refused \(value) for \(attribute) (out of the driver's range)"
            case .permissionDenied:
                "\(device): writing \(attribute) needs root (hearthd runs as root on the board image)"
            default: nil
            }
        }
    }

    /// `humidity1_input`: relative humidity in milli-percent.
    public func relativeHumidity() throws(LinuxIOError) -> Int { try read(.humidity1Input) }

    /// `temp1_input`: temperature in milli-degrees Celsius.
    public func temperature() throws(LinuxIOError) -> Int { try read(.temp1Input) }
}

/// A 1-Wire thermometer through the kernel's `w1_therm` driver: `/sys/bus/w1/devices/<family>-<serial>/temperature`
/// (e.g. a DS18B20, family 28), in milli-degrees Celsius.
///
/// Reading `temperature` makes the driver start a conversion and wait for it (750 ms at 12 bits for a DS18B20), so a
/// read blocks that long: callers read it off every other device's path.
public final class OneWireThermometer: Sendable {
    /// The families `w1_therm` drives: DS18S20 (10), DS1822 (22), DS18B20 (28), DS1825 (3b), DS28EA00 (42).
    public static let families = ["10", "22", "28", "3b", "42"]

    public let path: String
    /// `28-0316a2791aff`.
    public let id: String

    /// The thermometer `id`, or with `nil` the only one on the bus (refused when there are none or several).
    public init(id: String?, root: SysfsRoot = .system) throws(LinuxIOError) {
        let directory = root.path("/sys/bus/w1/devices")
        let found: [String]
        do {
            found = try FileIO.directoryEntries(directory).filter { name in
                Self.families.contains { name.hasPrefix($0 + "-") }
            }.sorted()
        } catch where error.errno == .noSuchFileOrDirectory {
            throw LinuxIOError(operation: "opendir", context: .path(directory), errno: .noSuchFileOrDirectory,
                               message: "no 1-Wire bus: \(directory) does not exist (enable it with dtoverlay=w1-gpio, "
                                   + "data on GPIO4 with a 4.7 kΩ pull-up to 3.3 V)")
        }
        let inventory = found.isEmpty ? "there are none" : "found \(found.joined(separator: ", "))"
        if let id {
            guard found.contains(id) else {
                throw LinuxIOError(operation: "lookup", context: .path(directory), errno: .noSuchFileOrDirectory,
                                   message: "no 1-Wire thermometer \(id) in \(directory): \(inventory); is it wired "
                                       + "(data, 3.3 V, GND, the pull-up) and w1_therm loaded?")
            }
            self.id = id
        } else {
            guard let only = found.first else {
                throw LinuxIOError(operation: "lookup", context: .path(directory), errno: .noSuchFileOrDirectory,
                                   message: "no 1-Wire thermometer in \(directory): \(inventory); is it wired (data, "
                                       + "3.3 V, GND, the 4.7 kΩ pull-up) and w1_therm loaded?")
            }
            guard found.count == 1 else {
                throw LinuxIOError(
                    operation: "lookup", context: .path(directory), errno: .invalidArgument,
                    message: "\(found.count) 1-Wire thermometers in \(directory) (\(found.joined(separator: ", "))): "
                        + "name the one to read (w1: <id>)")
            }
            self.id = only
        }
        path = directory + "/" + self.id
    }

    /// The temperature in m°C; blocks for the conversion. A read the driver could not complete (no answer, a CRC
    /// error) is `EIO`.
    public func temperature() throws(LinuxIOError) -> Int {
        let file = path + "/temperature"
        let text: String
        do {
            text = try FileIO.readTrimmed(file)
        } catch  where error.errno == .noSuchFileOrDirectory {
            throw LinuxIOError(
                operation: error.operation, context: error.context, errno: error.errno,
                message: "\(id) has no temperature attribute (\(file)): it was unplugged, or the kernel's "
                    + "w1_therm is older than 5.9")
        } catch {
            throw LinuxIOError(operation: error.operation, context: error.context, errno: error.errno,
                               message: Self.explainReadFailure(error, id: id))
        }
        return try FileIO.parseInteger(text, from: file)
    }

    static func explainReadFailure(_ error: LinuxIOError, id: String) -> String {
        switch error.errno {
        case .ioError, .tryAgain, .timedOut:
            "1-Wire thermometer \(id) did not answer reading \(error.context) (no reply or a CRC error): check its "
                + "data "
                + "line, its 3.3 V and the 4.7 kΩ pull-up"
        case .noSuchDevice, .noSuchDeviceOrAddress:
            "1-Wire thermometer \(id) is gone (reading \(error.context)): was it unplugged?"
        default:
            error.message
        }
    }
}
