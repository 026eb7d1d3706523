import HearthTestKit
import Testing
@testable import HearthLinux
import HearthSync

@Suite("PWM channel over a sysfs tree")
struct PWMChannelTests {
    let tree: SysfsTree
    let root: SysfsRoot
    let chipDir = "/sys/devices/platform/hearth-pwm.0/pwm/pwmchip0"

    init() throws {
        tree = try SysfsTree()
        root = SysfsRoot(tree.root)
        try tree.addPWMChip(0, channels: 2)
    }

    @Test func exportsAMissingChannelAndWaitsForTheKernelToCreateIt() throws {
        let pauses = Locked(0)
        let channel = try PWMChannel(chip: 0, channel: 1, root: root, exportAttempts: 5,
                                     exportInterval: .milliseconds(1)) { _ in
            // Play the kernel: the directory appears only after the export write, one pause later.
            let count = pauses.withLock { $0 += 1; return $0 }
            if count == 1 { try? tree.addPWMChannel(chip: 0, channel: 1) }
        }
        #expect(tree.contents(of: chipDir + "/export") == "1")
        #expect(pauses.withLock { $0 } == 1)
        #expect(channel.path == tree.path("/sys/class/pwm/pwmchip0/pwm1"))
        #expect(try channel.period() == 0)
    }

    @Test func doesNotExportAnAlreadyExportedChannel() throws {
        try tree.addPWMChannel(chip: 0, channel: 0, period: 20_000, dutyCycle: 5_000)
        let channel = try PWMChannel(chip: 0, channel: 0, root: root)
        #expect(tree.contents(of: chipDir + "/export") == "")
        #expect(try channel.settings() == PWMSettings(periodNanoseconds: 20_000, dutyCycleNanoseconds: 5_000,
                                                     polarity: .normal, isEnabled: false))
    }

    @Test func exportThatNeverAppearsTimesOutAfterBoundedAttempts() throws {
        let pauses = Locked(0)
        let error = #expect(throws: LinuxIOError.self) {
            try PWMChannel(chip: 0, channel: 0, root: root, exportAttempts: 4, exportInterval: .milliseconds(1)) { _ in
                pauses.withLock { $0 += 1 }
            }
        }
        #expect(error?.errno == .timedOut)
        #expect(pauses.withLock { $0 } == 3)
        #expect(tree.contents(of: chipDir + "/export") == "0")
    }

    @Test func missingChipIsENOENTWithAHint() throws {
        let error = #expect(throws: LinuxIOError.self) { try PWMChannel(chip: 3, channel: 0, root: root) }
        #expect(error?.errno == .noSuchFileOrDirectory)
        #expect(error?.message.contains("PWM overlay") == true)
        #expect(error?.context == .path(tree.path("/sys/class/pwm/pwmchip3")))
    }

    @Test func channelBeyondNpwmIsEINVAL() throws {
        let error = #expect(throws: LinuxIOError.self) { try PWMChannel(chip: 0, channel: 2, root: root) }
        #expect(error?.errno == .invalidArgument)
        #expect(error?.message.contains("has 2 channels") == true)
    }

    @Test func setsPeriodAndDutyCycle() throws {
        try tree.addPWMChannel(chip: 0, channel: 0)
        let channel = try PWMChannel(chip: 0, channel: 0, root: root)
        try channel.setPeriod(1_000_000, dutyCycle: 250_000)
        #expect(tree.contents(of: chipDir + "/pwm0/period") == "1000000")
        #expect(tree.contents(of: chipDir + "/pwm0/duty_cycle") == "250000")
        try channel.setPeriod(100_000, dutyCycle: 10_000)
        #expect(try channel.period() == 100_000)
        #expect(try channel.dutyCycle() == 10_000)
    }

    @Test func writeOrderPutsPeriodFirstWhenGrowingAndDutyFirstWhenShrinking() {
        // After export the period is 0: the period must be written before any non-zero duty cycle.
        #expect(PWMChannel.writeOrder(currentPeriod: 0, newDutyCycle: 500) == [.period, .dutyCycle])
        #expect(PWMChannel.writeOrder(currentPeriod: 1_000, newDutyCycle: 2_000) == [.period, .dutyCycle])
        // Shrinking the period below the current duty cycle: the duty cycle must shrink first.
        #expect(PWMChannel.writeOrder(currentPeriod: 1_000_000, newDutyCycle: 100) == [.dutyCycle, .period])
    }

    @Test func writeOrderKeepsDutyWithinPeriodAfterEveryWrite() {
        let values: [UInt64] = [0, 1, 2, 5, 9, 10]
        for oldPeriod in values where oldPeriod > 0 {
            for oldDuty in values where oldDuty <= oldPeriod {
                for newPeriod in values where newPeriod > 0 {
                    for newDuty in values where newDuty <= newPeriod {
                        var (period, duty) = (oldPeriod, oldDuty)
                        for step in PWMChannel.writeOrder(currentPeriod: oldPeriod, newDutyCycle: newDuty) {
                            switch step {
                            case .period: period = newPeriod
                            case .dutyCycle: duty = newDuty
                            }
                            #expect(
                                duty <= period, "\(oldPeriod)/\(oldDuty) → \(newPeriod)/\(newDuty) broke at \(step)")
                        }
                        #expect(period == newPeriod && duty == newDuty)
                    }
                }
            }
        }
    }

    @Test func dutyCycleAboveThePeriodIsRejectedWithoutWriting() throws {
        try tree.addPWMChannel(chip: 0, channel: 0, period: 1_000, dutyCycle: 100)
        let channel = try PWMChannel(chip: 0, channel: 0, root: root)
        let error = #expect(throws: LinuxIOError.self) { try channel.setDutyCycle(1_001) }
        #expect(error?.errno == .invalidArgument)
        #expect(tree.contents(of: chipDir + "/pwm0/duty_cycle") == "100\n")
        try channel.setDutyCycle(1_000)
        #expect(try channel.dutyCycle() == 1_000)
    }

    @Test func dutyWritesDoNotReadBackThePeriodTheChannelKnows() throws {
        try tree.addPWMChannel(chip: 0, channel: 0, period: 1_000, dutyCycle: 100)
        let channel = try PWMChannel(chip: 0, channel: 0, root: root)
        try channel.setDutyCycle(200)  // learns the period
        // Without `period` a read would fail with ENOENT: the next writes do not read it.
        tree.remove(chipDir + "/pwm0/period")
        try channel.setDutyCycle(300)
        try channel.setDutyCycle(1_000)
        #expect(tree.contents(of: chipDir + "/pwm0/duty_cycle") == "1000")
        // A period the channel wrote itself is known as well.
        try tree.file(chipDir + "/pwm0/period", "1000\n")
        try channel.setPeriod(5_000, dutyCycle: 0)
        tree.remove(chipDir + "/pwm0/period")
        try channel.setDutyCycle(5_000)
        #expect(tree.contents(of: chipDir + "/pwm0/duty_cycle") == "5000")
    }

    @Test func aDutyAboveTheKnownPeriodReadsItAgainBeforeRefusing() throws {
        try tree.addPWMChannel(chip: 0, channel: 0, period: 1_000, dutyCycle: 100)
        let channel = try PWMChannel(chip: 0, channel: 0, root: root)
        try channel.setDutyCycle(200)
        // Someone else raises the period: a duty that fits the new one is written.
        try tree.file(chipDir + "/pwm0/period", "2000\n")
        try channel.setDutyCycle(1_500)
        #expect(tree.contents(of: chipDir + "/pwm0/duty_cycle") == "1500")
        // And lowers it again: a duty above it is refused without writing, naming the period the kernel has.
        try tree.file(chipDir + "/pwm0/period", "1200\n")
        let error = #expect(throws: LinuxIOError.self) { try channel.setDutyCycle(2_500) }
        #expect(error?.errno == .invalidArgument)
        #expect(error?.message.contains("exceeds the period 1200 ns") == true)
        #expect(tree.contents(of: chipDir + "/pwm0/duty_cycle") == "1500")
    }

    @Test func polarityChangesOnlyWhileDisabled() throws {
        try tree.addPWMChannel(chip: 0, channel: 0, period: 1_000, dutyCycle: 100, enabled: true)
        let channel = try PWMChannel(chip: 0, channel: 0, root: root)
        let error = #expect(throws: LinuxIOError.self) { try channel.setPolarity(.inversed) }
        #expect(error?.errno == .busy)
        #expect(try channel.polarity() == .normal)

        try channel.setEnabled(false)
        #expect(tree.contents(of: chipDir + "/pwm0/enable") == "0")
        try channel.setPolarity(.inversed)
        #expect(tree.contents(of: chipDir + "/pwm0/polarity") == "inversed")
        try channel.setEnabled(true)
        #expect(try channel.isEnabled())
    }

    @Test func applyReachesTheTargetFromAnEnabledChannelWithTheOtherPolarity() throws {
        try tree.addPWMChannel(chip: 0, channel: 0, period: 1_000_000, dutyCycle: 900_000, enabled: true)
        let channel = try PWMChannel(chip: 0, channel: 0, root: root)
        let target = PWMSettings(periodNanoseconds: 10_000, dutyCycleNanoseconds: 2_500, polarity: .inversed,
                                 isEnabled: true)
        try channel.apply(target)
        #expect(try channel.settings() == target)
    }

    @Test func unparsableAttributeIsEINVALNamingTheContent() throws {
        try tree.addPWMChannel(chip: 0, channel: 0)
        try tree.file(chipDir + "/pwm0/period", "banana\n")
        let channel = try PWMChannel(chip: 0, channel: 0, root: root)
        let error = #expect(throws: LinuxIOError.self) { try channel.period() }
        #expect(error?.errno == .invalidArgument)
        #expect(error?.message.contains("'banana'") == true)
    }

    @Test func unexportWritesTheChannelNumberAndLaterUseIsENOENT() throws {
        try tree.addPWMChannel(chip: 0, channel: 1)
        let channel = try PWMChannel(chip: 0, channel: 1, root: root)
        try channel.unexport()
        #expect(tree.contents(of: chipDir + "/unexport") == "1")
        tree.remove(chipDir + "/pwm1")  // what the kernel does
        let error = #expect(throws: LinuxIOError.self) { try channel.setEnabled(true) }
        #expect(error?.errno == .noSuchFileOrDirectory)
        #expect(error?.message.contains("unexported") == true)
    }
}
