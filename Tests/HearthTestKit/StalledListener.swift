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
            guard listen(listener, 0) == 0 else { throw TestFixtureError("listen: \(String(cString: strerror(errno)))") }
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
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            fillers.append(fd)
        }
        sockets = [listener] + fillers
    }

    deinit {
        for fd in sockets { close(fd) }
    }
}
