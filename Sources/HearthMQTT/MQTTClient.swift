// MQTTClient: a safe, thread-owning wrapper over one libmosquitto client.
//
// Threading — why a dedicated network thread and callbacks on it:
//   The hub's command → state round trip must stay close to a bare broker echo, so an incoming message is handed
//   to `onMessage` directly on the thread that read it: no actor hop, no queue, no task. A handler that publishes a
//   reply from there only appends to libmosquitto's out-queue; the same thread then reads whatever else has already
//   arrived (`mosquitto_loop` reads one packet a turn) and writes every reply of the turn at once. Publishing from
//   any other thread is also safe (libmosquitto runs in "threaded" mode and locks its queues); it wakes the network
//   thread through libmosquitto's internal socket pair. Handlers must therefore be quick and must not block: a slow
//   handler delays every other message and the keep-alive pings.
//   Nagle is off (`MOSQ_OPT_TCP_NODELAY`) so small replies are not held back waiting for an ACK; a turn of the
//   thread that writes two or more packets (a hub's document and its two responses) writes them corked, as one
//   segment (`Cork`), and uncorks as the turn ends.
//
// Reconnection — why it is ours and not libmosquitto's:
//   `mosquitto_loop_forever` reconnects with whole-second delays and no jitter, so every device of a house (and
//   every hub on a site) would hit a restarted broker in lockstep. The network thread instead drives
//   `mosquitto_connect_bind_async` itself and sleeps between attempts for a delay from `MQTTBackoff`: exponential,
//   capped, randomised, reset after each successful connection. Connecting asynchronously keeps `disconnect()`
//   prompt even while a TCP connect to an unreachable host is pending (only the DNS lookup blocks).
//   After every CONNACK the client re-sends every subscription *before* calling `onConnect`, so by the time the
//   caller republishes its retained state, replies to it can already be received. A broker that refuses MQTT 5
//   makes the client retry at once with 3.1.1, and it stays on 3.1.1 for its life.
//
// Shutdown: `disconnect()` sends DISCONNECT (so the broker discards the will), lets the network thread flush it,
// and joins the thread. Called from a handler (on the network thread itself) it cannot join, so it detaches and
// the thread finishes on its own; the libmosquitto handle is freed by whichever of the client and the thread lets
// go of it last. No C pointer ever leaves this file.

internal import CMosquitto
internal import Synchronization
#if canImport(Glibc)
internal import Glibc
#elseif canImport(Darwin)
internal import Darwin
#endif
import HearthSync

/// An MQTT client connected to one broker, reconnecting by itself until ``disconnect()``.
///
/// Create it with options, set the handlers, then ``start()`` (or ``connect()`` to also await the first attempt).
/// A client is started once; after ``disconnect()`` create a new one.
public final class MQTTClient: Sendable {
    private let core: Core

    /// Creates the libmosquitto client and applies `options` (credentials, TLS files, will, protocol). Nothing
    /// touches the network until ``start()``.
    ///
    /// - Throws: ``MQTTError`` when an option is invalid (for example a TLS file that cannot be read).
    public init(options: MQTTConnectOptions) throws(MQTTError) {
        core = try Core(options: options)
    }

    deinit {
        core.stop()
    }

    /// The options the client was created with.
    public var options: MQTTConnectOptions { core.options }

    /// Called on the network thread for every message received. Keep it short and non-blocking.
    public var onMessage: (@Sendable (MQTTMessage) -> Void)? {
        get { core.sinks.withLock { $0.onMessage } }
        set { core.sinks.withLock { $0.onMessage = newValue } }
    }

    /// Called on the network thread after every (re)connection, once the subscriptions have been re-sent: the
    /// place to republish retained state.
    public var onConnect: (@Sendable (MQTTProtocolVersion) -> Void)? {
        get { core.state.withLock { $0.onConnect } }
        set { core.state.withLock { $0.onConnect = newValue } }
    }

    /// Called on the network thread for every connection event, before it is yielded to ``connectionEvents()``.
    public var onConnectionEvent: (@Sendable (MQTTConnectionEvent) -> Void)? {
        get { core.state.withLock { $0.onConnectionEvent } }
        set { core.state.withLock { $0.onConnectionEvent = newValue } }
    }

    /// Whether a connection is established (CONNACK accepted and not yet lost).
    public var isConnected: Bool { core.state.withLock { $0.connected } }

    /// The protocol version of the current connection, or `nil` while disconnected.
    public var connectedProtocolVersion: MQTTProtocolVersion? {
        core.state.withLock { $0.connected ? $0.protocolInUse : nil }
    }

    /// A stream of the connection events from now on. It finishes after ``MQTTDisconnectReason/requested``.
    public func connectionEvents() -> AsyncStream<MQTTConnectionEvent> {
        core.makeEventStream()
    }

    /// A stream of the messages received from now on (a copy of what ``onMessage`` sees), keeping the newest
    /// `bufferingNewest` when the consumer falls behind. It finishes when the client stops.
    public func messages(bufferingNewest limit: Int = 1024) -> AsyncStream<MQTTMessage> {
        core.makeMessageStream(limit: limit)
    }

    /// Starts the network thread, which connects and keeps reconnecting until ``disconnect()``.
    ///
    /// - Throws: ``MQTTError`` with ``MQTTError/Code/invalidArgument`` if the client was already started.
    public func start() throws(MQTTError) {
        try core.start()
    }

    /// Starts the client and waits for the outcome of the first connection attempt (after any protocol fallback).
    ///
    /// - Returns: the protocol version the broker accepted.
    /// - Throws: the first attempt's ``MQTTError``. The client keeps retrying in the background; call
    ///   ``disconnect()`` to give up.
    @discardableResult
    public func connect() async throws(MQTTError) -> MQTTProtocolVersion {
        let events = connectionEvents()
        try start()
        for await event in events {
            switch event {
            case .connected(let version, _): return version
            case .connectionFailed(let error), .disconnected(.lost(let error)): throw error
            case .disconnected(.requested): break
            }
        }
        throw MQTTError(code: .notConnected, context: "connect to \(options.endpoint)",
                        message: "the client stopped (or the task was cancelled) before connecting")
    }

    /// Publishes a message. MQTT 5 properties are sent only on an MQTT 5 connection (dropped on 3.1.1).
    ///
    /// - Throws: ``MQTTError``: ``MQTTError/Code/notConnected`` while disconnected (QoS 0), an invalid topic, a
    ///   payload that is too large.
    public func publish(_ topic: String, payload: [UInt8], qos: MQTTQoS = .atMostOnce, retain: Bool = false,
                        responseTopic: String? = nil, correlationData: [UInt8]? = nil,
                        userProperties: [MQTTUserProperty] = []) throws(MQTTError) {
        try core.publish(topic, payload: payload, qos: qos, retain: retain,
                         responseTopic: responseTopic, correlationData: correlationData, userProperties: userProperties)
    }

    /// Subscribes to a topic filter, now if connected and again after every reconnection. Subscribing again to the
    /// same filter replaces its options.
    ///
    /// - Throws: ``MQTTError`` for an invalid filter (nothing is recorded then).
    public func subscribe(_ filter: String, options: MQTTSubscriptionOptions = MQTTSubscriptionOptions())
        throws(MQTTError) {
        try core.subscribe(filter, options: options)
    }

    /// Runs `work` on the network thread once what was published before the call has been handed to the socket.
    ///
    /// For long work a handler would otherwise do in place (a hub's Home Assistant configs, built on every
    /// connection): libmosquitto writes what a handler publishes only after the handler returns, so work done in
    /// the handler holds back everything it published. Call it from a handler (on the network thread): `work` runs
    /// when the handler's turn has ended and its packets are written (as much as the socket takes at once). From
    /// another thread it would wait for the network thread's next turn, which nothing hastens. It runs on the network
    /// thread, so it must not block, and messages wait while it runs. Dropped if the client stops first.
    public func afterWriting(_ work: @escaping @Sendable () -> Void) {
        core.afterWriting(work)
    }

    /// Runs `work` on the network thread once everything published before the call has been taken by the socket,
    /// turn after turn of the network thread if the socket is full: a long burst (every document of a home)
    /// published a part at a time, each part from the last one's `whenWritten`, never has more than a part in
    /// libmosquitto's queue. Call it from a handler or from `afterWriting` work, like `afterWriting`; dropped if the
    /// client stops first.
    public func whenWritten(_ work: @escaping @Sendable () -> Void) {
        core.whenWritten(work)
    }

    /// Whether libmosquitto holds packets the socket has not taken yet; meaningful on the network thread.
    @_spi(Testing) public var hasUnwrittenPackets: Bool { core.hasUnwrittenPackets }
    /// How many packets the network thread read in the turns it had already read one in: what arrived together.
    @_spi(Testing) public var packetsReadWithinTurns: Int { core.packetsReadWithinTurns.load(ordering: .relaxed) }

    /// Forgets a subscription and unsubscribes from it if connected.
    public func unsubscribe(_ filter: String) throws(MQTTError) {
        try core.unsubscribe(filter)
    }

    /// Ends the connection cleanly (DISCONNECT, so the broker does not publish the will), stops reconnecting and
    /// joins the network thread. Idempotent; also done when the client is released.
    public func disconnect() {
        core.stop()
    }

    /// Testing only: closes the TCP connection without an MQTT DISCONNECT, as a crash or a pulled cable would, so
    /// the broker publishes the will. The client then reconnects as after any lost connection.
    @_spi(Testing)
    public func severConnectionWithoutDisconnect() {
        core.sever()
    }
}

// MARK: - Core

/// Everything the network thread and the callbacks share. It owns the `struct mosquitto *`; the client and the
/// running thread each hold a reference, and the handle is destroyed with the last of them.
///
/// `@unchecked Sendable`: `mosq` is used from several threads, which libmosquitto allows in threaded mode
/// (`mosquitto_threaded_set`); every mutable Swift field is either behind a `Mutex`, atomic, or touched only by the
/// network thread (`attempt`, `version`).
final class Core: @unchecked Sendable {
    enum Phase { case idle, running, stopping, stopped }

    struct State {
        var phase = Phase.idle
        var thread: pthread_t?
        var connected = false
        var protocolInUse: MQTTProtocolVersion
        /// Subscriptions in the order they were made, re-sent after every connection.
        var subscriptions: [(filter: String, options: MQTTSubscriptionOptions)] = []
        var onConnect: (@Sendable (MQTTProtocolVersion) -> Void)?
        var onConnectionEvent: (@Sendable (MQTTConnectionEvent) -> Void)?
        var eventContinuations: [Int: AsyncStream<MQTTConnectionEvent>.Continuation] = [:]
        var nextToken = 0
    }

    /// What the message path reads, apart from the rest so that it never waits on a subscribe or an event.
    struct Sinks {
        var onMessage: (@Sendable (MQTTMessage) -> Void)?
        var continuations: [Int: AsyncStream<MQTTMessage>.Continuation] = [:]
        var nextToken = 0
        var finished = false
    }

    /// What one connection attempt learned from the callbacks. Network thread only.
    struct Attempt {
        var connected = false
        var connackReason: Int32?
        var disconnectReason: Int32?
    }

    let options: MQTTConnectOptions
    let state: Locked<State>
    let sinks = Locked(Sinks())
    /// Orders SUBSCRIBE and UNSUBSCRIBE packets as the calls were made (a subscribe racing an unsubscribe of one
    /// filter must reach the broker in that order). The only lock held across a libmosquitto call, and those calls
    /// only queue a packet; `state` is never held across one. Lock order: `subscriptionOrder`, then `state`.
    private let subscriptionOrder = Locked(())
    private let stopRequested = Atomic<Bool>(false)
    /// Packets queued since the network thread last wrote: this client's publishes, and the acknowledgement
    /// libmosquitto queues for each QoS 1 or 2 message it receives. Two or more are written corked (`Cork`).
    private let queuedPackets = Atomic<Int>(0)
    /// How many packets `readArrivedAndWrite` read beyond `mosquitto_loop`'s one a turn (for tests).
    let packetsReadWithinTurns = Atomic<Int>(0)
    /// `MQTTClient.afterWriting`'s work; `hasDeferred` keeps the network thread's turns from taking the lock.
    private let deferred = Locked<[@Sendable () -> Void]>([])
    private let hasDeferred = Atomic<Bool>(false)
    private let usesV5: Atomic<Bool>
    private let gate = Gate()
    private let mosq: OpaquePointer
    /// Network thread only.
    private var attempt = Attempt()
    /// Network thread only: the version of the current attempt.
    private var version: MQTTProtocolVersion
    /// Network thread only: messages delivered so far. A turn that delivered none (woken by libmosquitto's socket pair
    /// for a packet queued, or by a write becoming possible) does not look for more arriving.
    private var messagesDelivered = 0

    /// How long `disconnect()` lets the network thread flush DISCONNECT before it closes the socket itself.
    private static let disconnectGrace = Duration.seconds(2)
    /// `mosquitto_loop`'s select timeout while connected or connecting. Nothing needs a periodic wake-up:
    /// libmosquitto shortens the wait to the next keep-alive ping itself, and whatever needs the thread
    /// (a publish, a subscribe, `stop()`'s DISCONNECT) writes to libmosquitto's socket pair, which wakes
    /// it. An idle hub then costs no CPU between pings (docs/benchmarks.md, "A lone hub").
    private static let idleLoopTimeoutMilliseconds: Int32 = 3_600_000
    /// …and while stopping, so the grace period for flushing DISCONNECT is checked.
    private static let stoppingLoopTimeoutMilliseconds: Int32 = 50

    init(options: MQTTConnectOptions) throws(MQTTError) {
        try ensureLibraryInitialised()
        self.options = options
        version = options.protocolVersion
        state = Locked(State(protocolInUse: options.protocolVersion))
        usesV5 = Atomic(options.protocolVersion == .v5)
        let created = withOptionalCString(options.clientID) { mosquitto_new($0, options.cleanStart, nil) }
        guard let created else {
            let code: MQTTError.Code = errno == ENOMEM ? .outOfMemory : .invalidArgument
            throw MQTTError(code: code, context: "create client",
                            message: options.clientID == nil && !options.cleanStart
                                ? "a client id is required when cleanStart is false"
                                : String(cString: mosquitto_strerror(code.rawValue)))
        }
        mosq = created
        // From here on deinit destroys `mosq`, so a throwing configure leaks nothing.
        try configure()
        mosquitto_user_data_set(mosq, Unmanaged.passUnretained(self).toOpaque())
        installCallbacks()
    }

    deinit {
        mosquitto_destroy(mosq)
    }

    private func configure() throws(MQTTError) {
        // libmosquitto would only reject these at connect time, on the network thread, over and over.
        let endpoint = options.endpoint
        guard !options.host.isEmpty, (1...65535).contains(options.port) else {
            throw MQTTError(code: .invalidArgument, context: "connect to \(endpoint)",
                            message: "host must not be empty and port must be in 1...65535")
        }
        guard options.keepAlive == 0 || (5...65535).contains(options.keepAlive) else {
            throw MQTTError(code: .invalidArgument, context: "connect to \(endpoint)",
                            message: "keepAlive must be 0 (off) or 5...65535 seconds")
        }
        try checkCString(options.host, "connect to \(endpoint)")
        try check(mosquitto_threaded_set(mosq, true), "enable threaded mode")
        try check(mosquitto_int_option(mosq, MOSQ_OPT_TCP_NODELAY, 1), "disable Nagle (TCP_NODELAY)")
        try check(mosquitto_int_option(mosq, MOSQ_OPT_PROTOCOL_VERSION, version.level), "set the protocol version")
        if options.username != nil || options.password != nil {
            let rc = withOptionalCString(options.username) { user in
                withOptionalCString(options.password) { mosquitto_username_pw_set(mosq, user, $0) }
            }
            try check(rc, "set username and password")
        }
        if let will = options.will {
            try checkCString(will.topic, "set the will on '\(will.topic)'")
            let rc = will.topic.withCString { topic in
                will.payload.withUnsafeBytes { payload in
                    mosquitto_will_set(mosq, topic, Int32(clamping: payload.count), payload.baseAddress,
                                       will.qos.rawValue, will.retain)
                }
            }
            try check(rc, "set the will on '\(will.topic)'")
        }
        if let tls = options.tls {
            if tls.caFile == nil && tls.caDirectory == nil {
                try check(mosquitto_int_option(mosq, MOSQ_OPT_TLS_USE_OS_CERTS, 1), "trust the system's CAs")
            }
            let rc = withOptionalCString(tls.caFile) { caFile in
                withOptionalCString(tls.caDirectory) { caDirectory in
                    withOptionalCString(tls.certificateFile) { certificate in
                        withOptionalCString(tls.keyFile) { key in
                            mosquitto_tls_set(mosq, caFile, caDirectory, certificate, key, nil)
                        }
                    }
                }
            }
            try check(rc, "set TLS files (CA \(tls.caFile ?? tls.caDirectory ?? "system"), "
                          + "certificate \(tls.certificateFile ?? "none"), key \(tls.keyFile ?? "none"))")
            try check(mosquitto_tls_opts_set(mosq, tls.verifyPeer ? 1 : 0, nil, nil), "set TLS peer verification")
            if tls.skipsHostnameVerification {
                try check(mosquitto_tls_insecure_set(mosq, true), "skip TLS hostname verification")
            }
        }
    }

    private func installCallbacks() {
        mosquitto_connect_v5_callback_set(mosq) { _, object, reason, flags, _ in
            guard let object else { return }
            Unmanaged<Core>.fromOpaque(object).takeUnretainedValue().didReceiveConnack(reason: reason, flags: flags)
        }
        mosquitto_disconnect_v5_callback_set(mosq) { _, object, reason, _ in
            guard let object else { return }
            Unmanaged<Core>.fromOpaque(object).takeUnretainedValue().didDisconnect(reason: reason)
        }
        mosquitto_message_v5_callback_set(mosq) { _, object, message, properties in
            guard let object, let message else { return }
            Unmanaged<Core>.fromOpaque(object).takeUnretainedValue().deliver(message, properties)
        }
    }

    // MARK: Lifecycle

    func start() throws(MQTTError) {
        let wasIdle = state.withLock { state in
            guard state.phase == .idle else { return false }
            state.phase = .running
            return true
        }
        guard wasIdle else {
            throw MQTTError(code: .invalidArgument, context: "start client for \(options.endpoint)",
                            message: "the client was already started; create a new one after disconnect()")
        }
        let context = Unmanaged.passRetained(self).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(&thread, nil, { raw in
            let core = Unmanaged<Core>.fromOpaque(raw!).takeRetainedValue()
            core.run()
            return nil
        }, context)
        guard rc == 0 else {
            Unmanaged<Core>.fromOpaque(context).release()
            state.withLock { $0.phase = .stopped }
            throw MQTTError(code: .system, context: "start the network thread", message: String(cString: strerror(rc)))
        }
        state.withLock { $0.thread = thread }
    }

    /// Requests the stop and joins the network thread (or detaches it when called from it).
    func stop() {
        let (wasRunning, thread) = state.withLock { state -> (Bool, pthread_t?) in
            switch state.phase {
            case .idle:
                state.phase = .stopped
                return (false, nil)
            case .running:
                state.phase = .stopping
                let thread = state.thread
                state.thread = nil
                return (true, thread)
            case .stopping, .stopped:
                return (false, nil)
            }
        }
        guard wasRunning else {
            finishStreamsIfNeverStarted()
            return
        }
        stopRequested.store(true, ordering: .releasing)
        // Queues DISCONNECT and wakes the network thread; MOSQ_ERR_NO_CONN when not connected is expected.
        try? check(mosquitto_disconnect_v5(mosq, 0, nil), "disconnect from \(options.endpoint)")
        gate.open()
        guard let thread else { return }
        if pthread_equal(thread, pthread_self()) != 0 {
            pthread_detach(thread)
        } else {
            pthread_join(thread, nil)
        }
    }

    /// Closes the socket under libmosquitto without a DISCONNECT; the network thread sees the connection drop.
    func sever() {
        let socket = mosquitto_socket(mosq)
        if socket >= 0 { _ = shutdown(socket, Int32(SHUT_RDWR)) }
    }

    private var isStopRequested: Bool { stopRequested.load(ordering: .acquiring) }

    // MARK: Network thread

    private func run() {
        var generator = SystemRandomNumberGenerator()
        var failures = 0
        while !isStopRequested {
            attempt = Attempt()
            var failure: MQTTError?
            var stoppingAt: ContinuousClock.Instant?
            do throws(MQTTError) {
                try check(mosquitto_int_option(mosq, MOSQ_OPT_PROTOCOL_VERSION, version.level),
                          "set the protocol version")
                let rc = options.host.withCString {
                    mosquitto_connect_bind_async(mosq, $0, Int32(clamping: options.port),
                                                 Int32(clamping: options.keepAlive), nil)
                }
                try check(rc, "connect to \(options.endpoint)")
                while true {
                    let timeout =
                        isStopRequested ? Self.stoppingLoopTimeoutMilliseconds : Self.idleLoopTimeoutMilliseconds
                    let cork = corkQueuedPackets()
                    let delivered = messagesDelivered
                    let rc = mosquitto_loop(mosq, timeout, 1)
                    cork.release()
                    try check(rc, attempt.connected ? "connection to \(options.endpoint)"
                                                    : "connect to \(options.endpoint)")
                    if attempt.connected && messagesDelivered != delivered {
                        try check(readArrivedAndWrite(), "connection to \(options.endpoint)")
                    }
                    if hasDeferred.load(ordering: .acquiring) { runDeferred() }
                    if isStopRequested {
                        // Give a live connection time to flush DISCONNECT; a pending one has nothing to flush.
                        guard attempt.connected else { break }
                        let now = ContinuousClock.now
                        if stoppingAt == nil {
                            stoppingAt = now
                            // Again from here: a DISCONNECT queued by stop() while this thread was (re)connecting
                            // was dropped with the old connection's queue. A second one is harmless.
                            try? check(mosquitto_disconnect_v5(mosq, 0, nil), "disconnect from \(options.endpoint)")
                        }
                        if let stoppingAt, now - stoppingAt > Self.disconnectGrace { break }
                    }
                }
            } catch {
                failure = error
            }
            if isStopRequested { break }
            let wasConnected = attempt.connected
            markDisconnected()
            let error = failureReason(failure, wasConnected: wasConnected)
            if wasConnected {
                failures = 0
                emit(.disconnected(.lost(error)))
            } else {
                if options.allowsProtocolFallback,
                   let next = version.fallback(afterRefusalWith: attempt.connackReason,
                                               error: attempt.connackReason == nil ? failure?.code : nil) {
                    version = next
                    continue
                }
                emit(.connectionFailed(error))
            }
            gate.wait(for: options.reconnectBackoff.delay(forAttempt: failures, using: &generator))
            failures += 1
        }
        closeSocket()
        markDisconnected()
        state.withLock { $0.phase = .stopped }
        emit(.disconnected(.requested))
        finishStreams()
    }

    /// Reads the packets that have already arrived, at most `arrivedBatch`, then writes what their handlers (and the
    /// turn's) queued, corked. `mosquitto_loop` reads one packet a turn (libmosquitto 2.0 reads more only while QoS 1
    /// or 2 messages wait) and writes what a handler queued only on its next turn, after another `pselect`: under load
    /// each request took a turn of its own and its answers a segment of their own (docs/benchmarks.md). Returns a
    /// failed read's code, for the turn to report as `mosquitto_loop`'s; a failed write is left to the next turn, as
    /// libmosquitto leaves it.
    private func readArrivedAndWrite() -> Int32 {
        let socket = mosquitto_socket(mosq)
        guard socket >= 0 else { return MOSQ_ERR_SUCCESS.rawValue }
        var read = 0
        while read < Self.arrivedBatch {
            var available: Int32 = 0
            guard ioctl(socket, UInt(FIONREAD), &available) == 0, available > 0 else { break }
            let rc = mosquitto_loop_read(mosq, 1)
            guard rc == MOSQ_ERR_SUCCESS.rawValue else { return rc }
            read += 1
        }
        if read > 0 { packetsReadWithinTurns.add(read, ordering: .relaxed) }
        if hasUnwrittenPackets { writeQueued() }
        return MOSQ_ERR_SUCCESS.rawValue
    }

    /// Writes what is queued now, corked when it is two packets or more (`Cork`).
    private func writeQueued() {
        let cork = corkQueuedPackets()
        _ = mosquitto_loop_write(mosq, 1)
        cork.release()
    }

    /// At most this many packets are read in one turn beyond `mosquitto_loop`'s one, so that writing, keep-alive and
    /// deferred work are not held back by a client that never stops sending.
    private static let arrivedBatch = 32

    /// Corks the socket for the packets queued since the last write, if there are two or more (`Cork`), and counts
    /// from zero again.
    private func corkQueuedPackets() -> Cork {
        Cork(socket: mosquitto_socket(mosq), packets: queuedPackets.exchange(0, ordering: .acquiringAndReleasing))
    }

    /// Writes what is queued now (outside a callback libmosquitto writes at once), then runs the deferred work. A
    /// failed write is left to the next turn's `mosquitto_loop`, which reports the connection's end as usual.
    private func runDeferred() {
        let work = deferred.withLock { w in
            hasDeferred.store(false, ordering: .releasing)
            defer { w = [] }
            return w
        }
        writeQueued()
        for w in work { w() }
    }

    /// Read without libmosquitto's lock (it has no call that takes it): a packet another thread queues at that
    /// instant may be seen or not, which moves a burst's next part by at most a turn.
    var hasUnwrittenPackets: Bool { mosquitto_want_write(mosq) }

    func whenWritten(_ work: @escaping @Sendable () -> Void) {
        afterWriting { [weak self] in
            guard let self else { return }
            if hasUnwrittenPackets { whenWritten(work) } else { work() }
        }
    }

    func afterWriting(_ work: @escaping @Sendable () -> Void) {
        deferred.withLock { w in
            w.append(work)
            hasDeferred.store(true, ordering: .releasing)
        }
    }

    /// The error that best explains why an attempt or connection ended: the broker's own reason when it gave one.
    private func failureReason(_ failure: MQTTError?, wasConnected: Bool) -> MQTTError {
        let endpoint = options.endpoint
        if let reason = attempt.connackReason, reason != 0 {
            return MQTTError(code: .connectionRefused, reasonCode: reason, protocolVersion: version,
                             context: "connect to \(endpoint)")
        }
        if let reason = attempt.disconnectReason, reason >= 0x80 {
            return MQTTError(code: .connectionLost, reasonCode: reason, protocolVersion: version,
                             context: "connection to \(endpoint)")
        }
        if let failure { return failure }
        if let reason = attempt.disconnectReason, reason != 0 {
            return MQTTError(returnCode: reason, context: "connection to \(endpoint)")
        }
        return MQTTError(code: .connectionLost, context: wasConnected ? "connection to \(endpoint)"
                                                                     : "connect to \(endpoint)",
                         message: String(cString: mosquitto_strerror(Int32(MOSQ_ERR_CONN_LOST.rawValue))))
    }

    /// After a stop that could not flush (pending connect, or the grace period ran out): shut the socket down and
    /// let libmosquitto notice, so no descriptor outlives the thread.
    private func closeSocket() {
        for _ in 0..<4 where mosquitto_socket(mosq) >= 0 {
            sever()
            _ = mosquitto_loop(mosq, 10, 1)
        }
    }

    private func markDisconnected() {
        state.withLock { $0.connected = false }
    }

    private func didReceiveConnack(reason: Int32, flags: Int32) {
        guard reason == 0 else {
            attempt.connackReason = reason
            return
        }
        attempt.connected = true
        let version = self.version
        usesV5.store(version == .v5, ordering: .releasing)
        let onConnect = subscriptionOrder.withLock { _ in
            let (subscriptions, onConnect) = state.withLock { state in
                state.connected = true
                state.protocolInUse = version
                return (state.subscriptions, state.phase == .running ? state.onConnect : nil)
            }
            for subscription in subscriptions {
                // A failure here means the connection is already going; the next CONNACK resubscribes.
                try? sendSubscribe(subscription.filter, subscription.options, version: version)
            }
            return onConnect
        }
        emit(.connected(version, sessionPresent: flags & 1 != 0))
        onConnect?(version)
    }

    private func didDisconnect(reason: Int32) {
        if reason != 0 { attempt.disconnectReason = reason }
        markDisconnected()
    }

    private func deliver(_ raw: UnsafePointer<mosquitto_message>, _ properties: OpaquePointer?) {
        messagesDelivered &+= 1
        let (handler, continuations) = sinks.withLock { ($0.onMessage, $0.continuations) }
        if handler == nil && continuations.isEmpty { return }
        let message = raw.pointee
        var received = MQTTMessage(
            topic: message.topic.map { String(cString: $0) } ?? "",
            payload: message.payloadlen > 0 && message.payload != nil
                ? Array(UnsafeRawBufferPointer(start: message.payload, count: Int(message.payloadlen))) : [],
            qos: MQTTQoS(rawValue: message.qos) ?? .atMostOnce,
            retain: message.retain)
        if let properties {
            var text: UnsafeMutablePointer<CChar>?
            if mosquitto_property_read_string(properties, Int32(MQTT_PROP_RESPONSE_TOPIC.rawValue), &text, false)
                != nil,
                let text
            {
                received.responseTopic = String(cString: text)
                free(text)
            }
            var bytes: UnsafeMutableRawPointer?
            var length: UInt16 = 0
            if mosquitto_property_read_binary(properties, Int32(MQTT_PROP_CORRELATION_DATA.rawValue), &bytes,
                                              &length, false) != nil {
                received.correlationData = bytes.map { Array(UnsafeRawBufferPointer(start: $0, count: Int(length))) }
                    ?? []
                free(bytes)
            }
            var name: UnsafeMutablePointer<CChar>?, value: UnsafeMutablePointer<CChar>?
            var property = mosquitto_property_read_string_pair(properties, Int32(MQTT_PROP_USER_PROPERTY.rawValue),
                                                               &name, &value, false)
            while property != nil {
                if let name, let value {
                    received.userProperties.append(MQTTUserProperty(String(cString: name), String(cString: value)))
                }
                free(name); free(value)
                name = nil; value = nil
                property = mosquitto_property_read_string_pair(property, Int32(MQTT_PROP_USER_PROPERTY.rawValue),
                                                               &name, &value, true)
            }
        }
        if message.qos > 0 { queuedPackets.add(1, ordering: .relaxed) }  // its PUBACK or PUBREC
        handler?(received)
        for continuation in continuations.values { continuation.yield(received) }
    }

    // MARK: Events and streams

    private func emit(_ event: MQTTConnectionEvent) {
        let (handler, continuations) = state.withLock { ($0.onConnectionEvent, $0.eventContinuations) }
        handler?(event)
        for continuation in continuations.values { continuation.yield(event) }
    }

    func makeEventStream() -> AsyncStream<MQTTConnectionEvent> {
        let (stream, continuation) = AsyncStream<MQTTConnectionEvent>.makeStream()
        let token = state.withLock { state -> Int? in
            guard state.phase != .stopped else { return nil }
            state.nextToken += 1
            state.eventContinuations[state.nextToken] = continuation
            return state.nextToken
        }
        guard let token else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.eventContinuations.removeValue(forKey: token) }
        }
        return stream
    }

    func makeMessageStream(limit: Int) -> AsyncStream<MQTTMessage> {
        let (stream, continuation) = AsyncStream<MQTTMessage>.makeStream(bufferingPolicy: .bufferingNewest(limit))
        let token = sinks.withLock { sinks -> Int? in
            guard !sinks.finished else { return nil }
            sinks.nextToken += 1
            sinks.continuations[sinks.nextToken] = continuation
            return sinks.nextToken
        }
        guard let token else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.sinks.withLock { $0.continuations.removeValue(forKey: token) }
        }
        return stream
    }

    private func finishStreams() {
        let events = state.withLock { state in
            defer { state.eventContinuations = [:] }
            return state.eventContinuations
        }
        let messages = sinks.withLock { sinks in
            sinks.finished = true
            defer { sinks.continuations = [:] }
            return sinks.continuations
        }
        for continuation in events.values { continuation.finish() }
        for continuation in messages.values { continuation.finish() }
    }

    private func finishStreamsIfNeverStarted() {
        if state.withLock({ $0.phase == .stopped && $0.thread == nil }) { finishStreams() }
    }

    // MARK: Operations

    func publish(
        _ topic: String, payload: [UInt8], qos: MQTTQoS, retain: Bool,
        responseTopic: String?, correlationData: [UInt8]?, userProperties: [MQTTUserProperty]
    ) throws(MQTTError) {
        try checkCString(topic, "publish to '\(topic)'")
        var properties: OpaquePointer?
        defer { if properties != nil { mosquitto_property_free_all(&properties) } }
        if (responseTopic != nil || correlationData != nil || !userProperties.isEmpty)
            && usesV5.load(ordering: .acquiring)
        {
            for property in userProperties {
                let what = "publish to '\(topic)' with user property '\(property.name)'"
                try checkCString(property.name, what)
                try checkCString(property.value, what)
                let rc = property.name.withCString { name in
                    property.value.withCString {
                        mosquitto_property_add_string_pair(
                            &properties, Int32(MQTT_PROP_USER_PROPERTY.rawValue), name, $0)
                    }
                }
                try check(rc, what)
            }
            if let responseTopic {
                try checkCString(responseTopic, "publish to '\(topic)' with response topic '\(responseTopic)'")
                let rc = responseTopic.withCString {
                    mosquitto_property_add_string(&properties, Int32(MQTT_PROP_RESPONSE_TOPIC.rawValue), $0)
                }
                try check(rc, "publish to '\(topic)' with response topic '\(responseTopic)'")
            }
            if let correlationData {
                guard correlationData.count <= Int(UInt16.max) else {
                    throw MQTTError(code: .payloadTooLarge, context: "publish to '\(topic)'",
                                    message: "correlation data is longer than 65535 bytes")
                }
                let rc = correlationData.withUnsafeBytes {
                    mosquitto_property_add_binary(&properties, Int32(MQTT_PROP_CORRELATION_DATA.rawValue),
                                                  $0.baseAddress, UInt16($0.count))
                }
                try check(rc, "publish to '\(topic)' with correlation data")
            }
        }
        let rc = topic.withCString { topic in
            payload.withUnsafeBytes { payload in
                mosquitto_publish_v5(mosq, nil, topic, Int32(clamping: payload.count), payload.baseAddress,
                                     qos.rawValue, retain, properties)
            }
        }
        try check(rc, "publish to '\(topic)'")
        queuedPackets.add(1, ordering: .relaxed)
    }

    func subscribe(_ filter: String, options: MQTTSubscriptionOptions) throws(MQTTError) {
        try checkCString(filter, "subscribe to '\(filter)'")
        try check(filter.withCString { mosquitto_sub_topic_check($0) }, "subscribe to '\(filter)'")
        try subscriptionOrder.withLock { _ throws(MQTTError) in
            let version = state.withLock { state -> MQTTProtocolVersion? in
                if let index = state.subscriptions.firstIndex(where: { $0.filter == filter }) {
                    state.subscriptions[index].options = options
                } else {
                    state.subscriptions.append((filter, options))
                }
                return state.connected ? state.protocolInUse : nil
            }
            guard let version else { return }
            do throws(MQTTError) {
                try sendSubscribe(filter, options, version: version)
            } catch where error.code == .notConnected {
                // Lost meanwhile: it is recorded and will be sent after the reconnection.
            } catch {
                state.withLock { $0.subscriptions.removeAll { $0.filter == filter } }
                throw error
            }
        }
    }

    func unsubscribe(_ filter: String) throws(MQTTError) {
        try checkCString(filter, "unsubscribe from '\(filter)'")
        try subscriptionOrder.withLock { _ throws(MQTTError) in
            let connected = state.withLock { state in
                state.subscriptions.removeAll { $0.filter == filter }
                return state.connected
            }
            guard connected else { return }
            do throws(MQTTError) {
                let rc = filter.withCString { mosquitto_unsubscribe_v5(mosq, nil, $0, nil) }
                try check(rc, "unsubscribe from '\(filter)'")
            } catch where error.code == .notConnected {
                // Nothing to undo on the broker: the session is gone or will be resubscribed without it.
            }
        }
    }

    /// Sends SUBSCRIBE; the MQTT 5 options are dropped on 3.1.1, whose brokers would reject the reserved bits.
    private func sendSubscribe(_ filter: String, _ options: MQTTSubscriptionOptions,
                               version: MQTTProtocolVersion) throws(MQTTError) {
        let flags = version == .v5 ? options.v5Flags : 0
        let rc = filter.withCString { mosquitto_subscribe_v5(mosq, nil, $0, options.qos.rawValue, flags, nil) }
        try check(rc, "subscribe to '\(filter)'")
    }
}

/// Rejects strings C would silently cut at an embedded NUL.
private func checkCString(_ text: String, _ context: @autoclosure () -> String) throws(MQTTError) {
    // memchr over a native string's bytes: this runs for every publication, and `utf8.contains` steps through the
    // view a byte at a time.
    let hasNUL =
        text.utf8.withContiguousStorageIfAvailable { $0.isEmpty ? false : memchr($0.baseAddress!, 0, $0.count) != nil }
        ?? text.utf8.contains(0)
    if hasNUL {
        throw MQTTError(code: .invalidArgument, context: context(), message: "contains a NUL character")
    }
}

private func withOptionalCString<Result>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> Result) -> Result {
    guard let text else { return body(nil) }
    return text.withCString { body($0) }
}

// MARK: - Gate

/// An interruptible sleep for the backoff delay: `wait(for:)` returns early once `open()` has been called.
/// pthread primitives because the Swift standard library has no condition variable.
private final class Gate: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var isOpen = false

    init() {
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        #if !canImport(Darwin)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        #endif
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    func open() {
        pthread_mutex_lock(mutex)
        isOpen = true
        pthread_cond_broadcast(condition)
        pthread_mutex_unlock(mutex)
    }

    func wait(for duration: Duration) {
        var deadline = timespec()
        clock_gettime(CLOCK_MONOTONIC, &deadline)
        let (seconds, attoseconds) = duration.components
        var nanoseconds = Int(deadline.tv_nsec) + Int(attoseconds / 1_000_000_000)
        var wholeSeconds = Int(deadline.tv_sec) + Int(seconds) + nanoseconds / 1_000_000_000
        nanoseconds %= 1_000_000_000
        if wholeSeconds < 0 { wholeSeconds = 0 }
        deadline.tv_sec = .init(wholeSeconds)
        deadline.tv_nsec = .init(nanoseconds)
        pthread_mutex_lock(mutex)
        while !isOpen {
            if pthread_cond_timedwait(condition, mutex, &deadline) == ETIMEDOUT { break }
        }
        pthread_mutex_unlock(mutex)
    }
}

/// Holds the packets one turn of the network thread writes in one TCP segment where it can.
///
/// libmosquitto writes each queued packet with its own `write`, and with Nagle off (`TCP_NODELAY`) each becomes a
/// segment of its own: a hub answering a request sends the device's document and two responses, three segments,
/// each a trip through the kernel's network path and a wake-up of the broker. `TCP_CORK` around the loop's turn
/// that writes them makes one segment of them; taking it off at the end of the turn sends at once what is held, so
/// nothing waits for the kernel's 200 ms cork limit. A single packet is written as it was, without the two
/// `setsockopt` calls.
@_spi(Testing) public struct Cork {
    private let socket: Int32

    /// Corks `socket` when `packets` (those queued for this turn) are two or more; a negative socket is none.
    public init(socket: Int32, packets: Int) {
        self.socket = packets >= 2 && socket >= 0 ? socket : -1
        if self.socket >= 0 { Self.set(self.socket, 1) }
    }

    /// Sends what the cork holds. The socket may have been closed during the turn (a lost connection); then the
    /// call fails with `EBADF` and changes nothing, and a descriptor reused meanwhile is only uncorked.
    public func release() {
        if socket >= 0 { Self.set(socket, 0) }
    }

    private static func set(_ socket: Int32, _ value: Int32) {
        var value = value
        _ = setsockopt(socket, Int32(IPPROTO_TCP), TCP_CORK, &value, socklen_t(MemoryLayout<Int32>.size))
    }
}
