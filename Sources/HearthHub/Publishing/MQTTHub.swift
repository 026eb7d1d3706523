public import HearthContract
package import HearthJSON
public import HearthMQTT
public import HearthEngine
package import HearthModel
import HearthSync

/// Publishes a `Home` over MQTT and runs the requests that arrive for it (`docs/mqtt-api.md`).
///
/// The libmosquitto network thread only parses a request and answers what needs no device (malformed,
/// retained, forwarded to a peer); a request for a device with hardware leaves it at once for that device's
/// lane (`Home.enqueue(on:)`), where it runs with whatever hardware I/O it needs. A device with no hardware
/// (no binding: nothing it does can block) is answered on the network thread, saving two thread wakes. So a slow device
/// delays only its own requests, requests to one device are answered in the order they arrived, and the network thread
/// is never blocked. On the lane, the engine publishes the changed device document from its observer before
/// the request's response is published, so a client that waits for the response already has the new state.
/// While the broker is unreachable nothing is queued: every (re)connection republishes the current state of
/// every device, so the newest state always wins and memory stays bounded.
public final class MQTTHub: Sendable {
    public let home: Home
    public let client: MQTTClient
    public let topics: TopicScheme
    let log: @Sendable (String) -> Void
    private let refresh: @Sendable (String) -> Void
    let hasHardware: @Sendable (String) -> Bool
    let requestsWaitingPerDevice: Int
    private let linkLog = Locked(LinkLog())
    /// Enough for every burst a person, a script or Home Assistant sends one device (a scene, a slider dragged
    /// across its range) while its hardware answers in milliseconds; a device that hangs for long holds at most this.
    public static let defaultRequestsWaitingPerDevice = 64
    private let online: @Sendable () -> Void
    /// Counts the connections (the network thread's `onConnect`), so that publishing a part at a time stops when its
    /// connection ends.
    private let connections = Locked(0)
    /// Messages on the hub's other subscriptions (not requests, not the router's).
    private let other: @Sendable (MQTTMessage) -> Void
    /// Peers, mirrors and cross-hub bindings; nil for a hub on its own.
    public let router: PeerRouter?
    private let observer = Locked<Int?>(nil)
    private let writer = Locked(DocumentWriter())
    /// The groups whose topics this hub is subscribed to: those its devices are in.
    let groupSubscriptions = Locked<Set<Int>>([])
    /// Group requests sent for a door (`sendGroup`), by the transaction they were sent with, until answered.
    let groupSends = Locked<[String: PendingGroupSend]>([:])
    /// The transactions of the group requests this hub sent in the last minute, and when.
    let ownGroupSends = Locked<[String: HubInstant]>([:])
    /// Peers' group ids, from their retained `<prefix>/<hub>/groups` (heard only by a hub with peers).
    let peerGroups = Locked<[String: Set<Int>]>([:])
    /// How long a door's group request waits for the other hubs' summaries (`sendGroup`), in milliseconds.
    let groupAnswerWait: Int64
    /// The device summary is republished at most once per window (`PublicationThrottle`): every peer rebuilds
    /// its whole-home document from it.
    public let summaryThrottle: PublicationThrottle
    /// Requests run in the last minute, so that a QoS 1 copy of one is answered, not run again.
    let recent = Locked(RecentRequests())

    /// Options for the hub's client: `base` plus the last will (`offline` on the status topic).
    public static func clientOptions(_ base: MQTTConnectOptions, topics: TopicScheme) -> MQTTConnectOptions {
        var options = base
        options.will = MQTTConnectOptions.Will(topic: topics.status, payload: Array("offline".utf8), qos: .atLeastOnce,
                                               retain: true)
        if options.clientID == nil { options.clientID = "hearth-\(topics.hub)" }
        return options
    }

    /// - Parameters:
    ///   - refresh: called for a `get` request, on the device's lane: re-read the device's hardware now (the hub
    ///     republishes after). It may block; only that device waits.
    ///   - hasHardware: whether a device has hardware (a binding) whose I/O may block; its requests then run on
    ///     its lane. Unknown: assume it may.
    ///   - log: one line per event worth a log entry (refused requests, publish failures).
    ///   - online: called on every connection once everything is published and `online` is sent.
    ///   - requestsWaitingPerDevice: how many requests a device with hardware may have queued or running on its
    ///     lane; more are refused at once with `busy`.
    ///   - publicationWindow: milliseconds on the home's clock: the device summary is republished at most once
    ///     per window after a change, always the newest (`PublicationThrottle`).
    ///   - groupAnswerWait: milliseconds on the home's clock a door's group request waits for the other hubs.
    public init(home: Home, client: MQTTClient, topics: TopicScheme,
                refresh: @escaping @Sendable (String) -> Void = { _ in },
                hasHardware: @escaping @Sendable (String) -> Bool = { _ in true },
                requestsWaitingPerDevice: Int = MQTTHub.defaultRequestsWaitingPerDevice,
                log: @escaping @Sendable (String) -> Void = { _ in },
                online: @escaping @Sendable () -> Void = {}, router: PeerRouter? = nil,
                publicationWindow: Int64 = PublicationThrottle.defaultWindow,
                groupAnswerWait: Int64 = MQTTHub.defaultGroupAnswerWait,
                other: @escaping @Sendable (MQTTMessage) -> Void = { _ in }) {
        summaryThrottle = PublicationThrottle(window: publicationWindow, clock: home.clock) {
            guard client.isConnected else { return }  // republished in full on the next connection
            Self.send(client, topics.devices, SummaryWriter.summaries(of: home), retain: true, log: log)
        }
        self.other = other
        self.groupAnswerWait = groupAnswerWait
        self.router = router
        self.home = home
        self.client = client
        self.topics = topics
        self.refresh = refresh
        self.hasHardware = hasHardware
        self.requestsWaitingPerDevice = requestsWaitingPerDevice
        self.log = log
        self.online = online
    }

    /// Subscribes, starts the client, and publishes everything on every connection.
    public func start() throws(MQTTError) {
        client.onConnect = { [weak self] version in
            guard let self else { return }
            router?.connected(version, client: client)
            publishEverything()
        }
        client.onConnectionEvent = { [weak self] event in
            guard let self else { return }
            if case .disconnected = event { router?.linkChanged(up: false) }
            if let line = linkLog.withLock({ $0.line(for: event, broker: client.options.host) }) { log(line) }
        }
        try router?.attach(client)
        client.onMessage = { [weak self] message in self?.handle(message) }
        let id = home.observe { [weak self] events in self?.publishChanges(events) }
        observer.withLock { $0 = id }
        // Retain-as-published lets a retained `set` sent while we are connected be recognised too.
        try client.subscribe(
            topics.setFilter, options: MQTTSubscriptionOptions(qos: .atLeastOnce, retainAsPublished: true))
        // Which peers have members of which groups, so that a door's group request knows whom to wait for.
        if router != nil {
            try client.subscribe(
                topics.groupsFilter, options: MQTTSubscriptionOptions(qos: .atLeastOnce, noLocal: true))
        }
        syncGroupSubscriptions()
        try client.start()
    }

    /// Publishes what the throttles hold, then `offline`, and disconnects cleanly (so the will is not needed).
    public func stop() {
        if let id = observer.withLock({ $0 }) { home.removeObserver(id) }
        summaryThrottle.flush()
        router?.flush()
        if client.isConnected {
            try? client.publish(topics.status, payload: Array("offline".utf8), qos: .atLeastOnce, retain: true)
        }
        client.disconnect()
    }

    // MARK: Publishing

    /// How many device documents one turn of the network thread publishes on a connection. Why: a large hub that
    /// queued all its documents at once reached the peak of its memory there, and the broker took the first only
    /// once the last was built. A part at a time, each part once the socket has taken the last, the broker stores
    /// one part while the next is built, and libmosquitto's queue never holds more than a part.
    static let documentsPerTurn = 64

    /// Publishes every document (a part per turn of the network thread), then the summary, the groups and `online`.
    func publishEverything() {
        let connection = connections.withLock { n in n &+= 1; return n }
        publishDocuments(home.deviceIDs, from: 0, connection: connection)
    }

    private func publishDocuments(_ ids: [String], from start: Int, connection: Int) {
        // A connection that ended ends its publication: the next one publishes everything again.
        guard client.isConnected, connections.withLock({ $0 }) == connection else { return }
        let end = min(start + Self.documentsPerTurn, ids.count)
        // Each view is taken as its part is published: a device changed meanwhile has published its new state already.
        for id in ids[start..<end] { if let d = try? home.view(id) { publish(d) } }
        if end < ids.count {
            client.whenWritten { [weak self] in self?.publishDocuments(ids, from: end, connection: connection) }
            return
        }
        summaryThrottle.publishNow()
        publishGroups()
        send(topics.status, Array("online".utf8), qos: .atLeastOnce, retain: true)
        router?.linkChanged(up: true)
        online()
    }

    func publish(_ device: DeviceView) {
        send(topics.device(device.id), writer.withLock { $0.document(device) }, retain: true)
    }

    func publishChanges(_ events: [HomeEvent]) {
        guard client.isConnected else { return }  // republished in full on the next connection
        var ids: [String] = []
        var summary = false
        var groups = false
        for e in events {
            if !ids.contains(e.deviceID) { ids.append(e.deviceID) }
            switch e.change {
            case .metadata, .connectivity: summary = true
            case .table: groups = true
            case .attribute, .event, .unsupported: break
            }
        }
        for id in ids { if let d = try? home.view(id) { publish(d) } }
        if groups {
            syncGroupSubscriptions()
            publishGroups()
        }
        if summary {
            summaryThrottle.changed()
            router?.publishHome()
        }
    }

    @discardableResult
    func send(_ topic: String, _ payload: [UInt8], qos: MQTTQoS = .atMostOnce, retain: Bool = false,
              correlationData: [UInt8]? = nil, userProperties: [MQTTUserProperty] = []) -> Bool {
        Self.send(client, topic, payload, qos: qos, retain: retain, correlationData: correlationData,
                  userProperties: userProperties, log: log)
    }

    /// Publishes; a failure is logged (but for `notConnected`: everything is republished on the next connection).
    /// Returns whether the message was queued.
    @discardableResult
    static func send(_ client: MQTTClient, _ topic: String, _ payload: [UInt8], qos: MQTTQoS = .atMostOnce,
                     retain: Bool = false, correlationData: [UInt8]? = nil, userProperties: [MQTTUserProperty] = [],
                     log: @Sendable (String) -> Void) -> Bool {
        do {
            try client.publish(topic, payload: payload, qos: qos, retain: retain, correlationData: correlationData,
                               userProperties: userProperties)
            return true
        } catch {
            if error.code != .notConnected { log("publish to \(topic) failed: \(error)") }
            return false
        }
    }

    // MARK: Requests

    func handle(_ message: MQTTMessage) {
        let topic = topics.classify(message.topic)
        if takeGroupAnswer(message, from: topic) { return }
        if let router, router.handle(message, as: topic) { return }
        let deviceID: String
        switch topic {
        case .groups(let hub)? where !topics.isThisHub(hub) && router != nil:
            peerGroupsChanged(hub: hub, message.payload)
            return
        case .groupSet(let group)?:
            handleGroup(message, group: group)
            return
        case .set(let hub, let device)? where topics.isThisHub(hub):
            deviceID = device
        case .setWithoutDevice(let hub)? where topics.isThisHub(hub):
            // A client waits for this answer as for any other: it names the device as the topic did (empty).
            guard !message.payload.isEmpty || !message.retain else { return }
            let transaction = HubRequest.parse(message.payload).transaction
            respond(
                message,
                HubResponse.failure(
                    transaction: transaction, device: "",
                    .invalidCommand(
                        "the topic \(message.topic) names no device: "
                            + "a request goes to <prefix>/<hub>/devices/<device id>/set")))
            return
        default:
            other(message)
            return
        }
        if message.retain {
            // A retained request would run again at every reconnect ("ghost switching"): never run it,
            // say so, and clear it from the broker.
            guard !message.payload.isEmpty else { return }
            log("refused a retained request on \(message.topic); cleared it")
            let transaction = HubRequest.parse(message.payload).transaction
            respond(message, HubResponse.failure(transaction: transaction, device: deviceID, .invalidCommand(
                "retained requests are never executed (they would repeat at every reconnect); publish without retain")))
            send(message.topic, [], qos: .atLeastOnce, retain: true)
            return
        }
        let (transaction, parsed) = HubRequest.parse(message.payload)
        let response: JSON
        var forwarded: ForwardedAnswer?
        switch parsed {
        case .failure(let error):
            log("refused a request for \(deviceID): \(error)")
            response = HubResponse.failure(transaction: transaction, device: deviceID, error)
        case .success(let request):
            if let router, let (owner, device, forwarded) = router.target(of: request, device: deviceID) {
                guard let error = router.forward(forwarded, transaction: transaction, device: deviceID, to: owner,
                                                 ownerDevice: device, responseTopic: message.responseTopic,
                                                 correlationData: message.correlationData) else { return }
                log("request for \(deviceID) not forwarded to hub '\(owner)': \(error)")
                response = HubResponse.failure(transaction: transaction, device: deviceID, error)
                break
            }
            // Forwarded by another hub: answered to its client, or to it, too.
            forwarded = ForwardedAnswer(request, message, topics: topics)
            // A copy of a request run in the last minute (QoS 1 delivers at least once) is answered, not run again.
            guard case .run(let key) = admit(message, transaction: transaction, what: "for \(deviceID)",
                                             forwarded: forwarded) else { return }
            let runOnce: @Sendable () -> JSON = { [self] in
                let response = run(request.action, transaction: transaction, on: deviceID)
                remember(key, response, ran: response["ok"] == .bool(true))
                return response
            }
            // Off the network thread if the request may wait for the device's hardware, at most
            // `requestsWaitingPerDevice` of them at a time (docs/architecture.md, "Back-pressure").
            guard hasHardware(deviceID) else {
                response = runOnce()
                break
            }
            switch home.enqueue(on: deviceID, limit: requestsWaitingPerDevice, { [self, forwarded] in
                respond(message, runOnce(), forwarded: forwarded)
            }) {
            case .queued:
                return
            case .full:
                let error = HomeError(
                    .busy,
                    "device '\(deviceID)' has \(requestsWaitingPerDevice) requests waiting for its "
                        + "hardware; nothing was done: send it again once it has answered them")
                log("refused a request for \(deviceID): \(error)")
                remember(key, .null, ran: false)
                response = HubResponse.failure(transaction: transaction, device: deviceID, error)
            case .unknownDevice:
                response = runOnce()  // notFound
            }
        }
        respond(message, response, forwarded: forwarded)
    }

    enum Admission {
        /// Run it; `key` (nil for a request without a transaction) is what to `remember` its response under.
        case run(key: RecentRequests.Key?)
        /// A copy of a request that ran or runs: answered again or dropped already.
        case handled
    }

    /// Whether to run a request, or it is a copy (`RecentRequests`): then it is answered with the first one's
    /// response, or dropped while the first still runs, and logged.
    func admit(_ message: MQTTMessage, transaction: JSON, what: String, forwarded: ForwardedAnswer? = nil) -> Admission
    {
        guard transaction != .null else { return .run(key: nil) }
        let key = RecentRequests.Key(
            topic: message.topic, payload: message.payload, responseTopic: message.responseTopic,
            correlationData: message.correlationData)
        switch recent.withLock({ $0.admit(key, now: home.clock.now) }) {
        case .run:
            return .run(key: key)
        case .running:
            log("a copy of request \(transaction.text) \(what) arrived while it runs; it runs once")
        case .answered(let earlier):
            log("a copy of request \(transaction.text) \(what) arrived; answered again, not run again")
            respond(message, earlier, forwarded: forwarded)
        }
        return .handled
    }

    /// The response of an admitted request, for its copies; one that ran nothing changed nothing and is forgotten, so
    /// that a copy of it runs (and may get what the client wanted).
    func remember(_ key: RecentRequests.Key?, _ response: JSON, ran: Bool) {
        guard let key else { return }
        recent.withLock { ran ? $0.answered(key, response) : $0.forget(key) }
    }

    /// Runs one request and writes its response.
    func run(_ action: HubRequest.Action, transaction: JSON, on deviceID: String) -> JSON {
        do throws(HomeError) {
            let result = try execute(action, on: deviceID)
            return HubResponse.ok(transaction: transaction, device: deviceID, result: result)
        } catch {
            log("request for \(deviceID) failed: \(error)")
            return HubResponse.failure(transaction: transaction, device: deviceID, error)
        }
    }

    /// Answers a request: on its response topic, then on `responses`. A request another hub forwarded
    /// (`ForwardedAnswer`) may also be answered to its client first, and the forwarding hub told so (`DirectReply`),
    /// or on the forwarding hub's `answers` topic.
    func respond(_ request: MQTTMessage, _ response: JSON, forwarded: ForwardedAnswer? = nil) {
        let payload = response.bytes
        var repliedToClient = false
        if let direct = forwarded?.client {
            let clientPayload = DirectReply.clientResponse(
                response, transaction: direct.transaction, device: direct.device
            ).bytes
            repliedToClient = send(direct.topic, clientPayload, correlationData: direct.correlationData)
        }
        // The one waiting for this answer first (a client, or a hub that forwarded the request and relays it): the
        // broker then delivers it before it handles `responses` for every watcher.
        if let responseTopic = request.responseTopic {
            send(responseTopic, payload, correlationData: request.correlationData,
                 userProperties: repliedToClient ? [DirectReply.answered] : [])
        }
        if let answers = forwarded?.forwarderAnswers { send(answers, payload) }
        send(topics.responses, payload)
    }

    /// Runs one request; returns what goes in the response's `result`.
    package func execute(_ action: HubRequest.Action, on deviceID: String) throws(HomeError) -> JSON? {
        switch action {
        case .command(let type, let trait, let name, let arguments):
            let fields = home.registry.server(for: TraitID(qualifiedName: trait))?.descriptor.command(named: name)?
                .fields
            var values: [String: Value] = [:]
            if case .object(let members) = arguments {
                for (key, json) in members {
                    values[key] = try ValueCoding.value(json, as: fields?.first { $0.name == key }?.type,
                                                        what: "\(name).\(key)")
                }
            }
            let response = try home.invoke(deviceID, type: type, trait: trait, command: name, arguments: values)
            // The command's response fields (Matter's `…Response`), in the descriptor's order and coding.
            guard let response else { return nil }
            let responseFields =
                home.registry.server(for: TraitID(qualifiedName: trait))?.descriptor.command(named: name)?.response
                ?? []
            return .object(
                responseFields.compactMap { f in
                    response[f.name].map { (key: f.name, value: ValueCoding.json($0, as: f.type)) }
                })
        case .update(let type, let trait, let attributes):
            let descriptor = home.registry.server(for: TraitID(qualifiedName: trait))?.descriptor
            var values: [String: Value] = [:]
            if case .object(let members) = attributes {
                for (key, json) in members {
                    values[key] = try ValueCoding.value(json, as: descriptor?.attribute(named: key)?.type,
                                                        what: "\(trait).\(key)")
                }
            }
            try home.update(deviceID, type: type, trait: trait, attributes: values)
            return nil
        case .setName(let name):
            return .object([("name", .string(try home.setName(deviceID, name).name))])
        case .setRoom(let room):
            return .object([("roomId", DeviceDocument.optional(try home.setRoom(deviceID, room).roomID))])
        case .setStructure(let structure):
            return .object([
                ("structureId", DeviceDocument.optional(try home.setStructure(deviceID, structure).structureID))
            ])
        case .get:
            _ = try home.device(deviceID)
            refresh(deviceID)
            if client.isConnected, let d = try? home.view(deviceID) { publish(d) }
            return nil
        }
    }
}

/// What the log says about the broker link: a lost connection, and the first failed attempt of a run (not every
/// retry: a broker that is away for an hour must not fill the journal). Being online again is the daemon's line
/// ("online again"), written once everything is republished.
struct LinkLog {
    private var failedAttempts = 0

    mutating func line(for event: MQTTConnectionEvent, broker: String) -> String? {
        switch event {
        case .connected:
            failedAttempts = 0
            return nil
        case .connectionFailed(let error):
            failedAttempts += 1
            return failedAttempts == 1 ? "cannot connect to the broker \(broker): \(error); retrying with backoff" : nil
        case .disconnected(.lost(let error)):
            return "disconnected from the broker \(broker): \(error); reconnecting"
        case .disconnected(.requested):
            return nil
        }
    }
}

