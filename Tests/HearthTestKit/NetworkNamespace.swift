// A network namespace of its own for one test, joined to this machine by a veth pair: a process started in it
// (through `launcher`) reaches the host only over that link, and `cut()` makes the link drop every packet in
// both directions without closing anything, as a pulled cable or a dead Wi-Fi access point does — the failure a
// clean disconnect never shows. The drop rules are iptables rules inside the namespace, so they vanish with it
// and never touch the host's firewall. Needs root, `ip` (iproute2) and `iptables-legacy` (scripts/setup).
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

public final class NetworkNamespace: Sendable {
    public let name: String
    /// The host's end of the link, and its address: where a process in the namespace finds the host.
    public let hostInterface: String
    public let hostAddress: String
    /// The namespace's end, and its address.
    public let interface: String
    public let address: String
    /// Prepend to a command to run it inside the namespace (it `exec`s the command: the pid stays the command's).
    public var launcher: [String] { [Self.ip, "netns", "exec", name] }

    static let ip = ChildProcess.locate(["/usr/sbin/ip", "/sbin/ip", "ip"]) ?? "ip"
    let iptables: String
    private let directory: String

    /// Creates the namespace and the link, with a /30 of 10.231.0.0/16 picked from the process id and a counter
    /// so that tests running side by side get different ones.
    public init() throws {
        guard geteuid() == 0 else { throw TestFixtureError("a network namespace needs root") }
        guard
            let iptables = ChildProcess.locate(["/usr/sbin/iptables-legacy", "/sbin/iptables-legacy", "iptables-legacy"]
            )
        else {
            throw TestFixtureError("iptables-legacy not found: scripts/setup installs it (apt-get install iptables)")
        }
        self.iptables = iptables
        let n = Self.counter.add(1, ordering: .relaxed).newValue
        let tag = "\(getpid() % 10000)x\(n)"
        name = "hearth-\(tag)"
        hostInterface = "hh\(tag)"
        interface = "hn\(tag)"
        let block = (Int(getpid()) * 16 + n) % 16384
        hostAddress = "10.231.\(block / 64).\((block % 64) * 4 + 1)"
        address = "10.231.\(block / 64).\((block % 64) * 4 + 2)"
        directory = try ChildProcess.makeTemporaryDirectory(prefix: "hearth-netns")
        do {
            try run(Self.ip, "netns", "add", name)
            try run(Self.ip, "link", "add", hostInterface, "type", "veth", "peer", "name", interface)
            try run(Self.ip, "link", "set", interface, "netns", name)
            try run(Self.ip, "addr", "add", "\(hostAddress)/30", "dev", hostInterface)
            try run(Self.ip, "link", "set", hostInterface, "up")
            try run(Self.ip, "netns", "exec", name, Self.ip, "addr", "add", "\(address)/30", "dev", interface)
            try run(Self.ip, "netns", "exec", name, Self.ip, "link", "set", interface, "up")
            try run(Self.ip, "netns", "exec", name, Self.ip, "link", "set", "lo", "up")
        } catch {
            remove()
            throw error
        }
    }

    private static let counter = Atomic<Int>(0)

    deinit { remove() }

    private func remove() {
        _ = try? run(Self.ip, "link", "del", hostInterface)  // takes the namespace's end with it
        _ = try? run(Self.ip, "netns", "del", name)
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// From now on every packet over the link is dropped, both ways; connections stay open and silent.
    ///
    /// - Parameter hostPort: only the TCP connections from the namespace to this port of the host (a bridge between two
    ///   brokers, say), leaving every other connection over the link alone.
    public func cut(hostPort: Int? = nil) throws {
        for rule in rules(hostPort: hostPort) { try run(Self.ip, ["netns", "exec", name, iptables, "-I"] + rule) }
    }

    /// Packets flow again (`hostPort` as given to ``cut(hostPort:)``).
    public func heal(hostPort: Int? = nil) throws {
        for rule in rules(hostPort: hostPort) { try run(Self.ip, ["netns", "exec", name, iptables, "-D"] + rule) }
    }

    private func rules(hostPort: Int?) -> [[String]] {
        guard let hostPort else {
            return [["INPUT", "-i", interface, "-j", "DROP"], ["OUTPUT", "-o", interface, "-j", "DROP"]]
        }
        return [["INPUT", "-i", interface, "-p", "tcp", "-s", hostAddress, "--sport", "\(hostPort)", "-j", "DROP"],
                ["OUTPUT", "-o", interface, "-p", "tcp", "-d", hostAddress, "--dport", "\(hostPort)", "-j", "DROP"]]
    }

    private func run(_ executable: String, _ arguments: String...) throws { try run(executable, arguments) }

    private func run(_ executable: String, _ arguments: [String]) throws {
        try ChildProcess.run(executable, arguments, outputFile: "\(directory)/commands.log")
    }
}
