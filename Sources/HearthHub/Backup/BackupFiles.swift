// The few file operations a backup and a restore need, on POSIX calls: whole-file reads, atomic durable writes
// (a temporary file, fsync, rename, the folder flushed), folders made and removed, a folder's regular files.
#if canImport(Glibc)
import Glibc
#endif

enum BackupFiles {
    static func errorText() -> String { String(cString: strerror(errno)) }

    /// The file's bytes; nil when there is no such file; a regular file only.
    static func read(_ path: String) throws(BackupError) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw .file("cannot open \(path): \(errorText())")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw .file("\(path) is not a regular file")
        }
        guard Int(info.st_size) <= BackupArchive.maximumMemberSize else {
            throw .file("\(path) is \(info.st_size) bytes, more than a backup holds")
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw .file("cannot read \(path): \(errorText())")
            }
            if n == 0 { return bytes }
            bytes += chunk[..<n]
            guard bytes.count <= BackupArchive.maximumMemberSize else {
                throw .file("\(path) is more than a backup holds")
            }
        }
    }

    /// Writes `bytes` to `path` so that it is the old file or the new one, never a mix, even after a power cut.
    static func writeAtomically(_ path: String, _ bytes: [UInt8], mode: mode_t) throws(BackupError) {
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        guard fd >= 0 else { throw .file("cannot create \(temporary): \(errorText())") }
        var offset = 0
        var failure: BackupError?
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                failure = .file("cannot write \(temporary): \(errorText())")
                break
            }
            offset += n
        }
        if failure == nil && fsync(fd) != 0 { failure = .file("cannot flush \(temporary): \(errorText())") }
        close(fd)
        if failure == nil && rename(temporary, path) != 0 {
            failure = .file("cannot rename \(temporary) to \(path): \(errorText())")
        }
        if let failure {
            unlink(temporary)
            throw failure
        }
        syncDirectory(directory(of: path))
    }

    static func syncDirectory(_ path: String) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd >= 0 {
            fsync(fd)
            close(fd)
        }
    }

    /// The folder a file is in: `/etc/hearth` for `/etc/hearth/hearth.yaml`, `.` for a bare name.
    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    static func makeDirectory(_ path: String, mode: mode_t) throws(BackupError) {
        var partial = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            partial += "/" + component
            if mkdir(partial, mode) != 0 && errno != EEXIST {
                throw .file("cannot create the folder \(partial): \(errorText())")
            }
        }
    }

    /// The names of the regular files directly in `path` (none when it is not a folder).
    static func regularFiles(in path: String) -> [String] {
        guard let dir = opendir(path) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            var info = stat()
            if name != ".", name != "..", lstat(path + "/" + name, &info) == 0, info.st_mode & S_IFMT == S_IFREG {
                names.append(name)
            }
        }
        return names.sorted()
    }

    /// Removes `path` and what is in it (files and folders; links are removed, not followed).
    static func removeTree(_ path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        if info.st_mode & S_IFMT == S_IFDIR {
            if let dir = opendir(path) {
                var names: [String] = []
                while let entry = readdir(dir) {
                    let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                        String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
                    }
                    if name != "." && name != ".." { names.append(name) }
                }
                closedir(dir)
                for name in names { removeTree(path + "/" + name) }
            }
            rmdir(path)
        } else {
            unlink(path)
        }
    }
}
