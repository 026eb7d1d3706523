import Glibc
import Synchronization

/// Which level the "on" part of a PWM period is.
public enum PWMPolarity: String, Sendable, Hashable, CaseIterable {
    /// Duty cycle is the high time (sysfs `normal`).
    case normal
    /// Duty cycle is the low time (sysfs `inversed`): for dimmers whose driver stage inverts.
    case inversed
}

/// Everything a PWM channel is set to.
public struct PWMSettings: Sendable, Hashable {
    public var periodNanoseconds: UInt64
    /// Must not exceed ``periodNanoseconds``.
    public var dutyCycleNanoseconds: UInt64
    public var polarity: PWMPolarity
    public var isEnabled: Bool

    public init(periodNanoseconds: UInt64, dutyCycleNanoseconds: UInt64, polarity: PWMPolarity = .normal,
                isEnabled: Bool) {
        self.periodNanoseconds = periodNanoseconds
        self.dutyCycleNanoseconds = dutyCycleNanoseconds
        self.polarity = polarity
        self.isEnabled = isEnabled
    }
}

/// One channel of a sysfs PWM chip: `/sys/class/pwm/pwmchipN/pwmM`.
///
/// The kernel re-validates the whole state on every attribute write and rejects a duty cycle longer than the
/// period, so writes are ordered to keep `duty_cycle ≤ period` true after each one; polarity can only change while
/// the channel is disabled. The kernel's attributes are the truth. The one thing the channel remembers is the period
/// it last read or wrote, so that a fade's duty writes (50 a second per dimmer) do not read `period` back before each
/// one: that read was four of a duty write's seven system calls. It is a hint, never trusted against the kernel: a
/// duty that does not fit it, or that the kernel refuses, reads the period again before anything is said.
public final class PWMChannel: Sendable {
    public let chip: Int
    public let channel: Int
    /// `…/pwmchipN`
    public let chipPath: String
    /// `…/pwmchipN/pwmM`
    public let path: String
    /// The period last read from or written to the kernel, ``unknownPeriod`` before the first or after a failure.
    private let knownPeriod = Atomic<UInt64>(PWMChannel.unknownPeriod)
    private static let unknownPeriod = UInt64.max

    /// Opens channel `channel` of `pwmchip<chip>`, exporting it if it is not yet exported.
    ///
    /// The kernel creates `pwmM/` after the write to `export` returns, and udev may still be adjusting it, so the
    /// export waits for `pwmM/period` to appear, checking up to `exportAttempts` times `exportInterval` apart.
    ///
    /// - Throws: `ENOENT` if the chip does not exist (PWM overlay not enabled), `EINVAL` for a channel beyond
    ///   `npwm`, `ETIMEDOUT` if the channel never appeared.
    public convenience init(chip: Int, channel: Int, root: SysfsRoot = .system, exportAttempts: Int = 50,
                            exportInterval: Duration = .milliseconds(10)) throws(LinuxIOError) {
        try self.init(chip: chip, channel: channel, root: root, exportAttempts: exportAttempts,
                      exportInterval: exportInterval, pause: Syscall.sleep)
    }

    /// - Parameter pause: called between checks for the exported directory; tests use it to play the kernel.
    init(chip: Int, channel: Int, root: SysfsRoot, exportAttempts: Int, exportInterval: Duration,
         pause: (Duration) -> Void) throws(LinuxIOError) {
        precondition(chip >= 0 && channel >= 0, "PWM chip and channel numbers are non-negative")
        precondition(exportAttempts > 0, "exportAttempts must be positive")
        self.chip = chip
        self.channel = channel
        chipPath = root.path("/sys/class/pwm/pwmchip\(chip)")
        path = chipPath + "/pwm\(channel)"

        guard FileIO.isDirectory(chipPath) else {
            throw LinuxIOError(operation: "stat", context: .path(chipPath), errno: .noSuchFileOrDirectory,
                               message: "no PWM chip at \(chipPath): enable the PWM overlay (e.g. dtoverlay=pwm-2chan "
                                   + "on a Raspberry Pi) and check the chip number")
        }
        let countPath = chipPath + "/npwm"
        let channelCount = try FileIO.parseInteger(FileIO.readTrimmed(countPath), from: countPath, as: Int.self)
        guard channel < channelCount else {
            throw LinuxIOError(operation: "export", context: .path(chipPath), errno: .invalidArgument,
                               message: "pwmchip\(chip) has \(channelCount) channels (0...\(channelCount - 1)); "
                                   + "there is no channel \(channel)")
        }
        if FileIO.exists(path + "/period") { return }

        do {
            try FileIO.write(String(channel), to: chipPath + "/export")
        } catch where error.errno == .busy {
            // Exported by someone else between our check and our write: as good as our own export.
        }
        for attempt in 0..<exportAttempts {
            if FileIO.exists(path + "/period") { return }
            if attempt < exportAttempts - 1 { pause(exportInterval) }
        }
        if FileIO.exists(path + "/period") { return }
        throw LinuxIOError(operation: "export", context: .path(path), errno: .timedOut,
                           message: "exported channel \(channel) of pwmchip\(chip) but \(path) did not appear "
                               + "after \(exportAttempts) checks \(exportInterval) apart")
    }

    // MARK: Reading

    public func period() throws(LinuxIOError) -> UInt64 {
        do throws(LinuxIOError) {
            let period = try readNumber("period")
            knownPeriod.store(period, ordering: .relaxed)
            return period
        } catch {
            knownPeriod.store(Self.unknownPeriod, ordering: .relaxed)
            throw error
        }
    }

    public func dutyCycle() throws(LinuxIOError) -> UInt64 { try readNumber("duty_cycle") }

    public func polarity() throws(LinuxIOError) -> PWMPolarity {
        let file = path + "/polarity"
        let text = try FileIO.readTrimmed(file)
        guard let polarity = PWMPolarity(rawValue: text) else {
            throw LinuxIOError(operation: "parse", context: .path(file), errno: .invalidArgument,
                               message: "\(file) holds '\(text)', expected 'normal' or 'inversed'")
        }
        return polarity
    }

    public func isEnabled() throws(LinuxIOError) -> Bool { try readNumber("enable") != 0 }

    public func settings() throws(LinuxIOError) -> PWMSettings {
        PWMSettings(periodNanoseconds: try period(), dutyCycleNanoseconds: try dutyCycle(),
                    polarity: try polarity(), isEnabled: try isEnabled())
    }

    // MARK: Writing

    /// Sets period and duty cycle together, in whichever order keeps `duty_cycle ≤ period` after each write.
    ///
    /// `dutyCycle > period` or a zero period is a bug in the caller and traps.
    public func setPeriod(_ period: UInt64, dutyCycle: UInt64) throws(LinuxIOError) {
        precondition(period > 0, "a PWM period must be positive")
        precondition(dutyCycle <= period, "PWM duty cycle \(dutyCycle) ns exceeds period \(period) ns")
        let current = try self.period()
        for attribute in Self.writeOrder(currentPeriod: current, newDutyCycle: dutyCycle) {
            switch attribute {
            case .period:
                knownPeriod.store(Self.unknownPeriod, ordering: .relaxed)
                try write(String(period), to: "period")
                knownPeriod.store(period, ordering: .relaxed)
            case .dutyCycle: try write(String(dutyCycle), to: "duty_cycle")
            }
        }
    }

    /// Sets the duty cycle under the current period.
    ///
    /// Reads the period only when it does not know it, or when `dutyCycle` does not fit the one it knows or the
    /// kernel refuses the write (someone else may have changed it): one open, write and close otherwise.
    ///
    /// - Throws: `EINVAL` naming both if `dutyCycle` exceeds the period the kernel currently has; the duty cycle is
    ///   then unchanged.
    public func setDutyCycle(_ dutyCycle: UInt64) throws(LinuxIOError) {
        let known = knownPeriod.load(ordering: .relaxed)
        if known == Self.unknownPeriod || dutyCycle > known {
            let period = try self.period()
            guard dutyCycle <= period else { throw dutyCycleExceeds(period, dutyCycle) }
        }
        do throws(LinuxIOError) {
            try write(String(dutyCycle), to: "duty_cycle")
        } catch where error.errno == .invalidArgument {
            // The period may have shrunk behind this channel's back: say so if it did.
            guard let period = try? self.period(), dutyCycle > period else { throw error }
            throw dutyCycleExceeds(period, dutyCycle)
        }
    }

    private func dutyCycleExceeds(_ period: UInt64, _ dutyCycle: UInt64) -> LinuxIOError {
        LinuxIOError(operation: "write", context: .path(path + "/duty_cycle"), errno: .invalidArgument,
                     message: "duty cycle \(dutyCycle) ns exceeds the period \(period) ns of pwmchip\(chip)/"
                         + "pwm\(channel): use setPeriod(_:dutyCycle:) to change both")
    }

    /// - Throws: `EBUSY` without writing while the channel is enabled: the kernel refuses polarity changes then.
    public func setPolarity(_ polarity: PWMPolarity) throws(LinuxIOError) {
        if try isEnabled() {
            throw LinuxIOError(operation: "write", context: .path(path + "/polarity"), errno: .busy,
                               message: "polarity of pwmchip\(chip)/pwm\(channel) can only change while it is "
                                   + "disabled: call setEnabled(false) first, or use apply(_:)")
        }
        try write(polarity.rawValue, to: "polarity")
    }

    public func setEnabled(_ enabled: Bool) throws(LinuxIOError) {
        try write(enabled ? "1" : "0", to: "enable")
    }

    /// Brings the channel to `settings` with the fewest writes that are each valid: disables only if the polarity
    /// must change, orders period and duty cycle, and enables last so the output never runs with a half-applied state.
    public func apply(_ settings: PWMSettings) throws(LinuxIOError) {
        var enabled = try isEnabled()
        if try polarity() != settings.polarity {
            if enabled {
                try setEnabled(false)
                enabled = false
            }
            try write(settings.polarity.rawValue, to: "polarity")
        }
        try setPeriod(settings.periodNanoseconds, dutyCycle: settings.dutyCycleNanoseconds)
        if enabled != settings.isEnabled { try setEnabled(settings.isEnabled) }
    }

    /// Gives the channel back (`unexport`); the kernel disables it. Using this object afterwards fails with `ENOENT`.
    public func unexport() throws(LinuxIOError) {
        knownPeriod.store(Self.unknownPeriod, ordering: .relaxed)
        try FileIO.write(String(channel), to: chipPath + "/unexport")
    }

    // MARK: Internals

    enum Attribute: Hashable { case period, dutyCycle }

    /// The order that keeps `duty_cycle ≤ period` true after every write, given `duty_cycle ≤ period` holds now and
    /// for the target. Growing: period first. Shrinking (or the new duty already fits): duty cycle first.
    static func writeOrder(currentPeriod: UInt64, newDutyCycle: UInt64) -> [Attribute] {
        newDutyCycle <= currentPeriod ? [.dutyCycle, .period] : [.period, .dutyCycle]
    }

    private func readNumber(_ attribute: String) throws(LinuxIOError) -> UInt64 {
        let file = path + "/" + attribute
        return try FileIO.parseInteger(FileIO.readTrimmed(file), from: file)
    }

    private func write(_ value: String, to attribute: String) throws(LinuxIOError) {
        let file = path + "/" + attribute
        try FileIO.write(value, to: file) { code in
            switch code {
            case .invalidArgument:
                "pwmchip\(chip)/pwm\(channel) rejected \(attribute) = \(value): the controller may not support it "
                    + "(period out of range, or duty cycle above period)"
            case .busy:
                "pwmchip\(chip)/pwm\(channel) refused \(attribute) while enabled"
            case .noSuchFileOrDirectory:
                "\(file) does not exist: pwmchip\(chip)/pwm\(channel) was unexported"
            default:
                nil
            }
        }
    }
}
