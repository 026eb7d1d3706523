// The Interaction Model on the exchange layer: one handler per exchange that feeds each message of the peer to the
// node core with its session's subject and sends back what the core answers, and the sending of subscription
// reports on exchanges the node opens. Runs where the exchange manager runs (one thread).

/// The Interaction Model's side of one exchange.
public final class InteractionModelExchange: ExchangeHandler {
    private let core: MatterNodeCore
    private let subject: (SessionHandle) -> SubjectDescriptor?
    private let now: () -> MatterInstant
    private let hop: @Sendable (@escaping @Sendable () -> Void) -> Void
    private var state: IMExchangeState

    /// `subject` tells who a secure session's peer is (nil for a session the Interaction Model must not serve: an
    /// unsecured one, or one that is gone). `hop` runs a closure where the exchange manager runs: a deferred answer
    /// (a deferred cluster's command or write) is sent from there when it is ready.
    public init(core: MatterNodeCore, subject: @escaping (SessionHandle) -> SubjectDescriptor?,
                now: @escaping () -> MatterInstant, state: IMExchangeState = IMExchangeState(),
                hop: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void = { $0() }) {
        self.core = core
        self.subject = subject
        self.now = now
        self.state = state
        self.hop = hop
    }

    /// Serves every Interaction Model exchange a peer opens.
    public static func register(
        on manager: ExchangeManager, core: MatterNodeCore,
        subject: @escaping (SessionHandle) -> SubjectDescriptor?, now: @escaping () -> MatterInstant
    ) {
        manager.registerUnsolicitedHandler(for: .interactionModel) { _ in
            InteractionModelExchange(core: core, subject: subject, now: now)
        }
    }

    /// Sends a due subscription report on a new exchange of `session` (the subscriber's); further chunks follow the
    /// subscriber's StatusResponses.
    @discardableResult
    public static func send(
        _ report: DueReport, on session: SessionHandle, manager: ExchangeManager, core: MatterNodeCore,
        subject: @escaping (SessionHandle) -> SubjectDescriptor?,
        now: @escaping () -> MatterInstant
    ) throws(ExchangeError) -> ExchangeKey {
        let handler = InteractionModelExchange(core: core, subject: subject, now: now, state: report.exchange)
        let key = manager.openExchange(on: session, handler: handler)
        do {
            try manager.send(on: key, protocolID: .interactionModel, opcode: report.message.opcode.rawValue,
                             payload: report.message.payload, now: now())
        } catch {
            manager.close(key, now: now())
            throw error
        }
        if !report.expectsResponse { manager.close(key, now: now()) }
        return key
    }

    public func exchange(_ exchange: ExchangeKey, received message: MatterMessage, manager: ExchangeManager) {
        let time = now()
        guard message.payloadHeader.protocolID == .interactionModel, let subject = subject(exchange.session) else {
            manager.close(exchange, now: time)
            return
        }
        let reply = core.receive(opcode: message.payloadHeader.opcode, payload: message.payload, exchange: &state,
                                 subject: subject, now: time)
        if let deferred = reply.deferred {
            // The exchange stays open (MRP acknowledges the request alone meanwhile) until the answer is ready.
            let bound = LoopBound((self, manager))
            let hop = self.hop
            deferred.whenReady { reply in
                hop {
                    let (handler, manager) = bound.value
                    guard manager.isOpen(exchange) else { return }
                    handler.answer(reply, on: exchange, manager: manager, now: handler.now())
                }
            }
            return
        }
        answer(reply, on: exchange, manager: manager, now: time)
    }

    private func answer(_ reply: IMReply, on exchange: ExchangeKey, manager: ExchangeManager, now time: MatterInstant) {
        if let answer = reply.message {
            do {
                try manager.send(on: exchange, protocolID: .interactionModel, opcode: answer.opcode.rawValue,
                                 payload: answer.payload, now: time)
            } catch {
                manager.close(exchange, now: time)
                return
            }
        }
        if reply.closesExchange { manager.close(exchange, now: time) }
    }

    public func exchange(_ exchange: ExchangeKey, failed error: ExchangeError, manager: ExchangeManager) {
        // The peer stopped answering mid-interaction: a held report or list write is dropped with the exchange.
        state = IMExchangeState()
    }
}
