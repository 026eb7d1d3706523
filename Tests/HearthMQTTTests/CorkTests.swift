@_spi(Testing) import HearthMQTT
import HearthTestKit
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `Cork` on a real loopback TCP connection: what it sets is read back from the kernel.
@Suite(.timeLimit(.minutes(1))) struct CorkTests {
    /// A connected loopback TCP socket and its peer, closed at the end.
    final class Connection {
        let client: Int32, server: Int32, listener: Int32

        init() throws {
            let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let listening = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) == 0
                    && listen(listener, 1) == 0 && getsockname(listener, $0, &length) == 0 }
            }
            let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, length) == 0 }
            }
            (self.listener, self.client, self.server) = (listener, client, accept(listener, nil, nil))
            try #require(listening && connected && server >= 0)
        }

        deinit { close(client); close(server); close(listener) }

        var isCorked: Bool {
            var value: Int32 = -1
            var length = socklen_t(MemoryLayout<Int32>.size)
            _ = getsockopt(client, Int32(IPPROTO_TCP), TCP_CORK, &value, &length)
            return value != 0
        }
    }

    @Test func severalPacketsAreHeldUntilTheTurnEnds() throws {
        let connection = try Connection()
        let cork = Cork(socket: connection.client, packets: 3)
        #expect(connection.isCorked)
        cork.release()
        #expect(!connection.isCorked, "released at the end of the turn: nothing waits for the kernel's cork limit")
    }

    @Test func aSinglePacketIsWrittenAsItIs() throws {
        let connection = try Connection()
        for packets in [0, 1] {
            let cork = Cork(socket: connection.client, packets: packets)
            #expect(!connection.isCorked)
            cork.release()
            #expect(!connection.isCorked)
        }
    }

    @Test func noSocketOrAClosedOneIsHarmless() throws {
        Cork(socket: -1, packets: 5).release()
        let connection = try Connection()
        let spare = dup(connection.client)
        let cork = Cork(socket: spare, packets: 2)
        #expect(connection.isCorked, "the socket's option, set through either of its descriptors")
        close(spare)
        // The connection was lost during the turn and its descriptor closed: the call fails with EBADF (or only
        // uncorks whatever took the number meanwhile).
        cork.release()
    }
}
