// One connection to a broker and everything a client knows of the home behind it.
//
// What it reads: every hub's retained topics under the prefix (`<prefix>/+/status`, `…/devices`, `…/devices/+`,
// `…/home`) and the hubs' responses; nothing else crosses the broker (docs/mqtt-api.md). Every message is taken on
// the MQTT client's network thread, where the state is updated and every subscriber's next value is computed and
// yielded under one lock, so subscribers see changes in the order the broker delivered them.
//
// Knowing that the retained messages have all arrived, without guessing a settle time: after subscribing, the client
// publishes a marker to a topic of its own (`hearth-cli/<random>/barrier`, which the board image's ACL grants to
// clients) that it is also subscribed to. The broker handles one connection's packets in order and sends a
// subscription's retained messages when it handles the SUBSCRIBE, so once the marker comes back every retained
// message has arrived. If it does not come back within 2 s (an ACL forbids the topic), the client settles for a short
// quiet spell after the last message instead.
internal import HearthContract
internal import HearthMQTT
import HearthSync

/// A home: the devices of every Hearth hub on one broker, read and controlled the way the Google Home APIs do it.
///
/// ```swift
/// let home = try await Home.connect(broker: "127.0.0.1:1883")
/// for device in try await home.devices().list() where device.types.contains(OnOffLightDeviceType.self) { … }
/// ```
///
/// A `Home` stays connected (reconnecting by itself after a broker restart) until ``close()``, or until nothing
/// holds it, its devices or its streams any more.
public final class Home: Sendable {
    /// How to reach the broker and which hub to see the home through.
    public struct Options: Sendable {
        /// HOST[:PORT], [IPv6]:PORT or mqtt://[USER[:PASSWORD]@]HOST[:PORT] (mqtts:// for TLS).
        public var broker: String
        /// The hub to see the home through and send requests to; any hub answers for the whole home (peer
        /// routing). Its own devices are `direct`, other hubs' `localPeer` (or `remote`, as that hub says). `nil`:
        /// every device as its owner publishes it, and requests go to the owner.
        public var hub: String?
        /// The topic prefix the hubs publish under.
        public var prefix: String
        public var username: String?
        public var password: String?
        /// A file whose first line is the password (as `hearthd`'s `passwordFile`).
        public var passwordFile: String?
        /// TLS settings; `nil` uses TLS only when the broker is written as `mqtts://`.
        public var tls: TLSOptions?
        /// How long to wait for the broker, and for each answer of a hub.
        public var timeout: Duration
        /// The first topic level of this client's private topics (barrier, MQTT 5 responses).
        public var clientTopicRoot: String

        public init(broker: String = "127.0.0.1", hub: String? = nil, prefix: String = "hearth",
                    username: String? = nil, password: String? = nil, passwordFile: String? = nil,
                    tls: TLSOptions? = nil, timeout: Duration = .seconds(5), clientTopicRoot: String = "hearth-cli") {
            self.broker = broker
            self.hub = hub
            self.prefix = prefix
            self.username = username
            self.password = password
            self.passwordFile = passwordFile
            self.tls = tls
            self.timeout = timeout
            self.clientTopicRoot = clientTopicRoot
        }
    }

    /// TLS with the broker. All defaults: trust the system's certificate authorities.
    public struct TLSOptions: Sendable, Hashable {
        /// PEM file of the certificate authorities to trust.
        public var caFile: String?
        /// PEM client certificate and its unencrypted key, for brokers that ask for one.
        public var certificateFile: String?
        public var keyFile: String?
        /// Accept a certificate issued to another host name (like `mosquitto_pub --insecure`).
        public var skipsHostnameVerification: Bool

        public init(caFile: String? = nil, certificateFile: String? = nil, keyFile: String? = nil,
                    skipsHostnameVerification: Bool = false) {
            self.caFile = caFile
            self.certificateFile = certificateFile
            self.keyFile = keyFile
            self.skipsHostnameVerification = skipsHostnameVerification
        }
    }

    public let options: Options
    /// The broker, as parsed from ``Options/broker``.
    public let broker: BrokerAddress

    let client: MQTTClient
    let scheme: TopicScheme
    let nonce: String
    let state = Locked(State())

    var barrierTopic: String { "\(options.clientTopicRoot)/\(nonce)/barrier" }
    var responseTopic: String { "\(options.clientTopicRoot)/\(nonce)/response" }

    private init(options: Options, broker: BrokerAddress, client: MQTTClient) {
        self.options = options
        self.broker = broker
        self.client = client
        scheme = TopicScheme(prefix: options.prefix, hub: "")
        nonce = randomHex(12)
    }

    deinit {
        client.disconnect()
    }

    // MARK: Connecting

    /// Connects to the broker and reads what every hub has published, within `timeout`.
    ///
    /// - Throws: ``HomeError`` with a ``ConnectionFailure`` when the broker cannot be reached, refuses the
    ///   connection or does not answer in time; `notFound` when `hub` is given and no such hub has published a status.
    public static func connect(broker: String = "127.0.0.1", hub: String? = nil, prefix: String = "hearth",
                               username: String? = nil, password: String? = nil, passwordFile: String? = nil,
                               tls: TLSOptions? = nil, timeout: Duration = .seconds(5)) async throws -> Home {
        try await connect(Options(broker: broker, hub: hub, prefix: prefix, username: username, password: password,
                                  passwordFile: passwordFile, tls: tls, timeout: timeout))
    }

    /// Connects with `options`. `deadline` (default: now + `options.timeout`) bounds the connection and the reading
    /// of the published state.
    public static func connect(_ options: Options, deadline: ContinuousClock.Instant? = nil) async throws -> Home {
        let deadline = deadline ?? .now + options.timeout
        let address: BrokerAddress
        do throws(BrokerAddress.ParseError) {
            address = try BrokerAddress(parsing: options.broker, tls: options.tls != nil)
        } catch {
            throw HomeError.invalidArgument(error.message)
        }
        if let problem = Self.prefixProblem(options.prefix) { throw HomeError.invalidArgument(problem) }
        if let hub = options.hub, let problem = TopicScheme.problem(withLevel: hub) {
            throw HomeError.invalidArgument("hub id '\(hub)' cannot be used: \(problem)")
        }
        var mqtt = MQTTConnectOptions(host: address.host, port: address.port)
        mqtt.username = options.username ?? address.username
        mqtt.password = options.password ?? address.password
        if mqtt.password == nil, let file = options.passwordFile { mqtt.password = try PasswordFile.read(file) }
        if options.tls != nil || address.requestsTLS {
            let tls = options.tls ?? TLSOptions()
            mqtt.tls = MQTTConnectOptions.TLS(
                caFile: tls.caFile, certificateFile: tls.certificateFile, keyFile: tls.keyFile,
                verifyPeer: true, skipsHostnameVerification: tls.skipsHostnameVerification)
        }
        let client: MQTTClient
        do throws(MQTTError) {
            client = try MQTTClient(options: mqtt)
        } catch {
            throw HomeError(
                code: .invalidArgument, status: .failure,
                message: "cannot set up the connection to \(address): \(error.message) (\(error.context))",
                connectionFailure: ConnectionFailure(kind: .setup, detail: error.message, context: error.context))
        }
        let home = Home(options: options, broker: address, client: client)
        try await home.start(deadline: deadline)
        if let hub = options.hub, home.hubStatuses().first(where: { $0.hub == hub }) == nil {
            home.close()
            let known = home.hubStatuses().map(\.hub)
            throw HomeError.notFound("no hub '\(hub)' under '\(options.prefix)/' on \(address)"
                + (known.isEmpty ? "; no hub has published a status" : "; hubs: \(known.joined(separator: ", "))"))
        }
        return home
    }

    /// Why `id` cannot be a hub or device id (one topic level: not empty, no `/`, `+`, `#` or NUL), or nil if it can.
    public static func problem(withID id: String) -> String? { TopicScheme.problem(withLevel: id) }

    /// Why `prefix` cannot start the topics (the one rule every Hearth program uses), or nil if it can.
    public static func problem(withPrefix prefix: String) -> String? { TopicScheme.problem(withPrefix: prefix) }

    static func prefixProblem(_ prefix: String) -> String? {
        problem(withPrefix: prefix).map { "prefix '\(prefix)' cannot be used: \($0)" }
    }

    private func start(deadline: ContinuousClock.Instant) async throws(HomeError) {
        client.onMessage = { [weak self] message in self?.receive(message) }
        client.onConnectionEvent = { [weak self] event in self?.connectionEvent(event) }
        let scheme = self.scheme
        do throws(MQTTError) {
            // Sent right after CONNACK, before anything else: this client's own topics, then the hubs'.
            try client.subscribe(
                "\(options.clientTopicRoot)/\(nonce)/+", options: MQTTSubscriptionOptions(qos: .atLeastOnce))
            for filter in [
                scheme.statusFilter, scheme.summaryFilter, scheme.documentFilter, scheme.homeFilter,
                scheme.responsesFilter, scheme.groupsFilter
            ] {
                try client.subscribe(filter, options: MQTTSubscriptionOptions(qos: .atLeastOnce))
            }
        } catch {
            client.disconnect()
            throw HomeError(
                code: .invalidArgument, status: .failure, message: "cannot subscribe: \(error)",
                connectionFailure: ConnectionFailure(kind: .setup, detail: error.message, context: error.context))
        }
        let client = self.client
        let outcome: Result<MQTTProtocolVersion, MQTTError>?
        outcome = await withTaskGroup(of: Result<MQTTProtocolVersion, MQTTError>?.self) { group in
            group.addTask {
                do throws(MQTTError) { return .success(try await client.connect()) } catch { return .failure(error) }
            }
            group.addTask {
                try? await Task.sleep(until: deadline, clock: .continuous)
                return nil
            }
            defer { group.cancelAll() }
            return await group.next() ?? nil
        }
        switch outcome {
        case .success?: break
        case .failure(let error)?:
            client.disconnect()
            throw Self.connectionError(error, broker)
        case nil:
            client.disconnect()
            if Task.isCancelled {
                throw HomeError.cancelled("connecting to the MQTT broker at \(broker) was cancelled")
            }
            throw HomeError(
                code: .deadlineExceeded, status: .timeout,
                message: "no connection to the MQTT broker at \(broker) within \(secondsText(options.timeout))",
                connectionFailure: ConnectionFailure(
                    kind: .timedOut, detail: "no answer",
                    context: "connect to \(broker)"))
        }
        try await settle(deadline: deadline)
    }

    static func connectionError(_ error: MQTTError, _ broker: BrokerAddress) -> HomeError {
        let failure: ConnectionFailure.Kind
        let code: HomeError.Code
        let text: String
        switch error.code {
        case .authenticationFailed, .connectionRefused, .accessDenied:
            (failure, code, text) = (.refused, .unauthenticated, "the MQTT broker at \(broker) refused the connection")
        case .tls, .tlsHandshake, .ocsp:
            (failure, code, text) = (.tls, .unavailable, "TLS with the MQTT broker at \(broker) failed")
        case .addressResolution, .lookup:
            (failure, code, text) = (.hostLookup, .unavailable, "cannot resolve the broker's host in '\(broker)'")
        default:
            (failure, code, text) = (.unreachable, .unavailable, "cannot reach the MQTT broker at \(broker)")
        }
        return HomeError(
            code: code, status: .failure, message: "\(text): \(error.message)",
            connectionFailure: ConnectionFailure(kind: failure, detail: error.message, context: error.context))
    }

    /// How long to wait for the barrier marker before deciding it will not come back (an ACL on the client's topics).
    static let barrierPatience = Duration.seconds(2)
    /// Without a working barrier: the retained messages are taken to be complete after this long without one.
    static let quietSettle = Duration.milliseconds(300)

    /// Waits until every retained message has arrived (see the file's opening comment).
    private func settle(deadline: ContinuousClock.Instant) async throws(HomeError) {
        let marker = randomHex(4)
        let topic = barrierTopic
        let client = self.client
        let result = await wait(for: "barrier:\(marker)", until: min(deadline, .now + Self.barrierPatience)) {
            () throws(MQTTError) in
            try client.publish(topic, payload: Array(marker.utf8), qos: .atLeastOnce)
        }
        switch result {
        case .answer:
            state.withLock { $0.settled = true }
        case .cancelled:
            throw HomeError.cancelled("connecting to the MQTT broker at \(broker) was cancelled")
        case .closed:
            throw HomeError.cancelled("the home was closed")
        case .timedOut, .sendFailed:
            while true {
                let quietUntil = state.withLock { $0.lastMessage } + Self.quietSettle
                let until = min(deadline, quietUntil)
                if until <= .now { break }
                do { try await Task.sleep(until: until, clock: .continuous) } catch {
                    throw HomeError.cancelled("connecting to the MQTT broker at \(broker) was cancelled")
                }
            }
        }
    }

    /// Whether the state read at connection time is known to be complete (the barrier came back); false when the
    /// client settled for a quiet spell instead.
    public var isSettled: Bool { state.withLock { $0.settled } }

    /// Whether the connection to the broker is up now.
    public var isConnected: Bool { state.withLock { $0.linkUp } }

    /// Ends the connection: every stream finishes, every waiting request fails with `cancelled`, and commands fail
    /// from now on. Idempotent.
    public func close() {
        let (waits, finishers) = state.withLock { s -> ([Wait], [@Sendable () -> Void]) in
            guard !s.closed else { return ([], []) }
            s.closed = true
            let waits = Array(s.waits.values)
            s.waits.removeAll()
            let finishers =
                s.watchers.values.map(\.finish)
                + s.connectionWatchers.values.map { c -> @Sendable () -> Void in { c.finish() } }
            s.watchers.removeAll()
            s.connectionWatchers.removeAll()
            return (waits, finishers)
        }
        for wait in waits {
            wait.timer?.cancel()
            wait.continuation.resume(returning: .closed)
        }
        for finish in finishers { finish() }
        client.disconnect()
    }
}

// MARK: - State

extension Home {
    /// What one hub has published.
    struct HubRecord {
        var status: String?
        var summary: PublishedMessage?
        var homeView: PublishedMessage?
        /// `<prefix>/<hub>/groups`: the hub's group memberships and scenes.
        var groups: PublishedMessage?
        var documents: [String: PublishedMessage] = [:]
        /// Device ids in the order their documents first arrived.
        var documentOrder: [String] = []
    }

    struct State {
        var hubs: [String: HubRecord] = [:]
        /// Hubs with a status, in the order the statuses were seen.
        var statusOrder: [String] = []
        var linkUp = false
        var lostConnection = false
        var closed = false
        var settled = false
        var lastMessage = ContinuousClock.now
        var waits: [String: Wait] = [:]
        /// Group commands waiting for their summaries: by transaction, the hubs expected and the summaries so far.
        var groupAnswers: [String: (expected: Set<String>, summaries: [String: PublishedMessage])] = [:]
        var watchers: [Int: Watcher] = [:]
        var connectionWatchers: [Int: AsyncStream<ConnectionChange>.Continuation] = [:]
        var nextID = 0
        /// The devices as this client sees them now (``Home/devices()``).
        var devices: [HomeDevice] = []
    }

    enum WaitResult: Sendable {
        case answer(PublishedMessage)
        case timedOut
        case cancelled
        case closed
        case sendFailed(MQTTError)
    }

    struct Wait {
        var continuation: CheckedContinuation<WaitResult, Never>
        var timer: Task<Void, Never>?
    }

    /// Registers a wait for `key`, runs `send`, and returns what resolved it: the answer, the deadline, the task's
    /// cancellation, or ``close()``. Never waits past `deadline`.
    func wait(for key: String, until deadline: ContinuousClock.Instant,
              send: @Sendable () throws(MQTTError) -> Void) async -> WaitResult {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<WaitResult, Never>) in
                let registered = state.withLock { s -> Bool in
                    guard !s.closed else { return false }
                    s.waits[key] = Wait(continuation: continuation)
                    return true
                }
                guard registered else { return continuation.resume(returning: .closed) }
                if Task.isCancelled { return resolve(key, .cancelled) }
                do throws(MQTTError) {
                    try send()
                } catch {
                    return resolve(key, .sendFailed(error))
                }
                let timer = Task { [weak self] in
                    try? await Task.sleep(until: deadline, clock: .continuous)
                    if !Task.isCancelled { self?.resolve(key, .timedOut) }
                }
                state.withLock { s in
                    if s.waits[key] != nil { s.waits[key]?.timer = timer } else { timer.cancel() }
                }
            }
        } onCancel: {
            resolve(key, .cancelled)
        }
    }

    func resolve(_ key: String, _ result: WaitResult) {
        guard let wait = state.withLock({ $0.waits.removeValue(forKey: key) }) else { return }
        wait.timer?.cancel()
        wait.continuation.resume(returning: result)
    }

    // MARK: Receiving

    func connectionEvent(_ event: MQTTConnectionEvent) {
        let change: ConnectionChange?
        switch event {
        case .connected:
            change = state.withLock { s in
                defer { s.lostConnection = false }
                return s.lostConnection ? .restored : nil
            }
            update { s in
                s.linkUp = true
                return nil
            }
        case .disconnected(.lost(let error)):
            state.withLock { $0.lostConnection = true }
            change = .lost(detail: error.message)
            update { s in
                s.linkUp = false
                return nil
            }
        case .connectionFailed, .disconnected(.requested):
            change = nil
        }
        guard let change else { return }
        let watchers = state.withLock { Array($0.connectionWatchers.values) }
        for watcher in watchers { watcher.yield(change) }
    }

    func receive(_ message: MQTTMessage) {
        let own = "\(options.clientTopicRoot)/\(nonce)/"
        if message.topic.hasPrefix(own) {
            if message.topic == barrierTopic {
                resolve(
                    "barrier:\(String(decoding: message.payload, as: UTF8.self))",
                    .answer(PublishedMessage(message.payload)))
            } else if message.topic == responseTopic {
                answer(message.payload)
            }
            return
        }
        switch scheme.classify(message.topic) {
        case .status(let hub)?:
            let status = message.payload.isEmpty ? nil : String(decoding: message.payload, as: UTF8.self)
            update { s in
                s.hubs[hub, default: HubRecord()].status = status
                s.statusOrder.removeAll { $0 == hub }
                if status != nil { s.statusOrder.append(hub) }
                return PublishedUpdate.status(hub: hub, status: status)
            }
        case .summary(let hub)?:
            let summary = message.payload.isEmpty ? nil : PublishedMessage(message.payload)
            update { s in
                s.hubs[hub, default: HubRecord()].summary = summary?.json == nil ? nil : summary
                return PublishedUpdate.summary(hub: hub, summary?.json == nil ? nil : summary)
            }
        case .groups(let hub)?:
            let groups = message.payload.isEmpty ? nil : PublishedMessage(message.payload)
            update { s in
                s.hubs[hub, default: HubRecord()].groups = groups?.json == nil ? nil : groups
                return nil
            }
        case .home(let hub)?:
            let view = message.payload.isEmpty ? nil : PublishedMessage(message.payload)
            update { s in
                s.hubs[hub, default: HubRecord()].homeView = view?.json == nil ? nil : view
                return nil
            }
        case .document(let hub, let id)?:
            if message.payload.isEmpty {
                update { s in
                    s.hubs[hub, default: HubRecord()].documents[id] = nil
                    s.hubs[hub]?.documentOrder.removeAll { $0 == id }
                    return PublishedUpdate.document(hub: hub, device: id, nil)
                }
                return
            }
            let document = PublishedMessage(message.payload)
            guard document.json != nil else { return }  // not JSON: the last good document stands
            update { s in
                if s.hubs[hub, default: HubRecord()].documents.updateValue(document, forKey: id) == nil {
                    s.hubs[hub]?.documentOrder.append(id)
                }
                return PublishedUpdate.document(hub: hub, device: id, document)
            }
        case .responses?:
            answer(message.payload)
        default:
            break
        }
    }

    private func answer(_ payload: [UInt8]) {
        let response = PublishedMessage(payload)
        guard let transaction = response.json?["transaction"]?.stringValue else { return }
        if response.json?["group"] != nil, let hub = response.json?["hub"]?.stringValue {
            // One hub's summary of a group command: the wait ends when every hub expected has answered.
            let complete = state.withLock { s -> Bool in
                guard s.groupAnswers[transaction] != nil else { return false }
                s.groupAnswers[transaction]!.summaries[hub] = response
                return s.groupAnswers[transaction]!.expected.isSubset(
                    of: Set(s.groupAnswers[transaction]!.summaries.keys))
            }
            if complete { resolve("group:\(transaction)", .answer(response)) }
            return
        }
        resolve("request:\(transaction)", .answer(response))
    }

    /// Applies a change under the lock, then recomputes the devices and hands every subscriber its next value (also
    /// under the lock, so values are delivered in the order of the changes); streams that end are finished after.
    func update(_ change: (inout State) -> PublishedUpdate?) {
        var finishers: [@Sendable () -> Void] = []
        state.withLock { s in
            s.lastMessage = .now
            let published = change(&s)
            guard !s.closed else { return }
            if let published {
                for watcher in s.watchers.values { watcher.raw(published) }
            }
            let devices = view(of: s)
            guard devices != s.devices else { return }
            let old = s.devices
            s.devices = devices
            for (id, watcher) in s.watchers {
                if let finish = watcher.deliver(devices, old: old) {
                    finishers.append(finish)
                    s.watchers[id] = nil
                }
            }
        }
        for finish in finishers { finish() }
    }
}

/// A retained message as published, with its JSON when it is JSON.
public struct PublishedMessage: Sendable, Hashable {
    public let payload: [UInt8]
    public let json: JSON?

    init(_ payload: [UInt8]) {
        self.payload = payload
        json = try? JSON.parse(payload)
    }

    public var text: String { String(decoding: payload, as: UTF8.self) }
}

/// One change to what the hubs publish, as it arrived (``Home/updates()``).
public enum PublishedUpdate: Sendable, Hashable {
    /// A hub's status: `online`, `offline`, or nil when cleared.
    case status(hub: String, status: String?)
    /// A hub's device summary; nil when cleared.
    case summary(hub: String, PublishedMessage?)
    /// A device's document; nil when the hub removed it.
    case document(hub: String, device: String, PublishedMessage?)
    /// Sent once after the replay of what was known when the stream started: from here on, changes.
    case live
}

/// The connection to the broker went down or came back (``Home/connectionChanges()``).
public enum ConnectionChange: Sendable, Hashable {
    /// The connection was lost; the client reconnects by itself. Devices read `offline` meanwhile.
    case lost(detail: String)
    /// Connected again after a loss; every hub's retained state is read again.
    case restored
}

/// A hub and the status it published.
public struct HubStatus: Sendable, Hashable {
    public var hub: String
    /// `online` or `offline` (what the hub or its last will published).
    public var status: String
}
