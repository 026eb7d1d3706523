// Spawning and reaping the tools the fixtures need (mosquitto, mosquitto_passwd, openssl), with posix_spawn.
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HearthSync

/// A fixture could not be set up: a tool is missing or failed, a broker did not come up.
public struct TestFixtureError: Error, CustomStringConvertible, Sendable {
    public var description: String

    public init(_ description: String) {
        self.description = description
    }
}

public enum ChildProcess {
    /// The first executable among `candidates` (absolute paths or names looked up in `PATH`).
    public static func locate(_ candidates: [String]) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for candidate in candidates where !candidate.isEmpty {
            if candidate.contains("/") {
                if access(candidate, X_OK) == 0 { return candidate }
                continue
            }
            for directory in path.split(separator: ":") {
                let full = "\(directory)/\(candidate)"
                if access(full, X_OK) == 0 { return full }
            }
        }
        return nil
    }

    /// Spawns `executable` with `arguments`, stdin from /dev/null, stdout appended to `outputFile` and stderr
    /// to `errorFile` (or to `outputFile` too), in `environment` (or this process's).
    public static func spawn(_ executable: String, _ arguments: [String], outputFile: String, errorFile: String? = nil,
                             environment: [String]? = nil) throws -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputFile, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        if let errorFile {
            posix_spawn_file_actions_addopen(&actions, 2, errorFile, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        } else {
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
        }

        // The test runner's threads may block or ignore signals, and a spawned child inherits both: a broker
        // that ignores SIGTERM would never stop gracefully. Start it with an empty mask and default handlers.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var emptySet = sigset_t()
        sigemptyset(&emptySet)
        posix_spawnattr_setsigmask(&attributes, &emptySet)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGCHLD, SIGUSR1, SIGUSR2] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        let envp: [UnsafeMutablePointer<CChar>?]? = environment.map { $0.map { strdup($0) } + [nil] }
        defer { for variable in envp ?? [] { free(variable) } }
        var pid = pid_t()
        let rc = argv.withUnsafeBufferPointer { argv in
            guard let envp else {
                return posix_spawn(&pid, executable, &actions, &attributes, argv.baseAddress!, environ)
            }
            return envp.withUnsafeBufferPointer {
                posix_spawn(&pid, executable, &actions, &attributes, argv.baseAddress!, $0.baseAddress!)
            }
        }
        guard rc == 0 else {
            throw TestFixtureError("cannot spawn \(executable): \(String(cString: strerror(rc)))")
        }
        return pid
    }

    /// Runs a tool to completion; throws with its output if it exits non-zero.
    public static func run(_ executable: String, _ arguments: [String], outputFile: String) throws {
        let pid = try spawn(executable, arguments, outputFile: outputFile)
        let status = waitForExit(pid)
        guard status == 0 else {
            let output = (try? String(contentsOfFile: outputFile, encoding: .utf8)) ?? ""
            throw TestFixtureError(
                "\(executable) \(arguments.joined(separator: " ")) exited with \(status):\n\(output)")
        }
    }

    /// Blocks until `pid` exits; returns its exit code (128 + signal when killed).
    @discardableResult
    public static func waitForExit(_ pid: Int32) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        return decode(status)
    }

    /// Waits up to `timeout` for `pid` to exit and returns its exit code; after that, kills it and returns `nil`.
    /// For a synchronous caller: it polls, as there is no waitpid with a timeout.
    public static func waitForExit(_ pid: Int32, within timeout: Duration) -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let status = exitStatusIfExited(pid) { return status }
            usleep(10_000)
        }
        if let status = exitStatusIfExited(pid) { return status }
        kill(pid, SIGKILL)
        waitForExit(pid)
        return nil
    }

    /// The exit code if `pid` has exited (and reaps it), else `nil`.
    public static func exitStatusIfExited(_ pid: Int32) -> Int32? {
        var status: Int32 = 0
        let rc = waitpid(pid, &status, WNOHANG)
        if rc == pid { return decode(status) }
        if rc == -1 && errno == ECHILD { return -1 }
        return nil
    }

    private static func decode(_ status: Int32) -> Int32 {
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }

    /// A fresh private directory under the temporary directory.
    static func makeTemporaryDirectory(prefix: String) throws -> String {
        let base = ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp"
        var template = Array("\(base)/\(prefix)-XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw TestFixtureError("mkdtemp in \(base): \(String(cString: strerror(errno)))")
        }
        return String(cString: made)
    }
}

enum LoopbackSocket {
    /// A port on 127.0.0.1 that was free a moment ago (bound with port 0, then released).
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestFixtureError("socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        return try bindToFreePort(fd)
    }

    /// Binds `fd` to 127.0.0.1 on a port the kernel picks; returns the port.
    static func bindToFreePort(_ fd: Int32) throws -> Int {
        var address = loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else { throw TestFixtureError("bind: \(String(cString: strerror(errno)))") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Whether something accepts TCP connections on `host`:`port` (an IPv4 address, 127.0.0.1 unless given).
    static func accepts(port: Int, host: String = "127.0.0.1") -> Bool {
        guard let fd = try? connect(port: port, host: host) else { return false }
        close(fd)
        return true
    }

    /// A blocking TCP socket connected to `host`:`port` (an IPv4 address, 127.0.0.1 unless given).
    static func connect(port: Int, host: String = "127.0.0.1") throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestFixtureError("socket: \(String(cString: strerror(errno)))") }
        var address = loopback(port: port)
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            close(fd)
            throw TestFixtureError("'\(host)' is not an IPv4 address")
        }
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard rc == 0 else {
            let error = errno
            close(fd)
            throw TestFixtureError("connect to \(host):\(port): \(String(cString: strerror(error)))")
        }
        return fd
    }

    static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        return address
    }
}

/// A child process for a test (a CLI client to kill abruptly, say), killed when released.
public final class TestProcess: Sendable {
    public let pid: Int32
    public let outputFile: String
    private let reaped = Locked(false)

    /// Spawns `executable`; its output goes to a temporary file.
    public init(_ executable: String, _ arguments: [String]) throws {
        let directory = try ChildProcess.makeTemporaryDirectory(prefix: "hearth-process")
        outputFile = "\(directory)/output.log"
        pid = try ChildProcess.spawn(executable, arguments, outputFile: outputFile)
    }

    deinit {
        kill()
        try? FileManager.default.removeItem(atPath: URL(fileURLWithPath: outputFile).deletingLastPathComponent().path)
    }

    /// Sends SIGKILL (no chance to say goodbye) and reaps the process.
    public func kill() {
        send(SIGKILL)
    }

    /// Sends `signal` and reaps the process.
    public func send(_ signal: Int32) {
        let alreadyReaped = reaped.withLock { reaped in
            defer { reaped = true }
            return reaped
        }
        guard !alreadyReaped else { return }
        _ = Glibc.kill(pid, signal)
        ChildProcess.waitForExit(pid)
    }
}

extension TestBroker {
    /// A loopback port nothing listens on, for "connection refused" tests: bound, never listening, by this process for
    /// its whole life. A port only probed and released could be given to another test's broker or stalled listener
    /// meanwhile, and the "refused" connection would then be accepted, or hang until its deadline.
    public static func unusedLoopbackPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestFixtureError("socket: \(String(cString: strerror(errno)))") }
        do {
            let port = try LoopbackSocket.bindToFreePort(fd)
            reservedPorts.withLock { $0.append(fd) }  // never closed: the port stays this process's
            return port
        } catch {
            close(fd)
            throw error
        }
    }

    private static let reservedPorts = Locked<[Int32]>([])
}
