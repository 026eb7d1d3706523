// The web page over TLS (`web.tls`): a NIO channel handler at the socket's end of a connection's pipeline that runs
// HearthCrypto's `TLSServerConnection` (OpenSSL over memory buffers): ciphertext in from the socket, plaintext up to
// the HTTP handlers, their plaintext back down as records. A connection whose TLS fails is closed, with a notice.
import HearthCrypto
import Logging
import HearthHub
import NIOCore

final class TLSHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let tls: TLSServerConnection
    private let logger: Logger
    private var closing = false

    init(_ tls: TLSServerConnection, logger: Logger) {
        self.tls = tls
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        do throws(TLSError) {
            try buffer.withUnsafeReadableBytes { (raw) throws(TLSError) in try tls.receive(raw) }
            let (plaintext, closed) = try tls.readPlaintext()
            sendOutput(context, flush: true)
            if !plaintext.isEmpty { context.fireChannelRead(wrapInboundOut(ByteBuffer(bytes: plaintext))) }
            if closed { close(context) }
        } catch {
            failed(context, error)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.fireChannelReadComplete()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let buffer = unwrapOutboundIn(data)
        do throws(TLSError) {
            try buffer.withUnsafeReadableBytes { (raw) throws(TLSError) in try tls.send(raw) }
            let records = tls.takeOutput()
            context.write(wrapOutboundOut(ByteBuffer(bytes: records)), promise: promise)
        } catch {
            promise?.fail(error)
            failed(context, error)
        }
    }

    func flush(context: ChannelHandlerContext) {
        context.flush()
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        if mode == .all && !closing {
            closing = true
            tls.close()
            sendOutput(context, flush: true)
        }
        context.close(mode: mode, promise: promise)
    }

    private func close(_ context: ChannelHandlerContext) {
        context.close(promise: nil)
    }

    private func sendOutput(_ context: ChannelHandlerContext, flush: Bool) {
        let out = tls.takeOutput()
        guard !out.isEmpty else { return }
        context.write(wrapOutboundOut(ByteBuffer(bytes: out)), promise: nil)
        if flush { context.flush() }
    }

    private func failed(_ context: ChannelHandlerContext, _ error: TLSError) {
        let peer = context.channel.remoteAddress?.ipAddress ?? "?"
        logger.notice("web: TLS with \(peer) failed: \(error)")
        // The alert OpenSSL queued (a handshake failure, a protocol version) goes out before the connection closes.
        sendOutput(context, flush: true)
        closing = true
        context.close(promise: nil)
    }
}

extension WebServer {
    /// `web.tls`'s certificate and key, loaded (the configuration's reading has already checked them; a file changed
    /// since is said here, and nothing starts).
    static func tlsContext(_ settings: WebSettings) throws(WebStartError) -> TLSServerContext? {
        guard let tls = settings.tls else { return nil }
        switch tls.load() {
        case .success(let context): return context
        case .failure(let problem): throw WebStartError(description: "\(problem)")
        }
    }
}
