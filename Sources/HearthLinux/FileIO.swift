import Glibc

/// Where the kernel's trees are mounted: `/` on a board, a temporary directory shaped like `/sys` in tests.
public struct SysfsRoot: Sendable, Hashable, CustomStringConvertible {
    /// The directory that stands in for `/`.
    public let prefix: String

    /// The real system.
    public static let system = SysfsRoot("/")

    /// - Parameter prefix: an absolute directory; `/sys/...` paths are looked up beneath it.
    public init(_ prefix: String) {
        precondition(prefix.hasPrefix("/"), "SysfsRoot needs an absolute prefix, got '\(prefix)'")
        var trimmed = prefix
        while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed.removeLast() }
        self.prefix = trimmed
    }

    /// `absolutePath` (e.g. `/sys/class/pwm`) as it appears under this root.
    public func path(_ absolutePath: String) -> String {
        precondition(absolutePath.hasPrefix("/"), "expected an absolute path, got '\(absolutePath)'")
        return prefix == "/" ? absolutePath : prefix + absolutePath
    }

    public var description: String { prefix }
}

/// Removes `path` and, when it is a directory, everything beneath it, without following symbolic links; what cannot be
/// removed is left. For the temporary trees shaped like `/sys` that tests and benchmarks make and throw away: a board
/// never removes one.
public func removeFileTree(_ path: String) {
    var info = stat()
    guard lstat(path, &info) == 0 else { return }
    guard (info.st_mode & S_IFMT) == S_IFDIR else {
        unlink(path)
        return
    }
    for name in (try? FileIO.directoryEntries(path)) ?? [] { removeFileTree(path + "/" + name) }
    rmdir(path)
}

/// The one place sysfs and device files are opened, read, written and closed.
///
/// Sysfs attributes are tiny and must be read and written whole (a store callback sees exactly one `write`), so this
/// funnel reads to end of file and writes in a single call; every descriptor is `O_CLOEXEC` so a helper process
/// started by hearthd never inherits one.
enum FileIO {
    /// The whole content of `path`.
    static func read(_ path: String) throws(LinuxIOError) -> String {
        String(decoding: try readBytes(path), as: UTF8.self)
    }

    /// The whole content of `path`, as bytes.
    static func readBytes(_ path: String) throws(LinuxIOError) -> [UInt8] {
        let context = LinuxIOError.Context.path(path)
        let fd = try Syscall.check("open", context) { open(path, O_RDONLY | O_CLOEXEC) }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = try Syscall.check("read", context) {
                chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            }
            if count == 0 { break }
            bytes.append(contentsOf: chunk[..<count])
        }
        return bytes
    }

    /// The content of `path` without surrounding whitespace: sysfs values end in a newline.
    static func readTrimmed(_ path: String) throws(LinuxIOError) -> String {
        trimmed(try read(path))
    }

    /// Writes `text` to an existing file in one `write`.
    ///
    /// Never creates the file: writing to a sysfs attribute that does not exist must fail with `ENOENT`, not leave a
    /// regular file behind in a test tree and silently pass.
    static func write(_ text: String, to path: String,
                      explain: (LinuxErrno) -> String? = { _ in nil }) throws(LinuxIOError) {
        let context = LinuxIOError.Context.path(path)
        let fd = try Syscall.check("open", context, explain: explain) { open(path, O_WRONLY | O_TRUNC | O_CLOEXEC) }
        defer { close(fd) }
        let bytes = Array(text.utf8)
        let written = try Syscall.check("write", context, explain: explain) {
            bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        }
        if written != bytes.count {
            throw LinuxIOError(operation: "write", context: context, errno: .ioError,
                               message: "short write to \(path): \(written) of \(bytes.count) bytes")
        }
    }

    /// Whether anything (following symlinks) exists at `path`.
    static func exists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }

    /// Whether `path` is a directory (following symlinks, as `/sys/bus/iio/devices/*` are links).
    static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }

    /// The names in a directory, without `.` and `..`, in no particular order.
    static func directoryEntries(_ path: String) throws(LinuxIOError) -> [String] {
        let directory = try Syscall.checkPointer("opendir", .path(path)) { opendir(path) }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = entryName(entry)
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// A directory entry's name, read in place up to its NUL. An entry in `readdir`'s buffer is only as long as its
    /// name needs (`d_reclen`), so copying the whole `dirent` (`entry.pointee`, with its 256-byte `d_name`) reads
    /// past the end of the buffer at its last entry (AddressSanitizer found it).
    static func entryName(_ entry: UnsafeMutablePointer<dirent>) -> String {
        String(
            cString: UnsafeRawPointer(entry).advanced(by: MemoryLayout<dirent>.offset(of: \dirent.d_name)!)
                .assumingMemoryBound(to: CChar.self))
    }

    /// The entries of `directory` that are `prefix` followed by a number, sorted by that number
    /// (`hwmon2` before `hwmon10`), so lookups by name pick the lowest-numbered match deterministically.
    static func numberedEntries(_ directory: String, prefix: String) throws(LinuxIOError) -> [(
        name: String, index: Int
    )] {
        try directoryEntries(directory)
            .compactMap { name in
                guard name.hasPrefix(prefix), let index = Int(name.dropFirst(prefix.count)) else { return nil }
                return (name, index)
            }
            .sorted { $0.index < $1.index }
    }

    static func trimmed(_ text: String) -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\n" || $0 == "\t" || $0 == "\r" }
        guard let first = text.firstIndex(where: { !isSpace($0) }),
              let last = text.lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(text[first...last])
    }

    /// Parses a sysfs integer, throwing `EINVAL` with the offending content if it is not one.
    static func parseInteger<Value: FixedWidthInteger>(_ text: String, from path: String,
                                                       as: Value.Type = Value.self) throws(LinuxIOError) -> Value {
        guard let value = Value(text) else {
            throw LinuxIOError(operation: "parse", context: .path(path), errno: .invalidArgument,
                               message: "\(path) holds '\(text)', not an integer: is this the right device?")
        }
        return value
    }

    /// Parses a sysfs decimal (IIO scales like `0.001907348`), throwing `EINVAL` if it is not one.
    static func parseDecimal(_ text: String, from path: String) throws(LinuxIOError) -> Double {
        guard let value = Double(text), value.isFinite else {
            throw LinuxIOError(operation: "parse", context: .path(path), errno: .invalidArgument,
                               message: "\(path) holds '\(text)', not a number: is this the right device?")
        }
        return value
    }
}
