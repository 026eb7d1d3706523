// The HTTP/1.1 server of the hub's web page, on SwiftNIO's NIOHTTP1 pipeline (NIO parses the request line and
// headers): one event loop thread, a body limit, and the API's answers written back on the loop. Requests that wait
// (a device's hardware, password hashing) leave the loop and write their response when done; the loop itself never
// blocks, and nothing here runs on the MQTT network thread.
public import HearthHub
import HearthModel
public import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import HearthCrypto
public import ServiceLifecycle
#if canImport(Glibc)
import Glibc
#endif

/// Why the web page cannot be served: the address or port cannot be bound (taken, or not an address of this machine).
public struct WebStartError: Error, Sendable, CustomStringConvertible {
    public var description: String
}

enum HTTPPart {
    static func body(_ bytes: [UInt8]) -> HTTPServerResponsePart { .body(.byteBuffer(ByteBuffer(bytes: bytes))) }
}

/// The hub's web server, bound and serving until `stop()`.
public final class WebServer: Sendable {
    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel
    let api: WebAPI
    let streams: EventStreams
    /// The port it listens on (the configured one, or the kernel's choice for port 0).
    public let port: Int

    /// Binds `settings.listen`:`settings.port` and serves the hub's page and API.
    /// - Parameter iterations: PBKDF2's iteration count for new password hashes (tests make it small).
    /// - Parameter administration: what the admin's `/api/admin/` routes act on; without it they answer 404.
    public static func start(
        hub: Hub, brokerAddress: String, logger: Logger, port: Int? = nil, administration: HubAdministration? = nil
    ) throws(WebStartError) -> WebServer {
        try start(
            hub: hub, brokerAddress: brokerAddress, logger: logger, port: port, iterations: nil,
            administration: administration)
    }

    static func start(
        hub: Hub, brokerAddress: String, logger: Logger, port: Int?, iterations: Int?,
        administration: HubAdministration? = nil
    ) throws(WebStartError) -> WebServer {
        let accounts =
            iterations.map { WebAccounts(directory: hub.stateDirectory, iterations: $0) }
            ?? WebAccounts(directory: hub.stateDirectory)
        let start = ContinuousClock.now
        let sessions = WebSessions(now: { (ContinuousClock.now - start).milliseconds })
        let tls = try tlsContext(hub.web)
        let api = WebAPI(
            mqtt: hub.mqtt, accounts: accounts, sessions: sessions, brokerAddress: brokerAddress, logger: logger,
            admin: administration.map(WebAdmin.init), matter: WebMatter(node: hub.matter, logger: logger),
            overTLS: tls != nil)
        let streams = EventStreams(api: api)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 64)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls {
                        try channel.pipeline.syncOperations.addHandler(
                            TLSHandler(try TLSServerConnection(tls), logger: logger))
                    }
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(HTTPHandler(api: api, streams: streams))
                }
            }
        let channel: any Channel
        do {
            channel = try bootstrap.bind(host: hub.web.listen, port: port ?? hub.web.port).wait()
        } catch {
            try? group.syncShutdownGracefully()
            throw WebStartError(description: "cannot listen on \(hub.web.listen) port \(port ?? hub.web.port): \(error)"
                + " (set web.port to a free port, or web.enabled: false)")
        }
        let bound = channel.localAddress?.port ?? (port ?? hub.web.port)
        return WebServer(group: group, channel: channel, api: api, streams: streams, port: bound)
    }

    private init(
        group: MultiThreadedEventLoopGroup, channel: any Channel, api: WebAPI, streams: EventStreams, port: Int
    ) {
        self.group = group
        self.channel = channel
        self.api = api
        self.streams = streams
        self.port = port
    }

    /// The setup code to print at start, while no admin password is set (made the first time); nil once it is.
    public func setupCode() throws(WebAccountsError) -> String? { try api.accounts.setupCode() }

    /// Stops listening, closes every connection and the event loop.
    public func stop() async {
        try? await channel.close()
        try? await group.shutdownGracefully()
    }
}

/// Runs the web server with the hub's services, and stops it at shutdown.
public struct WebService: Service {
    let server: WebServer
    public init(server: WebServer) { self.server = server }

    public func run() async throws {
        try? await gracefulShutdown()
        await server.stop()
    }
}

/// One connection: a request read whole (its body up to `JSONBody.maximumSize`, or more on the admin's routes that
/// take a configuration or an archive), answered, then the next.
final class HTTPHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let api: WebAPI
    private let streams: EventStreams
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    private var tooLarge = false
    private var bodyLimit = JSONBody.maximumSize
    /// What a request whose body outgrew `bodyLimit` is answered when that limit was kept small because the request
    /// did not come from the admin: the refusal it would get anyway, not a complaint about its size.
    private var refusal: WebResponse?
    private var streaming = false

    init(api: WebAPI, streams: EventStreams) {
        self.api = api
        self.streams = streams
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let h):
            head = h
            body = []
            tooLarge = false
            bodyLimit = max(WebAPI.bodyLimit(method: h.method.rawValue, uri: h.uri), Self.bodyLimit(h.uri))
            refusal = nil
            if bodyLimit > JSONBody.maximumSize,
               let refused = api.largeBodyRefusal(cookie: h.headers["cookie"].joined(separator: "; ")) {
                bodyLimit = JSONBody.maximumSize
                refusal = refused
            }
        case .body(var buffer):
            if body.count + buffer.readableBytes > bodyLimit {
                tooLarge = true
            } else if let bytes = buffer.readBytes(length: buffer.readableBytes) {
                body += bytes
            }
        case .end:
            guard let head else { return }
            self.head = nil
            if tooLarge {
                write(
                    refusal
                        ?? WebAPI.error(413, .init(.resourceExhausted, "the body is larger than \(bodyLimit) bytes")),
                    head: head, context: context)
                return
            }
            let remote = context.channel.remoteAddress
            let request = WebRequest(
                method: head.method.rawValue, uri: head.uri, host: head.headers.first(name: "host"),
                origin: head.headers.first(name: "origin"), cookie: head.headers["cookie"].joined(separator: "; "),
                contentType: head.headers.first(name: "content-type"), remote: remote?.ipAddress ?? "?",
                remoteIsLoopback: Self.isLoopback(remote), body: body,
                acceptLanguage: head.headers.first(name: "accept-language"))
            body = []
            let loop = context.eventLoop
            let bound = NIOLoopBound((self, context), eventLoop: loop)
            api.handle(request) { reply in
                loop.execute {
                    let (handler, context) = bound.value
                    switch reply {
                    case .response(let r): handler.write(r, head: head, context: context)
                    case .events(let session):
                        handler.startEvents(head: head, context: context, admin: session.role == .admin)
                    }
                }
            }
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if streaming && context.channel.isWritable { streams.writable(context.channel) }
        context.fireChannelWritabilityChanged()
    }

    /// The largest body taken: a configuration's text under `/api/admin/`, a device request's elsewhere.
    static func bodyLimit(_ uri: String) -> Int {
        uri.hasPrefix("/api/admin/") ? WebAdmin.maximumBodySize : JSONBody.maximumSize
    }

    private func startEvents(head: HTTPRequestHead, context: ChannelHandlerContext, admin: Bool) {
        guard streams.count < EventStreams.maximum else {
            write(
                WebAPI.error(
                    503, .init(.busy, "\(EventStreams.maximum) live streams are open; close one and try again")),
                head: head, context: context)
            return
        }
        var headers = Self.securityHeaders
        headers.add(name: "Content-Type", value: "text/event-stream")
        headers.add(name: "Cache-Control", value: "no-store")
        headers.add(name: "X-Accel-Buffering", value: "no")
        context.writeAndFlush(
            wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .ok, headers: headers))),
            promise: nil)
        streaming = true
        context.writeAndFlush(wrapOutboundOut(HTTPPart.body(Array("retry: 2000\n\n".utf8))), promise: nil)
        if !streams.open(context.channel, admin: admin) { context.close(promise: nil) }
    }

    private func write(_ r: WebResponse, head: HTTPRequestHead, context: ChannelHandlerContext) {
        var headers = Self.securityHeaders
        for (k, v) in r.headers { headers.add(name: k, value: v) }
        headers.add(name: "Content-Length", value: "\(r.body.count)")
        let keepAlive = head.isKeepAlive
        if !keepAlive { headers.add(name: "Connection", value: "close") }
        context.write(
            wrapOutboundOut(
                .head(
                    HTTPResponseHead(
                        version: head.version, status: .init(statusCode: r.status),
                        headers: headers))), promise: nil)
        if head.method != .HEAD && !r.body.isEmpty {
            context.write(wrapOutboundOut(HTTPPart.body(r.body)), promise: nil)
        }
        let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if let after = r.afterWrite { done.whenComplete { _ in after() } }
        if !keepAlive {
            let channel = context.channel
            done.whenComplete { _ in channel.close(promise: nil) }
        }
    }

    /// On every response: nothing from another host, no framing, no sniffing, no referrer.
    static let securityHeaders: HTTPHeaders = [
        "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
            + "connect-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        "X-Content-Type-Options": "nosniff",
        "X-Frame-Options": "DENY",
        "Referrer-Policy": "no-referrer",
        "Cross-Origin-Opener-Policy": "same-origin",
        "Cross-Origin-Resource-Policy": "same-origin",
    ]

    static func isLoopback(_ address: SocketAddress?) -> Bool {
        guard let ip = address?.ipAddress else { return false }
        return ip.hasPrefix("127.") || ip == "::1" || ip.hasPrefix("::ffff:127.")
    }
}

extension Duration {
    var milliseconds: Int64 {
        let (s, a) = components
        return s * 1000 + a / 1_000_000_000_000_000
    }
}
