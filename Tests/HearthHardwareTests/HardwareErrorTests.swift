import Glibc
import HearthEngine
@testable import HearthHardware
@testable import HearthHardwareLinux
import HearthLinux
import HearthTestKit
import Testing

@Suite("Hardware errors at the Linux backend's edge")
struct HardwareErrorTests {
    @Test func everyErrnoHasTheKindABindingActsOn() {
        let expected: [(Int32, HardwareError.Kind)] = [
            (ENOENT, .notFound), (EBUSY, .busy), (EACCES, .permissionDenied), (EPERM, .permissionDenied),
            (EIO, .io), (ENODEV, .gone), (ENXIO, .gone), (EINVAL, .invalid), (ERANGE, .invalid), (ENOTTY, .invalid),
            (ENOTDIR, .invalid), (EISDIR, .invalid), (ETIMEDOUT, .timedOut), (EAGAIN, .failed), (EINTR, .failed),
            (ENOSPC, .failed),
        ]
        for (errno, kind) in expected {
            let linux = LinuxIOError(operation: "write", context: .path("/sys/x"), errno: LinuxErrno(rawValue: errno))
            #expect(HardwareError(linux).kind == kind, "\(linux.errno)")
        }
    }

    @Test func theMessageErrnoAndContextAreKeptSoLogsSayWhatTheySaidBefore() {
        let linux = LinuxIOError(
            operation: "gpiod_line_request_output_flags", context: .gpioLine(chip: "gpiochip0", offset: 17),
            errno: .busy)
        let error = HardwareError(linux)
        #expect(error.message == linux.message)
        #expect(error.message == "gpiochip0 line 17 is busy: another program holds it")
        #expect(error.operation == "gpiod_line_request_output_flags")
        #expect(error.context == "gpiochip0 line 17")
        #expect(error.errno == EBUSY)
        #expect(error.description == linux.description)
        #expect(error.description == "gpiochip0 line 17 is busy: another program holds it "
            + "[gpiod_line_request_output_flags on gpiochip0 line 17: EBUSY (Device or resource busy)]")
    }

    @Test func aBackendWithoutAnErrnoStillDescribesItself() {
        let error = HardwareError(.busy, message: "GPIO relay-1 is busy", operation: "request", context: "hearth-sim")
        #expect(error.errno == nil)
        #expect(error.description == "GPIO relay-1 is busy [request on hearth-sim: busy]")
    }

    @Test func linuxHardwareThrowsHardwareErrorsOverASysfsTree() throws {
        let tree = try SysfsTree()
        let hardware = LinuxHardware(
            root: SysfsRoot(tree.root), deviceDirectory: tree.root + "/dev", pwmExportAttempts: 1)
        let pwm = #expect(throws: HardwareError.self) {
            try hardware.openPWM(PWMAddress(chip: 3, channel: 0, name: ""))
        }
        #expect(pwm?.kind == .notFound)
        #expect(pwm?.errno == ENOENT)
        #expect(pwm?.message.contains("pwmchip3") == true, "\(pwm?.message ?? "")")

        let chip = #expect(throws: HardwareError.self) {
            try hardware.openOutput(PinAddress(chip: tree.root + "/dev/gpiochip9", line: .offset(0), name: "relay-1"),
                                    initialValue: false, activeLow: false, drive: .pushPull)
        }
        #expect(chip?.kind == .notFound)
        #expect(chip?.errno == ENOENT)

        let sensor = #expect(throws: HardwareError.self) {
            try hardware.openSensor(.i2c(BoardSensor(name: "humidity-1", driver: "si7020", bus: 1, address: 0x40,
                                                     registers: [:], line: 1)), quantity: .humidity)
        }
        #expect(sensor?.message.hasPrefix("no si7020 sensor at 0x40 on i2c-1") == true, "\(sensor?.message ?? "")")
        #expect(sensor?.context == tree.root + "/sys/bus/i2c/devices/1-0040")
    }

    @Test func theNeutralSettingsMapOneToOne() {
        #expect(OutputDrive.allCases.map(GPIODrive.init) == [.pushPull, .openDrain, .openSource])
        #expect(InputBias.allCases.map(GPIOBias.init) == [.asIs, .disabled, .pullUp, .pullDown])
        #expect(PWMOutputPolarity.allCases.map { PWMPolarity($0).rawValue } == ["normal", "inversed"])
    }
}
