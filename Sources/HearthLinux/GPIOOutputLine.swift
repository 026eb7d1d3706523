import CGPIODShim
import Glibc
import HearthSync

/// A GPIO line this process drives: a relay, a contactor, an LED.
///
/// The line is requested with its initial value in the same ioctl that makes it an output, so a relay never clicks
/// at boot between "output" and "value". Values are logical: with `activeLow`, `set(true)` drives the wire low, which
/// is how most opto-isolated relay boards are energized.
///
/// Deinit releases the line without choosing its level; call ``release(leaving:)`` on an orderly shutdown.
public final class GPIOOutputLine: Sendable {
    public let chip: GPIOChip
    public let offset: Int
    /// The label other programs see (`gpioinfo`) while this process holds the line.
    public let consumer: String

    /// `nil` once released.
    private let state: Locked<GPIORequestPointer?>

    /// Requests `offset` on `chip` as an output.
    ///
    /// - Parameters:
    ///   - initialValue: the logical value from the first instant the line is an output.
    ///   - activeLow: logical `true` is electrical low.
    ///   - drive: push-pull, open-drain or open-source.
    ///   - consumer: at most 31 bytes (the kernel's limit), shown by `gpioinfo` and in other programs' busy errors.
    /// - Throws: ``LinuxIOError`` with `EBUSY` naming the current holder if another program has the line; `EINVAL`
    ///   for an offset the chip does not have.
    public init(chip: GPIOChip, offset: Int, initialValue: Bool, activeLow: Bool = false,
                drive: GPIODrive = .pushPull, consumer: String = "hearthd") throws(LinuxIOError) {
        precondition(!consumer.isEmpty && consumer.utf8.count <= 31, "a GPIO consumer label is 1...31 bytes")
        let flags = gpioRequestFlags(activeLow: activeLow, drive: drive)
        let line = try chip.request(offset: offset) { handle in
            hearth_gpio_request_output(handle, UInt32(offset), consumer, flags, initialValue ? 1 : 0)
        }
        self.chip = chip
        self.offset = offset
        self.consumer = consumer
        state = Locked(line)
    }

    deinit {
        let chip = self.chip
        state.withLock { line in
            guard let held = line else { return }
            chip.release(held)
        }
    }

    /// Drives the line to the logical `value`.
    public func set(_ value: Bool) throws(LinuxIOError) {
        try withLine("gpiod_line_set_value") { (line) throws(LinuxIOError) in
            _ = try Syscall.check("gpiod_line_set_value", .gpioLine(chip: chip.name, offset: offset)) {
                hearth_gpio_set_value(line, value ? 1 : 0)
            }
        }
    }

    /// The logical value the line is driving, read back from the kernel.
    public func value() throws(LinuxIOError) -> Bool {
        try withLine("gpiod_line_get_value") { (line) throws(LinuxIOError) -> Bool in
            try Syscall.check("gpiod_line_get_value", .gpioLine(chip: chip.name, offset: offset)) {
                hearth_gpio_get_value(line)
            } == 1
        }
    }

    /// Drives `safeValue`, then gives the line back to the kernel.
    ///
    /// The kernel does not promise what a released line does, but the controllers Hearth targets keep driving the
    /// last value, so this is how a relay is left de-energized on shutdown. The line is released even if setting the
    /// value fails; the failure is still thrown.
    public func release(leaving safeValue: Bool) throws(LinuxIOError) {
        let chip = self.chip
        let offset = self.offset
        try state.withLock { (line) throws(LinuxIOError) in
            guard let held = line else { preconditionFailure("GPIO line \(offset) on \(chip.name) released twice") }
            line = nil
            try chip.withChip { (_) throws(LinuxIOError) in
                defer { hearth_gpio_release(held.raw) }
                _ = try Syscall.check("gpiod_line_set_value", .gpioLine(chip: chip.name, offset: offset)) {
                    hearth_gpio_set_value(held.raw, safeValue ? 1 : 0)
                }
            }
        }
    }

    private func withLine<Result: Sendable>(
        _ operation: String, _ body: (OpaquePointer) throws(LinuxIOError) -> Result
    ) throws(LinuxIOError) -> Result {
        let chip = self.chip
        let offset = self.offset
        return try state.withLock { (line) throws(LinuxIOError) -> Result in
            guard let held = line else {
                preconditionFailure("\(operation) on GPIO line \(offset) of \(chip.name) after release")
            }
            return try chip.withChip { (_) throws(LinuxIOError) -> Result in try body(held.raw) }
        }
    }
}
