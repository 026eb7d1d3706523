// Runs the real `hearth` binary as a child process, with stdout and stderr captured separately.
//
// Modelled on HearthTestKit's ChildProcess (whose helpers are internal and merge the two streams): posix_spawn with an
// empty signal mask and default handlers, because the test runner's threads may block or ignore signals and a child
// inherits both.
import Foundation
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

struct CLIResult: CustomStringConvertible {
    var status: Int32
    var stdout: String
    var stderr: String

    var description: String { "exit \(status)\n--- stdout\n\(stdout)--- stderr\n\(stderr)" }
}

enum CLI {
    /// The `hearth` executable: `$HEARTH_CLI`, else the one next to this test bundle in the build products directory.
    static let executable: String = {
        if let path = ProcessInfo.processInfo.environment["HEARTH_CLI"], !path.isEmpty { return path }
        var candidates: [String] = []
        if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            candidates.append(URL(fileURLWithPath: exe).deletingLastPathComponent().appendingPathComponent("hearth").path)
        }
        let argument0 = URL(fileURLWithPath: CommandLine.arguments[0])
        candidates.append(argument0.deletingLastPathComponent().appendingPathComponent("hearth").path)
        // A bundle directory (macOS): …/debug/HearthPackageTests.xctest/Contents/MacOS/…
        var directory = argument0
        while directory.path != "/" && directory.pathExtension != "xctest" { directory.deleteLastPathComponent() }
        candidates.append(directory.deletingLastPathComponent().appendingPathComponent("hearth").path)
        return candidates.first { access($0, X_OK) == 0 } ?? candidates[0]
    }()

    /// The environment for the child: ours without HEARTH_* (the tests pass every option explicitly).
    static func environment(_ extra: [String: String]) -> [String] {
        var variables = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("HEARTH_") }
        for (key, value) in extra { variables[key] = value }
        return variables.map { "\($0.key)=\($0.value)" }
    }
}

/// A running `hearth`.
final class CLIProcess: Sendable {
    let pid: pid_t
    let directory: String
    private let exitStatus = Mutex<Int32?>(nil)

    init(_ arguments: [String], environment: [String: String] = [:]) throws {
        directory = try FileManager.default.url(for: .itemReplacementDirectory, in: .userDomainMask,
                                                appropriateFor: URL(fileURLWithPath: NSTemporaryDirectory()),
                                                create: true).path
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "\(directory)/stdout", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, "\(directory)/stderr", O_WRONLY | O_CREAT | O_TRUNC, 0o644)

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

        let argv: [UnsafeMutablePointer<CChar>?] = ([CLI.executable] + arguments).map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        let envp: [UnsafeMutablePointer<CChar>?] = CLI.environment(environment).map { strdup($0) } + [nil]
        defer { for variable in envp { free(variable) } }
        var pid = pid_t()
        let rc = argv.withUnsafeBufferPointer { argv in
            envp.withUnsafeBufferPointer { envp in
                posix_spawn(&pid, CLI.executable, &actions, &attributes, argv.baseAddress!, envp.baseAddress!)
            }
        }
        guard rc == 0 else {
            throw CLIError("cannot spawn \(CLI.executable): \(String(cString: strerror(rc))) (build it, or set HEARTH_CLI)")
        }
        self.pid = pid
    }

    deinit {
        if exitStatus.withLock({ $0 }) == nil {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    var stdout: String { (try? String(contentsOfFile: "\(directory)/stdout", encoding: .utf8)) ?? "" }
    var stderr: String { (try? String(contentsOfFile: "\(directory)/stderr", encoding: .utf8)) ?? "" }

    /// Waits for the process to exit (killing it after a generous `timeout`) and returns what it printed.
    func finish(within timeout: Duration = .seconds(60)) async -> CLIResult {
        let deadline = ContinuousClock.now + timeout
        var killed = false
        while true {
            if let status = exitStatus.withLock({ $0 }) { return CLIResult(status: status, stdout: stdout, stderr: stderr) }
            var raw: Int32 = 0
            let rc = waitpid(pid, &raw, WNOHANG)
            if rc == pid {
                let signal = raw & 0x7f
                let status = signal == 0 ? (raw >> 8) & 0xff : 128 + signal
                exitStatus.withLock { $0 = status }
                continue
            }
            if !killed && ContinuousClock.now >= deadline {
                killed = true
                kill(pid, SIGKILL)
                Issue.record("hearth did not exit within \(timeout); killed it")
            }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Waits until stderr contains `text`; false after a generous timeout.
    func waitForStderr(containing text: String, within timeout: Duration = .seconds(30)) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if stderr.contains(text) { return true }
            if exitStatus.withLock({ $0 }) != nil { return stderr.contains(text) }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return false
    }
}

struct CLIError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
