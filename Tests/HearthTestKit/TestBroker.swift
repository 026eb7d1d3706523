// A private mosquitto for one test: its own free loopback port, temporary config, log and (optionally) password
// file and TLS certificates, killed when the fixture is released. Tests run in parallel, so never share one.
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HearthSync

/// A real mosquitto broker on 127.0.0.1 for the duration of a test.
///
/// The executable is `$HEARTH_MOSQUITTO`, else `/usr/sbin/mosquitto`, else `mosquitto` on `PATH`.
public final class TestBroker: Sendable {
    /// How the broker's single listener is secured.
    public enum Security: Sendable {
        /// Plain TCP.
        case none
        /// TLS with a certificate from ``TestBroker/certificates``; clients are not asked for one.
        case tls
        /// TLS, and clients must present a certificate signed by the test CA.
        case mutualTLS
    }

    /// Where clients reach it: 127.0.0.1, or the namespace's address for a broker in a network namespace.
    public let host: String
    /// The listener's port; the same across ``restart()``.
    public let port: Int
    /// The broker's private temporary directory (config, log, password file, certificates); removed on release.
    public let directory: String
    /// The test PKI, when the broker was created with TLS.
    public let certificates: TestCertificates?
    public let executable: String

    private let configFile: String
    private let pid: Locked<pid_t?>
    private let launcher: [String]

    /// Starts a broker and waits until it accepts connections.
    ///
    /// - Parameters:
    ///   - users: if not empty, anonymous clients are refused and these username/password pairs are accepted.
    ///   - security: plain TCP, TLS or TLS with client certificates (certificates are made with `openssl`).
    ///   - extraConfiguration: more `mosquitto.conf` lines.
    ///   - namespace: run it in this network namespace, listening on the namespace's address (a site of its own, whose
    ///     link to the host the test can cut); on 127.0.0.1 otherwise.
    ///   - preamble: `mosquitto.conf` lines before the first listener (`per_listener_settings true`).
    public init(users: [String: String] = [:], security: Security = .none, extraConfiguration: [String] = [],
                namespace: NetworkNamespace? = nil, preamble: [String] = []) throws {
        let environment = ProcessInfo.processInfo.environment
        guard let executable = ChildProcess.locate([environment["HEARTH_MOSQUITTO"] ?? "", "/usr/sbin/mosquitto",
                                                    "mosquitto"]) else {
            throw TestFixtureError("mosquitto not found: set HEARTH_MOSQUITTO or apt-get install mosquitto")
        }
        self.executable = executable
        host = namespace?.address ?? "127.0.0.1"
        launcher = namespace?.launcher ?? []
        let directory = try ChildProcess.makeTemporaryDirectory(prefix: "hearth-broker")
        self.directory = directory
        configFile = "\(directory)/mosquitto.conf"
        pid = Locked(nil)

        var lines = [
            // As every broker Hearth ships: without it a wildcard subscriber waits ~40 ms per answer
            // (docs/mqtt-api.md).
            "set_tcp_nodelay true",
            "allow_anonymous \(users.isEmpty)",
            "persistence false",
            "log_dest file \(directory)/mosquitto.log",
            "log_type all",
            "connection_messages true",
        ]
        // Started as root, mosquitto drops to user "mosquitto", which could not read this private directory.
        if geteuid() == 0 { lines.append("user root") }
        if !users.isEmpty {
            guard let passwd = ChildProcess.locate(
                [URL(fileURLWithPath: executable).deletingLastPathComponent().path + "/mosquitto_passwd",
                 "mosquitto_passwd", "/usr/bin/mosquitto_passwd"]) else {
                throw TestFixtureError("mosquitto_passwd not found")
            }
            let passwordFile = "\(directory)/passwd"
            for (index, (user, password)) in users.sorted(by: { $0.key < $1.key }).enumerated() {
                try ChildProcess.run(passwd, (index == 0 ? ["-c"] : []) + ["-b", passwordFile, user, password],
                                     outputFile: "\(directory)/mosquitto_passwd.log")
            }
            lines.append("password_file \(passwordFile)")
        }
        var tlsLines: [String] = []
        if security != .none {
            let certificates = try TestCertificates.make(in: "\(directory)/pki")
            self.certificates = certificates
            tlsLines = [
                "cafile \(certificates.caFile)",
                "certfile \(certificates.serverCertificateFile)",
                "keyfile \(certificates.serverKeyFile)",
                "require_certificate \(security == .mutualTLS)",
            ]
        } else {
            certificates = nil
        }

        // The port was free when probed, but a parallel test may grab it first: retry with another one.
        var lastError: (any Error)?
        for _ in 0..<5 {
            let port = try LoopbackSocket.freePort()
            let configuration = (preamble + ["listener \(port) \(host)"] + tlsLines + lines + extraConfiguration)
                .joined(separator: "\n") + "\n"
            try configuration.write(toFile: configFile, atomically: true, encoding: .utf8)
            do {
                pid.withLock { $0 = nil }
                let started = try Self.launch(executable: executable, configFile: configFile, port: port,
                                              directory: directory, host: host, launcher: launcher)
                pid.withLock { $0 = started }
                self.port = port
                return
            } catch {
                lastError = error
            }
        }
        try? FileManager.default.removeItem(atPath: directory)
        throw lastError ?? TestFixtureError("mosquitto did not start")
    }

    deinit {
        if let pid = pid.withLock({ $0 }) {
            kill(pid, SIGKILL)
            ChildProcess.waitForExit(pid)
        }
        if ProcessInfo.processInfo.environment["HEARTH_KEEP_BROKER_DIRS"] == nil {
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    /// Whether the broker process is running.
    public var isRunning: Bool { pid.withLock { $0 != nil } }

    /// Stops the broker: SIGTERM (it closes every client connection), or SIGKILL when `graceful` is false; waits
    /// for the process to exit.
    public func stop(graceful: Bool = true) {
        guard let pid = pid.withLock({ state -> pid_t? in
            defer { state = nil }
            return state
        }) else { return }
        kill(pid, graceful ? SIGTERM : SIGKILL)
        for _ in 0..<500 {
            if ChildProcess.exitStatusIfExited(pid) != nil { return }
            usleep(10_000)
        }
        kill(pid, SIGKILL)
        ChildProcess.waitForExit(pid)
    }

    /// Starts the broker again on the same port (stopping it first if it is running).
    public func restart() throws {
        stop()
        var lastError: (any Error)?
        // The port may linger in TIME_WAIT for a moment; mosquitto sets SO_REUSEADDR, so retries are rare.
        for _ in 0..<20 {
            do {
                let started = try Self.launch(executable: executable, configFile: configFile, port: port,
                                              directory: directory, host: host, launcher: launcher)
                pid.withLock { $0 = started }
                return
            } catch {
                lastError = error
                usleep(100_000)
            }
        }
        throw lastError ?? TestFixtureError("mosquitto did not restart")
    }

    /// The broker's log so far (handy in a failing test's message).
    public var log: String {
        (try? String(contentsOfFile: "\(directory)/mosquitto.log", encoding: .utf8)) ?? ""
    }

    private static func launch(executable: String, configFile: String, port: Int, directory: String, host: String,
                               launcher: [String]) throws -> pid_t {
        let output = "\(directory)/mosquitto.out"
        let logFile = "\(directory)/mosquitto.log"
        // What this start logs comes after what earlier starts (a restart) left in the log.
        let logged = ((try? FileManager.default.attributesOfItem(atPath: logFile))?[.size] as? Int) ?? 0
        func thisStartsLog() -> String {
            guard let data = FileManager.default.contents(atPath: logFile), data.count > logged else { return "" }
            return String(decoding: data.dropFirst(logged), as: UTF8.self)
        }
        // The launcher `exec`s mosquitto, so the pid is the broker's.
        let command = launcher + [executable, "-c", configFile]
        let pid = try ChildProcess.spawn(command[0], Array(command.dropFirst()), outputFile: output)
        // Up to 10 s for the listener: generous for a loaded Pi; usually a few milliseconds. Listening is read from
        // this broker's own log, not from a connection to the port: the port was free when probed, but another test's
        // broker may have been given it since, and a connection would then reach that one. The loser fails to bind and
        // exits, and the caller tries another port.
        for _ in 0..<1000 {
            if let status = ChildProcess.exitStatusIfExited(pid) {
                let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
                throw TestFixtureError(
                    "mosquitto exited with \(status) before listening on \(port):\n\(text)\n\(thisStartsLog())")
            }
            let log = thisStartsLog()
            if log.contains("Opening ipv4 listen socket on port \(port).") && log.contains(" running"),
               LoopbackSocket.accepts(port: port, host: host) {
                return pid
            }
            usleep(10_000)
        }
        kill(pid, SIGKILL)
        ChildProcess.waitForExit(pid)
        throw TestFixtureError("mosquitto did not listen on \(port) within 10 s")
    }
}
