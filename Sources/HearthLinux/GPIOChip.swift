import CGPIODShim
import Glibc
import HearthSync

/// A requested line (CGPIODShim's `hearth_gpio_request`).
///
/// Used under the owning ``GPIOChip``'s lock, except for the edge-event read of an input's one waiting thread, and
/// released once; every holder keeps that chip alive (libgpiod v1 frees line objects with the chip).
struct GPIORequestPointer: @unchecked Sendable {
    let raw: OpaquePointer
}

/// The chip handle; only dereferenced under ``GPIOChip``'s lock, and closed once, in its deinit.
struct GPIOChipPointer: @unchecked Sendable {
    let raw: OpaquePointer
}

/// What is known about a GPIO chip without keeping it open.
public struct GPIOChipSummary: Sendable, Hashable {
    /// The kernel's name, e.g. `gpiochip0`; not stable across boots or kernel versions.
    public var name: String
    /// The driver's label, e.g. `pinctrl-rp1` (Pi 5) or `pinctrl-bcm2711` (Pi 4): stable, so configure by this.
    public var label: String
    public var path: String
    public var lineCount: Int
}

/// An open GPIO chip character device, through libgpiod 1 or 2 (whichever Hearth was built against, see
/// ``libgpiodAPIVersion``).
///
/// Lines requested from a chip keep it open. libgpiod objects are not thread-safe, so the chip and every line
/// taken from it share one lock; blocking waits for edges happen outside it, on the line's own file descriptor.
public final class GPIOChip: Sendable {
    /// The kernel's name, e.g. `gpiochip0`.
    public let name: String
    /// The driver's label, e.g. `pinctrl-rp1` or a gpio-sim bank label.
    public let label: String
    /// How the chip was opened (the device path, or `/dev/<name>`).
    public let path: String
    public let lineCount: Int

    private let handle: Locked<GPIOChipPointer>

    private init(adopting chip: OpaquePointer, path: String?) {
        name = String(cString: hearth_gpio_chip_name(chip))
        label = String(cString: hearth_gpio_chip_label(chip))
        lineCount = Int(hearth_gpio_chip_num_lines(chip))
        self.path = path ?? "/dev/\(name)"
        handle = Locked(GPIOChipPointer(raw: chip))
    }

    deinit {
        handle.withLock { hearth_gpio_chip_close($0.raw) }
    }

    /// The libgpiod API this build talks to: 1 (libgpiod 1.x, Debian bookworm) or 2 (libgpiod 2.x, Debian trixie and
    /// Raspberry Pi OS). Chosen at build time from the installed `<gpiod.h>`.
    public static var libgpiodAPIVersion: Int { Int(hearth_gpio_api_version()) }

    /// Opens the chip at a device path, e.g. `/dev/gpiochip0`.
    public convenience init(path: String) throws(LinuxIOError) {
        let chip = try Syscall.checkPointer("gpiod_chip_open", .gpioChip(path),
                                            explain: { Self.explainOpenFailure($0, chip: path) }) {
            hearth_gpio_chip_open(path)
        }
        self.init(adopting: chip, path: path)
    }

    /// Opens the chip by its kernel name, e.g. `gpiochip0` (looked up as `/dev/gpiochip0`).
    ///
    /// Prefer ``init(label:deviceDirectory:)`` in configuration: chip numbering changes between kernels
    /// (the Pi 5's header moved from `gpiochip4` to `gpiochip0` in Linux 6.6), labels do not.
    public convenience init(name: String) throws(LinuxIOError) {
        precondition(!name.isEmpty && !name.contains("/"), "a GPIO chip name has no '/': use init(path:) instead")
        let chip = try Syscall.checkPointer("gpiod_chip_open", .gpioChip(name),
                                            explain: { Self.explainOpenFailure($0, chip: "/dev/\(name)") }) {
            hearth_gpio_chip_open("/dev/\(name)")
        }
        self.init(adopting: chip, path: "/dev/\(name)")
    }

    /// Opens the chip whose label is `label` (e.g. `pinctrl-rp1`), scanning `gpiochip*` in `deviceDirectory`.
    ///
    /// This is how a board file finds its header: the Pi 5's `pinctrl-rp1` is `gpiochip4` on kernels before 6.6 and
    /// `gpiochip0` since. Scans itself (libgpiod 2 has no lookup by label, and v1's stops at the first chip it cannot
    /// open) so that one unopenable chip (permissions) does not hide the others, and so the error can list what was
    /// found instead.
    public convenience init(label: String, deviceDirectory: String = "/dev") throws(LinuxIOError) {
        var seen: [String] = []
        for entry in try Self.chipEntries(deviceDirectory) {
            let path = deviceDirectory.hasSuffix("/") ? deviceDirectory + entry : deviceDirectory + "/" + entry
            let chip: OpaquePointer
            do {
                chip = try Syscall.checkPointer("gpiod_chip_open", .gpioChip(path)) { hearth_gpio_chip_open(path) }
            } catch {
                seen.append("\(entry) (cannot open: \(error.errno))")
                continue
            }
            let found = String(cString: hearth_gpio_chip_label(chip))
            if found == label {
                self.init(adopting: chip, path: path)
                return
            }
            seen.append("\(entry) '\(found)'")
            hearth_gpio_chip_close(chip)
        }
        let inventory = seen.isEmpty
            ? "there are no gpiochip devices in \(deviceDirectory) (kernel without GPIO support? gpio-sim not loaded?)"
            : "found \(seen.joined(separator: ", "))"
        throw LinuxIOError(operation: "gpiod_chip_open", context: .gpioChip(label), errno: .noSuchFileOrDirectory,
                           message: "no GPIO chip labelled '\(label)': \(inventory)")
    }

    /// Every chip in `deviceDirectory` that can be opened, for diagnostics and setup screens.
    public static func availableChips(deviceDirectory: String = "/dev") throws(LinuxIOError) -> [GPIOChipSummary] {
        try chipEntries(deviceDirectory).compactMap { entry in
            let path = deviceDirectory.hasSuffix("/") ? deviceDirectory + entry : deviceDirectory + "/" + entry
            guard let chip = try? Syscall.checkPointer("gpiod_chip_open", .gpioChip(path), {
                hearth_gpio_chip_open(path)
            }) else { return nil }
            defer { hearth_gpio_chip_close(chip) }
            return GPIOChipSummary(name: String(cString: hearth_gpio_chip_name(chip)),
                                   label: String(cString: hearth_gpio_chip_label(chip)),
                                   path: path, lineCount: Int(hearth_gpio_chip_num_lines(chip)))
        }
    }

    /// The offset of the first line named `lineName` (device tree `gpio-line-names`, e.g. `GPIO17`).
    ///
    /// Line names are not unique in the kernel; the lowest offset wins, as in libgpiod.
    public func lineOffset(named lineName: String) throws(LinuxIOError) -> Int {
        try withChip { (chip) throws(LinuxIOError) -> Int in
            Int(
                try Syscall.check(
                    "gpiod_chip_find_line", .gpioChip(name),
                    explain: { code in
                        code == .noSuchFileOrDirectory
                            ? "\(self.name) ('\(self.label)') has no line named '\(lineName)': check the spelling "
                                + "against gpioinfo"
                            : nil
                    }
                ) {
                    hearth_gpio_chip_find_line(chip, lineName)
                })
        }
    }

    /// What the kernel says about the line at `offset` right now.
    public func lineInfo(offset: Int) throws(LinuxIOError) -> GPIOLineInfo {
        try withChip { (chip) throws(LinuxIOError) -> GPIOLineInfo in
            try checkOffset(offset, operation: "gpiod_line_info")
            var info = hearth_gpio_line_info()
            _ = try Syscall.check("gpiod_line_info", .gpioLine(chip: name, offset: offset)) {
                hearth_gpio_chip_line_info(chip, UInt32(offset), &info)
            }
            return GPIOLineInfo(offset: offset, info)
        }
    }

    // MARK: - For the line types

    /// Runs `body` with the chip pointer under the lock shared by the chip and all its lines.
    func withChip<Result: Sendable, Failure: Error>(
        _ body: (OpaquePointer) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try handle.withLock { (chip) throws(Failure) -> Result in try body(chip.raw) }
    }

    /// Throws for an offset outside the chip: a configuration error, so it throws rather than traps.
    func checkOffset(_ offset: Int, operation: String) throws(LinuxIOError) {
        guard offset >= 0 && offset < lineCount else {
            throw LinuxIOError(operation: operation, context: .gpioLine(chip: name, offset: offset),
                               errno: .invalidArgument,
                               message: "\(name) ('\(label)') has \(lineCount) lines (offsets 0...\(lineCount - 1)); "
                                   + "there is no line \(offset)")
        }
    }

    /// Requests the line at `offset` with `request` (a CGPIODShim request call), under the lock: checks the offset
    /// first, and explains a failure (naming the current holder of a busy line).
    func request(offset: Int, _ request: (OpaquePointer) -> OpaquePointer?) throws(LinuxIOError) -> GPIORequestPointer {
        try withChip { (chip) throws(LinuxIOError) -> GPIORequestPointer in
            try checkOffset(offset, operation: "gpiod_line_request")
            let line = try Syscall.checkPointer("gpiod_line_request", .gpioLine(chip: name, offset: offset),
                                                explain: { explainRequestFailure($0, chip: chip, offset: offset) }) {
                request(chip)
            }
            return GPIORequestPointer(raw: line)
        }
    }

    /// Releases a line requested from this chip.
    func release(_ line: GPIORequestPointer) {
        withChip { _ in hearth_gpio_release(line.raw) }
    }

    /// The message for a failed line request, naming the current holder when the line is busy.
    /// Call only inside ``withChip(_:)``, right after the failed request.
    private func explainRequestFailure(_ code: LinuxErrno, chip: OpaquePointer, offset: Int) -> String? {
        switch code {
        case .busy:
            var info = hearth_gpio_line_info()
            let holder = hearth_gpio_chip_line_info(chip, UInt32(offset), &info) == 0
                ? GPIOLineInfo(offset: offset, info).consumer : nil
            let who = switch holder {
            case .some(let holder): "another program ('\(holder)') holds it"
            case .none: "the kernel (a driver, overlay or gpio-hog) or an unnamed program holds it"
            }
            return "GPIO line \(offset) on \(name) is busy: \(who)"
        case .invalidArgument, LinuxErrno(rawValue: EOPNOTSUPP):
            return "\(name) ('\(label)') rejected the request flags for line \(offset): bias needs Linux 5.5+, "
                + "and not every controller supports open-drain/open-source"
        default:
            return nil
        }
    }

    private static func chipEntries(_ deviceDirectory: String) throws(LinuxIOError) -> [String] {
        try FileIO.numberedEntries(deviceDirectory, prefix: "gpiochip").map(\.name)
    }

    private static func explainOpenFailure(_ code: LinuxErrno, chip path: String) -> String? {
        switch code {
        case .noSuchFileOrDirectory:
            let existing = (try? chipEntries("/dev")) ?? []
            let inventory = existing.isEmpty
                ? "this system has no GPIO character devices at all (kernel without CONFIG_GPIO_CDEV? gpio-sim not "
                    + "loaded?)"
                : "available: \(existing.joined(separator: ", ")); prefer opening by label"
            return "no GPIO chip at \(path): \(inventory)"
        case .notATypewriter:
            return "\(path) is not a GPIO character device"
        case .permissionDenied, .operationNotPermitted:
            return "permission denied opening \(path): run hearthd as root or add its user to the group owning the "
                + "device (gpio on Raspberry Pi OS)"
        default:
            return nil
        }
    }
}
