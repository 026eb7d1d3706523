public import HearthConfig

/// The keys of a board file, from which `Board.read` reads and the board JSON Schema is written.
extension Board {
    public enum Keys {
        public static let root = ConfigSection([
            ConfigKey("name", .text, required: true, "the board's name, e.g. rpi4"),
            ConfigKey("description", .text, "what the board is, for people"),
            ConfigKey("arch", .text, "the CPU architecture, e.g. aarch64 (informational)"),
            ConfigKey("simulated", .bool,
                      "true: the hardware lives in hearthd's memory (boards/sim.yaml); default false"),
            ConfigKey("seed", .int(0...Int.max, unit: ""),
                      "a simulated board's random seed, so its sensors drift repeatably"),
            ConfigKey("gpio", .nullable(.section(gpio)), "the GPIO chips and the lines named on them"),
            ConfigKey("i2c", .nullable(.section(i2c)), "the I2C buses and the sensors on them"),
            ConfigKey("pwm", .nullable(.section(pwm)), "the sysfs PWM chips and the channels named on them"),
            ConfigKey("w1", .nullable(.section(w1)), "the 1-Wire bus (w1-gpio) for DS18B20 thermometers"),
        ], help: "A Hearth board description: the pins, PWM channels and sensors a hub configuration names.")

        static let gpio = ConfigSection([
            ConfigKey("chips", .list(.section(gpioChip)), "the GPIO chips, found by label")
        ])

        static let gpioChip = ConfigSection([
            ConfigKey("label", .text, required: true, "the chip's kernel label, e.g. pinctrl-bcm2711"),
            ConfigKey("lines", .int(1...1024, unit: ""), required: true, "how many lines the chip has"),
            ConfigKey("named", .list(.section(namedLine)), "the lines configurations refer to by name"),
        ])

        static let namedLine = ConfigSection([
            ConfigKey("offset", .int(0...1023, unit: ""), required: true, "the line's offset on the chip"),
            ConfigKey("name", .text, required: true, "the name configurations use for this line"),
            ConfigKey("direction", .choice(["input", "output"]), "what the wiring expects; a binding must agree"),
            ConfigKey("use", .text, "a free-form hint, e.g. relay or wall-switch"),
        ])

        static let i2c = ConfigSection([ConfigKey("buses", .list(.section(i2cBus)), "the I2C buses")])

        static let i2cBus = ConfigSection([
            ConfigKey("bus", .int(0...255, unit: ""), required: true, "the I2C bus number (i2c-N)"),
            ConfigKey("devices", .list(.section(i2cDevice)), "the sensors on this bus"),
        ])

        static let i2cDevice = ConfigSection([
            ConfigKey("name", .text, required: true, "the name configurations use for this sensor"),
            ConfigKey("driver", .choice(SensorDrivers.known), required: true, "the kernel driver, e.g. si7020"),
            ConfigKey("address", .int(0x03...0x77, unit: ""), required: true, "the 7-bit I2C address, e.g. 0x40"),
            ConfigKey("registers", .nullable(.dictionary(.int(0...0xffff, unit: ""))),
                      "register words by register number (0x00…0xff): a simulated sensor's first readings"),
        ])

        static let w1 = ConfigSection([
            ConfigKey(
                "gpio", .int(0...1023, unit: ""), "the GPIO line the bus's data wire is on (the Pi's default: 4)"),
            ConfigKey("overlay", .text, "what enables the bus, e.g. dtoverlay=w1-gpio (informational)"),
            ConfigKey("devices", .list(.section(w1Device)),
                      "thermometers on the bus: a simulated board's (the ids a configuration's w1: may name)"),
        ])

        static let w1Device = ConfigSection([
            ConfigKey("id", .textMatching("^[0-9a-f]{2}-[0-9a-f]{12}$", hint: "family-serial in lower-case hex, e.g. "
                + "28-0316a2791aff"),
                      required: true, "the thermometer's 1-Wire id, e.g. 28-0316a2791aff"),
            ConfigKey("temperature", .number(-55...125, unit: " °C"),
                      "a simulated thermometer's first reading; default 21"),
        ])

        static let pwm = ConfigSection([ConfigKey("chips", .list(.section(pwmChip)), "the sysfs PWM chips")])

        static let pwmChip = ConfigSection([
            ConfigKey("chip", .int(0...255, unit: ""), required: true, "the sysfs PWM chip number (pwmchipN)"),
            ConfigKey("channels", .list(.section(pwmChannel)), "the channels configurations refer to by name"),
        ])

        static let pwmChannel = ConfigSection([
            ConfigKey("channel", .int(0...255, unit: ""), required: true, "the channel number on the chip"),
            ConfigKey("name", .text, required: true, "the name configurations use for this channel"),
            ConfigKey("use", .text, "a free-form hint of what suits the channel, e.g. dimmer, cct-warm or cct-cold"),
        ])
    }
}
