import CGPIODShim
import Glibc
import HearthTestKit
import Testing
@testable import HearthLinux

/// What can be tested without GPIO in the kernel: failures to find chips, and the pure mappings to CGPIODShim.
/// The real line tests are in GPIOSimTests.swift and run only inside the gpio-sim VM.
@Suite("GPIO without hardware")
struct GPIOTests {
    @Test func missingChipByPathIsENOENTNamingThePath() {
        let error = #expect(throws: LinuxIOError.self) { try GPIOChip(path: "/dev/hearth-no-such-gpiochip") }
        #expect(error?.errno == .noSuchFileOrDirectory)
        #expect(error?.operation == "gpiod_chip_open")
        #expect(error?.context == .gpioChip("/dev/hearth-no-such-gpiochip"))
        #expect(error?.message.hasPrefix("no GPIO chip at /dev/hearth-no-such-gpiochip: ") == true)
    }

    @Test func missingChipByNameIsENOENTNamingTheDevicePath() {
        let error = #expect(throws: LinuxIOError.self) { try GPIOChip(name: "gpiochip999") }
        #expect(error?.errno == .noSuchFileOrDirectory)
        #expect(error?.context == .gpioChip("gpiochip999"))
        #expect(error?.message.contains("/dev/gpiochip999") == true)
    }

    @Test func missingChipByLabelIsENOENTAndSaysNothingWasFound() throws {
        let tree = try SysfsTree()
        try tree.directory("/dev")
        let error = #expect(throws: LinuxIOError.self) {
            try GPIOChip(label: "pinctrl-rp1", deviceDirectory: tree.path("/dev"))
        }
        #expect(error?.errno == .noSuchFileOrDirectory)
        #expect(error?.context == .gpioChip("pinctrl-rp1"))
        #expect(error?.message.contains("no GPIO chip labelled 'pinctrl-rp1'") == true)
        #expect(error?.message.contains("no gpiochip devices") == true)
        #expect(try GPIOChip.availableChips(deviceDirectory: tree.path("/dev")).isEmpty)
    }

    @Test func missingChipOnTheRealSystemByLabel() {
        let error = #expect(throws: LinuxIOError.self) { try GPIOChip(label: "hearth-no-such-label") }
        #expect(error?.errno == .noSuchFileOrDirectory)
    }

    @Test func labelScanReportsChipsItCouldNotOpen() throws {
        let tree = try SysfsTree()
        try tree.file("/dev/gpiochip0", "")  // a regular file, not a character device
        let error = #expect(throws: LinuxIOError.self) {
            try GPIOChip(label: "pinctrl-rp1", deviceDirectory: tree.path("/dev"))
        }
        #expect(error?.errno == .noSuchFileOrDirectory)
        #expect(error?.message.contains("gpiochip0 (cannot open: ENOTTY") == true)
    }

    @Test func somethingThatIsNotAGPIOChipIsENOTTY() throws {
        let tree = try SysfsTree()
        try tree.file("/dev/gpiochip0", "")
        let error = #expect(throws: LinuxIOError.self) { try GPIOChip(path: tree.path("/dev/gpiochip0")) }
        #expect(error?.errno == .notATypewriter)
        #expect(error?.message.contains("is not a GPIO character device") == true)
    }

    /// The documented bit values (hearth_gpio.h: libgpiod v1's request flags, which the v2 binding translates), so a
    /// changed constant cannot slip by.
    @Test func requestFlagsMapToLibgpiodConstants() {
        #expect(gpioRequestFlags(activeLow: false) == 0)
        #expect(gpioRequestFlags(activeLow: true) == 1 << 2)
        #expect(gpioRequestFlags(activeLow: false, drive: .openDrain) == 1 << 0)
        #expect(gpioRequestFlags(activeLow: false, drive: .openSource) == 1 << 1)
        #expect(gpioRequestFlags(activeLow: false, bias: .disabled) == 1 << 3)
        #expect(gpioRequestFlags(activeLow: false, bias: .pullDown) == 1 << 4)
        #expect(gpioRequestFlags(activeLow: false, bias: .pullUp) == 1 << 5)
        #expect(gpioRequestFlags(activeLow: false, bias: .asIs) == 0)
        #expect(gpioRequestFlags(activeLow: true, drive: .openDrain, bias: .pullUp) == 0b10_0101)
        #expect(gpioRequestFlags(activeLow: true, drive: .openSource, bias: .pullDown) == 0b01_0110)
    }

    @Test func lineInfoFlagsMapBack() {
        for bias in GPIOBias.allCases {
            #expect(GPIOBias(flags: gpioRequestFlags(activeLow: true, drive: .openDrain, bias: bias)) == bias)
        }
        for drive in GPIODrive.allCases {
            #expect(GPIODrive(flags: gpioRequestFlags(activeLow: true, drive: drive, bias: .pullUp)) == drive)
        }
        #expect(GPIOBias(flags: 0) == .asIs)
        #expect(GPIODrive(flags: 0) == .pushPull)
    }

    @Test func lineInfoConvertsNamesAndFlags() {
        var info = hearth_gpio_line_info()
        withUnsafeMutableBytes(of: &info.name) { $0.copyBytes(from: "GPIO17".utf8) }
        info.flags = 1 << 2 | 1 << 1 | 1 << 3
        info.used = true
        info.output = true
        let converted = GPIOLineInfo(offset: 17, info)
        #expect(converted == GPIOLineInfo(offset: 17, name: "GPIO17", consumer: nil, isUsed: true, direction: .output,
                                          isActiveLow: true, drive: .openSource, bias: .disabled))
        // A field filled to the brim without a NUL still ends at the field.
        withUnsafeMutableBytes(of: &info.consumer) {
            $0.copyBytes(from: repeatElement(UInt8(ascii: "x"), count: $0.count))
        }
        #expect(GPIOLineInfo(offset: 0, info).consumer == String(repeating: "x", count: Int(HEARTH_GPIO_NAME_SIZE)))
    }

    @Test func edgeEventsMapFromTheShim() {
        let rising = hearth_gpio_edge_event(timestamp_ns: 12_000_000_345, edge: 1)
        let falling = hearth_gpio_edge_event(timestamp_ns: 7, edge: 2)
        #expect(GPIOEdgeEvent(rising) == GPIOEdgeEvent(edge: .rising, timestampNanoseconds: 12_000_000_345))
        #expect(GPIOEdgeEvent(falling) == GPIOEdgeEvent(edge: .falling, timestampNanoseconds: 7))
        #expect(GPIOEdgeEvent(hearth_gpio_edge_event(timestamp_ns: 0, edge: 99)) == nil)
    }

    /// `HEARTH_EXPECT_LIBGPIOD_API=2` (scripts/test-gpiod2) pins which binding a build must have picked.
    @Test func theAPIVersionIsTheOneExpected() {
        #expect([1, 2].contains(GPIOChip.libgpiodAPIVersion))
        if let expected = getenv("HEARTH_EXPECT_LIBGPIOD_API").map({ String(cString: $0) }) {
            #expect(String(GPIOChip.libgpiodAPIVersion) == expected)
        }
    }

    @Test func pollTimeoutRoundsUpAndNeverEndsEarly() {
        #expect(GPIOInputLine.pollMilliseconds(until: nil, now: 0) == -1)
        #expect(GPIOInputLine.pollMilliseconds(until: 5, now: 10) == 0)
        #expect(GPIOInputLine.pollMilliseconds(until: 10, now: 10) == 0)
        #expect(GPIOInputLine.pollMilliseconds(until: 11, now: 10) == 1)
        #expect(GPIOInputLine.pollMilliseconds(until: 1_000_000, now: 0) == 1)
        #expect(GPIOInputLine.pollMilliseconds(until: 1_000_001, now: 0) == 2)
        #expect(GPIOInputLine.pollMilliseconds(until: .max, now: 0) == .max)
        #expect(GPIOInputLine.nanoseconds(.milliseconds(1500)) == 1_500_000_000)
        #expect(GPIOInputLine.nanoseconds(.seconds(Int64.max)) == .max)
    }
}

/// The wait path of GPIOInputLine against pipes standing in for the line's event descriptor and the interrupt
/// eventfd, so it runs without GPIO support. (Reading and decoding real edge events needs a real line request:
/// GPIOSimHILTests, in the VM, for libgpiod 1 and 2.)
@Suite("GPIO edge wait over a pipe")
struct GPIOEdgeWaitTests {
    final class Pipe {
        let read: Int32
        var write: Int32
        init() {
            var fds: [Int32] = [-1, -1]
            precondition(pipe(&fds) == 0)
            (read, write) = (fds[0], fds[1])
        }
        func send() {
            let byte: [UInt8] = [1]
            precondition(byte.withUnsafeBytes { Glibc.write(write, $0.baseAddress, 1) } == 1)
        }
        func closeWriter() { close(write); write = -1 }
        deinit { close(read); if write >= 0 { close(write) } }
    }

    let events = Pipe()
    let interrupt = Pipe()
    let context = LinuxIOError.Context.gpioLine(chip: "pipe", offset: 0)

    func wait(_ timeout: Duration?) throws -> Bool {
        try GPIOInputLine.waitForReadable(eventDescriptor: events.read, interruptDescriptor: interrupt.read,
                                          timeout: timeout, context: context)
    }

    @Test func nothingQueuedIsNotReadable() throws {
        #expect(try wait(.zero) == false)
        #expect(try wait(.milliseconds(1)) == false)
    }

    @Test func queuedEventsAreReadable() throws {
        events.send()
        #expect(try wait(nil))
        #expect(try wait(.zero))
    }

    @Test func interruptWinsAndStaysSignalled() throws {
        events.send()
        interrupt.send()
        #expect(try wait(nil) == false)
        #expect(try wait(nil) == false)
    }

    @Test func aVanishedEventSourceIsENODEV() throws {
        events.closeWriter()
        let error = #expect(throws: LinuxIOError.self) { try wait(nil) }
        #expect(error?.errno == .noSuchDevice)
    }
}
