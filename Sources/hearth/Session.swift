// One connection to the broker for one command: connect, find the hub, read retained documents, send a request and
// wait for its response.
//
// Reading retained topics without guessing a settle time: after subscribing, the CLI publishes a marker to a topic of
// its own (`hearth-cli/<random>/barrier`) that it is also subscribed to. The broker handles one connection's packets
// in order and sends a subscription's retained messages when it handles the SUBSCRIBE, so once the marker comes back
// every retained message of the earlier subscriptions has arrived. (If the marker does not come back within 2 s, say
// because an ACL forbids the topic, the session settles for a short quiet spell after the last retained message.)
import HearthContract
import HearthJSON
import HearthMQTT
import Synchronization

/// The messages of the client's subscriptions, handed to one consumer that can wait with a deadline.
final class Mailbox: Sendable {
    enum Wake: Sendable {
        case message(MQTTMessage)
        case timedOut
        /// Ctrl-C (or SIGTERM): the consumer should finish.
        case interrupted
    }

    private struct Waiter {
        var id: Int
        var continuation: CheckedContinuation<Wake, Never>
        var timer: Task<Void, Never>?
    }

    private struct State {
        var queue: [MQTTMessage] = []
        var waiter: Waiter?
        var nextID = 0
        var interrupted = false
    }

    private let state = Mutex(State())

    /// Called on the client's network thread for every message.
    func deliver(_ message: MQTTMessage) {
        let waiter = state.withLock { state -> Waiter? in
            guard let waiter = state.waiter else {
                state.queue.append(message)
                return nil
            }
            state.waiter = nil
            return waiter
        }
        if let waiter {
            waiter.timer?.cancel()
            waiter.continuation.resume(returning: .message(message))
        }
    }

    /// Wakes the consumer with `.interrupted`, now and on every later call of ``next(until:)``.
    func interrupt() {
        let waiter = state.withLock { state -> Waiter? in
            state.interrupted = true
            defer { state.waiter = nil }
            return state.waiter
        }
        if let waiter {
            waiter.timer?.cancel()
            waiter.continuation.resume(returning: .interrupted)
        }
    }

    /// The next message, or `.timedOut` once `deadline` has passed (never, when it is nil).
    func next(until deadline: ContinuousClock.Instant?) async -> Wake {
        await withCheckedContinuation { continuation in
            let registered = state.withLock { state -> Result<Int, Never>? in
                if state.interrupted { return nil }
                if !state.queue.isEmpty { return nil }
                if let deadline, deadline <= .now { return nil }
                state.nextID += 1
                state.waiter = Waiter(id: state.nextID, continuation: continuation)
                return .success(state.nextID)
            }
            guard case .success(let id)? = registered else {
                let wake = state.withLock { state -> Wake in
                    if state.interrupted { return .interrupted }
                    if !state.queue.isEmpty { return .message(state.queue.removeFirst()) }
                    return .timedOut
                }
                continuation.resume(returning: wake)
                return
            }
            guard let deadline else { return }
            let timer = Task { [weak self] in
                try? await Task.sleep(until: deadline, clock: .continuous)
                if !Task.isCancelled { self?.expire(id) }
            }
            state.withLock { state in
                if state.waiter?.id == id { state.waiter?.timer = timer } else { timer.cancel() }
            }
        }
    }

    private func expire(_ id: Int) {
        let waiter = state.withLock { state -> Waiter? in
            guard state.waiter?.id == id else { return nil }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.continuation.resume(returning: .timedOut)
    }
}

/// The hub's answer to one request.
struct HubAnswer {
    /// The response as published.
    var payload: [UInt8]
    var json: JSON

    var isOK: Bool { json["ok"] == .bool(true) }
}

/// A connected client and what one command needs around it.
final class Session {
    let options: GlobalOptions
    let client: MQTTClient
    let mailbox: Mailbox
    let protocolVersion: MQTTProtocolVersion
    let deadline: ContinuousClock.Instant
    /// This invocation's private topics: `hearth-cli/<nonce>/…`.
    let nonce: String
    private var barriers = 0
    private var barrierWorks = true

    var barrierTopic: String { "hearth-cli/\(nonce)/barrier" }
    var responseTopic: String { "hearth-cli/\(nonce)/response" }

    private init(options: GlobalOptions, client: MQTTClient, mailbox: Mailbox, protocolVersion: MQTTProtocolVersion,
                 deadline: ContinuousClock.Instant, nonce: String) {
        self.options = options
        self.client = client
        self.mailbox = mailbox
        self.protocolVersion = protocolVersion
        self.deadline = deadline
        self.nonce = nonce
    }

    deinit {
        client.disconnect()
    }

    /// Connects to the broker within --timeout.
    static func connect(_ options: GlobalOptions,
                        onConnectionEvent: (@Sendable (MQTTConnectionEvent) -> Void)? = nil) async throws -> Session {
        let deadline = ContinuousClock.now + .milliseconds(Int64((options.timeout * 1000).rounded()))
        let nonce = randomHex(12)
        let client: MQTTClient
        do {
            client = try MQTTClient(options: try options.connectOptions())
        } catch let error as MQTTError {
            throw CLIError(.brokerUnreachable, "cannot set up the connection to \(options.brokerDescription): "
                + "\(error.message) (\(error.context)); check --ca-file, --cert and --key")
        }
        let mailbox = Mailbox()
        client.onMessage = { mailbox.deliver($0) }
        client.onConnectionEvent = onConnectionEvent
        do {
            // Sent right after CONNACK, before anything else: the barrier and response topics.
            try client.subscribe("hearth-cli/\(nonce)/+", options: MQTTSubscriptionOptions(qos: .atLeastOnce))
        } catch {
            throw CLIError(.brokerUnreachable, "cannot subscribe: \(error)")
        }
        let version: MQTTProtocolVersion?
        do {
            version = try await withThrowingTaskGroup(of: MQTTProtocolVersion?.self) { group in
                group.addTask { try await client.connect() }
                group.addTask {
                    try? await Task.sleep(until: deadline, clock: .continuous)
                    return nil
                }
                defer { group.cancelAll() }
                return try await group.next() ?? nil
            }
        } catch let error as MQTTError {
            client.disconnect()
            throw CLIError(.brokerUnreachable, describeConnectionFailure(error, options))
        }
        guard let version else {
            client.disconnect()
            throw CLIError(.brokerUnreachable, "no connection to the MQTT broker at \(options.brokerDescription) within "
                + "\(options.timeoutText); is it running and reachable? Check --broker or $HEARTH_BROKER")
        }
        return Session(options: options, client: client, mailbox: mailbox, protocolVersion: version,
                       deadline: deadline, nonce: nonce)
    }

    static func describeConnectionFailure(_ error: MQTTError, _ options: GlobalOptions) -> String {
        let broker = options.brokerDescription
        switch error.code {
        case .authenticationFailed, .connectionRefused, .accessDenied:
            return "the MQTT broker at \(broker) refused the connection: \(error.message); "
                + "check --username and --password (or $HEARTH_USERNAME, $HEARTH_PASSWORD)"
        case .tls, .tlsHandshake, .ocsp:
            return "TLS with the MQTT broker at \(broker) failed: \(error.message); "
                + "check --ca-file, --cert and --key (or --insecure for a certificate issued to another name)"
        case .addressResolution, .lookup:
            return "cannot resolve the broker's host in '\(broker)': \(error.message); check --broker or $HEARTH_BROKER"
        default:
            var hint = "is it running? Check --broker or $HEARTH_BROKER"
            if options.usesTLS { hint += ", and whether it speaks TLS on that port" }
            return "cannot reach the MQTT broker at \(broker): \(error.message); \(hint)"
        }
    }

    // MARK: Reading

    /// How long to wait for the barrier marker before deciding it will not come back (an ACL on `hearth-cli/#`).
    static let barrierPatience = Duration.seconds(2)
    /// Without a working barrier: the retained messages are taken to be complete after this long without one.
    static let quietSettle = Duration.milliseconds(300)

    /// Subscribes to `filters` and hands every message to `handle` until the retained messages have all arrived.
    /// Returns false when that could not be confirmed (what arrived was handed over anyway): the marker did not come
    /// back, and the command goes on after a short quiet spell instead, now and for the rest of the session.
    @discardableResult
    func sync(_ filters: [String], _ handle: (MQTTMessage) -> Void) async throws -> Bool {
        do {
            for filter in filters { try client.subscribe(filter) }
            guard barrierWorks else {
                while true {
                    switch await mailbox.next(until: min(deadline, .now + Self.quietSettle)) {
                    case .message(let message): handle(message)
                    case .timedOut: return false
                    case .interrupted: throw CLIError(.success, "")
                    }
                }
            }
            barriers += 1
            let marker = Array("\(barriers)".utf8)
            try client.publish(barrierTopic, payload: marker, qos: .atLeastOnce)
            let limit = min(deadline, .now + Self.barrierPatience)
            while true {
                switch await mailbox.next(until: limit) {
                case .message(let message):
                    if message.topic == barrierTopic {
                        if message.payload == marker { return true }
                    } else {
                        handle(message)
                    }
                case .timedOut:
                    barrierWorks = false
                    return false
                case .interrupted: throw CLIError(.success, "")
                }
            }
        } catch let error as MQTTError {
            throw CLIError(.brokerUnreachable, "the broker at \(options.brokerDescription): \(error)")
        }
    }

    /// The hubs that published a status under the prefix, with it ("online" or "offline"), in the order seen.
    func hubStatuses() async throws -> [(hub: String, status: String)] {
        var statuses: [(hub: String, status: String)] = []
        let head = "\(options.prefix)/", tail = "/status"
        try await sync(["\(options.prefix)/+/status"]) { message in
            let topic = message.topic
            guard topic.hasPrefix(head), topic.hasSuffix(tail), topic.utf8.count > head.utf8.count + tail.utf8.count
            else { return }
            let hub = String(topic.dropFirst(head.count).dropLast(tail.count))
            statuses.removeAll { $0.hub == hub }
            if !message.payload.isEmpty {
                statuses.append((hub, String(decoding: message.payload, as: UTF8.self)))
            }
        }
        return statuses
    }

    /// The hub to talk to: --hub / $HEARTH_HUB, else the only one online.
    ///
    /// - Parameter requireOnline: refuse a named hub whose status is not `online`.
    func resolveHub(requireOnline: Bool = true) async throws -> TopicScheme {
        let statuses = try await hubStatuses()
        let online = statuses.filter { $0.status == "online" }.map(\.hub)
        let under = "under '\(options.prefix)/' on \(options.brokerDescription)"
        if let hub = options.resolvedHub {
            if requireOnline {
                if let status = statuses.first(where: { $0.hub == hub })?.status {
                    if status != "online" {
                        throw CLIError(.noHub, "hub '\(hub)' is \(status)\(Self.listing(online, "; online: "))")
                    }
                } else {
                    throw CLIError(.noHub, "no hub '\(hub)' \(under)"
                        + (online.isEmpty ? "; no hub is online" : "; online: \(online.joined(separator: ", "))")
                        + "; check --hub and --prefix")
                }
            }
            return TopicScheme(prefix: options.prefix, hub: hub)
        }
        switch online.count {
        case 1:
            return TopicScheme(prefix: options.prefix, hub: online[0])
        case 0:
            let offline = statuses.map(\.hub)
            throw CLIError(.noHub, "no hub is online \(under)"
                + (offline.isEmpty ? "; check --prefix, and that the hub runs"
                                   : "; offline: \(offline.joined(separator: ", "))"))
        default:
            throw CLIError(.noHub, "\(online.count) hubs are online \(under): \(online.joined(separator: ", ")); "
                + "choose one with --hub (or $HEARTH_HUB)")
        }
    }

    private static func listing(_ hubs: [String], _ lead: String) -> String {
        hubs.isEmpty ? "" : lead + hubs.joined(separator: ", ")
    }

    // MARK: Requests

    /// Publishes one request on the device's `set` topic and waits for its response (matched by transaction), passing
    /// every other message to `handle`. `members` is the request without its transaction.
    func request(_ topics: TopicScheme, device: String, _ members: [(key: String, value: JSON)],
                 _ handle: (MQTTMessage) -> Void = { _ in }) async throws -> HubAnswer {
        let transaction = "cli-\(randomHex(8))"
        let payload = JSON.object([("transaction", .string(transaction))] + members).text
        do {
            // The subscription for the hub's responses may already exist (a second request); subscribing again is
            // harmless. The barrier makes sure it is active before the request goes out.
            try await sync([topics.responses], handle)
            let v5 = protocolVersion == .v5
            try client.publish(topics.set(device), payload: Array(payload.utf8), qos: .atLeastOnce,
                               responseTopic: v5 ? responseTopic : nil,
                               correlationData: v5 ? Array(transaction.utf8) : nil)
        } catch let error as MQTTError {
            throw CLIError(.brokerUnreachable, "cannot send the request: \(error)")
        }
        while true {
            switch await mailbox.next(until: deadline) {
            case .message(let message):
                if message.topic == topics.responses || message.topic == responseTopic,
                   let json = try? JSON.parse(message.payload), json["transaction"] == .string(transaction) {
                    return HubAnswer(payload: message.payload, json: json)
                }
                handle(message)
            case .timedOut:
                throw CLIError(.timeout, "no answer from hub '\(topics.hub)' within \(options.timeoutText); "
                    + "is it online? (hearth hubs)")
            case .interrupted:
                throw CLIError(.success, "")
            }
        }
    }
}

func randomHex(_ bytes: Int) -> String {
    var text = ""
    for _ in 0..<bytes {
        let byte = UInt8.random(in: 0...255)
        text += String(byte >> 4, radix: 16) + String(byte & 0xF, radix: 16)
    }
    return text
}
