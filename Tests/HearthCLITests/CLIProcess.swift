// Runs the real `hearth` binary as a child process, with stdout and stderr captured separately (through
// HearthTestKit's ChildProcess, which starts children with default signal handling).
import Foundation
import HearthTestKit
import Testing
#if canImport(Glibc)
import Glibc
#endif
import HearthSync

struct CLIResult: CustomStringConvertible {
    var status: Int32
    var stdout: String
    var stderr: String

    var description: String { "exit \(status)\n--- stdout\n\(stdout)--- stderr\n\(stderr)" }
}

enum CLI {
    /// The `hearth` executable built next to this test bundle (or in `$HEARTH_BIN_DIR`).
    static let executable: String = (try? BuiltProduct.path("hearth")) ?? "hearth"

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
    private let exitStatus = Locked<Int32?>(nil)

    init(_ arguments: [String], environment: [String: String] = [:]) throws {
        directory = try FileManager.default.url(for: .itemReplacementDirectory, in: .userDomainMask,
                                                appropriateFor: URL(fileURLWithPath: NSTemporaryDirectory()),
                                                create: true).path
        do {
            pid = try ChildProcess.spawn(CLI.executable, arguments, outputFile: "\(directory)/stdout",
                                         errorFile: "\(directory)/stderr", environment: CLI.environment(environment))
        } catch {
            throw CLIError("cannot spawn \(CLI.executable): \(error) (build it, or set HEARTH_BIN_DIR)")
        }
    }

    deinit {
        if exitStatus.withLock({ $0 }) == nil {
            kill(pid, SIGKILL)
            ChildProcess.waitForExit(pid)
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
            if let status = exitStatus.withLock({ $0 }) {
                return CLIResult(status: status, stdout: stdout, stderr: stderr)
            }
            if let status = ChildProcess.exitStatusIfExited(pid) {
                exitStatus.withLock { $0 = status }
                continue
            }
            if !killed && (ContinuousClock.now >= deadline || Task.isCancelled) {
                killed = true
                kill(pid, SIGKILL)
                Issue.record("hearth did not exit within \(timeout) (or the test's time limit ran out); killed it")
            }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Waits until stderr contains `text`; false after a generous timeout.
    func waitForStderr(containing text: String, within timeout: Duration = .seconds(30)) async -> Bool {
        await poll(within: timeout, every: .milliseconds(10)) {
            stderr.contains(text) || exitStatus.withLock { $0 } != nil
        } && stderr.contains(text)
    }
}

struct CLIError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
