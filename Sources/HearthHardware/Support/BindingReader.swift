import HearthConfig

/// Reads one binding's section for its kind's factory, and the keys bindings share: pins by board name or by chip
/// and line, PWM channels, sensors.
struct BindingReader {
    let config: ConfigValue
    let context: BindingContext
    /// The kind's keys (`BindingKind.section`), which `mapping()` admits.
    let section: ConfigSection

    /// The binding's section as a mapping of its kind's keys.
    func mapping() -> ConfigMap? { config.mapping(section) }

    /// The line offsets a raw `chip:` + `line:` may name.
    static let lineOffsets = 0...1023

    /// `pin: <board pin>`, or `chip:` + `line:`: what `pin(_:key:direction:what:)` reads.
    static func pinKeys(what: String, example: String) -> [ConfigKey] {
        [
            ConfigKey("pin", .text, "the board pin of the \(what) (a name from the board file, e.g. \(example))"),
            ConfigKey("chip", .text, "instead of pin: the GPIO chip's label, gpiochipN or /dev/gpiochipN"),
            ConfigKey(
                "line", .anyOf([.int(lineOffsets, unit: ""), .label]),
                "with chip: the line's offset (\(lineOffsets.lowerBound)…\(lineOffsets.upperBound)) or its name, "
                    + "e.g. GPIO17")
        ]
    }

    static let pinRules: [ConfigRule] = [
        .atLeastOne("pin", "chip"), .atMostOne("pin", "chip"), .allOrNone("chip", "line")
    ]

    /// `pwm: <board PWM channel>`, or `pwmChip:` + `pwmChannel:`: what `pwm(_:key:)` reads.
    static let pwmKeys: [ConfigKey] = [
        ConfigKey("pwm", .text, "the board's PWM channel (a name from the board file, e.g. dimmer-1)"),
        ConfigKey("pwmChip", .int(0...255, unit: ""), "instead of pwm: the sysfs PWM chip number (pwmchipN)"),
        ConfigKey("pwmChannel", .int(0...255, unit: ""), "with pwmChip: the channel on that chip"),
    ]

    static let pwmRules: [ConfigRule] = [.atLeastOne("pwm", "pwmChip"), .atMostOne("pwm", "pwmChip"),
                                         .allOrNone("pwmChip", "pwmChannel")]

    /// A GPIO line: `<key>: <board pin name>`, or (when `allowRaw`) `chip:` + `line:` (an offset or a line name).
    func pin(_ map: ConfigMap, key: String, direction: BoardPin.Direction, what: String, required: Bool = true,
             allowRaw: Bool = true) -> PinAddress? {
        let board = context.board
        if let value = map[key], !value.isNull {
            guard let name = value.string else { return nil }
            guard let pin = board.pin(named: name) else {
                let names = board.pins.map(\.name)
                value.problem("the board '\(board.name)' has no pin '\(name)'; "
                              + (names.isEmpty ? "it names no pins" : "its pins are \(names.joined(separator: ", "))"))
                return nil
            }
            if let d = pin.direction, d != direction {
                let fitting = board.pins.filter { $0.direction != d }.map(\.name)
                value.problem("'\(name)' is an \(d.rawValue) on the board '\(board.name)', but a \(what) needs an "
                              + "\(direction.rawValue)" + (fitting.isEmpty ? "" : "; \(direction.rawValue)s: "
                                                           + fitting.joined(separator: ", ")))
                return nil
            }
            let address = PinAddress(chip: pin.chipLabel, line: .offset(pin.offset), name: pin.name)
            guard claim(address, at: value) else { return nil }
            return address
        }
        if allowRaw, let chipValue = map["chip"] {
            // Without a line the section's rule (chip and line go together) has said so already.
            guard let chip = chipValue.string, let lineValue = map["line"] else { return nil }
            let line: PinAddress.Line
            if case .int(let offset)? = lineValue.node.typed {
                guard Self.lineOffsets.contains(offset) else {
                    lineValue.problem("\(offset) is out of range; allowed: "
                                      + "\(Self.lineOffsets.lowerBound)…\(Self.lineOffsets.upperBound)")
                    return nil
                }
                line = .offset(offset)
            } else {
                guard case .text(let name)? = lineValue.read(.label) else { return nil }
                line = .name(name)
            }
            if let known = context.board.gpioChips.first(where: { $0.label == chip }), case .offset(let o) = line,
               o >= known.lineCount {
                lineValue.problem("chip '\(chip)' has \(known.lineCount) lines (0…\(known.lineCount - 1))")
                return nil
            }
            let address = PinAddress(chip: chip, line: line, name: "")
            guard claim(address, at: lineValue) else { return nil }
            return address
        }
        if required {
            let names = board.pins.filter { $0.direction == nil || $0.direction == direction }.map(\.name)
            map.owner.problem("missing '\(key)' (the board pin of the \(what)"
                              + (names.isEmpty ? "" : ", e.g. one of \(names.joined(separator: ", "))")
                              + (allowRaw ? "; or give 'chip' and 'line'" : "") + ")")
        }
        return nil
    }

    private func claim(_ address: PinAddress, at value: ConfigValue) -> Bool {
        context.pins.claim("gpio " + address.key, what: "GPIO \(address)", at: value, deviceID: context.deviceID,
                           typeName: context.typeName)
    }

    /// A PWM channel: `<key>: <board PWM name>`, or (when `allowRaw`) `pwmChip:` + `pwmChannel:`.
    func pwm(_ map: ConfigMap, key: String, allowRaw: Bool = true) -> PWMAddress? {
        let board = context.board
        if let value = map[key], !value.isNull {
            guard let name = value.string else { return nil }
            guard let channel = board.pwmChannel(named: name) else {
                let names = board.pwmChannels.map(\.name)
                value.problem("the board '\(board.name)' has no PWM channel '\(name)'; "
                              + (names.isEmpty ? "it names no PWM channels (add them under pwm.chips)"
                                 : "its PWM channels are \(names.joined(separator: ", "))"))
                return nil
            }
            let address = PWMAddress(chip: channel.chip, channel: channel.channel, name: name)
            return claimPWM(address, at: value) ? address : nil
        }
        if allowRaw, let chipValue = map["pwmChip"] {
            guard let chip = map.int("pwmChip"), let channel = map.int("pwmChannel") else { return nil }
            let address = PWMAddress(chip: chip, channel: channel, name: "")
            return claimPWM(address, at: chipValue) ? address : nil
        }
        let names = board.pwmChannels.map(\.name)
        map.owner.problem("missing '\(key)' (the board's PWM channel"
                          + (names.isEmpty ? "" : ", e.g. one of \(names.joined(separator: ", "))")
                          + (allowRaw ? "; or give 'pwmChip' and 'pwmChannel')" : ")"))
        return nil
    }

    private func claimPWM(_ address: PWMAddress, at value: ConfigValue) -> Bool {
        context.pins.claim(address.key, what: "PWM \(address)", at: value, deviceID: context.deviceID,
                           typeName: context.typeName)
    }

    /// A sensor: `sensor: <board I2C device>`, `iio: <IIO device name>` or `hwmon: <hwmon name>`.
    func sensor(_ map: ConfigMap) -> SensorAddress? {
        let board = context.board
        let given = ["sensor", "iio", "hwmon", "w1"].filter { map[$0] != nil }
        if given.count > 1 { return nil }  // the section's rule said so
        if let value = map["sensor"] {
            guard let name = value.string else { return nil }
            guard let sensor = board.sensor(named: name), !SensorDrivers.powerMeters.contains(sensor.driver) else {
                let names = board.sensors.filter { !SensorDrivers.powerMeters.contains($0.driver) }.map(\.name)
                if let meter = board.sensor(named: name) {
                    value.problem(
                        "'\(name)' is a \(meter.driver) power monitor, not a sensor of this kind (a plug's relay "
                            + "reads it: meter: {sensor: \(name)})"
                            + (names.isEmpty ? "" : "; sensors: \(names.joined(separator: ", "))"))
                    return nil
                }
                value.problem("the board '\(board.name)' has no sensor '\(name)'; "
                              + (names.isEmpty ? "it names no sensors (add them under i2c.buses[].devices)"
                                 : "its sensors are \(names.joined(separator: ", "))"))
                return nil
            }
            return .i2c(sensor)
        }
        if let name = map["iio"]?.string { return .iio(name) }
        if let name = map["hwmon"]?.string { return .hwmon(name) }
        if let w1 = map["w1"], let id = w1.string {
            if id == "only" { return .oneWire(nil) }
            guard Self.isOneWireID(id) else {
                w1.problem("'\(id)' is not a 1-Wire id (family-serial in hex, e.g. 28-0316a2791aff); "
                           + "or 'only' for the one thermometer on the bus")
                return nil
            }
            return .oneWire(id)
        }
        if given.isEmpty {
            let names = board.sensors.filter { !SensorDrivers.powerMeters.contains($0.driver) }.map(\.name)
            map.owner.problem(
                "missing 'sensor' (the board's sensor"
                    + (names.isEmpty ? "" : ", e.g. one of \(names.joined(separator: ", "))")
                    + "; or 'iio: <device name>' or 'hwmon: <name>'"
                    + (context.typeName == "TemperatureSensor" ? ", or 'w1: <id>' / 'w1: only' for a DS18B20" : "")
                    + ")")
        }
        return nil
    }

    /// `28-0316a2791aff`: a two-digit family, a dash, twelve hex digits (the kernel's w1 device names).
    static func isOneWireID(_ id: String) -> Bool {
        let parts = id.split(separator: "-", omittingEmptySubsequences: false)
        let hex = { (s: Substring) in s.allSatisfy { $0.isHexDigit && ($0.isNumber || $0.isLowercase) } }
        return parts.count == 2 && parts[0].count == 2 && parts[1].count == 12 && hex(parts[0]) && hex(parts[1])
    }

    static func milliseconds(_ d: Duration) -> Int64 {
        let (seconds, attoseconds) = d.components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
