#if canImport(Glibc)
import Glibc
#endif

/// Tells systemd how the service is doing (`sd_notify`), without linking libsystemd: one datagram to
/// `$NOTIFY_SOCKET`. Does nothing when the hub was not started by systemd with `Type=notify`.
public struct SystemdNotifier: Sendable {
    let socketPath: String?

    /// Reads `$NOTIFY_SOCKET`.
    public init() {
        socketPath = getenv("NOTIFY_SOCKET").map { String(cString: $0) }
    }

    public init(socketPath: String?) {
        self.socketPath = socketPath
    }

    public var isActive: Bool { socketPath != nil }

    /// How often systemd expects `WATCHDOG=1`, if it watches this service (half of `WatchdogSec`).
    public static var watchdogInterval: Duration? {
        guard let usec = getenv("WATCHDOG_USEC").flatMap({ Int64(String(cString: $0)) }), usec > 0 else { return nil }
        return .microseconds(usec / 2)
    }

    public func notify(_ state: String) {
        guard var path = socketPath, !path.isEmpty else { return }
        if path.hasPrefix("@") { path = "\0" + path.dropFirst() }  // abstract namespace
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (path.hasPrefix("\0") ? 0 : 1))
        let message = Array(state.utf8)
        _ = withUnsafePointer(to: &address) { a in
            a.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                message.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL), sa, length) }
            }
        }
    }
}
