// Running the project's own executables (hearthd, hearth) from a test, as a user would.
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import HearthSync

/// One of the package's executables, built next to the test bundle.
public enum BuiltProduct {
    /// The path of `name` (e.g. `hearthd`) in the build directory the tests run from, or `$HEARTH_BIN_DIR`.
    public static func path(_ name: String) throws -> String {
        var directories: [String] = []
        if let dir = ProcessInfo.processInfo.environment["HEARTH_BIN_DIR"] { directories.append(dir) }
        var bundle = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        for _ in 0..<4 {
            bundle.deleteLastPathComponent()
            directories.append(bundle.path)
        }
        for dir in directories where access("\(dir)/\(name)", X_OK) == 0 { return "\(dir)/\(name)" }
        throw TestFixtureError(
            "\(name) is not built next to the tests (looked in \(directories.joined(separator: ", "))); run swift "
                + "build first")
    }

    /// Runs `name` to completion; its exit status and everything it printed. One that has not exited after a
    /// generous `timeout` is killed (exit status 128 + SIGKILL) and says so in its output, so a hung product fails
    /// the test instead of hanging it.
    public static func run(_ name: String, _ arguments: [String], timeout: Duration = .seconds(60)) throws
        -> (status: Int32, output: String) {
        let directory = try ChildProcess.makeTemporaryDirectory(prefix: "hearth-run")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let output = "\(directory)/output.log"
        let pid = try ChildProcess.spawn(try path(name), arguments, outputFile: output)
        let status = ChildProcess.waitForExit(pid, within: timeout)
        let printed = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        return (
            status ?? 128 + SIGKILL, status == nil ? printed + "\n[killed: still running after \(timeout)]" : printed
        )
    }
}

/// A long-running product (the daemon) started by a test: signal it, wait for it, read what it logged.
public final class RunningProduct: Sendable {
    public let pid: Int32
    public let outputFile: String
    private let status = Locked<Int32?>(nil)

    /// - Parameter launcher: a command that runs the product as its last arguments and becomes it (`exec`s it),
    ///   so that `pid` is the product's: e.g. ``NetworkNamespace/launcher`` to run it in a network namespace.
    public init(_ name: String, _ arguments: [String], outputFile: String, launcher: [String] = []) throws {
        self.outputFile = outputFile
        let command = launcher + [try BuiltProduct.path(name)] + arguments
        pid = try ChildProcess.spawn(command[0], Array(command.dropFirst()), outputFile: outputFile)
    }

    deinit {
        if status.withLock({ $0 }) == nil {
            _ = Glibc.kill(pid, SIGKILL)
            ChildProcess.waitForExit(pid)
        }
    }

    public var output: String { (try? String(contentsOfFile: outputFile, encoding: .utf8)) ?? "" }

    public func signal(_ signal: Int32) { _ = Glibc.kill(pid, signal) }

    /// The exit status once the process has ended (waiting up to `timeout`), else nil.
    public func exitStatus(within timeout: Duration = .seconds(20)) async -> Int32? {
        _ = await poll(within: timeout, every: .milliseconds(10)) {
            if status.withLock({ $0 }) != nil { return true }
            guard let s = ChildProcess.exitStatusIfExited(pid) else { return false }
            status.withLock { $0 = s }
            return true
        }
        return status.withLock { $0 }
    }

    /// SIGKILL: no chance to save or say goodbye.
    public func kill() async {
        signal(SIGKILL)
        _ = await exitStatus()
    }
}
