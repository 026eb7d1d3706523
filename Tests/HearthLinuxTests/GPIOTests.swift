import CGPIOD
import Glibc
import HearthTestKit
import Testing
@testable import HearthLinux

/// What can be tested without GPIO in the kernel: failures to find chips, and the pure mappings to libgpiod.
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

    @Test func requestFlagsMapToLibgpiodConstants() {
        #expect(gpioRequestFlags(activeLow: false) == 0)
        #expect(gpioRequestFlags(activeLow: true) == Int32(GPIOD_LINE_REQUEST_FLAG_ACTIVE_LOW))
        #expect(gpioRequestFlags(activeLow: false, drive: .openDrain) == Int32(GPIOD_LINE_REQUEST_FLAG_OPEN_DRAIN))
        #expect(gpioRequestFlags(activeLow: false, drive: .openSource) == Int32(GPIOD_LINE_REQUEST_FLAG_OPEN_SOURCE))
        #expect(gpioRequestFlags(activeLow: false, bias: .pullUp) == Int32(GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_UP))
        #expect(gpioRequestFlags(activeLow: false, bias: .pullDown) == Int32(GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_DOWN))
        #expect(gpioRequestFlags(activeLow: false, bias: .disabled) == Int32(GPIOD_LINE_REQUEST_FLAG_BIAS_DISABLE))
        #expect(gpioRequestFlags(activeLow: false, bias: .asIs) == 0)
        #expect(gpioRequestFlags(activeLow: true, drive: .openDrain, bias: .pullUp)
            == Int32(GPIOD_LINE_REQUEST_FLAG_ACTIVE_LOW) | Int32(GPIOD_LINE_REQUEST_FLAG_OPEN_DRAIN)
            | Int32(GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_UP))
        // The documented v1 bit values, so a header change cannot slip by unnoticed.
        #expect(GPIODrive.openDrain.requestFlags == 1 << 0)
        #expect(GPIODrive.openSource.requestFlags == 1 << 1)
        #expect(gpioRequestFlags(activeLow: true) == 1 << 2)
        #expect(GPIOBias.disabled.requestFlags == 1 << 3)
        #expect(GPIOBias.pullDown.requestFlags == 1 << 4)
        #expect(GPIOBias.pullUp.requestFlags == 1 << 5)
    }

    @Test func lineInfoBiasMapsFromLibgpiod() {
        #expect(GPIOBias(lineInfoBias: Int32(GPIOD_LINE_BIAS_AS_IS)) == .asIs)
        #expect(GPIOBias(lineInfoBias: Int32(GPIOD_LINE_BIAS_DISABLE)) == .disabled)
        #expect(GPIOBias(lineInfoBias: Int32(GPIOD_LINE_BIAS_PULL_UP)) == .pullUp)
        #expect(GPIOBias(lineInfoBias: Int32(GPIOD_LINE_BIAS_PULL_DOWN)) == .pullDown)
        #expect(GPIOBias(lineInfoBias: 42) == .asIs)
    }

    @Test func edgeEventsMapFromLibgpiod() {
        let rising = gpiod_line_event(ts: timespec(tv_sec: 12, tv_nsec: 345), event_type: Int32(GPIOD_LINE_EVENT_RISING_EDGE))
        let falling = gpiod_line_event(ts: timespec(tv_sec: 0, tv_nsec: 7), event_type: Int32(GPIOD_LINE_EVENT_FALLING_EDGE))
        #expect(GPIOEdgeEvent(rising) == GPIOEdgeEvent(edge: .rising, timestampNanoseconds: 12_000_000_345))
        #expect(GPIOEdgeEvent(falling) == GPIOEdgeEvent(edge: .falling, timestampNanoseconds: 7))
        #expect(GPIOEdgeEvent(gpiod_line_event(ts: timespec(), event_type: 99)) == nil)
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

/// The wait/read path of GPIOInputLine against a pipe that carries what the v1 kernel ABI writes to a line-event fd
/// (`struct gpioevent_data`: u64 timestamp, u32 id, 4 bytes padding), so it runs without GPIO support.
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
        func send(timestamp: UInt64, id: UInt32) {
            var record = [UInt8](repeating: 0, count: 16)
            withUnsafeBytes(of: timestamp.littleEndian) { record.replaceSubrange(0..<8, with: $0) }
            withUnsafeBytes(of: id.littleEndian) { record.replaceSubrange(8..<12, with: $0) }
            precondition(record.withUnsafeBytes { Glibc.write(write, $0.baseAddress, 16) } == 16)
        }
        func closeWriter() { close(write); write = -1 }
        deinit { close(read); if write >= 0 { close(write) } }
    }

    let events = Pipe()
    let interrupt = Pipe()
    let context = LinuxIOError.Context.gpioLine(chip: "pipe", offset: 0)

    func wait(_ timeout: Duration?) throws -> [GPIOEdgeEvent] {
        try GPIOInputLine.wait(eventDescriptor: events.read, interruptDescriptor: interrupt.read,
                               timeout: timeout, context: context)
    }

    @Test func returnsNothingWhenNothingIsQueued() throws {
        #expect(try wait(.zero).isEmpty)
    }

    @Test func readsQueuedEdgesWithTheirKernelTimestamps() throws {
        events.send(timestamp: 1_000, id: 0x01)  // GPIOEVENT_EVENT_RISING_EDGE
        events.send(timestamp: 2_000, id: 0x02)  // GPIOEVENT_EVENT_FALLING_EDGE
        #expect(try wait(nil) == [GPIOEdgeEvent(edge: .rising, timestampNanoseconds: 1_000),
                                  GPIOEdgeEvent(edge: .falling, timestampNanoseconds: 2_000)])
        #expect(try wait(.zero).isEmpty)
    }

    @Test func interruptWinsAndStaysSignalled() throws {
        interrupt.send(timestamp: 0, id: 0)
        #expect(try wait(nil).isEmpty)
        #expect(try wait(nil).isEmpty)
    }

    @Test func aVanishedEventSourceIsENODEV() throws {
        events.closeWriter()
        let error = #expect(throws: LinuxIOError.self) { try wait(nil) }
        #expect(error?.errno == .noSuchDevice)
    }
}
