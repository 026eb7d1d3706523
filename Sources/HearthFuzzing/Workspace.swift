#if canImport(Glibc)
import Glibc
#endif

/// A private temporary directory for the targets that read files (the configuration, the board, the state
/// file): made once per process, removed at exit.
enum Workspace {
    static let directory: String = {
        var template = Array("/tmp/hearth-fuzz-XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            fatalError("cannot make a temporary directory: \(String(cString: strerror(errno)))")
        }
        atexit { Workspace.removeAll() }
        return String(cString: made)
    }()

    /// Writes `bytes` to `name` in the directory with `mode`; returns the path.
    @discardableResult
    static func write(_ name: String, _ bytes: [UInt8], mode: mode_t = 0o600) -> String {
        let path = "\(directory)/\(name)"
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        guard fd >= 0 else { fatalError("cannot write \(path): \(String(cString: strerror(errno)))") }
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { fatalError("cannot write \(path): \(String(cString: strerror(errno)))") }
            offset += n
        }
        fchmod(fd, mode)
        close(fd)
        return path
    }

    static func read(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { return n == 0 ? bytes : nil }
            bytes += chunk[..<n]
        }
    }

    static func makeDirectory(_ name: String) -> String {
        let path = "\(directory)/\(name)"
        mkdir(path, 0o700)
        return path
    }

    /// The names in a directory of the workspace.
    static func list(_ path: String) -> [String] {
        guard let dir = opendir(path) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            // In place: copying the whole `dirent` reads past readdir's buffer at its last entry.
            let name = String(
                cString: UnsafeRawPointer(entry).advanced(by: MemoryLayout<dirent>.offset(of: \dirent.d_name)!)
                    .assumingMemoryBound(to: CChar.self))
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Removes the workspace (two levels: its files and the files of its directories).
    static func removeAll() {
        for name in list(directory) {
            let path = "\(directory)/\(name)"
            for inner in list(path) { unlink("\(path)/\(inner)") }
            if rmdir(path) != 0 { unlink(path) }
        }
        rmdir(directory)
    }
}
