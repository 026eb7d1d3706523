// A Matter node on the network: the UDP transport with its message layer and exchanges, the Secure Channel's PASE
// and CASE responders, the Interaction Model served by a `MatterNodeCore` (answers of deferred clusters sent when they
// come, subscription reports sent on exchanges the node opens), the fail-safe's, the commissioning window's and the
// reports' timers and the node's DNS-SD advertisements (`_matterc._udp` while it has no fabric or a commissioning
// window is open, `_matter._tcp` for each fabric it has).
//
// Everything but `start` and `stop` runs on the transport's one event loop: the message layer calls the exchange
// handlers there, and the node's own state (its sessions, the establishment under way, the timers) is touched nowhere
// else: a deferred cluster's completion and a data model change, which come on any thread, hop to the loop. Storage
// writes of commissioning (a few hundred bytes, written atomically) happen on that loop too, where the Interaction
// Model handles the command that needs them.

import HearthCrypto
import HearthSync
public import NIOCore

/// What a node needs besides its core: where it listens and announces, and how it is paired.
public struct MatterNodeOptions: Sendable {
    /// The UDP addresses to bind (port included).
    public var addresses: [SocketAddress]
    /// The interfaces to announce on with mDNS; empty: no announcement.
    public var announceInterfaces: [String]
    /// The mDNS host label (the host is `<label>.local`).
    public var hostLabel: String
    public var port: UInt16
    public var discriminator: UInt16
    /// The PASE verifier of the node's passcode (the passcode itself is not kept by the node).
    public var verifier: PASEVerifier
    public var vendorID: UInt16
    public var productID: UInt16
    /// The DNS-SD `DN` key while commissionable.
    public var deviceName: String?
    /// How long (ms) the node waits for a deferred cluster's answer before it answers the request TIMEOUT itself and
    /// closes the exchange (a device that never finishes must not hold exchanges forever); a later answer is dropped.
    public var deferredAnswerTimeout: Int64 = 30_000

    public init(
        addresses: [SocketAddress], announceInterfaces: [String], hostLabel: String, port: UInt16,
        discriminator: UInt16, verifier: PASEVerifier, vendorID: UInt16, productID: UInt16, deviceName: String?
    ) {
        self.addresses = addresses
        self.announceInterfaces = announceInterfaces
        self.hostLabel = hostLabel
        self.port = port
        self.discriminator = discriminator
        self.verifier = verifier
        self.vendorID = vendorID
        self.productID = productID
        self.deviceName = deviceName
    }
}

/// Why a node did not start.
public enum MatterNodeError: Error, Sendable, CustomStringConvertible {
    case transport(MatterTransportError)
    case discovery(MDNSResponderError)

    public var description: String {
        switch self {
        case .transport(.bindFailed(let address, let reason)): "cannot listen on \(address): \(reason)"
        case .transport(.noAddresses): "no address to listen on"
        case .transport(let other): "\(other)"
        case .discovery(let error): "cannot announce with mDNS: \(error)"
        }
    }
}

/// A commissionable, then operational, Matter node.
public final class MatterNode: @unchecked Sendable {
    public let core: MatterNodeCore
    public let options: MatterNodeOptions
    let transport: MatterUDPTransport
    let log: @Sendable (String) -> Void
    let random: RandomBytes

    /// A secure session as the node knows it (the message layer keeps its keys and counters).
    struct SessionRecord {
        enum Kind: Equatable { case pase, `case` }
        var kind: Kind
        var localSessionID: UInt16
        var fabricIndex: FabricIndex
        var peerNodeID: NodeID
        var cats: [UInt32]
        var attestationChallenge: [UInt8]
        /// When the peer last used it: the session idle longest goes first when the table is full.
        var lastActive: MatterInstant

        var subject: SubjectDescriptor {
            switch kind {
            case .pase: .pase(fabricIndex: fabricIndex, attestationChallenge: attestationChallenge)
            case .case: .caseSession(fabricIndex: fabricIndex, node: peerNodeID, cats: cats,
                                     attestationChallenge: attestationChallenge)
            }
        }
    }

    /// An establishment under way: its exchange and responder, and when it began.
    private enum Establishment {
        case pase(PASEResponder)
        case `case`(CASEResponder)
    }

    // Confined to the event loop.
    var layer: MessageLayer?
    var sessions: [SessionHandle: SessionRecord] = [:]
    private var establishments: [ExchangeKey: (responder: Establishment, started: MatterInstant)] = [:]
    private var failSafeTimer: Scheduled<Void>?
    private var failedPASEAttempts = 0
    let resumptions = InMemoryCASEResumptionStore()
    /// The stored subscriptions being resumed after a restart (`MatterNode+Resumption.swift`).
    var subscriptionResumption = SubscriptionResumption()
    private let mdns = Locked<MDNSResponder?>(nil)
    private var advertised: [String: DNSSDService] = [:]
    private let commissionableInstance: String
    private var reportTimer: Scheduled<Void>?
    /// The exchanges waiting for a deferred cluster's answer, with the timer that gives up on it.
    private var deferredAnswers: [ExchangeKey: Scheduled<Void>] = [:]
    /// Whether a wake-up for subscription reports is already on its way to the loop: changes made in a burst (a
    /// device's several attributes, from any thread) are gathered in one pass.
    private let reportWakePending = Locked(false)

    /// How long an establishment may wait for the peer's next message before another peer may start one.
    public static let establishmentTimeout: Int64 = 30_000
    /// PASE attempts that fail before the node stops answering PASE until restarted (5.4.2.7 allows 20 at least).
    public static let maximumFailedPASEAttempts = 100
    /// Secure sessions kept at once (the specification asks for at least 3 CASE sessions per fabric); past it, a new
    /// session replaces the one idle longest, so that peers that never close theirs cannot grow memory.
    public static let maximumSecureSessions = 24

    public init(core: MatterNodeCore, options: MatterNodeOptions, eventLoop: any EventLoop,
                clock: any MatterClock = MatterMonotonicClock(), random: @escaping RandomBytes = systemRandomBytes,
                log: @escaping @Sendable (String) -> Void) {
        self.core = core
        self.options = options
        self.log = log
        self.random = random
        transport = MatterUDPTransport(eventLoop: eventLoop, clock: clock, cipher: AESCCMMessageCipher())
        var generator = SystemRandomNumberGenerator()
        commissionableInstance = MatterServiceNames.randomCommissionableInstance(using: &generator)
        core.dataModel.onChange { [weak self] in self?.dataModelChanged() }
    }

    var now: MatterInstant { transport.clock.now }

    /// Whether the node has a fabric (it is then not commissionable).
    public var isCommissioned: Bool { !core.commissioning.fabrics.isEmpty }

    /// Binds the sockets, starts answering and announces the node.
    public func start() async throws(MatterNodeError) {
        do {
            try await transport.start(addresses: options.addresses)
        } catch {
            throw .transport(error)
        }
        do {
            try await transport.withMessageLayer { [self] layer in
                self.layer = layer
                layer.exchanges.registerUnsolicitedHandler(for: .secureChannel) { [unowned self] _ in
                    NodeExchangeHandler(node: self, protocolID: .secureChannel)
                }
                layer.exchanges.registerUnsolicitedHandler(for: .interactionModel) { [unowned self] _ in
                    NodeExchangeHandler(node: self, protocolID: .interactionModel)
                }
            }
        } catch {
            try? await transport.stop()
            throw .transport(.bindFailed(address: "\(options.addresses)", reason: "\(error)"))
        }
        if !options.announceInterfaces.isEmpty {
            do {
                let responder = try await MDNSResponder(
                    interfaces: options.announceInterfaces, hostLabel: options.hostLabel,
                    eventLoopGroup: transport.eventLoop)
                mdns.withLock { $0 = responder }
            } catch {
                try? await transport.stop()
                throw .discovery(error)
            }
        }
        _ = try? await transport.eventLoop.submit {
            self.updateAdvertisements()
            self.startResumingSubscriptions()
            self.scheduleReports()
        }.get()
    }

    /// Says goodbye on mDNS and closes the sockets.
    public func stop() async {
        let responder = mdns.withLock { responder in
            defer { responder = nil }
            return responder
        }
        await responder?.shutdown()
        _ = try? await transport.eventLoop.submit {
            self.failSafeTimer?.cancel()
            self.failSafeTimer = nil
            self.reportTimer?.cancel()
            self.reportTimer = nil
            self.stopResumingSubscriptions()
            for timer in self.deferredAnswers.values { timer.cancel() }
            self.deferredAnswers = [:]
            self.layer = nil
        }.get()
        try? await transport.stop()
    }

    /// The addresses the sockets are bound to.
    public var localAddresses: [SocketAddress] { get async { await transport.localAddresses } }

    // MARK: Secure Channel (on the loop)

    fileprivate func secureChannel(_ key: ExchangeKey, received message: MatterMessage, manager: ExchangeManager) {
        let opcode = message.payloadHeader.opcode
        let isSecure = sessions[key.session] != nil
        switch SecureChannelOpcode(rawValue: opcode) {
        case .pbkdfParamRequest where !isSecure:
            // PASE only while a window is open: the node's own without a fabric, or one an administrator opened.
            guard
                let paseVerifier = core.window.paseVerifier(
                    nodeVerifier: options.verifier, isCommissioned: isCommissioned)
            else {
                reply(.status(.invalidParameter), on: key, manager: manager)
                manager.close(key, now: now)
                return
            }
            guard failedPASEAttempts < Self.maximumFailedPASEAttempts else {
                log("matter: PASE refused: \(failedPASEAttempts) failed attempts since start")
                reply(.status(.invalidParameter), on: key, manager: manager)
                manager.close(key, now: now)
                return
            }
            dropStaleEstablishments()
            if establishments.values.contains(where: { if case .pase = $0.responder { true } else { false } }) {
                reply(.status(.busy(waitMilliseconds: StatusReport.busyWaitMilliseconds)), on: key, manager: manager)
                manager.close(key, now: now)
                return
            }
            var responder = PASEResponder(
                verifier: paseVerifier, sessionIDs: { [unowned self] in self.freeSessionID() },
                random: random)
            let step = responder.receive(opcode: opcode, payload: message.payload)
            establishments[key] = (.pase(responder), now)
            finish(step, on: key, manager: manager)
        case .caseSigma1 where !isSecure:
            dropStaleEstablishments()
            var responder = CASEResponder(identities: core.commissioning, resumptions: resumptions,
                                          sessionIDs: { [unowned self] in self.freeSessionID() },
                                          random: random, now: { nil })
            let step = responder.receive(opcode: opcode, payload: message.payload)
            establishments[key] = (.case(responder), now)
            finish(step, on: key, manager: manager)
        case .pasePake1, .pasePake3, .caseSigma3, .statusReport:
            if var attempt = establishments[key] {
                let step: SessionEstablishmentStep
                switch attempt.responder {
                case .pase(var responder):
                    step = responder.receive(opcode: opcode, payload: message.payload)
                    attempt.responder = .pase(responder)
                case .case(var responder):
                    step = responder.receive(opcode: opcode, payload: message.payload)
                    attempt.responder = .case(responder)
                }
                attempt.started = now
                establishments[key] = attempt
                finish(step, on: key, manager: manager)
            } else if SecureChannelOpcode(rawValue: opcode) == .statusReport, isSecure,
                let report = try? StatusReport(decoding: message.payload),
                report.protocolID == .secureChannel,
                report.protocolCode == SecureChannelStatusCode.closeSession.rawValue
            {
                // The peer closes the session it sent this on.
                manager.close(key, now: now)
                removeSession(key.session)
            } else {
                manager.close(key, now: now)
            }
        default:
            manager.close(key, now: now)
        }
    }

    private func finish(_ step: SessionEstablishmentStep, on key: ExchangeKey, manager: ExchangeManager) {
        if let reply = step.reply { self.reply(reply, on: key, manager: manager) }
        if let established = step.established {
            establishments[key] = nil
            manager.close(key, now: now)
            if let peer = layer?.peerAddress(of: key.session) { install(established, peer: peer) }
        } else if let failure = step.failure {
            if case .pase = establishments[key]?.responder { failedPASEAttempts += 1 }
            establishments[key] = nil
            manager.close(key, now: now)
            log("matter: session establishment failed: \(failure)")
        }
    }

    private func reply(_ message: SecureChannelMessage, on key: ExchangeKey, manager: ExchangeManager) {
        do {
            try manager.send(
                on: key, protocolID: .secureChannel, opcode: message.opcode.rawValue, payload: message.payload,
                now: now)
        } catch {
            log("matter: cannot answer on \(key): \(error)")
        }
    }

    /// MRP gave up on a message of the exchange: an establishment on it is over (the peer is gone), so that the next
    /// attempt is not answered busy; a subscription whose report it carried ends.
    fileprivate func exchangeFailed(_ key: ExchangeKey, subscriptionID: UInt32?) {
        if establishments.removeValue(forKey: key) != nil { log("matter: session establishment abandoned: no answer") }
        if let subscriptionID {
            log("matter: subscription \(subscriptionID) ended: its subscriber did not acknowledge a report")
            core.interactionModel.removeSubscriptions { $0.id == subscriptionID }
            scheduleReports()
        }
    }

    private func dropStaleEstablishments() {
        let now = self.now
        for (key, attempt) in establishments where now - attempt.started > Self.establishmentTimeout {
            establishments[key] = nil
            layer?.exchanges.close(key, now: now)
        }
    }

    func freeSessionID() -> UInt16? {
        let used = Set(sessions.values.map(\.localSessionID))
        for _ in 0..<64 {
            let bytes = (try? random(2)) ?? [UInt8.random(in: 0...255), UInt8.random(in: 0...255)]
            let id = UInt16(bytes[0]) << 8 | UInt16(bytes[1])
            if id != 0, !used.contains(id) { return id }
        }
        return nil
    }

    /// Installs a session PASE or CASE established with the peer at `peer` (on the loop); `asInitiator` when this
    /// node initiated it (its keys then go the other way).
    func install(_ session: EstablishedSession, peer: SocketAddress, asInitiator: Bool = false) {
        guard let layer else { return }
        var record = SessionRecord(
            kind: .pase, localSessionID: session.localSessionID, fabricIndex: 0, peerNodeID: 0, cats: [],
            attestationChallenge: session.keys.attestationChallenge, lastActive: now)
        var localNodeID: UInt64 = 0
        if case .case(let fabricIndex, let peerNodeID, let cats) = session.kind {
            record.kind = .case
            record.fabricIndex = fabricIndex
            record.peerNodeID = peerNodeID
            record.cats = cats
            localNodeID = core.commissioning.fabrics.first { $0.index == fabricIndex }?.identity.nodeID ?? 0
        }
        let parameters = SecureSessionParameters(
            localSessionID: session.localSessionID, peerSessionID: session.peerSessionID,
            encryptionKey: asInitiator ? session.keys.initiatorToResponder : session.keys.responderToInitiator,
            decryptionKey: asInitiator ? session.keys.responderToInitiator : session.keys.initiatorToResponder,
            localNodeID: localNodeID, peerNodeID: record.peerNodeID, peerAddress: peer)
        while sessions.count >= Self.maximumSecureSessions,
              let idlest = sessions.min(by: { $0.value.lastActive < $1.value.lastActive })?.key {
            removeSession(idlest)
        }
        guard let handle = layer.addSecureSession(parameters) else {
            log("matter: session id \(session.localSessionID) is taken; the session is dropped")
            return
        }
        sessions[handle] = record
        switch record.kind {
        case .pase: log("matter: PASE session \(session.localSessionID) established with \(peer)")
        case .case:
            log(
                "matter: CASE session \(session.localSessionID) established with node \(record.peerNodeID) of fabric "
                    + "\(record.fabricIndex)")
        }
    }

    /// A deferred cluster took too long: the request is answered TIMEOUT and its exchange closed (on the loop).
    private func abandonAnswer(on key: ExchangeKey) {
        deferredAnswers[key] = nil
        transport.onLoop { layer in
            guard sessions[key.session] != nil, layer.exchanges.isOpen(key) else { return }
            log(
                "matter: no answer on \(key) after \(options.deferredAnswerTimeout) ms: the request is answered TIMEOUT"
            )
            answer(.status(.timeout), on: key, manager: layer.exchanges)
        }
    }

    /// The secure sessions the node has (on the loop).
    var sessionCount: Int { sessions.count }

    func removeSession(_ handle: SessionHandle) {
        sessions[handle] = nil
        layer?.removeSession(handle)
    }

    // MARK: Interaction Model (on the loop)

    fileprivate func interaction(_ key: ExchangeKey, received message: MatterMessage, state: inout IMExchangeState,
                                 manager: ExchangeManager) {
        guard let record = sessions[key.session] else {
            // The Interaction Model only runs on secure sessions.
            manager.close(key, now: now)
            return
        }
        sessions[key.session]?.lastActive = now
        let reply = core.receive(opcode: message.payloadHeader.opcode, payload: message.payload, exchange: &state,
                                 subject: record.subject, now: now)
        if let deferred = reply.deferred {
            // A deferred cluster is still at work: the exchange stays open (its pending acknowledgement goes alone
            // when MRP's standalone-ack timer fires) and the answer is sent from the loop when it comes.
            let loop = transport.eventLoop
            deferredAnswers[key]?.cancel()
            deferredAnswers[key] = loop.scheduleTask(in: .milliseconds(options.deferredAnswerTimeout)) { [weak self] in
                self?.abandonAnswer(on: key)
            }
            deferred.whenReady { reply in
                loop.execute { self.answerLater(reply, on: key) }
            }
        } else {
            answer(reply, on: key, manager: manager)
        }
        handleCommissioningEvents(session: key.session)
        // A subscription made, a report answered, one ended: when the next report is due may have moved.
        scheduleReports()
    }

    private func answer(_ reply: IMReply, on key: ExchangeKey, manager: ExchangeManager) {
        if let answer = reply.message {
            do {
                try manager.send(
                    on: key, protocolID: .interactionModel, opcode: answer.opcode.rawValue, payload: answer.payload,
                    now: now)
            } catch {
                log("matter: cannot answer on \(key): \(error)")
            }
        }
        if reply.closesExchange { manager.close(key, now: now) }
    }

    /// Sends a deferred answer (on the loop), unless its exchange or session went meanwhile.
    private func answerLater(_ reply: IMReply, on key: ExchangeKey) {
        deferredAnswers.removeValue(forKey: key)?.cancel()
        transport.onLoop { layer in
            guard sessions[key.session] != nil, layer.exchanges.isOpen(key) else {
                log("matter: a late answer on \(key) is dropped: the exchange or its session is gone")
                return
            }
            answer(reply, on: key, manager: layer.exchanges)
            handleCommissioningEvents(session: key.session)
        }
    }

    // MARK: Subscription reports

    /// The data model changed (on any thread): the loop looks at what is due, once for a burst of changes.
    private func dataModelChanged() {
        let alreadyPending = reportWakePending.withLock { pending in
            defer { pending = true }
            return pending
        }
        guard !alreadyPending else { return }
        transport.eventLoop.execute { [weak self] in
            guard let self else { return }
            self.reportWakePending.withLock { $0 = false }
            self.sendDueReports()
        }
    }

    /// Sends every report due now, each on a new exchange to its subscriber's CASE session (on the loop). Reports
    /// read only the data model, whose clusters keep their values: no report waits for a device.
    private func sendDueReports() {
        guard layer != nil else { return }
        transport.onLoop { layer in
            for report in core.interactionModel.reportsDue(now: now) { send(report, manager: layer.exchanges) }
        }
        scheduleReports()
    }

    func send(_ report: DueReport, manager: ExchangeManager) {
        let subject = report.subject
        // The subscriber's session: CASE, same fabric and node; the one it used last when it has several.
        let session = sessions.filter { $0.value.kind == .case && $0.value.fabricIndex == subject.fabricIndex
            && $0.value.peerNodeID == subject.subject }
            .max { $0.value.lastActive < $1.value.lastActive }?.key
        guard let session else {
            log(
                "matter: subscription \(report.subscriptionID) ended: no CASE session with node \(subject.subject) of "
                    + "fabric \(subject.fabricIndex)")
            core.interactionModel.removeSubscriptions { $0.id == report.subscriptionID }
            return
        }
        let handler = NodeExchangeHandler(node: self, protocolID: .interactionModel, state: report.exchange)
        let key = manager.openExchange(on: session, handler: handler)
        do {
            try manager.send(on: key, protocolID: .interactionModel, opcode: report.message.opcode.rawValue,
                             payload: report.message.payload, now: now)
        } catch {
            manager.close(key, now: now)
            log("matter: subscription \(report.subscriptionID) ended: its report could not be sent: \(error)")
            core.interactionModel.removeSubscriptions { $0.id == report.subscriptionID }
            return
        }
        if !report.expectsResponse { manager.close(key, now: now) }
    }

    /// Sets the report timer to the next moment a report may be due (on the loop).
    func scheduleReports() {
        persistSubscriptions()
        reportTimer?.cancel()
        reportTimer = nil
        guard layer != nil, let deadline = core.interactionModel.nextReportDeadline else { return }
        reportTimer = transport.eventLoop.scheduleTask(in: .milliseconds(max(0, deadline - now))) { [weak self] in
            guard let self else { return }
            self.reportTimer = nil
            self.sendDueReports()
        }
    }

    private func handleCommissioningEvents(session: SessionHandle?) {
        var changedFabrics = false
        for event in core.takeEvents() {
            switch event {
            case .fabricAdded(let index):
                if let session, sessions[session]?.kind == .pase { sessions[session]?.fabricIndex = index }
                log("matter: fabric \(index) added")
                changedFabrics = true
            case .commissioningCompleted(let index):
                log("matter: commissioning completed on fabric \(index)")
                // The commissioning window closes: PASE sessions go (the commissioner has moved to CASE).
                for (handle, record) in sessions where record.kind == .pase && handle != session {
                    removeSession(handle)
                }
                changedFabrics = true
            case .failSafeExpired(let removed):
                log("matter: the fail-safe expired; fabrics rolled back: \(removed)")
                for (handle, record) in sessions where record.kind == .pase || removed.contains(record.fabricIndex) {
                    removeSession(handle)
                }
                changedFabrics = true
            case .fabricRemoved(let index):
                log("matter: fabric \(index) removed")
                for (handle, record) in sessions where record.fabricIndex == index && handle != session {
                    removeSession(handle)
                }
                changedFabrics = true
            }
        }
        if handleWindowEvents() { changedFabrics = true }
        if changedFabrics { updateAdvertisements() }
        scheduleFailSafe()
    }

    private func scheduleFailSafe() {
        failSafeTimer?.cancel()
        failSafeTimer = nil
        guard let deadline = core.nextDeadline else { return }
        let delay = max(0, deadline - now)
        failSafeTimer = transport.eventLoop.scheduleTask(in: .milliseconds(delay)) { [weak self] in
            self?.expireFailSafeIfDue()
        }
    }

    /// The fail-safe's timer (on the loop): an expired fail-safe is rolled back, and the PASE sessions and the
    /// sessions of the fabrics it added close with it.
    func expireFailSafeIfDue() {
        core.tick(now: now)
        handleCommissioningEvents(session: nil)
    }

    // MARK: DNS-SD (on the loop)

    private func updateAdvertisements() {
        guard let responder = mdns.withLock({ $0 }) else { return }
        var wanted: [String: DNSSDService] = [:]
        let fabrics = core.commissioning.fabrics
        let window = core.window.current
        if fabrics.isEmpty || window != nil {
            var discriminator = options.discriminator, mode = MatterServiceNames.CommissioningMode.basic
            if case .enhanced(_, let windowDiscriminator) = window?.kind {
                discriminator = windowDiscriminator
                mode = .enhanced
            }
            let service = MatterServiceNames.commissionable(
                instance: commissionableInstance, discriminator: discriminator, vendorID: options.vendorID,
                productID: options.productID, deviceType: 0x0016, deviceName: options.deviceName,
                commissioningMode: mode,
                session: MatterServiceNames.SessionParameters(
                    idleInterval: 500, activeInterval: 300, activeThreshold: 4000),
                port: options.port)
            wanted[service.instance + "." + service.type] = service
        }
        for fabric in fabrics {
            guard
                let compressed = try? FabricKeys.compressedFabricIDValue(
                    rootPublicKey: fabric.identity.rootPublicKey,
                    fabricID: fabric.identity.fabricID)
            else { continue }
            let service = MatterServiceNames.operational(
                compressedFabricID: compressed, nodeID: fabric.identity.nodeID,
                session: MatterServiceNames.SessionParameters(
                    idleInterval: 500, activeInterval: 300, activeThreshold: 4000),
                port: options.port)
            wanted[service.instance + "." + service.type] = service
        }
        for (name, service) in advertised where wanted[name] == nil { responder.withdraw(service) }
        for (name, service) in wanted where advertised[name] != service {
            do { try responder.advertise(service) } catch { log("matter: cannot announce \(service): \(error)") }
        }
        advertised = wanted
    }

    // MARK: Commissioning window and local administration

    /// Follows the commissioning window's events (on the loop); returns whether the advertisements must change.
    private func handleWindowEvents() -> Bool {
        let events = core.window.takeEvents()
        for event in events {
            switch event {
            case .opened(let status):
                log("matter: commissioning window open (\(status == .enhancedOpen ? "enhanced" : "basic"))")
            case .closed(let reason): log("matter: commissioning window closed (\(reason))")
            }
        }
        return !events.isEmpty
    }

    /// Runs a local administration request on the loop, then lets sessions, subscriptions, advertisements and timers
    /// follow what it changed, as after an administrator's command.
    public func administer<T: Sendable>(
        _ request: @escaping @Sendable (MatterNodeCore, MatterInstant) throws(MatterAdministrationError) -> T
    ) async throws(MatterAdministrationError) -> T {
        let outcome: Result<T, MatterAdministrationError>
        do {
            outcome = try await transport.eventLoop.submit { [self] () -> Result<T, MatterAdministrationError> in
                let result: Result<T, MatterAdministrationError>
                do throws(MatterAdministrationError) { result = .success(try request(core, now)) } catch {
                    result = .failure(error)
                }
                handleCommissioningEvents(session: nil)
                scheduleReports()
                return result
            }.get()
        } catch {
            throw .failed("the node is not running: \(error)")
        }
        return try outcome.get()
    }
}

/// An exchange opened by a peer, handed to the node by protocol; the Interaction Model's state lives here.
private final class NodeExchangeHandler: ExchangeHandler {
    private unowned let node: MatterNode
    private let protocolID: ProtocolID
    private var state: IMExchangeState

    /// `state` is a report's, on an exchange the node opens to a subscriber.
    init(node: MatterNode, protocolID: ProtocolID, state: IMExchangeState = IMExchangeState()) {
        self.node = node
        self.protocolID = protocolID
        self.state = state
    }

    func exchange(_ exchange: ExchangeKey, received message: MatterMessage, manager: ExchangeManager) {
        if message.payloadHeader.protocolID == .interactionModel {
            node.interaction(exchange, received: message, state: &state, manager: manager)
        } else if message.payloadHeader.protocolID == .secureChannel {
            node.secureChannel(exchange, received: message, manager: manager)
        } else {
            manager.close(exchange, now: manager.now)
        }
    }

    func exchange(_ exchange: ExchangeKey, failed error: ExchangeError, manager: ExchangeManager) {
        node.exchangeFailed(exchange, subscriptionID: state.subscriptionID)
    }
}
