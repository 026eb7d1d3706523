// A Multicast DNS responder on UDP port 5353 of the interfaces it is given, and only those: `MDNSResponderCore`'s
// decisions over SwiftNIO sockets. Our own rather than avahi's, whose D-Bus API would bring a daemon, a bus and
// their set-up (in a network namespace: a private dbus and /run) for a handful of records.
//
// It shares the port with any other responder on the host (avahi-daemon runs on Raspberry Pi OS): every socket is
// bound with SO_REUSEADDR and SO_REUSEPORT to the wildcard address, as avahi's are, and Linux gives each multicast
// datagram to every socket bound to the port. One socket per interface and family, tied to its interface with
// SO_BINDTODEVICE, joins 224.0.0.251 or ff02::fb there only, so nothing is heard from or sent to another interface.
#if canImport(Glibc)
import Glibc
#endif
import HearthSync
public import NIOCore
import NIOPosix

/// Why the responder could not start.
public enum MDNSResponderError: Error, Sendable, Hashable, CustomStringConvertible {
    case noSuchInterface(String)
    case noInterfaces
    /// Not one DNS label: empty, or longer than 63 bytes.
    case invalidHostLabel(String)
    /// A socket could not be opened, bound or joined to the group.
    case socket(interface: String, family: MDNSAddressFamily, String)

    public var description: String {
        switch self {
        case .noSuchInterface(let name): "no network interface '\(name)' with an address"
        case .noInterfaces: "no interface to announce on"
        case .invalidHostLabel(let label): "host label '\(label)' is not a DNS label"
        case .socket(let interface, let family, let why): "mDNS socket (\(family)) on \(interface): \(why)"
        }
    }
}

/// The responder: advertise and withdraw services while it runs; `shutdown()` says goodbye and closes.
public final class MDNSResponder: Sendable {
    public static let port = 5353
    static let ipv4Group = "224.0.0.251"
    static let ipv6Group = "ff02::fb"

    /// One socket: an interface and family, and the group it sends to.
    private struct Endpoint: Sendable {
        let interface: String
        let family: MDNSAddressFamily
        let channel: any Channel
        let group: SocketAddress
    }

    private let core: Locked<MDNSResponderCore>
    private let endpoints: Locked<[Endpoint]>
    private let timer = Locked<Task<Void, Never>?>(nil)
    /// The time of announcements and of answers' rate limits, injected so that announcements are tested without
    /// sleeping.
    private let clock: any MatterClock

    /// The host name its A and AAAA records are under: `<hostLabel>.local`.
    public var hostName: DNSName { core.withLock { $0.hostName } }
    public var statistics: MDNSStatistics { core.withLock { $0.statistics } }

    /// Opens port 5353 on each of `interfaces` (by name: `eth0`), over IPv4 where it has an IPv4 address and IPv6
    /// where it has an IPv6 one.
    ///
    /// - Parameters:
    ///   - hostLabel: the host's label (`MatterServiceNames.hostLabel(macAddress:)`).
    ///   - eventLoopGroup: where the sockets run; SwiftNIO's shared group when nil.
    public init(interfaces names: [String], hostLabel: String, eventLoopGroup: (any EventLoopGroup)? = nil,
                clock: any MatterClock = MatterMonotonicClock()) async throws(MDNSResponderError) {
        let eventLoopGroup = eventLoopGroup ?? MultiThreadedEventLoopGroup.singleton
        guard !names.isEmpty else { throw .noInterfaces }
        let devices: [NIONetworkDevice]
        do { devices = try System.enumerateDevices() } catch {
            throw .socket(interface: "*", family: .ipv4, "\(error)")
        }
        var interfaces: [MDNSInterface] = []
        var wanted: [(name: String, family: MDNSAddressFamily, device: NIONetworkDevice)] = []
        for name in names {
            guard let interface = Self.interface(name, among: devices) else { throw .noSuchInterface(name) }
            interfaces.append(interface)
            for device in devices where device.name == name {
                guard let address = device.address, let bytes = Self.addressBytes(address) else { continue }
                let family: MDNSAddressFamily = bytes.count == 4 ? .ipv4 : .ipv6
                if !wanted.contains(where: { $0.name == name && $0.family == family }) {
                    wanted.append((name, family, device))
                }
            }
        }
        do { core = Locked(try MDNSResponderCore(hostLabel: hostLabel, interfaces: interfaces)) } catch {
            throw .invalidHostLabel(hostLabel)
        }
        endpoints = Locked([])
        self.clock = clock

        for (name, family, device) in wanted {
            do {
                let endpoint = try await Self.open(
                    name: name, family: family, device: device, group: eventLoopGroup, responder: self)
                endpoints.withLock { $0.append(endpoint) }
            } catch {
                await closeAll()
                throw .socket(interface: name, family: family, "\(error)")
            }
        }
    }

    private static func open(
        name: String, family: MDNSAddressFamily, device: NIONetworkDevice, group: any EventLoopGroup,
        responder: MDNSResponder
    ) async throws -> Endpoint {
        let groupAddress = try SocketAddress(ipAddress: family == .ipv4 ? ipv4Group : ipv6Group, port: port)
        var bootstrap = DatagramBootstrap(group: group)
            .channelOption(.socketOption(.so_reuseaddr), value: 1)
            .channelOption(
                ChannelOptions.Types.SocketOption(level: .socket, name: NIOBSDSocket.Option(rawValue: SO_REUSEPORT)),
                value: 1)
        if family == .ipv6 {
            bootstrap = bootstrap.channelOption(
                ChannelOptions.Types.SocketOption(level: .ipv6, name: .ipv6_v6only), value: 1)
        }
        let handler = InboundHandler(responder: responder, interface: name, family: family)
        let channel = try await bootstrap
            .channelInitializer { channel in
                // Tied to the interface before the bind, so that no datagram from another interface gets in.
                let bound: EventLoopFuture<Void>
                if let provider = channel as? any SocketOptionProvider {
                    bound = provider.unsafeSetSocketOption(
                        level: .socket, name: NIOBSDSocket.Option(rawValue: SO_BINDTODEVICE),
                        value: InterfaceName(name))
                } else {
                    bound = channel.eventLoop.makeSucceededVoidFuture()
                }
                return bound.flatMap { channel.pipeline.addHandler(handler) }
            }
            .bind(host: family == .ipv4 ? "0.0.0.0" : "::", port: port).get()
        do {
            guard let multicast = channel as? any MulticastChannel, let provider = channel as? any SocketOptionProvider
            else {
                throw MDNSResponderError.socket(interface: name, family: family, "not a multicast channel")
            }
            switch family {
            case .ipv4:
                guard let address = device.address, let bytes = addressBytes(address), bytes.count == 4 else { break }
                // IP_MULTICAST_IF takes an in_addr: the 4 bytes in network order, as they are here.
                let value = bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }
                try await provider.unsafeSetSocketOption(level: .ip, name: .ip_multicast_if, value: value).get()
                try await provider.setIPMulticastTTL(255).get()
            case .ipv6:
                try await provider.setIPv6MulticastIF(CUnsignedInt(device.interfaceIndex)).get()
                try await provider.setIPv6MulticastHops(255).get()
            }
            try await multicast.joinGroup(groupAddress, device: device).get()
        } catch {
            try? await channel.close()
            throw error
        }
        return Endpoint(interface: name, family: family, channel: channel, group: groupAddress)
    }

    /// The interface `name` with its addresses and networks, or nil when it has none.
    static func interface(_ name: String, among devices: [NIONetworkDevice]) -> MDNSInterface? {
        var interface = MDNSInterface(name: name, networks: [])
        for device in devices where device.name == name {
            guard let address = device.address, let bytes = addressBytes(address) else { continue }
            if bytes.count == 4 { interface.ipv4.append(bytes) } else { interface.ipv6.append(bytes) }
            let mask = device.netmask.flatMap(addressBytes) ?? []
            let prefixLength = mask.count == bytes.count ? mask.reduce(0) { $0 + $1.nonzeroBitCount } : bytes.count * 8
            interface.networks.append(MDNSInterface.Network(address: bytes, prefixLength: prefixLength))
        }
        return interface.ipv4.isEmpty && interface.ipv6.isEmpty ? nil : interface
    }

    /// Reads the interfaces' addresses again and, where they changed, announces the new A and AAAA records with the
    /// services: for a node to call when the system reports an address change (DHCP, IPv6 autoconfiguration). A
    /// family an interface had no address of at start still has no socket.
    public func refreshAddresses() throws(MDNSResponderError) {
        let devices: [NIONetworkDevice]
        do { devices = try System.enumerateDevices() } catch {
            throw .socket(interface: "*", family: .ipv4, "\(error)")
        }
        let now = clock.now.milliseconds
        let packets = core.withLock { core in
            var packets: [MDNSPacket] = []
            for old in core.interfaces {
                guard let new = Self.interface(old.name, among: devices), new != old else { continue }
                packets += core.update(new, now: now)
            }
            return packets
        }
        send(packets, to: nil)
        scheduleAnnouncements()
    }

    /// An IPv4 or IPv6 address's bytes, read from its sockaddr (sockaddr_in: family, port, 4 bytes; sockaddr_in6:
    /// family, port, flow label, 16 bytes).
    static func addressBytes(_ address: SocketAddress) -> [UInt8]? {
        switch address.protocol {
        case .inet:
            address.withSockAddr { pointer, size in
                size >= 8 ? Array(UnsafeRawBufferPointer(start: pointer, count: size)[4..<8]) : nil
            }
        case .inet6:
            address.withSockAddr { pointer, size in
                size >= 24 ? Array(UnsafeRawBufferPointer(start: pointer, count: size)[8..<24]) : nil
            }
        default: nil
        }
    }

    /// Advertises `service`, or updates the one with the same instance name (withdrawing what it no longer has).
    public func advertise(_ service: DNSSDService) throws(DNSMessageError) {
        let now = clock.now.milliseconds
        let packets = try core.withLock { core throws(DNSMessageError) in try core.advertise(service, now: now) }
        send(packets, to: nil)
        scheduleAnnouncements()
    }

    /// Stops advertising `service` (by its instance name) and says goodbye.
    public func withdraw(_ service: DNSSDService) {
        send(core.withLock { $0.withdraw(service) }, to: nil)
    }

    /// Says goodbye for every service and the host's addresses, then closes the sockets.
    public func shutdown() async {
        timer.withLock { $0?.cancel() }
        let packets = core.withLock { $0.shutdown() }
        let writes = send(packets, to: nil)
        for write in writes { try? await write.get() }
        await closeAll()
    }

    private func closeAll() async {
        for endpoint in endpoints.withLock({ $0 }) { try? await endpoint.channel.close() }
        endpoints.withLock { $0 = [] }
    }

    fileprivate func received(
        _ bytes: [UInt8], interface: String, family: MDNSAddressFamily, from sender: SocketAddress
    ) {
        let now = clock.now.milliseconds
        let source = MDNSQuerySource(interface: interface, family: family, port: sender.port ?? 0,
                                     address: Self.addressBytes(sender) ?? [])
        send(core.withLock { $0.receive(bytes, from: source, now: now) }, to: sender)
    }

    /// Writes each packet on its interface's socket of its family, if there is one.
    @discardableResult
    private func send(_ packets: [MDNSPacket], to querier: SocketAddress?) -> [EventLoopFuture<Void>] {
        guard !packets.isEmpty else { return [] }
        let endpoints = endpoints.withLock { $0 }
        var writes: [EventLoopFuture<Void>] = []
        for packet in packets {
            guard
                let endpoint = endpoints.first(where: { $0.interface == packet.interface && $0.family == packet.family }
                )
            else { continue }
            let destination: SocketAddress
            switch packet.destination {
            case .multicast: destination = endpoint.group
            case .querier:
                guard let querier else { continue }
                destination = querier
            }
            let bytes = packet.message.encoded()
            var buffer = endpoint.channel.allocator.buffer(capacity: bytes.count)
            buffer.writeBytes(bytes)
            writes.append(endpoint.channel.writeAndFlush(AddressedEnvelope(remoteAddress: destination, data: buffer)))
        }
        return writes
    }

    /// Runs the announcement timer until nothing is scheduled, replacing the one running.
    private func scheduleAnnouncements() {
        let task = Task { [weak self] in
            while let self, let deadline = self.core.withLock({ $0.nextDeadline }) {
                do { try await self.clock.sleep(until: MatterInstant(milliseconds: deadline)) } catch { return }
                let now = self.clock.now.milliseconds
                self.send(self.core.withLock { $0.due(now: now) }, to: nil)
            }
        }
        timer.withLock { old in
            old?.cancel()
            old = task
        }
    }
}

/// An interface name as SO_BINDTODEVICE takes it: IFNAMSIZ bytes, NUL-padded.
private struct InterfaceName: Sendable {
    var bytes:
        (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8)
        = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    init(_ name: String) {
        withUnsafeMutableBytes(of: &bytes) { raw in
            for (index, byte) in name.utf8.prefix(15).enumerated() { raw[index] = byte }
        }
    }
}

/// Hands each datagram to the responder with the interface and family it came in on.
private final class InboundHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    let responder: MDNSResponder
    let interface: String
    let family: MDNSAddressFamily

    init(responder: MDNSResponder, interface: String, family: MDNSAddressFamily) {
        self.responder = responder
        self.interface = interface
        self.family = family
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        // Anything longer than the largest mDNS message is not read at all.
        guard envelope.data.readableBytes <= DNSMessage.maximumLength else { return }
        responder.received(Array(envelope.data.readableBytesView), interface: interface, family: family,
                           from: envelope.remoteAddress)
    }
}
