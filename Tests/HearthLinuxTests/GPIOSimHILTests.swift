import Glibc
import Testing
@testable import HearthLinux

// Real GPIO and IIO, run only inside the HIL VM (scripts/hil, boards/qemu-gpio-sim.yaml), where the guest's board
// setup has created gpio-sim chips and an si7020 on i2c-stub and recorded them in /run/hil/:
//   gpio-lines:  NAME CHIP_LABEL GPIOCHIP OFFSET DIRECTION USE
//   gpio-chips:  CHIP_LABEL GPIOCHIP DEVICE
//   i2c-devices: NAME DRIVER BUS ADDRESS IIO_DEVICE WORD_ORDER
// gpio-sim plays the outside world through /sys/bus/gpio/devices/<gpiochip>/sim_gpio<offset>/{value,pull}.
// Everywhere else (no /run/hil/gpio-lines) these tests are skipped. To run them in the VM, carry the test binary in
// (scripts/hil brings its shared libraries, libgpiod included) and filter on this suite, e.g.:
//   scripts/hil --add .build-linux/x86_64-unknown-linux-gnu/debug/HearthPackageTests.xctest:/hil/ -- \
//     /hil/HearthPackageTests.xctest --testing-library swift-testing --filter GPIOSimHILTests

/// One line of /run/hil/gpio-lines.
struct HILLine: Sendable {
    var name: String
    var chipLabel: String
    var chipName: String
    var offset: Int
    var direction: String

    /// The gpio-sim attribute directory of this line's simulated pin.
    var simulator: String { "/sys/bus/gpio/devices/\(chipName)/sim_gpio\(offset)" }

    static func all() -> [HILLine] {
        records("/run/hil/gpio-lines").compactMap { fields in
            guard fields.count >= 5, let offset = Int(fields[3]) else { return nil }
            return HILLine(name: fields[0], chipLabel: fields[1], chipName: fields[2], offset: offset,
                           direction: fields[4])
        }
    }

    static func named(_ name: String) throws -> HILLine {
        try #require(all().first { $0.name == name }, "board has no line \(name)")
    }

    static func records(_ path: String) -> [[String]] {
        guard let text = try? FileIO.read(path) else { return [] }
        return text.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
    }

    /// Sets the simulated outside world's pull on an input.
    func pull(_ direction: String) throws {
        try FileIO.write(direction, to: simulator + "/pull")
    }

    /// The electrical level the simulated pin sees.
    func simulatedValue() throws -> String {
        try FileIO.readTrimmed(simulator + "/value")
    }
}

let hilAvailable = FileIO.exists("/run/hil/gpio-lines")

@Suite(
    "GPIO and IIO on the HIL board", .enabled(if: hilAvailable, "needs the HIL VM (scripts/hil)"),
    .timeLimit(.minutes(2)))
struct GPIOSimHILTests {
    static let consumer = "hearthd-hil"

    @Test func chipOpensByLabelNameAndPathAlike() throws {
        let relay = try HILLine.named("relay-1")
        let byLabel = try GPIOChip(label: relay.chipLabel)
        let byName = try GPIOChip(name: relay.chipName)
        let byPath = try GPIOChip(path: "/dev/\(relay.chipName)")
        for chip in [byLabel, byName, byPath] {
            #expect(chip.name == relay.chipName)
            #expect(chip.label == relay.chipLabel)
            #expect(chip.lineCount == 16)
        }
        let labels = try GPIOChip.availableChips().map(\.label)
        #expect(labels.contains("hearth-sim-main") && labels.contains("hearth-sim-aux"))
    }

    @Test func linesAreFoundByName() throws {
        // Lines of both chips, so that an empty or half-read /run/hil/gpio-lines cannot pass unnoticed.
        let lines = HILLine.all()
        #expect(Set(lines.map(\.chipLabel)) == ["hearth-sim-main", "hearth-sim-aux"], "\(lines)")
        #expect(lines.contains { $0.name == "relay-1" } && lines.contains { $0.name == "aux-button" }, "\(lines)")
        for line in lines {
            #expect(try GPIOChip(label: line.chipLabel).lineOffset(named: line.name) == line.offset)
        }
        let error = #expect(throws: LinuxIOError.self) {
            try GPIOChip(label: "hearth-sim-main").lineOffset(named: "no-such-line")
        }
        #expect(error?.errno == .noSuchFileOrDirectory)
    }

    @Test func outputStartsAtItsInitialValueAndFollowsSet() throws {
        let relay = try HILLine.named("relay-1")
        let chip = try GPIOChip(label: relay.chipLabel)
        let line = try GPIOOutputLine(chip: chip, offset: relay.offset, initialValue: true, consumer: Self.consumer)
        #expect(try relay.simulatedValue() == "1")
        let info = try chip.lineInfo(offset: relay.offset)
        #expect(info.consumer == Self.consumer && info.isUsed && info.direction == .output && !info.isActiveLow)
        try line.set(false)
        #expect(try relay.simulatedValue() == "0")
        #expect(try line.value() == false)
        try line.set(true)
        #expect(try relay.simulatedValue() == "1")
        try line.release(leaving: false)
        #expect(try relay.simulatedValue() == "0")
        #expect(try chip.lineInfo(offset: relay.offset).isUsed == false)
    }

    @Test func activeLowOutputInvertsTheWire() throws {
        let relay = try HILLine.named("relay-2")
        let chip = try GPIOChip(label: relay.chipLabel)
        let line = try GPIOOutputLine(chip: chip, offset: relay.offset, initialValue: true, activeLow: true,
                                      consumer: Self.consumer)
        #expect(try relay.simulatedValue() == "0")
        #expect(try chip.lineInfo(offset: relay.offset).isActiveLow)
        try line.set(false)
        #expect(try relay.simulatedValue() == "1")
    }

    @Test func driveIsReportedBack() throws {
        let led = try HILLine.named("status-led")
        let chip = try GPIOChip(label: led.chipLabel)
        for drive in GPIODrive.allCases {
            let line = try GPIOOutputLine(chip: chip, offset: led.offset, initialValue: false, drive: drive,
                                          consumer: Self.consumer)
            #expect(try chip.lineInfo(offset: led.offset).drive == drive)
            try line.release(leaving: false)
        }
    }

    @Test func busyLineNamesItsHolder() throws {
        let relay = try HILLine.named("relay-3")
        let holder = try GPIOOutputLine(chip: GPIOChip(label: relay.chipLabel), offset: relay.offset,
                                        initialValue: false, consumer: "hearth-holder")
        let error = #expect(throws: LinuxIOError.self) {
            try GPIOOutputLine(chip: GPIOChip(label: relay.chipLabel), offset: relay.offset, initialValue: false)
        }
        #expect(error?.errno == .busy)
        #expect(error?.message == "GPIO line \(relay.offset) on \(relay.chipName) is busy: another program "
            + "('hearth-holder') holds it")
        let input = #expect(throws: LinuxIOError.self) {
            try GPIOInputLine(chip: GPIOChip(label: relay.chipLabel), offset: relay.offset)
        }
        #expect(input?.errno == .busy)
        try holder.release(leaving: false)
    }

    @Test func offsetBeyondTheChipIsEINVAL() throws {
        let chip = try GPIOChip(label: "hearth-sim-main")
        let error = #expect(throws: LinuxIOError.self) {
            try GPIOOutputLine(chip: chip, offset: chip.lineCount, initialValue: false)
        }
        #expect(error?.errno == .invalidArgument)
    }

    @Test func inputReportsEdgesWithKernelTimestamps() throws {
        let button = try HILLine.named("wall-switch-1")
        let line = try GPIOInputLine(chip: GPIOChip(label: button.chipLabel), offset: button.offset, bias: .pullDown,
                                     consumer: Self.consumer)
        #expect(try line.value() == false)
        #expect(try line.waitForEvents(timeout: .zero).isEmpty)

        try button.pull("pull-up")
        let rising = try line.waitForEvents(timeout: .seconds(10))
        #expect(rising.map(\.edge) == [.rising])
        #expect(try line.value() == true)

        try button.pull("pull-down")
        let falling = try line.waitForEvents(timeout: .seconds(10))
        #expect(falling.map(\.edge) == [.falling])
        if let first = rising.first, let second = falling.first {
            #expect(first.timestampNanoseconds > 0)
            #expect(first.timestampNanoseconds <= second.timestampNanoseconds)
            #expect(second.timestampNanoseconds <= Syscall.monotonicNanoseconds())
        }
        line.release()
    }

    @Test func activeLowInputInvertsValuesAndEdges() throws {
        let button = try HILLine.named("wall-switch-2")
        let line = try GPIOInputLine(chip: GPIOChip(label: button.chipLabel), offset: button.offset, bias: .pullUp,
                                     activeLow: true, consumer: Self.consumer)
        #expect(try line.value() == false)
        try button.pull("pull-down")  // the switch closes to ground
        #expect(try line.waitForEvents(timeout: .seconds(10)).map(\.edge) == [.rising])
        #expect(try line.value() == true)
        #expect(try GPIOChip(label: button.chipLabel).lineInfo(offset: button.offset).bias == .pullUp)
    }

    @Test func interruptEndsAnIndefiniteWait() async throws {
        let contact = try HILLine.named("door-contact")
        let line = try GPIOInputLine(chip: GPIOChip(label: contact.chipLabel), offset: contact.offset,
                                     consumer: Self.consumer)
        let waiter = Task.detached { try line.waitForEvents(timeout: nil) }
        line.interrupt()
        #expect(try await waiter.value.isEmpty)
        #expect(line.isInterrupted)
        #expect(try line.waitForEvents(timeout: nil).isEmpty)
    }

    @Test func releaseDuringAWaitEndsItAndFreesTheLine() async throws {
        let motion = try HILLine.named("motion-sensor")
        let chip = try GPIOChip(label: motion.chipLabel)
        let line = try GPIOInputLine(chip: chip, offset: motion.offset, consumer: Self.consumer)
        let waiter = Task.detached { try line.waitForEvents(timeout: nil) }
        line.release()
        #expect(try await waiter.value.isEmpty)
        #expect(try chip.lineInfo(offset: motion.offset).isUsed == false)
    }

    /// A Pi 5's header is `pinctrl-rp1`, `gpiochip4` before Linux 6.6 and `gpiochip0` since: a chip made here with
    /// that label (54 lines, `GPIO17` named) lands after the board's chips, and is found by label and used, with the
    /// libgpiod this bundle was built against.
    @Test func aPi5HeaderIsFoundByLabelWhateverItsNumber() throws {
        let rp1 = try SimulatedChip(label: "pinctrl-rp1", lines: 54, names: [17: "GPIO17"])
        let chip = try GPIOChip(label: "pinctrl-rp1")
        #expect(chip.name == rp1.chipName)
        #expect(chip.name != "gpiochip0")
        #expect(chip.lineCount == 54)
        #expect(try GPIOChip.availableChips().contains { $0.label == "pinctrl-rp1" && $0.name == rp1.chipName })
        let offset = try chip.lineOffset(named: "GPIO17")
        #expect(offset == 17)
        let line = try GPIOOutputLine(chip: chip, offset: offset, initialValue: true, consumer: Self.consumer)
        #expect(try FileIO.readTrimmed("/sys/bus/gpio/devices/\(rp1.chipName)/sim_gpio17/value") == "1")
        #expect(try chip.lineInfo(offset: offset).name == "GPIO17")
        try line.release(leaving: false)
    }

    @Test func si7020ReadsThroughIIO() throws {
        let record = try #require(HILLine.records("/run/hil/i2c-devices").first { $0.count >= 5 && $0[1] == "si7020" })
        let device = try IIODevice(path: "/sys/bus/iio/devices/\(record[4])")
        let name = try #require(device.name)
        #expect(try IIODevice(named: name).path == device.path)
        // Board registers: 0x7c80 → 54.7 %RH, 0x6680 → 23.5 °C.
        let humidity = try device.read(.humidityRelative)
        let temperature = try device.read(.temperature)
        #expect((54_000...55_500).contains(humidity), "humidity \(humidity) m%")
        #expect((23_000...24_000).contains(temperature), "temperature \(temperature) m°C")
    }
}

/// A gpio-sim chip made through configfs for one test and removed after it (the board's own chips come from the VM's
/// setup; this one shows that Hearth does not depend on chip numbers).
final class SimulatedChip {
    let directory: String
    let bank: String
    let lineDirectories: [String]
    /// The kernel's name for it, e.g. `gpiochip2`.
    let chipName: String

    init(label: String, lines: Int, names: [Int: String]) throws {
        let directory = "/sys/kernel/config/gpio-sim/\(label)-\(getpid())"
        let bank = directory + "/gpio-bank0"
        let lineDirectories = names.keys.sorted().map { "\(bank)/line\($0)" }
        (self.directory, self.bank, self.lineDirectories) = (directory, bank, lineDirectories)
        for path in [directory, bank] + lineDirectories {
            try #require(mkdir(path, 0o755) == 0, "mkdir \(path): errno \(errno)")
        }
        try FileIO.write(label, to: bank + "/label")
        try FileIO.write(String(lines), to: bank + "/num_lines")
        for (offset, name) in names { try FileIO.write(name, to: "\(bank)/line\(offset)/name") }
        try FileIO.write("1", to: directory + "/live")
        chipName = try FileIO.readTrimmed(bank + "/chip_name")
    }

    deinit {
        try? FileIO.write("0", to: directory + "/live")
        for path in (lineDirectories + [bank, directory]) { rmdir(path) }
    }
}
