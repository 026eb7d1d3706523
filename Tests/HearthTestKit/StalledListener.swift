import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A port on 127.0.0.1 where a TCP connect stays pending: a listener that never accepts, its one-slot
/// queue already full, so the kernel drops every further SYN and the client keeps retrying. What a
/// broker behind a dead link looks like, without sending a packet off the machine.
public final class StalledListener: Sendable {
    public let port: Int
    private let sockets: [Int32]

    public init() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw TestFixtureError("socket: \(String(cString: strerror(errno)))") }
        do {
            port = try LoopbackSocket.bindToFreePort(listener)
            guard listen(listener, 0) == 0 else {
                throw TestFixtureError("listen: \(String(cString: strerror(errno)))")
            }
        } catch {
            close(listener)
            throw error
        }
        // Fill the accept queue with connections nobody accepts (non-blocking: the last ones stay pending).
        var fillers: [Int32] = []
        for _ in 0..<3 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard fd >= 0 else { continue }
            var target = LoopbackSocket.loopback(port: port)
            _ = withUnsafePointer(to: &target) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            fillers.append(fd)
        }
        sockets = [listener] + fillers
        fillerPorts = Set(fillers.compactMap(Self.localPort))
    }

    public let fillerPorts: Set<Int>

    /// How many TCP connects to this listener are pending (SYN sent, never answered), not counting the listener's
    /// own fillers: the condition a test waits on to know that a client is stuck in its connect.
    public var pendingConnects: Int {
        connections.filter { $0.state == "02" && !fillerPorts.contains($0.localPort) }.count
    }

    /// The sockets connecting or connected to this listener, as /proc/net/tcp lists them (for a failing test's
    /// message).
    public var connections: [(localPort: Int, state: String)] {
        // Read to the end: String(contentsOfFile:) returns only the first page (about 4 KB) of a /proc table,
        // which the other tests' brokers and clients easily fill.
        guard let data = FileHandle(forReadingAtPath: "/proc/net/tcp")?.readDataToEndOfFile() else { return [] }
        let table = String(decoding: data, as: UTF8.self)
        let remote = String(format: "0100007F:%04X", port)
        return table.split(separator: "\n").dropFirst().compactMap { row in
            let fields = row.split(separator: " ")
            guard fields.count > 3, fields[2] == remote else { return nil }
            let local = fields[1].split(separator: ":")
            return (local.count == 2 ? Int(local[1], radix: 16) ?? -1 : -1, String(fields[3]))
        }
    }

    private static func localPort(_ fd: Int32) -> Int? {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let rc = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return rc == 0 ? Int(UInt16(bigEndian: address.sin_port)) : nil
    }

    deinit {
        for fd in sockets { close(fd) }
    }
}
