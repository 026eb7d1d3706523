import Glibc
import HearthLinux

/// A failure building a fixture tree: the test environment is broken, not the code under test.
public struct SysfsTreeError: Error, CustomStringConvertible {
    public var operation: String
    public var path: String
    public var errno: Int32

    public var description: String {
        "\(operation) \(path): \(String(cString: strerror(errno)))"
    }
}

/// A temporary directory shaped like the kernel's `/sys`, for testing sysfs wrappers with `SysfsRoot(tree.root)`.
///
/// Device directories are real directories under `/sys/devices/...` reached through the class and bus symlinks, as
/// on a board, so code that works here follows links the way it must on the kernel's tree. Plain files cannot
/// enforce the kernel's rules (a PWM duty cycle above the period, EIO from a dead sensor); tests that need those
/// play the kernel themselves, e.g. by linking an attribute to `/proc/self/mem`, whose first page reads as `EIO`.
///
/// The tree is deleted on deinit.
public final class SysfsTree: Sendable {
    /// The directory that stands in for `/`.
    public let root: String

    public init(label: String = "hearth-sysfs") throws {
        var template = Array("/tmp/\(label).XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw SysfsTreeError(operation: "mkdtemp", path: "/tmp/\(label)", errno: errno)
        }
        root = String(cString: made)
    }

    deinit {
        removeFileTree(root)
    }

    /// `absolutePath` (e.g. `/sys/class/pwm`) inside the tree.
    public func path(_ absolutePath: String) -> String {
        precondition(absolutePath.hasPrefix("/"), "SysfsTree paths are written as absolute kernel paths")
        return root + absolutePath
    }

    // MARK: Primitives

    /// Creates `absolutePath` and its parents.
    public func directory(_ absolutePath: String) throws {
        var current = root
        for component in absolutePath.split(separator: "/") {
            current += "/" + component
            if mkdir(current, 0o755) != 0 && errno != EEXIST {
                throw SysfsTreeError(operation: "mkdir", path: current, errno: errno)
            }
        }
    }

    /// Writes a file (creating parent directories), as the kernel would present an attribute holding `contents`.
    public func file(_ absolutePath: String, _ contents: String) throws {
        try directory(Self.parent(absolutePath))
        let full = path(absolutePath)
        let fd = open(full, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw SysfsTreeError(operation: "open", path: full, errno: errno) }
        defer { close(fd) }
        let bytes = Array(contents.utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == bytes.count else { throw SysfsTreeError(operation: "write", path: full, errno: errno) }
    }

    /// A symlink at `absolutePath` whose target is used verbatim (relative like the kernel's, or absolute).
    public func symlink(_ absolutePath: String, to target: String) throws {
        try directory(Self.parent(absolutePath))
        let full = path(absolutePath)
        guard Glibc.symlink(target, full) == 0 else {
            throw SysfsTreeError(operation: "symlink", path: full, errno: errno)
        }
    }

    /// The file's content, or `nil` if it does not exist.
    public func contents(of absolutePath: String) -> String? {
        let fd = open(path(absolutePath), O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            bytes += chunk[..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    public func exists(_ absolutePath: String) -> Bool {
        var info = stat()
        return lstat(path(absolutePath), &info) == 0
    }

    /// Removes a file, link or directory tree.
    public func remove(_ absolutePath: String) {
        removeFileTree(path(absolutePath))
    }

    // MARK: Kernel-shaped devices

    /// `/sys/class/pwm/pwmchipN` → `/sys/devices/platform/hearth-pwm.N/pwm/pwmchipN` with `npwm`, `export`,
    /// `unexport`. The kernel's reaction to `export` is the test's to play: see
    /// ``addPWMChannel(chip:channel:period:dutyCycle:polarity:enabled:)``.
    public func addPWMChip(_ chip: Int, channels: Int) throws {
        let device = "/sys/devices/platform/hearth-pwm.\(chip)/pwm/pwmchip\(chip)"
        try file(device + "/npwm", "\(channels)\n")
        try file(device + "/export", "")
        try file(device + "/unexport", "")
        try symlink("/sys/class/pwm/pwmchip\(chip)", to: "../../devices/platform/hearth-pwm.\(chip)/pwm/pwmchip\(chip)")
    }

    /// What the kernel creates after a write to `export`: `pwmM/` with its four attributes.
    public func addPWMChannel(chip: Int, channel: Int, period: UInt64 = 0, dutyCycle: UInt64 = 0,
                              polarity: String = "normal", enabled: Bool = false) throws {
        let base = "/sys/devices/platform/hearth-pwm.\(chip)/pwm/pwmchip\(chip)/pwm\(channel)"
        try file(base + "/period", "\(period)\n")
        try file(base + "/duty_cycle", "\(dutyCycle)\n")
        try file(base + "/polarity", polarity + "\n")
        try file(base + "/enable", enabled ? "1\n" : "0\n")
    }

    /// `/sys/bus/iio/devices/iio:deviceN` → `/sys/devices/platform/hearth-iio.N/iio:deviceN` with a `name` file and
    /// `attributes` (file name → content, e.g. `"in_temp_raw": "6500"`). Returns the bus path (inside the tree).
    @discardableResult
    public func addIIODevice(_ index: Int, name: String, attributes: [String: String]) throws -> String {
        let device = "/sys/devices/platform/hearth-iio.\(index)/iio:device\(index)"
        try file(device + "/name", name + "\n")
        for (attribute, value) in attributes { try file(device + "/" + attribute, value + "\n") }
        try symlink("/sys/bus/iio/devices/iio:device\(index)",
                    to: "../../../devices/platform/hearth-iio.\(index)/iio:device\(index)")
        return path("/sys/bus/iio/devices/iio:device\(index)")
    }

    /// `/sys/class/hwmon/hwmonN` → `/sys/devices/virtual/hwmon/hwmonN` with a `name` file and `attributes`.
    /// Returns the class path (inside the tree).
    @discardableResult
    public func addHwmon(_ index: Int, name: String, attributes: [String: String]) throws -> String {
        let device = "/sys/devices/virtual/hwmon/hwmon\(index)"
        try file(device + "/name", name + "\n")
        for (attribute, value) in attributes { try file(device + "/" + attribute, value + "\n") }
        try symlink("/sys/class/hwmon/hwmon\(index)", to: "../../devices/virtual/hwmon/hwmon\(index)")
        return path("/sys/class/hwmon/hwmon\(index)")
    }

    // MARK: Helpers

    private static func parent(_ absolutePath: String) -> String {
        guard let slash = absolutePath.lastIndex(of: "/") else { return "/" }
        return String(absolutePath[..<slash])
    }
}
