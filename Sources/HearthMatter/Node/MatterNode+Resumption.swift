// Subscription resumption on the node: the subscriptions it serves are stored whenever they change, with the address
// their subscriber last used; after a restart the node establishes CASE as the initiator with each subscriber at that
// address (resuming the CASE session when it holds a record, else a full CASE) and sends a priming report under the
// subscription's old id, so that the subscriber's client, which still holds the subscription, hears from the node
// again without waiting for its own liveness timeout. An attempt that fails is tried again after a back-off; a
// subscription whose fabric is gone is dropped. Everything here runs on the transport's event loop.
//
// The subscriber is reached at its last address rather than through operational discovery (`_matter._tcp`): a
// controller that kept running across the node's restart is where it was.

import NIOCore
#if os(Linux)
// Where NIOCore's `sockaddr_in6` comes from on Linux: its scope id is read and set here.
import CNIOLinux
#elseif canImport(Darwin)
import Darwin
#endif

/// Who a subscription belongs to: one node of one fabric.
struct SubscriberKey: Hashable, Sendable {
    var fabricIndex: FabricIndex
    var nodeID: NodeID
}

/// The node's resumption state (on the loop).
struct SubscriptionResumption {
    /// An establishment under way with a subscriber.
    struct Attempt {
        var subscriber: SubscriberKey
        var initiator: CASEInitiator
        var peer: SocketAddress
        var timeout: Scheduled<Void>?
    }

    /// Stored subscriptions not yet resumed.
    var pending: [PersistedSubscription] = []
    var attempts: [ExchangeKey: Attempt] = [:]
    var failures: [SubscriberKey: Int] = [:]
    var retries: [SubscriberKey: Scheduled<Void>] = [:]
    /// Where each served subscription's subscriber was last reached, for when its session is gone.
    var addresses: [UInt32: StoredAddress] = [:]
    var backoff = SubscriptionResumptionBackoff()
}

extension MatterNode {
    /// Loads the stored subscriptions and starts reaching their subscribers (on the loop, at start).
    func startResumingSubscriptions() {
        let stored: [PersistedSubscription]
        do {
            stored = try core.subscriptionStore.load()
        } catch {
            log("matter: stored subscriptions are not resumed: \(error)")
            return
        }
        let fabrics = Set(core.commissioning.operationalIdentities().map(\.fabricIndex))
        for subscription in stored {
            core.interactionModel.reserveSubscriptionID(subscription.id)
            guard fabrics.contains(subscription.fabricIndex) else {
                log(
                    "matter: stored subscription \(subscription.id) dropped: fabric \(subscription.fabricIndex) is gone"
                )
                continue
            }
            subscriptionResumption.pending.append(subscription)
            subscriptionResumption.addresses[subscription.id] = StoredAddress(
                host: subscription.peerHost, port: subscription.peerPort, scopeID: subscription.peerScopeID)
        }
        var subscribers: [SubscriberKey] = []
        for subscription in subscriptionResumption.pending {
            let key = SubscriberKey(fabricIndex: subscription.fabricIndex, nodeID: subscription.subscriberNodeID)
            if !subscribers.contains(key) { subscribers.append(key) }
        }
        for subscriber in subscribers { attemptResumption(subscriber) }
    }

    /// Cancels the attempts and their timers (on the loop, at stop).
    func stopResumingSubscriptions() {
        for attempt in subscriptionResumption.attempts.values { attempt.timeout?.cancel() }
        for retry in subscriptionResumption.retries.values { retry.cancel() }
        subscriptionResumption.attempts = [:]
        subscriptionResumption.retries = [:]
    }

    /// Starts CASE with a subscriber whose subscriptions wait to be resumed.
    private func attemptResumption(_ subscriber: SubscriberKey) {
        subscriptionResumption.retries[subscriber] = nil
        let waiting = subscriptionResumption.pending.filter {
            $0.fabricIndex == subscriber.fabricIndex && $0.subscriberNodeID == subscriber.nodeID
        }
        guard let latest = waiting.max(by: { $0.id < $1.id }), let layer else { return }
        guard
            let identity = core.commissioning.operationalIdentities().first(where: {
                $0.fabricIndex == subscriber.fabricIndex
            })
        else {
            log("matter: subscriptions \(waiting.map(\.id)) dropped: fabric \(subscriber.fabricIndex) is gone")
            subscriptionResumption.pending.removeAll { $0.fabricIndex == subscriber.fabricIndex }
            persistSubscriptions()
            return
        }
        guard let peer = try? SocketAddress(stored: StoredAddress(host: latest.peerHost, port: latest.peerPort,
                                                                  scopeID: latest.peerScopeID)) else {
            log("matter: subscriptions \(waiting.map(\.id)) dropped: \(latest.peerHost) is not an address")
            subscriptionResumption.pending.removeAll { waiting.contains($0) }
            persistSubscriptions()
            return
        }
        // One establishment at a time per address: controllers that share a process (and its port) answer a second
        // Sigma1 BUSY while the first is under way. The next one starts when this one ends.
        guard !subscriptionResumption.attempts.values.contains(where: { $0.peer == peer }) else { return }
        guard let localSessionID = freeSessionID() else {
            resumptionFailed(subscriber, "no free session id")
            return
        }
        var initiator = CASEInitiator(
            identity: identity, peerNodeID: subscriber.nodeID, localSessionID: localSessionID,
            resumption: resumptions.record(fabricIndex: subscriber.fabricIndex, peerNodeID: subscriber.nodeID),
            resumptions: resumptions, random: random, now: { nil })
        let sigma1: SecureChannelMessage
        do {
            sigma1 = try initiator.start()
        } catch {
            resumptionFailed(subscriber, "\(error)")
            return
        }
        // An initiator's unsecured messages carry a random ephemeral node id as their source.
        let ephemeralNodeID = UInt64.random(in: 1...CertificateChain.operationalNodeIDs.upperBound)
        let session = layer.unsecuredSession(with: peer, peerNodeID: nil, localNodeID: ephemeralNodeID)
        let key = layer.exchanges.openExchange(on: session, handler: ResumptionExchangeHandler(node: self))
        do {
            try layer.exchanges.send(on: key, protocolID: .secureChannel, opcode: sigma1.opcode.rawValue,
                                     payload: sigma1.payload, now: now)
        } catch {
            layer.exchanges.close(key, now: now)
            resumptionFailed(subscriber, "Sigma1 could not be sent: \(error)")
            return
        }
        let timeout = transport.eventLoop.scheduleTask(in: .milliseconds(Self.establishmentTimeout)) { [weak self] in
            guard let self else { return }
            self.resumptionExchangeFailed(key, "no answer")
        }
        subscriptionResumption.attempts[key] = SubscriptionResumption.Attempt(
            subscriber: subscriber, initiator: initiator, peer: peer, timeout: timeout)
        log(
            "matter: resuming subscriptions \(waiting.map(\.id)) of node \(subscriber.nodeID) of fabric "
                + "\(subscriber.fabricIndex) at \(peer)")
    }

    /// A message of the subscriber on a resumption's exchange.
    fileprivate func resumption(_ key: ExchangeKey, received message: MatterMessage, manager: ExchangeManager) {
        guard var attempt = subscriptionResumption.attempts[key], message.payloadHeader.protocolID == .secureChannel
        else {
            manager.close(key, now: now)
            return
        }
        let step = attempt.initiator.receive(opcode: message.payloadHeader.opcode, payload: message.payload)
        subscriptionResumption.attempts[key] = attempt
        if let reply = step.reply {
            do {
                try manager.send(
                    on: key, protocolID: .secureChannel, opcode: reply.opcode.rawValue, payload: reply.payload,
                    now: now)
            } catch {
                log("matter: cannot answer on \(key): \(error)")
            }
        }
        if let established = step.established {
            attempt.timeout?.cancel()
            subscriptionResumption.attempts[key] = nil
            manager.close(key, now: now)
            install(established, peer: attempt.peer, asInitiator: true)
            if sessions.values.contains(where: { $0.localSessionID == established.localSessionID }) {
                resumed(attempt.subscriber, manager: manager)
            } else {
                resumptionFailed(attempt.subscriber, "the session could not be installed")
            }
            startWaitingResumptions(at: attempt.peer)
        } else if let failure = step.failure {
            attempt.timeout?.cancel()
            subscriptionResumption.attempts[key] = nil
            manager.close(key, now: now)
            if let wait = failure.busyWaitMilliseconds {
                // Not a failure of the subscriber's: it is busy with another establishment.
                retryResumption(attempt.subscriber, after: max(wait, 100), "the subscriber is busy")
            } else {
                resumptionFailed(attempt.subscriber, "\(failure)")
            }
            startWaitingResumptions(at: attempt.peer)
        }
    }

    /// MRP gave up on a resumption's message, or the subscriber did not finish in time.
    fileprivate func resumptionExchangeFailed(_ key: ExchangeKey, _ reason: String) {
        guard let attempt = subscriptionResumption.attempts.removeValue(forKey: key) else { return }
        attempt.timeout?.cancel()
        layer?.exchanges.close(key, now: now)
        resumptionFailed(attempt.subscriber, reason)
        startWaitingResumptions(at: attempt.peer)
    }

    /// Starts the next subscriber at `peer` whose subscriptions wait and that is not waiting for a retry.
    private func startWaitingResumptions(at peer: SocketAddress) {
        for subscription in subscriptionResumption.pending {
            let subscriber = SubscriberKey(fabricIndex: subscription.fabricIndex, nodeID: subscription.subscriberNodeID)
            guard subscriptionResumption.retries[subscriber] == nil,
                  !subscriptionResumption.attempts.values.contains(where: { $0.subscriber == subscriber }),
                  (try? SocketAddress(stored: StoredAddress(host: subscription.peerHost, port: subscription.peerPort,
                                                            scopeID: subscription.peerScopeID))) == peer
            else { continue }
            attemptResumption(subscriber)
            return
        }
    }

    /// CASE with the subscriber is up: each of its stored subscriptions is served again, starting with its priming
    /// report on the new session.
    private func resumed(_ subscriber: SubscriberKey, manager: ExchangeManager) {
        subscriptionResumption.failures[subscriber] = nil
        let waiting = subscriptionResumption.pending.filter {
            $0.fabricIndex == subscriber.fabricIndex && $0.subscriberNodeID == subscriber.nodeID
        }
        subscriptionResumption.pending.removeAll { waiting.contains($0) }
        for subscription in waiting {
            guard let report = core.interactionModel.resume(subscription, now: now) else { continue }
            log(
                "matter: subscription \(subscription.id) resumed with node \(subscriber.nodeID) of fabric "
                    + "\(subscriber.fabricIndex)")
            send(report, manager: manager)
        }
        scheduleReports()
    }

    /// Tries again after the back-off.
    private func resumptionFailed(_ subscriber: SubscriberKey, _ reason: String) {
        let failures = (subscriptionResumption.failures[subscriber] ?? 0) + 1
        subscriptionResumption.failures[subscriber] = failures
        retryResumption(
            subscriber, after: subscriptionResumption.backoff.delay(afterFailures: failures), "failed (\(reason))")
    }

    private func retryResumption(_ subscriber: SubscriberKey, after delay: Int64, _ why: String) {
        log(
            "matter: resuming the subscriptions of node \(subscriber.nodeID) of fabric \(subscriber.fabricIndex): "
                + "\(why); next attempt in \(delay) ms")
        subscriptionResumption.retries[subscriber]?.cancel()
        subscriptionResumption.retries[subscriber] = transport.eventLoop.scheduleTask(in: .milliseconds(delay)) {
            [weak self] in
            guard let self else { return }
            self.attemptResumption(subscriber)
        }
    }

    /// Stores the subscriptions served and those still being resumed, when they changed (on the loop).
    func persistSubscriptions() {
        let fabrics = Set(core.commissioning.fabrics.map(\.index))
        subscriptionResumption.pending.removeAll { !fabrics.contains($0.fabricIndex) }
        for subject in core.interactionModel.takeSubscribersStartedAfresh() {
            subscriptionResumption.pending.removeAll {
                $0.fabricIndex == subject.fabricIndex && $0.subscriberNodeID == subject.subject
            }
        }
        var stored = subscriptionResumption.pending
        var addresses: [UInt32: StoredAddress] = [:]
        for record in core.interactionModel.subscriptions {
            let subject = record.subject
            let session = sessions.filter { $0.value.kind == .case && $0.value.fabricIndex == subject.fabricIndex
                && $0.value.peerNodeID == subject.subject }
                .max { $0.value.lastActive < $1.value.lastActive }?.key
            if let session, let peer = layer?.peerAddress(of: session), let address = StoredAddress(peer) {
                addresses[record.id] = address
            } else if let known = subscriptionResumption.addresses[record.id] {
                addresses[record.id] = known
            }
            guard let address = addresses[record.id] else { continue }
            stored.append(PersistedSubscription(record, peerHost: address.host, peerPort: address.port,
                                                peerScopeID: address.scopeID))
        }
        for subscription in subscriptionResumption.pending {
            addresses[subscription.id] = StoredAddress(host: subscription.peerHost, port: subscription.peerPort,
                                                       scopeID: subscription.peerScopeID)
        }
        subscriptionResumption.addresses = addresses
        do {
            try core.subscriptionStore.save(stored)
        } catch {
            log("matter: subscriptions not stored: \(error)")
        }
    }
}

/// A subscriber's address as stored: a link-local IPv6 address needs its interface's scope id to be reached again.
struct StoredAddress: Equatable {
    var host: String
    var port: UInt16
    var scopeID: UInt32

    init(host: String, port: UInt16, scopeID: UInt32) {
        self.host = host
        self.port = port
        self.scopeID = scopeID
    }

    init?(_ address: SocketAddress) {
        guard let host = address.ipAddress, let port = address.port, let port = UInt16(exactly: port) else {
            return nil
        }
        var scopeID: UInt32 = 0
        if case .v6(let v6) = address { scopeID = v6.address.sin6_scope_id }
        self.init(host: host, port: port, scopeID: scopeID)
    }
}

extension SocketAddress {
    init(stored: StoredAddress) throws {
        let address = try SocketAddress(ipAddress: stored.host, port: Int(stored.port))
        guard stored.scopeID != 0, case .v6(let v6) = address else {
            self = address
            return
        }
        var raw = v6.address
        raw.sin6_scope_id = stored.scopeID
        self = SocketAddress(raw, host: v6.host)
    }
}

/// The exchange of a resumption's CASE, opened by the node.
private final class ResumptionExchangeHandler: ExchangeHandler {
    private unowned let node: MatterNode

    init(node: MatterNode) { self.node = node }

    func exchange(_ exchange: ExchangeKey, received message: MatterMessage, manager: ExchangeManager) {
        node.resumption(exchange, received: message, manager: manager)
    }

    func exchange(_ exchange: ExchangeKey, failed error: ExchangeError, manager: ExchangeManager) {
        node.resumptionExchangeFailed(exchange, "\(error)")
    }
}
