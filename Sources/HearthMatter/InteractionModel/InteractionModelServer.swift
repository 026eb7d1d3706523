// The Interaction Model's server side as a pure function of messages: one message in on an exchange, at most one
// message out — at once, or later when a deferred cluster's actions finish — with the exchange's state (chunks
// still to send, a timed window) kept in a value the caller holds. No sockets, no sessions: the node's exchange layer
// calls `receive` with the decrypted payload and the session's subject, sends what comes back on the same exchange, and
// closes it when told; it asks `reportsDue` for the subscription reports to send. Time is an argument.

import HearthSync

/// A message of the Interaction Model protocol: an opcode and its TLV payload.
public struct IMMessage: Sendable, Equatable {
    public var opcode: InteractionModelOpcode
    public var payload: [UInt8]

    public init(_ opcode: InteractionModelOpcode, _ payload: [UInt8]) {
        self.opcode = opcode
        self.payload = payload
    }

    public init(_ opcode: InteractionModelOpcode, _ element: TLVElement) { self.init(opcode, element.encoded()) }
}

/// What the server answers to one message.
public struct IMReply: Sendable, Equatable {
    /// The message to send on the exchange, if any.
    public var message: IMMessage?
    /// Whether the exchange is over after it (no further message of the peer is expected).
    public var closesExchange: Bool
    /// An answer that comes later (a deferred cluster's command or write is still running): `message` is nil and the
    /// exchange stays open until the deferred reply, which carries the message and whether the exchange closes, is
    /// ready. The exchange's state has already moved on when this is returned.
    public var deferred: DeferredIMReply?

    public init(message: IMMessage?, closesExchange: Bool, deferred: DeferredIMReply? = nil) {
        self.message = message
        self.closesExchange = closesExchange
        self.deferred = deferred
    }

    static func close(_ message: IMMessage?) -> IMReply { IMReply(message: message, closesExchange: true) }
    static func `continue`(_ message: IMMessage) -> IMReply { IMReply(message: message, closesExchange: false) }
    static func status(_ code: IMStatusCode) -> IMReply {
        .close(IMMessage(.statusResponse, StatusResponse(code).encoded()))
    }
    static func later(_ deferred: DeferredIMReply) -> IMReply {
        IMReply(message: nil, closesExchange: false, deferred: deferred)
    }

    /// Two replies are equal when they say the same now and both or neither answer later.
    public static func == (a: IMReply, b: IMReply) -> Bool {
        a.message == b.message && a.closesExchange == b.closesExchange && (a.deferred == nil) == (b.deferred == nil)
    }
}

/// The answer to a request whose actions finish later, off the caller's thread.
public struct DeferredIMReply: Sendable {
    private let start: @Sendable (@escaping @Sendable (IMReply) -> Void) -> Void

    init(_ start: @escaping @Sendable (@escaping @Sendable (IMReply) -> Void) -> Void) { self.start = start }

    /// Calls `completion` exactly once with the reply (never itself deferred) when every action of the request has
    /// finished: at once if they all have, else on the thread that finishes the last one.
    public func whenReady(_ completion: @escaping @Sendable (IMReply) -> Void) { start(completion) }
}

/// Results of actions that finish in any order on any thread, kept in the order they were started; whoever waits
/// hears once, when every started action has finished and no more will be started.
final class ResultGatherer<Value: Sendable>: Sendable {
    private struct State {
        var values: [Value?] = []
        var missing = 0
        var sealed = false
        var waiter: (@Sendable ([Value]) -> Void)?
    }

    private let state = Locked(State())

    /// A place for the next result, in start order.
    func reserve() -> Int {
        state.withLock { state in
            state.values.append(nil)
            state.missing += 1
            return state.values.count - 1
        }
    }

    /// Fills a reserved place; a second result for the same place is ignored.
    func fill(_ index: Int, _ value: Value) {
        let ready: (@Sendable ([Value]) -> Void, [Value])? = state.withLock { state in
            guard state.values.indices.contains(index), state.values[index] == nil else { return nil }
            state.values[index] = value
            state.missing -= 1
            guard state.sealed, state.missing == 0, let waiter = state.waiter else { return nil }
            state.waiter = nil
            return (waiter, state.values.map { $0! })
        }
        if let (waiter, values) = ready { waiter(values) }
    }

    /// No more actions start: the results, if they are all in already.
    func seal() -> [Value]? {
        state.withLock { state in
            state.sealed = true
            return state.missing == 0 ? state.values.map { $0! } : nil
        }
    }

    /// Calls `waiter` once every result is in (at once if they are).
    func whenComplete(_ waiter: @escaping @Sendable ([Value]) -> Void) {
        let values: [Value]? = state.withLock { state in
            if state.missing == 0 { return state.values.map { $0! } }
            state.waiter = waiter
            return nil
        }
        if let values { waiter(values) }
    }

    /// A slot that holds a result already known.
    func add(_ value: Value) { fill(reserve(), value) }
}

/// The Interaction Model's state on one exchange, owned by the caller and passed back with each message.
public struct IMExchangeState: Sendable {
    enum Phase: Sendable {
        case idle
        /// A TimedRequest was accepted: a timed Write or Invoke must come before the deadline.
        case timed(deadline: MatterInstant)
        /// Report chunks wait for the peer's StatusResponse; then `after` (a SubscribeResponse) if any.
        case reporting(remaining: [IMMessage], after: IMMessage?)
        /// A chunked write goes on: the next WriteRequest of the exchange continues it, and may append to the
        /// list held here.
        case writing(timed: Bool, pending: PendingList?)
    }

    /// A list write gathered across chunks, written whole when it is complete.
    struct PendingList: Sendable {
        var path: ConcreteAttributePath
        var dataVersion: UInt32?
        var items: [TLVElement]
    }

    var phase: Phase = .idle
    /// The subscription whose report this exchange carries: a refusal by the subscriber ends it.
    var subscriptionID: UInt32?

    public init() {}
}

/// A subscription the server accepted (its reports after the priming one are the node's to send).
public struct SubscriptionRecord: Sendable, Equatable {
    public var id: UInt32
    public var subject: SubjectDescriptor
    public var paths: [AttributePath]
    public var eventPaths: [EventPath]
    public var isFabricFiltered: Bool
    public var minIntervalSeconds: UInt16
    public var maxIntervalSeconds: UInt16
    /// When the last report (or the priming one) was sent.
    public var lastReport: MatterInstant
    /// The DataVersion of each cluster instance the subscription covers, as last reported.
    public var reportedVersions: [ConcreteClusterPath: UInt32]
    /// Every event numbered below it was reported (or was not the subscriber's to see).
    public var nextEventNumber: UInt64
    /// Whether a report was sent and the subscriber has not answered its last chunk yet: the next report waits.
    public var isReportInFlight = false
}

/// A report the node sends for a subscription: the first message on a new exchange to the subscriber, and the
/// exchange's state for `receive` to go on with (further chunks after each StatusResponse).
public struct DueReport: Sendable {
    public var subscriptionID: UInt32
    public var subject: SubjectDescriptor
    public var message: IMMessage
    /// Whether the subscriber answers it (a keep-alive report is not answered).
    public var expectsResponse: Bool
    public var exchange: IMExchangeState
}

/// The Interaction Model server of a node.
public final class InteractionModelServer: Sendable {
    /// The largest Interaction Model payload that fits one IPv6 packet of the minimum MTU (1280): less the IPv6 (40)
    /// and UDP (8) headers, the largest message header with its source and destination (26), the MIC (16) and the
    /// protocol header with an acknowledgement and a vendor id (12).
    public static let defaultMaximumPayloadSize = 1280 - 40 - 8 - 26 - 16 - 12

    /// The most command paths one InvokeRequest may carry (BasicInformation's MaxPathsPerInvoke).
    public static let maximumPathsPerInvoke = 1

    public let dataModel: DataModel
    public let maximumPayloadSize: Int
    private let subscriptionState: Locked<(nextID: UInt32, records: [SubscriptionRecord])>
    /// Subscribers that subscribed with KeepSubscriptions false, until the node takes them.
    private let subscribersStartedAfresh = Locked<[SubjectDescriptor]>([])

    public init(dataModel: DataModel, maximumPayloadSize: Int = InteractionModelServer.defaultMaximumPayloadSize,
                firstSubscriptionID: UInt32 = 1) {
        self.dataModel = dataModel
        self.maximumPayloadSize = maximumPayloadSize
        self.subscriptionState = Locked((firstSubscriptionID, []))
    }

    /// The subscriptions accepted so far.
    public var subscriptions: [SubscriptionRecord] { subscriptionState.withLock { $0.records } }

    /// Drops the subscriptions of a fabric (RemoveFabric) or of one subject.
    public func removeSubscriptions(where shouldRemove: (SubscriptionRecord) -> Bool) {
        subscriptionState.withLock { $0.records.removeAll(where: shouldRemove) }
    }

    /// Handles one message of the peer on an exchange.
    public func receive(opcode: UInt8, payload: [UInt8], exchange: inout IMExchangeState, subject: SubjectDescriptor,
                        now: MatterInstant) -> IMReply {
        guard let opcode = InteractionModelOpcode(rawValue: opcode) else {
            exchange.phase = .idle
            return .status(.invalidAction)
        }
        do throws(IMError) {
            switch exchange.phase {
            case .reporting(let remaining, let after):
                guard opcode == .statusResponse else {
                    exchange.phase = .idle
                    if let id = exchange.subscriptionID { removeSubscriptions { $0.id == id } }
                    return .status(.invalidAction)
                }
                let status = try StatusResponse(decoding: payload)
                guard status.status == .success else {
                    // The peer gave up on the report: the subscription it belongs to is void.
                    exchange.phase = .idle
                    if let id = exchange.subscriptionID { removeSubscriptions { $0.id == id } }
                    return .close(nil)
                }
                if remaining.isEmpty, after == nil, let id = exchange.subscriptionID {
                    // The subscriber has the whole report: the next one may go.
                    subscriptionState.withLock { state in
                        if let i = state.records.firstIndex(where: { $0.id == id }) {
                            state.records[i].isReportInFlight = false
                        }
                    }
                }
                return nextChunk(remaining: remaining, after: after, exchange: &exchange)
            case .timed(let deadline):
                exchange.phase = .idle
                guard opcode == .writeRequest || opcode == .invokeRequest else { return .status(.invalidAction) }
                if now > deadline { return .status(.timeout) }
                return try handleIdle(opcode, payload, exchange: &exchange, subject: subject, now: now, timed: true)
            case .writing(let timed, _):
                guard opcode == .writeRequest else {
                    exchange.phase = .idle
                    return .status(.invalidAction)
                }
                return try handleWrite(WriteRequest(decoding: payload), exchange: &exchange, subject: subject,
                                       now: now, timed: timed)
            case .idle:
                return try handleIdle(opcode, payload, exchange: &exchange, subject: subject, now: now, timed: false)
            }
        } catch {
            // A report the subscriber answered with something unreadable: the subscription is void.
            if case .reporting = exchange.phase, let id = exchange.subscriptionID {
                removeSubscriptions { $0.id == id }
            }
            exchange.phase = .idle
            return .status(error.status)
        }
    }

    private func handleIdle(_ opcode: InteractionModelOpcode, _ payload: [UInt8], exchange: inout IMExchangeState,
                            subject: SubjectDescriptor, now: MatterInstant, timed: Bool) throws(IMError) -> IMReply {
        switch opcode {
        case .readRequest:
            let request = try ReadRequest(decoding: payload)
            let context = ReadContext(subject: subject, isFabricFiltered: request.isFabricFiltered)
            let reports = dataModel.read(
                request.attributeRequests, filters: request.dataVersionFilters, context: context)
            let events = dataModel.readEvents(
                request.eventRequests, from: Self.eventMin(request.eventFilters), context: context)
            var chunks = chunked(reports, events: events, subscriptionID: nil)
            chunks[chunks.count - 1].suppressResponse = true
            return nextChunk(
                remaining: chunks.map { IMMessage(.reportData, $0.encoded()) }, after: nil, exchange: &exchange)
        case .subscribeRequest:
            return try handleSubscribe(
                SubscribeRequest(decoding: payload), exchange: &exchange, subject: subject, now: now)
        case .writeRequest:
            let request = try WriteRequest(decoding: payload)
            if request.timedRequest != timed { return .status(.timedRequestMismatch) }
            return try handleWrite(request, exchange: &exchange, subject: subject, now: now, timed: timed)
        case .invokeRequest:
            let request = try InvokeRequest(decoding: payload)
            if request.timedRequest != timed { return .status(.timedRequestMismatch) }
            return handleInvoke(request, subject: subject, now: now, timed: timed)
        case .timedRequest:
            let request = try TimedRequest(decoding: payload)
            exchange.phase = .timed(deadline: now + Int64(request.timeoutMilliseconds))
            return .continue(IMMessage(.statusResponse, StatusResponse(.success).encoded()))
        case .statusResponse, .reportData, .subscribeResponse, .writeResponse, .invokeResponse:
            // A client's messages only; a server is never waiting for one here.
            return .status(.invalidAction)
        }
    }

    private func nextChunk(remaining: [IMMessage], after: IMMessage?, exchange: inout IMExchangeState) -> IMReply {
        if let first = remaining.first {
            let rest = Array(remaining.dropFirst())
            if rest.isEmpty && after == nil && exchange.subscriptionID == nil {
                exchange.phase = .idle
                // A read's last chunk suppresses the response: the exchange ends with it.
                return .close(first)
            }
            exchange.phase = .reporting(remaining: rest, after: after)
            return .continue(first)
        }
        exchange.phase = .idle
        return .close(after)
    }

    // MARK: Write

    private func handleWrite(_ request: WriteRequest, exchange: inout IMExchangeState, subject: SubjectDescriptor,
                             now: MatterInstant, timed: Bool) throws(IMError) -> IMReply {
        for data in request.writeRequests where data.path.concrete == nil {
            throw IMError(.invalidAction, "a write path must name endpoint, cluster and attribute: \(data.path)")
        }
        var pending: IMExchangeState.PendingList?
        if case .writing(_, let held) = exchange.phase { pending = held }
        // Statuses in request order; a deferred cluster's comes when its write finishes.
        let statuses = ResultGatherer<AttributeStatusIB>()
        let dataModel = self.dataModel
        func write(_ path: ConcreteAttributePath, _ value: TLVValue, dataVersion: UInt32?) {
            let context = ActionContext(subject: subject, endpoint: path.endpoint, now: now, isTimed: timed)
            let slot = statuses.reserve()
            dataModel.write(path, value: value, dataVersion: dataVersion, context: context) { status in
                statuses.fill(slot, AttributeStatusIB(path: AttributePath(path), status: status))
            }
        }
        func apply(_ list: IMExchangeState.PendingList) {
            write(list.path, .array(list.items), dataVersion: list.dataVersion)
        }

        var index = 0
        let writes = request.writeRequests
        while index < writes.count {
            let first = writes[index]
            let path = first.path.concrete!
            // Items appended to the same path are gathered with what came before them, so that the cluster sees the
            // whole list once and takes it or refuses it: a list is never left half-written, and an ACL replaced by
            // an empty list and then appended to never locks its writer out in between.
            var appended: [TLVElement] = []
            var next = index + (first.path.listIndex == .append ? 0 : 1)
            while next < writes.count, writes[next].path.concrete == path, writes[next].path.listIndex == .append {
                appended.append(TLVElement(writes[next].data))
                next += 1
            }
            defer { index = max(next, index + 1) }
            switch first.path.listIndex {
            case .index:
                statuses.add(AttributeStatusIB(path: AttributePath(path), status: StatusIB(.invalidAction)))
                continue
            case .append:
                if let held = pending, held.path == path {
                    pending?.items += appended
                    continue
                }
                if let held = pending {
                    apply(held)
                    pending = nil
                }
                // A continuation of a list written in an earlier transaction: append to what the list holds now.
                let current = dataModel.readConcrete(
                    path, context: ReadContext(subject: subject, isFabricFiltered: true))
                switch current {
                case .data(let data):
                    guard case .array(let items) = data.data else {
                        statuses.add(AttributeStatusIB(path: AttributePath(path), status: StatusIB(.invalidDataType)))
                        continue
                    }
                    pending = IMExchangeState.PendingList(path: path, dataVersion: nil, items: items + appended)
                case .status(let failure):
                    statuses.add(AttributeStatusIB(path: AttributePath(path), status: failure.status))
                    continue
                }
            case nil:
                if let held = pending {
                    apply(held)
                    pending = nil
                }
                let isList = dataModel.cluster(path.clusterPath)?.attributeDefinition(path.attribute)?.isList ?? false
                if isList, case .array(let items) = first.data {
                    pending = IMExchangeState.PendingList(
                        path: path, dataVersion: first.dataVersion, items: items + appended)
                } else if !appended.isEmpty {
                    statuses.add(AttributeStatusIB(path: AttributePath(path), status: StatusIB(.invalidDataType)))
                } else {
                    write(path, first.data, dataVersion: first.dataVersion)
                }
            }
            // A list still open at the end of a chunk may go on in the next one; any other is written now.
            if let held = pending, !(request.moreChunkedMessages && next == writes.count) {
                apply(held)
                pending = nil
            }
        }
        if let held = pending, !request.moreChunkedMessages {
            apply(held)
            pending = nil
        }
        if let held = pending {
            // Held for the next chunk; its status comes with the chunk that completes it.
            exchange.phase = .writing(timed: timed, pending: held)
        } else {
            exchange.phase = request.moreChunkedMessages ? .writing(timed: timed, pending: nil) : .idle
        }
        if request.suppressResponse && !request.moreChunkedMessages {
            _ = statuses.seal()
            return .close(nil)
        }
        let more = request.moreChunkedMessages
        @Sendable func reply(_ statuses: [AttributeStatusIB]) -> IMReply {
            let response = IMMessage(.writeResponse, WriteResponse(writeResponses: statuses).encoded())
            return more ? .continue(response) : .close(response)
        }
        if let done = statuses.seal() { return reply(done) }
        return .later(DeferredIMReply { completion in statuses.whenComplete { completion(reply($0)) } })
    }

    // MARK: Invoke

    private func handleInvoke(_ request: InvokeRequest, subject: SubjectDescriptor, now: MatterInstant,
                              timed: Bool) -> IMReply {
        guard request.invokeRequests.count <= Self.maximumPathsPerInvoke else { return .status(.invalidAction) }
        let responses = ResultGatherer<InvokeResponseIB>()
        for command in request.invokeRequests {
            let context = ActionContext(
                subject: subject, endpoint: command.path.endpoint ?? 0, now: now, isTimed: timed)
            let slot = responses.reserve()
            dataModel.invoke(command.path, fields: command.fields, context: context) { result in
                responses.fill(slot, Self.invokeResponse(command, result))
            }
        }
        let all = responses.seal()
        if request.suppressResponse { return .close(nil) }
        @Sendable func reply(_ responses: [InvokeResponseIB]) -> IMReply {
            .close(IMMessage(.invokeResponse, InvokeResponse(invokeResponses: responses).encoded()))
        }
        if let all { return reply(all) }
        return .later(DeferredIMReply { completion in responses.whenComplete { completion(reply($0)) } })
    }

    private static func invokeResponse(_ command: CommandDataIB, _ result: Result<CommandResult, IMError>)
        -> InvokeResponseIB
    {
        switch result {
        case .success(.success):
            return .status(CommandStatusIB(path: command.path, status: .success, commandRef: command.commandRef))
        case .success(.response(let id, let fields)):
            let path = CommandPath(endpoint: command.path.endpoint, cluster: command.path.cluster, command: id)
            return .command(CommandDataIB(path: path, fields: fields, commandRef: command.commandRef))
        case .failure(let error):
            return .status(CommandStatusIB(path: command.path, status: StatusIB(error), commandRef: command.commandRef))
        }
    }

    // MARK: Subscribe

    private func handleSubscribe(_ request: SubscribeRequest, exchange: inout IMExchangeState,
                                 subject: SubjectDescriptor, now: MatterInstant) throws(IMError) -> IMReply {
        guard subject.authMode == .case else {
            throw IMError(.unsupportedAccess, "a subscription needs a CASE session")
        }
        // Events from here on are the reports' to send; the priming report has those before.
        let eventLimit = dataModel.nextEventNumber
        let record = subscriptionState.withLock { state in
            if !request.keepSubscriptions {
                state.records.removeAll {
                    $0.subject.fabricIndex == subject.fabricIndex && $0.subject.subject == subject.subject
                }
                subscribersStartedAfresh.withLock { $0.append(subject) }
            }
            // The subscriber's ceiling is the node's MaxInterval: within what the specification allows (at least the
            // floor, at most the larger of the ceiling and an hour), and the soonest the subscriber hears of silence.
            let record = SubscriptionRecord(
                id: state.nextID, subject: subject, paths: request.attributeRequests, eventPaths: request.eventRequests,
                isFabricFiltered: request.isFabricFiltered, minIntervalSeconds: request.minIntervalFloorSeconds,
                maxIntervalSeconds: max(request.maxIntervalCeilingSeconds, request.minIntervalFloorSeconds, 1),
                lastReport: now, reportedVersions: dataModel.versions(covering: request.attributeRequests),
                nextEventNumber: eventLimit)
            state.nextID &+= 1
            state.records.append(record)
            return record
        }
        let context = ReadContext(subject: subject, isFabricFiltered: request.isFabricFiltered)
        let reports = dataModel.read(request.attributeRequests, filters: request.dataVersionFilters, context: context)
        let events = dataModel.readEvents(
            request.eventRequests, from: Self.eventMin(request.eventFilters), below: eventLimit,
            context: context)
        let chunks = chunked(reports, events: events, subscriptionID: record.id).map {
            IMMessage(.reportData, $0.encoded())
        }
        let response = SubscribeResponse(subscriptionID: record.id, maxIntervalSeconds: record.maxIntervalSeconds)
        return nextChunk(
            remaining: chunks, after: IMMessage(.subscribeResponse, response.encoded()), exchange: &exchange)
    }

    // MARK: Resumption

    /// Takes up a subscription stored before a restart, once its subscriber is reached again: the subscription is
    /// served under its old id (ids handed out later follow it), and the priming report — every attribute it covers
    /// and the events logged since the start — is returned to send on a new exchange; the subscriber's StatusResponse
    /// to its last chunk lets the next report go. Nil when a subscription with that id is served already.
    public func resume(_ stored: PersistedSubscription, now: MatterInstant) -> DueReport? {
        let subject = stored.subject
        let eventLimit = dataModel.nextEventNumber
        let record: SubscriptionRecord? = subscriptionState.withLock { state in
            guard !state.records.contains(where: { $0.id == stored.id }) else { return nil }
            let record = SubscriptionRecord(
                id: stored.id, subject: subject, paths: stored.paths, eventPaths: stored.eventPaths,
                isFabricFiltered: stored.isFabricFiltered, minIntervalSeconds: stored.minIntervalSeconds,
                maxIntervalSeconds: stored.maxIntervalSeconds, lastReport: now,
                reportedVersions: dataModel.versions(covering: stored.paths), nextEventNumber: eventLimit,
                isReportInFlight: true)
            state.records.append(record)
            if state.nextID <= stored.id { state.nextID = stored.id &+ 1 }
            return record
        }
        guard let record else { return nil }
        let context = ReadContext(subject: subject, isFabricFiltered: record.isFabricFiltered)
        let reports = dataModel.read(record.paths, filters: [], context: context)
        let events = dataModel.readEvents(
            record.eventPaths, from: 0, below: eventLimit, context: context, statuses: false)
        var messages = chunked(reports, events: events, subscriptionID: record.id).map {
            IMMessage(.reportData, $0.encoded())
        }
        let first = messages.removeFirst()
        var exchange = IMExchangeState()
        exchange.subscriptionID = record.id
        exchange.phase = .reporting(remaining: messages, after: nil)
        return DueReport(
            subscriptionID: record.id, subject: subject, message: first, expectsResponse: true, exchange: exchange)
    }

    /// The subscribers that subscribed with KeepSubscriptions false since the last call, emptied: a stored
    /// subscription of theirs that the node has not resumed yet is void as well.
    public func takeSubscribersStartedAfresh() -> [SubjectDescriptor] {
        subscribersStartedAfresh.withLock { subjects in
            defer { subjects = [] }
            return subjects
        }
    }

    /// Makes sure ids handed out from now on are above `id` (a stored subscription still being resumed keeps it).
    public func reserveSubscriptionID(_ id: UInt32) {
        subscriptionState.withLock { state in
            if state.nextID <= id { state.nextID = id &+ 1 }
        }
    }

    /// The reports due at `now`: for each subscription past its minimum interval whose clusters changed or that has
    /// new events since its last report, the attributes of those clusters and the events (chunked); for one at its
    /// maximum interval with nothing new, an empty keep-alive report. New events on an urgent path do not wait for the
    /// minimum interval. The node sends each on a new exchange to the subscriber's session; the subscriber answers
    /// each with a StatusResponse.
    public func reportsDue(now: MatterInstant) -> [DueReport] {
        let records = subscriptions
        var due: [DueReport] = []
        for record in records where !record.isReportInFlight {
            let minimum = record.lastReport + Int64(record.minIntervalSeconds) * 1000
            let maximum = record.lastReport + Int64(record.maxIntervalSeconds) * 1000
            let context = ReadContext(subject: record.subject, isFabricFiltered: record.isFabricFiltered)
            let eventLimit = dataModel.nextEventNumber
            if now < minimum {
                guard hasUrgentEvents(record, paths: record.eventPaths, below: eventLimit) else { continue }
            }
            // The versions are taken before the read: a change made meanwhile (a bridge marks changes from its own
            // threads) is then reported again next time rather than never.
            let versions = dataModel.versions(covering: record.paths)
            let filters = record.reportedVersions.map { DataVersionFilter(path: $0.key, dataVersion: $0.value) }
            let reports = dataModel.read(record.paths, filters: filters, context: context)
            let events = dataModel.readEvents(record.eventPaths, from: record.nextEventNumber, below: eventLimit,
                                              context: context, statuses: false)
            var exchange = IMExchangeState()
            exchange.subscriptionID = record.id
            let report: DueReport
            if !reports.isEmpty || !events.isEmpty {
                var messages = chunked(reports, events: events, subscriptionID: record.id).map {
                    IMMessage(.reportData, $0.encoded())
                }
                let first = messages.removeFirst()
                // The last chunk is answered too: the exchange waits for that StatusResponse before it closes.
                exchange.phase = .reporting(remaining: messages, after: nil)
                report = DueReport(
                    subscriptionID: record.id, subject: record.subject, message: first, expectsResponse: true,
                    exchange: exchange)
            } else if now >= maximum {
                // Answered like any report (only a read's last report suppresses the response): the subscriber's
                // StatusResponse, or its silence, says whether the subscription is still alive.
                let keepAlive = ReportData(subscriptionID: record.id, attributeReports: [])
                exchange.phase = .reporting(remaining: [], after: nil)
                report = DueReport(
                    subscriptionID: record.id, subject: record.subject,
                    message: IMMessage(.reportData, keepAlive.encoded()), expectsResponse: true, exchange: exchange)
            } else {
                // Nothing the subscriber may see changed: what did change is taken as reported, so that it is not
                // looked at again (and the node's report timer does not wake for it).
                subscriptionState.withLock { state in
                    guard let i = state.records.firstIndex(where: { $0.id == record.id }) else { return }
                    state.records[i].reportedVersions = versions
                    state.records[i].nextEventNumber = eventLimit
                }
                continue
            }
            due.append(report)
            subscriptionState.withLock { state in
                guard let i = state.records.firstIndex(where: { $0.id == record.id }) else { return }
                state.records[i].lastReport = now
                state.records[i].reportedVersions = versions
                state.records[i].nextEventNumber = eventLimit
                state.records[i].isReportInFlight = true
            }
        }
        return due
    }

    /// When a report may next be due: now or at the minimum interval for a subscription with something new to
    /// report (at once for an event on an urgent path), else at its maximum interval; nil without subscriptions.
    /// A subscription whose report is still unanswered waits for that answer. The node calls `reportsDue` then.
    public var nextReportDeadline: MatterInstant? {
        var earliest: MatterInstant?
        for record in subscriptions where !record.isReportInFlight {
            let deadline: MatterInstant
            let news = newEvents(of: record)
            if hasUrgentEvents(record, paths: news) {
                deadline = record.lastReport
            } else if !news.isEmpty || dataModel.versions(covering: record.paths) != record.reportedVersions {
                deadline = record.lastReport + Int64(record.minIntervalSeconds) * 1000
            } else {
                deadline = record.lastReport + Int64(record.maxIntervalSeconds) * 1000
            }
            if earliest.map({ deadline < $0 }) ?? true { earliest = deadline }
        }
        return earliest
    }

    /// Whether events logged since the subscription's last report, on its urgent paths among `paths`, are the
    /// subscriber's to read: such a report does not wait for the minimum interval.
    private func hasUrgentEvents(_ record: SubscriptionRecord, paths: [EventPath], below limit: UInt64 = .max) -> Bool {
        let urgent = paths.filter(\.isUrgent)
        guard !urgent.isEmpty else { return false }
        let context = ReadContext(subject: record.subject, isFabricFiltered: record.isFabricFiltered)
        return !dataModel.readEvents(
            urgent, from: record.nextEventNumber, below: limit, context: context, statuses: false
        ).isEmpty
    }

    /// The paths of a subscription that events logged since its last report match (access is checked when they are
    /// read: this only says whether to look).
    private func newEvents(of record: SubscriptionRecord) -> [EventPath] {
        guard !record.eventPaths.isEmpty, dataModel.nextEventNumber > record.nextEventNumber else { return [] }
        let logged = dataModel.loggedEvents(from: record.nextEventNumber)
        return record.eventPaths.filter { path in logged.contains { path.matches($0.path) } }
    }

    /// When `reportsDue` must next be called at the latest (the earliest maximum interval); a change may make a
    /// report due sooner, at its subscription's minimum interval.
    public var nextKeepAliveDeadline: MatterInstant? {
        subscriptions.map { $0.lastReport + Int64($0.maxIntervalSeconds) * 1000 }.min()
    }

    /// The largest EventMin of a request's filters: the client has seen every event below it.
    static func eventMin(_ filters: [EventFilter]) -> UInt64 { filters.map(\.eventMin).max() ?? 0 }

    // MARK: Chunking

    /// Splits reports into ReportData messages that each fit `maximumPayloadSize`, every one but the last marked
    /// MoreChunkedMessages; events follow the attributes. A list too long for one message is sent as an empty list
    /// and then item by item (ListIndex null: append), as the specification's chunking of lists asks; an item or an
    /// event that fits nowhere is answered RESOURCE_EXHAUSTED.
    func chunked(_ reports: [AttributeReportIB], events: [EventReportIB] = [], subscriptionID: UInt32?) -> [ReportData]
    {
        let overhead = ReportData.overhead(subscriptionID: subscriptionID)
        let budget = maximumPayloadSize - overhead
        var messages: [ReportData] = []
        var current: [AttributeReportIB] = []
        var currentEvents: [EventReportIB] = []
        var used = 0

        func flushIfFull(adding size: Int) {
            if used + size > budget && !(current.isEmpty && currentEvents.isEmpty) {
                messages.append(
                    ReportData(
                        subscriptionID: subscriptionID, attributeReports: current, eventReports: currentEvents,
                        moreChunkedMessages: true))
                current = []
                currentEvents = []
                used = 0
            }
        }

        func add(_ report: AttributeReportIB, size: Int) {
            flushIfFull(adding: size)
            current.append(report)
            used += size
        }

        for report in reports {
            let size = report.encoded().encoded().count
            if size <= budget {
                add(report, size: size)
                continue
            }
            guard case .data(let data) = report, case .array(let items) = data.data else {
                add(Self.exhausted(report), size: 0)
                continue
            }
            var path = data.path
            path.listIndex = nil
            let empty = AttributeReportIB.data(
                AttributeDataIB(dataVersion: data.dataVersion, path: path, data: .array([])))
            add(empty, size: empty.encoded().encoded().count)
            path.listIndex = .append
            for item in items {
                let itemReport = AttributeReportIB.data(
                    AttributeDataIB(dataVersion: data.dataVersion, path: path, data: item.value))
                let itemSize = itemReport.encoded().encoded().count
                add(
                    itemSize <= budget ? itemReport : Self.exhausted(itemReport),
                    size: itemSize <= budget ? itemSize : 0)
            }
        }
        for event in events {
            var report = event
            var size = report.encoded().encoded().count
            if size > budget, case .data(let data) = event {
                report = .status(EventStatusIB(path: EventPath(data.path), status: StatusIB(.resourceExhausted)))
                size = report.encoded().encoded().count
            }
            flushIfFull(adding: size)
            currentEvents.append(report)
            used += size
        }
        messages.append(
            ReportData(subscriptionID: subscriptionID, attributeReports: current, eventReports: currentEvents))
        return messages
    }

    private static func exhausted(_ report: AttributeReportIB) -> AttributeReportIB {
        let path: AttributePath = switch report {
        case .data(let data): data.path
        case .status(let status): status.path
        }
        return .status(AttributeStatusIB(path: path, status: StatusIB(.resourceExhausted)))
    }
}

extension ReportData {
    /// The bytes a ReportData takes besides its reports: the structure, the subscription id, the (empty) report
    /// array, MoreChunkedMessages, SuppressResponse and the revision.
    static func overhead(subscriptionID: UInt32?) -> Int {
        TLVElement.message {
            if let subscriptionID { TLVElement(context: 0, .uint(subscriptionID)) }
            TLVElement(context: 1, .array([]))
            TLVElement(context: 2, .array([]))
            TLVElement(context: 3, .bool(true))
            TLVElement(context: 4, .bool(true))
        }.encoded().count
    }
}
