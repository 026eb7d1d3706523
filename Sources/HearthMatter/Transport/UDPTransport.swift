// Matter over UDP (core specification 4.3.2) on SwiftNIO: datagram sockets on the configured addresses (port 5540
// by default; `[::]` takes IPv4 too where the kernel allows dual-stack), every datagram handed to the message layer
// on the one event loop that owns it, and MRP's timers scheduled on that loop from the injected clock.

public import NIOCore
import NIOPosix

/// Who runs the message layer's timers.
public enum MatterTimerDriving: Sendable {
    /// The event loop, at the clock's deadlines (a real clock).
    case eventLoop
    /// The caller, through `runTimers()`, after moving a manual clock.
    case external
}

/// What went wrong starting the transport.
public enum MatterTransportError: Error, Sendable, Equatable {
    /// An address could not be bound (taken, not configured on this host…).
    case bindFailed(address: String, reason: String)
    case noAddresses
}

/// A Matter node's UDP endpoints and message layer.
public final class MatterUDPTransport: @unchecked Sendable {
    public static let defaultPort = 5540

    /// The loop every channel, the message layer and its handlers run on.
    public let eventLoop: any EventLoop
    public let clock: any MatterClock
    private let timerDriving: MatterTimerDriving
    private var channels: [any Channel] = []
    private var timer: Scheduled<Void>?
    private var timerDeadline: MatterInstant?
    /// Confined to `eventLoop`; set in `init`.
    private var layer: MessageLayer!
    /// Decides, for each outgoing datagram, whether it goes out: fault injection for tests and benchmarks of
    /// lossy links. Set before `start`.
    public var outboundFilter: (@Sendable (_ datagram: [UInt8], _ peer: SocketAddress) -> Bool)?

    /// `randomCounterStart` (from the system's CSPRNG by default), `jitter` and `firstExchangeID` as for
    /// `MessageLayer`.
    public init(
        eventLoop: any EventLoop, clock: any MatterClock = MatterMonotonicClock(),
        timerDriving: MatterTimerDriving = .eventLoop,
        cipher: any MessageCipher = AESCCMMessageCipher(), parameters: ReliabilityParameters = ReliabilityParameters(),
        randomCounterStart: @escaping () -> UInt32 = { UInt32.random(in: MessageCounter.initialRange) },
        jitter: @escaping () -> Double = { Double.random(in: 0...1) },
        firstExchangeID: UInt16 = UInt16.random(in: 0...UInt16.max)
    ) {
        self.eventLoop = eventLoop
        self.clock = clock
        self.timerDriving = timerDriving
        layer = MessageLayer(
            cipher: cipher, parameters: parameters, randomCounterStart: randomCounterStart, jitter: jitter,
            firstExchangeID: firstExchangeID
        ) { [weak self] peer, bytes in self?.write(bytes, to: peer) ?? false }
    }

    /// Binds a socket on each address (port 0 picks a free one; `localAddresses` then says which).
    public func start(addresses: [SocketAddress]) async throws(MatterTransportError) {
        guard !addresses.isEmpty else { throw .noAddresses }
        for address in addresses {
            let handler = DatagramHandler(transport: self)
            do {
                let channel = try await DatagramBootstrap(group: eventLoop)
                    .channelInitializer { channel in
                        channel.eventLoop.makeCompletedFuture {
                            try channel.pipeline.syncOperations.addHandler(handler)
                        }
                    }
                    .bind(to: address).get()
                try await eventLoop.submit { self.channels.append(channel) }.get()
            } catch {
                try? await stop()
                throw .bindFailed(address: "\(address)", reason: "\(error)")
            }
        }
    }

    /// The addresses the sockets are bound to.
    public var localAddresses: [SocketAddress] {
        get async { (try? await eventLoop.submit { self.channels.compactMap(\.localAddress) }.get()) ?? [] }
    }

    /// Closes the sockets and cancels the timer.
    public func stop() async throws {
        let open = try await eventLoop.submit {
            self.timer?.cancel()
            self.timer = nil
            defer { self.channels = [] }
            return self.channels
        }.get()
        for channel in open { try? await channel.close() }
    }

    /// Runs `body` with the message layer on the event loop (to add sessions, open exchanges, send, read counters).
    public func withMessageLayer<T: Sendable>(_ body: @escaping @Sendable (MessageLayer) throws -> T) async throws -> T
    {
        try await eventLoop.submit {
            let result = try body(self.layer)
            self.rescheduleTimer()
            return result
        }.get()
    }

    /// Runs `body` with the message layer from code already on the event loop (a timer's, an `execute`'s), then
    /// schedules the retransmission and acknowledgement timers for whatever `body` sent.
    public func onLoop<T>(_ body: (MessageLayer) throws -> T) rethrows -> T {
        eventLoop.preconditionInEventLoop()
        defer { rescheduleTimer() }
        return try body(layer)
    }

    /// Fires what is due on the clock now (for `.external` timer driving).
    public func runTimers() async {
        try? await eventLoop.submit { self.fireTimers() }.get()
    }

    // MARK: On the event loop

    func received(_ bytes: [UInt8], from peer: SocketAddress) {
        layer.receive(bytes, from: peer, now: clock.now)
        rescheduleTimer()
    }

    private func fireTimers() {
        timer = nil
        timerDeadline = nil
        layer.exchanges.fire(now: clock.now)
        rescheduleTimer()
    }

    private func rescheduleTimer() {
        guard timerDriving == .eventLoop else { return }
        let deadline = layer.exchanges.nextDeadline
        guard deadline != timerDeadline else { return }
        timer?.cancel()
        timer = nil
        timerDeadline = deadline
        guard let deadline else { return }
        let delay = max(0, deadline - clock.now)
        timer = eventLoop.scheduleTask(in: .milliseconds(delay)) { self.fireTimers() }
    }

    private func write(_ bytes: [UInt8], to peer: SocketAddress) -> Bool {
        // A dropped datagram counts as sent: to the sender, loss on the way looks the same.
        if let outboundFilter, !outboundFilter(bytes, peer) { return true }
        // The socket of the peer's family; a dual-stack IPv6 socket takes IPv4 peers as mapped addresses.
        let family = peer.protocol
        guard let channel = channels.first(where: { $0.localAddress?.protocol == family }) ?? channels.first else {
            return false
        }
        var buffer = channel.allocator.buffer(capacity: bytes.count)
        buffer.writeBytes(bytes)
        channel.writeAndFlush(AddressedEnvelope(remoteAddress: peer, data: buffer), promise: nil)
        return true
    }
}

/// Hands each datagram's bytes to the transport; never throws on input.
private final class DatagramHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    private weak var transport: MatterUDPTransport?

    init(transport: MatterUDPTransport) { self.transport = transport }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        transport?.received(Array(envelope.data.readableBytesView), from: envelope.remoteAddress)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // An ICMP error surfaced on the socket (a peer gone): nothing to do; MRP retransmits or gives up.
    }
}
