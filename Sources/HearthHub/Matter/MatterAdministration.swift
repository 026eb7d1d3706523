// Local administration of the hub's Matter node: list its fabrics, open an enhanced commissioning window with a
// fresh passcode, remove a fabric, forget them all. `MatterAdministration` is the API (the control socket and, later,
// the web page call it); `MatterControlServer` serves it on a Unix socket in the state directory (mode 0600 in a
// directory only the hub's user may enter), and `MatterControlClient` is what `hearthd matter …` uses. A reset with
// the hub stopped works on the state directory instead (`MatterHub.resetStoredFabrics`).
//
// The client speaks plain blocking POSIX calls: it is a one-shot command, where NIO's machinery buys nothing.

#if canImport(Glibc)
import Glibc
#endif
import HearthCrypto
public import HearthMatter
import Logging
import NIOCore
import NIOPosix

/// What the hub's owner may do to its Matter node while it runs.
public final class MatterAdministration: Sendable {
    let node: MatterNode
    private let logger: Logger

    /// The default and longest window: 15 minutes.
    public static let defaultWindowSeconds = CommissioningWindow.maximumTimeoutSeconds

    init(node: MatterNode, logger: Logger) {
        self.node = node
        self.logger = logger
    }

    /// The node's fabrics, in index order.
    public func fabrics() -> [MatterFabricSummary] {
        node.core.commissioning.fabrics.sorted { $0.index < $1.index }.map(Self.summary)
    }

    static func summary(_ fabric: Fabric) -> MatterFabricSummary {
        let fingerprint = SHA256.hash(fabric.identity.rootPublicKey).prefix(8)
            .map { ($0 < 16 ? "0" : "") + String($0, radix: 16, uppercase: true) }.joined()
        return MatterFabricSummary(index: fabric.index, fabricID: fabric.identity.fabricID, vendorID: fabric.vendorID,
                                   nodeID: fabric.identity.nodeID, rootFingerprint: fingerprint, label: fabric.label)
    }

    /// Opens an enhanced commissioning window with a new random passcode and discriminator; returns them.
    public func openWindow(timeoutSeconds: Int = defaultWindowSeconds) async throws(MatterAdministrationError)
        -> MatterPairing
    {
        do { try CommissioningWindow.checkTimeout(timeoutSeconds) } catch { throw .window(error) }
        let pairing: MatterPairing, verifier: PASEVerifier
        do {
            pairing = MatterPairing(passcode: try SetupPasscode.random(from: SecureRandom.bytes),
                                    discriminator: try SetupDiscriminator.random(from: SecureRandom.bytes))
            verifier = try PASEVerifier.compute(
                passcode: pairing.passcode, salt: try SecureRandom.bytes(32), iterations: 1000)
        } catch {
            throw .failed("no passcode could be made: \(error)")
        }
        try await node.administer { (core, now) throws(MatterAdministrationError) in
            try core.openWindowLocally(verifier: verifier, discriminator: pairing.discriminator,
                                       timeoutSeconds: timeoutSeconds, now: now)
        }
        logger.notice("matter: a commissioning window opened from the hub for \(timeoutSeconds) s")
        return pairing
    }

    /// Removes a fabric: its controllers lose the hub, the others keep it.
    public func removeFabric(_ index: FabricIndex) async throws(MatterAdministrationError) {
        try await node.administer { (core, _) throws(MatterAdministrationError) in try core.removeFabricLocally(index) }
        logger.notice("matter: fabric \(index) removed from the hub")
    }

    /// Forgets every fabric, ACL entry and subscription; the hub is commissionable again with its own pairing code.
    public func resetFabrics() async throws(MatterAdministrationError) {
        try await node.administer { (core, _) throws(MatterAdministrationError) in try core.resetFabrics() }
        logger.notice("matter: every fabric forgotten; the hub can be paired again (hearthd matter code)")
    }

    /// Runs one control request.
    func handle(_ request: MatterControlRequest) async -> MatterControlResponse {
        do throws(MatterAdministrationError) {
            switch request {
            case .fabrics: return .fabrics(fabrics())
            case .openWindow(let seconds):
                return .window(try await openWindow(timeoutSeconds: seconds), timeoutSeconds: seconds)
            case .remove(let index):
                try await removeFabric(index)
                return .done
            case .reset:
                try await resetFabrics()
                return .done
            }
        } catch {
            return .error("\(error)")
        }
    }
}

/// The control socket: one request per connection, answered and closed.
final class MatterControlServer: Sendable {
    let path: String
    private let channel: any Channel

    /// Binds `path` (a stale socket file left by a hub that died is replaced) and restricts it to the hub's user.
    static func start(
        path: String, administration: MatterAdministration,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws(MatterHub.StateError) -> MatterControlServer {
        guard path.utf8.count < 108 else {
            throw MatterHub.StateError(message: "the control socket's path \(path) is too long")
        }
        let channel: any Channel
        do {
            channel = try await ServerBootstrap(group: group)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(
                            MatterControlHandler(administration: administration))
                    }
                }
                .bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true).get()
        } catch {
            throw MatterHub.StateError(message: "cannot listen on \(path): \(error)")
        }
        // The directory (0700) already keeps others out; the socket itself says the same.
        guard chmod(path, 0o600) == 0 else {
            try? await channel.close()
            throw MatterHub.StateError(message: "cannot restrict \(path): \(String(cString: strerror(errno)))")
        }
        return MatterControlServer(path: path, channel: channel)
    }

    private init(path: String, channel: any Channel) {
        self.path = path
        self.channel = channel
    }

    func stop() async {
        try? await channel.close()
        unlink(path)
    }
}

/// Reads one request line, runs it, writes the answer and closes.
private final class MatterControlHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let administration: MatterAdministration
    private var received: [UInt8] = []
    private var answered = false

    init(administration: MatterAdministration) { self.administration = administration }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !answered else { return }
        var buffer = unwrapInboundIn(data)
        received += buffer.readBytes(length: buffer.readableBytes) ?? []
        let end = received.firstIndex(of: UInt8(ascii: "\n"))
        guard end != nil || received.count > MatterControlRequest.maximumLength else { return }
        answered = true
        let line = end.map { Array(received[...$0]) } ?? received
        let channel = context.channel
        let administration = self.administration
        let request: MatterControlRequest
        do { request = try MatterControlRequest(parsing: line) } catch {
            Self.answer(.error("\(error)"), on: channel)
            return
        }
        Self.run(request, administration, on: channel)
    }

    private static func run(
        _ request: MatterControlRequest, _ administration: MatterAdministration, on channel: any Channel
    ) {
        Task {
            let response = await administration.handle(request)
            answer(response, on: channel)
        }
    }

    func channelInactive(context: ChannelHandlerContext) { answered = true }

    private static func answer(_ response: MatterControlResponse, on channel: any Channel) {
        let buffer = ByteBuffer(string: response.text)
        channel.writeAndFlush(buffer).whenComplete { _ in channel.close(promise: nil) }
    }
}

/// `hearthd matter …`'s side of the control socket.
public enum MatterControlClient {
    /// Why the hub could not be asked.
    public enum Failure: Error, Sendable, CustomStringConvertible {
        /// No hub listens on the socket (the file is missing, or nothing accepts on it).
        case hubNotRunning(path: String)
        case io(String)
        case answer(MatterControlError)

        public var description: String {
            switch self {
            case .hubNotRunning(let path): "the hub is not running (nothing listens on \(path))"
            case .io(let why): why
            case .answer(let error): "\(error)"
            }
        }
    }

    /// The control socket of the hub with this state directory.
    public static func socketPath(stateDirectory: String) -> String {
        MatterHub.directory(stateDirectory: stateDirectory) + "/control"
    }

    /// Sends `request` to the hub listening on `path` and reads its answer (waiting at most `timeoutSeconds`).
    public static func send(_ request: MatterControlRequest, path: String,
                            timeoutSeconds: Int = 30) throws(Failure) -> MatterControlResponse {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .io("socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let pathBytes = Array(path.utf8)
        guard pathBytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw .io("\(path) is too long for a socket")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, byte) in pathBytes.enumerated() { raw[i] = byte }
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        if connected != 0 {
            if errno == ENOENT || errno == ECONNREFUSED { throw .hubNotRunning(path: path) }
            throw .io("cannot connect to \(path): \(String(cString: strerror(errno)))")
        }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let bytes = Array(request.line.utf8)
        let written = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard written == bytes.count else { throw .io("cannot send to \(path): \(String(cString: strerror(errno)))") }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while answer.count < 1 << 20 {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            if count < 0 { throw .io("no answer from the hub: \(String(cString: strerror(errno)))") }
            if count == 0 { break }
            answer += buffer[..<count]
        }
        do { return try MatterControlResponse(parsing: String(decoding: answer, as: UTF8.self), for: request) } catch {
            throw .answer(error)
        }
    }
}

extension MatterHub {
    /// Forgets every fabric in a stopped hub's state directory (the fabric table and its ACL); the node's settings,
    /// counters, attestation, endpoint numbers and the pairing values stay. Run only with the hub stopped.
    public static func resetStoredFabrics(stateDirectory: String) throws(StateError) {
        let matterDirectory = directory(stateDirectory: stateDirectory)
        guard access(matterDirectory, F_OK) == 0 else {
            throw StateError(message: "no Matter state in \(stateDirectory): the hub has never run Matter there")
        }
        let storage = FileNodeStorage(directory: matterDirectory)
        // The subscriptions go with their fabrics: a start would drop them anyway, unresumable.
        do {
            try storage.remove(.fabrics)
            try storage.remove(.subscriptions)
        } catch { throw StateError(message: "\(error)") }
    }
}
