// A stand-in for an MQTT 3.1.1-only broker, for the protocol fallback test: mosquitto 2.0 cannot be told to refuse
// MQTT 5, so this proxy does. It answers an MQTT 5 CONNECT as a 3.1.1 broker must (CONNACK return code 1,
// "unacceptable protocol version", then close) and pipes every other connection to the real broker.
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HearthSync

/// A TCP proxy in front of a ``TestBroker`` that refuses MQTT 5 connections like a 3.1.1-only broker.
public final class V5RefusingProxy: Sendable {
    public let host = "127.0.0.1"
    public let port: Int
    private let listener: Int32
    private let state = Locked(State())

    private struct State {
        var refusedV5 = 0
        var forwarded = 0
        var sockets: Set<Int32> = []
        var stopped = false
    }

    /// How many MQTT 5 CONNECTs were refused so far.
    public var refusedV5Connections: Int { state.withLock { $0.refusedV5 } }
    /// How many connections were forwarded to the broker so far.
    public var forwardedConnections: Int { state.withLock { $0.forwarded } }

    public init(upstreamPort: Int) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestFixtureError("socket: \(String(cString: strerror(errno)))") }
        var address = LoopbackSocket.loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && listen(fd, 16) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard ok else {
            close(fd)
            throw TestFixtureError("proxy listen: \(String(cString: strerror(errno)))")
        }
        listener = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread.detachNewThread { [self] in acceptLoop(upstreamPort: upstreamPort) }
    }

    deinit {
        stop()
    }

    /// Closes the listener and every proxied connection.
    public func stop() {
        let sockets = state.withLock { state -> Set<Int32> in
            guard !state.stopped else { return [] }
            state.stopped = true
            return state.sockets
        }
        shutdown(listener, Int32(SHUT_RDWR))
        for socket in sockets { shutdown(socket, Int32(SHUT_RDWR)) }
    }

    private func track(_ socket: Int32) -> Bool {
        state.withLock { state in
            guard !state.stopped else { return false }
            state.sockets.insert(socket)
            return true
        }
    }

    private func release(_ socket: Int32) {
        state.withLock { _ = $0.sockets.remove(socket) }
        close(socket)
    }

    private func acceptLoop(upstreamPort: Int) {
        defer { close(listener) }
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                return
            }
            guard track(client) else {
                close(client)
                return
            }
            Thread.detachNewThread { [self] in handle(client, upstreamPort: upstreamPort) }
        }
    }

    private func handle(_ client: Int32, upstreamPort: Int) {
        guard let connect = readPacket(client), connect.first == 0x10 else {
            release(client)
            return
        }
        // Variable header of CONNECT: 00 04 'M' 'Q' 'T' 'T' <level>; it follows the fixed header.
        var headerLength = 2
        while headerLength < connect.count && connect[headerLength - 1] & 0x80 != 0 { headerLength += 1 }
        let levelIndex = headerLength + 6
        if levelIndex < connect.count && connect[levelIndex] == 5 {
            state.withLock { $0.refusedV5 += 1 }
            writeAll(client, [0x20, 0x02, 0x00, 0x01])
            release(client)
            return
        }
        guard let upstream = try? LoopbackSocket.connect(port: upstreamPort), track(upstream) else {
            release(client)
            return
        }
        state.withLock { $0.forwarded += 1 }
        writeAll(upstream, connect)
        let done = Locked(0)
        let finish: @Sendable () -> Void = { [self] in
            // The second direction to end closes both sockets.
            if done.withLock({ count in count += 1; return count }) == 2 {
                release(client)
                release(upstream)
            }
        }
        Thread.detachNewThread { [self] in
            pump(from: upstream, to: client)
            finish()
        }
        pump(from: client, to: upstream)
        finish()
    }

    private func pump(from source: Int32, to destination: Int32) {
        var buffer = [UInt8](repeating: 0, count: 16384)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            if !writeAll(destination, Array(buffer[0..<count])) { break }
        }
        shutdown(destination, Int32(SHUT_WR))
        shutdown(source, Int32(SHUT_RD))
    }

    /// Reads one whole MQTT packet (fixed header, remaining length, body).
    private func readPacket(_ socket: Int32) -> [UInt8]? {
        var packet: [UInt8] = []
        func readByte() -> UInt8? {
            var byte: UInt8 = 0
            while true {
                let count = read(socket, &byte, 1)
                if count == 1 { return byte }
                if count < 0 && errno == EINTR { continue }
                return nil
            }
        }
        guard let type = readByte() else { return nil }
        packet.append(type)
        var remaining = 0
        var multiplier = 1
        for _ in 0..<4 {
            guard let byte = readByte() else { return nil }
            packet.append(byte)
            remaining += Int(byte & 0x7f) * multiplier
            multiplier *= 128
            if byte & 0x80 == 0 { break }
        }
        for _ in 0..<remaining {
            guard let byte = readByte() else { return nil }
            packet.append(byte)
        }
        return packet
    }

    @discardableResult
    private func writeAll(_ socket: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let count = bytes.withUnsafeBytes { write(socket, $0.baseAddress! + offset, $0.count - offset) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return false }
            offset += count
        }
        return true
    }
}
