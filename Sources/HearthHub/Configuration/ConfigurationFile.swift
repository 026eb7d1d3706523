// The configuration file a hub was started with, as an administrator edits it from the web page: a new text is
// checked exactly as `hearthd check-config` checks a file (`HubDaemon.checkReport`, from a copy written beside the
// file, so its board file and `secrets.yaml` are found as the file's own would be), and only a text without problems
// is written — atomically, over the file itself. The hub then restarts (`HubRestart`) to run it.
//
// The files beside it (same directory, the file's name and a suffix):
// - `.last-started`: the text of the last start that got as far as serving — written at each such start;
// - `.pending`: present from a save until the next start gets that far; a start that fails while it is present puts
//   `.last-started` back, keeps the text that failed as `.rejected`, logs why and restarts.
import HearthConfig
import HearthSync
public import Logging
#if canImport(Glibc)
import Glibc
#endif

/// Why a configuration text could not be written or read back (the disk, permissions).
public struct ConfigurationFileError: Error, Sendable, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}

public final class ConfigurationFile: Sendable {
    /// The file the hub was started with (`hearthd run --config`).
    public let path: String
    /// The text the hub read at start: the configuration as it runs.
    public let startedText: [UInt8]
    let hardware: any HardwareProvider
    /// Saves are one at a time (held across the write: only administrators' saves wait on it).
    private let saving = Locked(0)

    /// The largest configuration text taken (a 1,000-device configuration is about a tenth of it).
    public static let maximumSize = 1 << 20

    public var lastStartedPath: String { path + ".last-started" }
    public var pendingPath: String { path + ".pending" }
    public var rejectedPath: String { path + ".rejected" }

    /// Reads the file at `path` as the hub starts with it.
    public init(path: String, hardware: any HardwareProvider) {
        self.path = path
        self.hardware = hardware
        startedText = Self.read(path) ?? []
    }

    /// Checks `text` as if it were the file, writing nothing of it: the report `hearthd check-config` prints, its
    /// problems named at this file.
    public func check(_ text: [UInt8]) throws(ConfigurationFileError) -> HubDaemon.CheckReport {
        guard text.count <= Self.maximumSize else {
            let problem = ConfigProblem(
                file: path, line: 0, path: "",
                message: "the text is \(text.count) bytes; a configuration is at most \(Self.maximumSize)")
            return HubDaemon.CheckReport(problems: [problem], warnings: [], summary: [])
        }
        let candidate = Self.sibling(of: path, suffix: ".check-\(getpid())-\(Self.counter.next())")
        try Self.write(text, to: candidate, mode: 0o600, flush: false)
        defer { unlink(candidate) }
        var report = HubDaemon.checkReport(configFile: candidate, hardware: hardware)
        let name = Self.baseName(candidate), own = Self.baseName(path)
        func renamed(_ p: ConfigProblem) -> ConfigProblem {
            var p = p
            if p.file == candidate { p.file = path }
            p.message = p.message.replacing(candidate, with: path).replacing(name, with: own)
            return p
        }
        report.problems = report.problems.map(renamed)
        report.warnings = report.warnings.map(renamed)
        report.summary = report.summary.map { $0.replacing(candidate, with: path).replacing(name, with: own) }
        return report
    }

    /// Checks `text` and, when it has no problem, writes it over the file (atomically: a copy flushed, then renamed)
    /// and marks it pending until a start serves with it. Returns the check's report; nothing is written when it has
    /// problems. The caller restarts the hub to apply it.
    public func save(_ text: [UInt8]) throws(ConfigurationFileError) -> HubDaemon.CheckReport {
        try saving.withLock { _ throws(ConfigurationFileError) -> HubDaemon.CheckReport in
            let report = try check(text)
            guard report.problems.isEmpty else { return report }
            try Self.write([], to: pendingPath, mode: 0o644, flush: true)
            try Self.write(text, to: path, mode: Self.mode(of: path) ?? 0o644, flush: true)
            return report
        }
    }

    /// Whether a saved text waits for its first start.
    public var isPending: Bool { access(pendingPath, F_OK) == 0 }

    /// Called once a start has got as far as serving: its text becomes the last that started, and a pending save is
    /// settled.
    public func started(logger: Logger) {
        if Self.read(lastStartedPath) != startedText {
            do throws(ConfigurationFileError) {
                try Self.write(startedText, to: lastStartedPath, mode: Self.mode(of: path) ?? 0o644, flush: true)
            } catch {
                logger.warning("the configuration that started cannot be kept as \(lastStartedPath): \(error)")
            }
        }
        if isPending {
            unlink(pendingPath)
            logger.notice("the configuration saved from the web page has started")
        }
    }

    /// At a start that failed: when a saved text was pending and the last one that started is kept, puts that one back
    /// (the failed text kept as `.rejected`) and returns true — the caller restarts to run it. False otherwise.
    public func rollBack(logger: Logger) -> Bool {
        guard isPending else { return false }
        unlink(pendingPath)
        guard let last = Self.read(lastStartedPath) else {
            logger.critical(
                """
                the configuration saved from the web page did not start, and there is no \(lastStartedPath) to go back \
                to
                """)
            return false
        }
        do throws(ConfigurationFileError) {
            if let failed = Self.read(path) { try Self.write(failed, to: rejectedPath, mode: 0o600, flush: false) }
            try Self.write(last, to: path, mode: Self.mode(of: path) ?? 0o644, flush: true)
        } catch {
            logger.critical(
                "the configuration saved from the web page did not start and cannot be rolled back: \(error)")
            return false
        }
        logger.critical(
            """
            the configuration saved from the web page did not start: it was rolled back to the last one that started \
            (the one that failed is kept as \(rejectedPath)); restarting
            """)
        return true
    }

    // MARK: Files

    private static let counter = Counter()

    private final class Counter: Sendable {
        private let value = Locked(0)
        func next() -> Int { value.withLock { $0 += 1; return $0 } }
    }

    static func baseName(_ path: String) -> String {
        path.lastIndex(of: "/").map { String(path[path.index(after: $0)...]) } ?? path
    }

    /// A hidden file in the same directory: the same relative paths, the same file system for the rename.
    static func sibling(of path: String, suffix: String) -> String {
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { String(path[...$0]) } ?? ""
        return directory + "." + baseName(path) + suffix
    }

    static func mode(of path: String) -> mode_t? {
        var s = stat()
        guard stat(path, &s) == 0 else { return nil }
        return s.st_mode & 0o777
    }

    static func read(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while out.count <= maximumSize {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return n == 0 ? out : nil }
            out += buffer[..<n]
        }
        return nil
    }

    /// Writes `bytes` to a hidden copy beside `path` and renames it over `path`; with `flush`, the copy and then the
    /// directory are flushed, so after a power cut the file is the old text or the new, whole.
    static func write(_ bytes: [UInt8], to path: String, mode: mode_t, flush: Bool) throws(ConfigurationFileError) {
        let temporary = sibling(of: path, suffix: ".new-\(getpid())-\(counter.next())")
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard fd >= 0 else { throw ConfigurationFileError("cannot write \(temporary): \(errorText())") }
        var written = 0
        var failure: ConfigurationFileError?
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, $0.count - written) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { failure = ConfigurationFileError("cannot write \(temporary): \(errorText())"); break }
            written += n
        }
        if failure == nil && flush && fsync(fd) != 0 {
            failure = ConfigurationFileError("cannot flush \(temporary): \(errorText())")
        }
        close(fd)
        if let failure {
            unlink(temporary)
            throw failure
        }
        guard rename(temporary, path) == 0 else {
            let text = errorText()
            unlink(temporary)
            throw ConfigurationFileError("cannot replace \(path): \(text)")
        }
        if flush {
            let directory = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
            let dfd = open(directory.isEmpty ? "/" : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            if dfd >= 0 {
                fsync(dfd)
                close(dfd)
            }
        }
    }

    private static func errorText() -> String { String(cString: strerror(errno)) }
}
