// A small HTTP/1.1 client for the tests, on NIO's client pipeline (NIO parses the responses): one connection per
// request, and a stream reader for server-sent events.
import HearthSync
import NIOCore
import NIOHTTP1
import NIOPosix
import HearthTestKit

struct HTTPResult: Sendable {
    var status: Int
    var headers: HTTPHeaders
    var body: [UInt8]
    var text: String { String(decoding: body, as: UTF8.self) }
    func header(_ name: String) -> String? { headers.first(name: name) }
}

/// Bytes arriving on a stream, from the event loop's thread.
final class ByteSink: Sendable {
    private let bytes = Locked<[UInt8]>([])
    func append(_ more: [UInt8]) { bytes.withLock { $0 += more } }
    var all: [UInt8] { bytes.withLock { $0 } }
    func clear() { bytes.withLock { $0.removeAll() } }
}

/// Collects one response, or streams its body into `received`.
private final class Collector: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPClientResponsePart
    let promise: EventLoopPromise<HTTPResult>
    let received: ByteSink?
    var head: HTTPResponseHead?
    var body: [UInt8] = []

    init(promise: EventLoopPromise<HTTPResult>, received: ByteSink?) {
        self.promise = promise
        self.received = received
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let h):
            head = h
            if received != nil { promise.succeed(HTTPResult(status: Int(h.status.code), headers: h.headers, body: [])) }
        case .body(var b):
            let bytes = b.readBytes(length: b.readableBytes) ?? []
            if let received { received.append(bytes) } else { body += bytes }
        case .end:
            if received == nil, let head {
                promise.succeed(HTTPResult(status: Int(head.status.code), headers: head.headers, body: body))
            }
            context.close(promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        promise.fail(ChannelError.eof)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        promise.fail(error)
        context.close(promise: nil)
    }
}

/// An open event stream: what has arrived so far.
final class EventStreamReader: Sendable {
    let channel: any Channel
    let received: ByteSink
    let status: Int

    init(channel: any Channel, received: ByteSink, status: Int) {
        self.channel = channel
        self.received = received
        self.status = status
    }

    var text: String { String(decoding: received.all, as: UTF8.self) }

    /// The `data:` of every event called `name` so far.
    func events(_ name: String) -> [String] {
        var out: [String] = []
        for block in text.split(separator: "\n\n") {
            let lines = block.split(separator: "\n")
            guard lines.contains(where: { $0 == "event: \(name)" }) else { continue }
            if let data = lines.first(where: { $0.hasPrefix("data: ") }) { out.append(String(data.dropFirst(6))) }
        }
        return out
    }

    func waitFor(within timeout: Duration = .seconds(20), _ condition: @Sendable (EventStreamReader) -> Bool) async
        -> Bool
    {
        await poll(within: timeout, every: .milliseconds(20)) { condition(self) }
    }

    func clear() { received.clear() }

    func close() { channel.close(promise: nil) }
}

enum HTTPTestClient {
    static let group = MultiThreadedEventLoopGroup.singleton

    static func request(
        port: Int, _ method: HTTPMethod, _ path: String, headers: [(String, String)] = [],
        body: [UInt8]? = nil, host: String? = nil
    ) async throws -> HTTPResult {
        let (result, _) = try await open(
            port: port, method, path, headers: headers, body: body, host: host, received: nil)
        return try await result.get()
    }

    static func events(port: Int, cookie: String) async throws -> EventStreamReader {
        let received = ByteSink()
        let (result, channel) = try await open(
            port: port, .GET, "/api/events", headers: [("Cookie", cookie)], body: nil,
            host: nil, received: received)
        let head = try await result.get()
        return EventStreamReader(channel: channel, received: received, status: head.status)
    }

    private static func open(
        port: Int, _ method: HTTPMethod, _ path: String, headers: [(String, String)], body: [UInt8]?,
        host: String?, received: ByteSink?
    ) async throws -> (EventLoopFuture<HTTPResult>, any Channel) {
        let loop = group.next()
        let promise = loop.makePromise(of: HTTPResult.self)
        let connecting = ClientBootstrap(group: loop)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(Collector(promise: promise, received: received))
                }
            }
            .connect(host: "127.0.0.1", port: port)
        let channel: any Channel
        do {
            channel = try await connecting.get()
        } catch {
            promise.fail(error)  // a promise is always completed
            throw error
        }
        var h = HTTPHeaders()
        h.add(name: "Host", value: host ?? "127.0.0.1:\(port)")
        for (k, v) in headers { h.add(name: k, value: v) }
        if let body { h.add(name: "Content-Length", value: "\(body.count)") }
        if received == nil { h.add(name: "Connection", value: "close") }
        channel.write(
            HTTPClientRequestPart.head(HTTPRequestHead(version: .http1_1, method: method, uri: path, headers: h)),
            promise: nil)
        if let body { channel.write(HTTPClientRequestPart.body(.byteBuffer(ByteBuffer(bytes: body))), promise: nil) }
        try await channel.writeAndFlush(HTTPClientRequestPart.end(nil)).get()
        return (promise.futureResult, channel)
    }
}
