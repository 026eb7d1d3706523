// The subscriptions a node keeps across a restart (subscription resumption, core specification 8.5.x as of Matter
// 1.3): for each, what the subscriber asked for, the id it knows it by and where the subscriber was last reached, in
// the node's storage as one Matter TLV value written atomically. At start the node reaches each subscriber again
// (CASE as the initiator) and sends a priming report under the same id; `SubscriptionResumptionBackoff` says how long
// it waits between attempts.

import HearthSync

extension StorageKey {
    /// The subscriptions to resume after a restart.
    public static let subscriptions = StorageKey(rawValue: "matter-subscriptions")
}

/// A subscription as stored: enough to resume it after a restart.
public struct PersistedSubscription: Sendable, Equatable {
    public var id: UInt32
    public var fabricIndex: FabricIndex
    public var subscriberNodeID: NodeID
    public var cats: [UInt32]
    public var paths: [AttributePath]
    public var eventPaths: [EventPath]
    public var isFabricFiltered: Bool
    public var minIntervalSeconds: UInt16
    public var maxIntervalSeconds: UInt16
    /// The subscriber's last address (an IPv4 or IPv6 literal), UDP port and, for a link-local IPv6 address, the
    /// interface's scope id (0: none).
    public var peerHost: String
    public var peerPort: UInt16
    public var peerScopeID: UInt32

    public init(id: UInt32, fabricIndex: FabricIndex, subscriberNodeID: NodeID, cats: [UInt32], paths: [AttributePath],
                eventPaths: [EventPath], isFabricFiltered: Bool, minIntervalSeconds: UInt16, maxIntervalSeconds: UInt16,
                peerHost: String, peerPort: UInt16, peerScopeID: UInt32 = 0) {
        self.id = id
        self.fabricIndex = fabricIndex
        self.subscriberNodeID = subscriberNodeID
        self.cats = cats
        self.paths = paths
        self.eventPaths = eventPaths
        self.isFabricFiltered = isFabricFiltered
        self.minIntervalSeconds = minIntervalSeconds
        self.maxIntervalSeconds = maxIntervalSeconds
        self.peerHost = peerHost
        self.peerPort = peerPort
        self.peerScopeID = peerScopeID
    }

    /// The stored form of an accepted subscription, with where its subscriber was reached.
    public init(_ record: SubscriptionRecord, peerHost: String, peerPort: UInt16, peerScopeID: UInt32) {
        self.init(id: record.id, fabricIndex: record.subject.fabricIndex, subscriberNodeID: record.subject.subject,
                  cats: record.subject.cats, paths: record.paths, eventPaths: record.eventPaths,
                  isFabricFiltered: record.isFabricFiltered, minIntervalSeconds: record.minIntervalSeconds,
                  maxIntervalSeconds: record.maxIntervalSeconds, peerHost: peerHost, peerPort: peerPort,
                  peerScopeID: peerScopeID)
    }

    /// The subscriber as the Interaction Model checks its access.
    public var subject: SubjectDescriptor {
        .caseSession(fabricIndex: fabricIndex, node: subscriberNodeID, cats: cats)
    }

    func encoded() -> TLVElement {
        TLVElement.structure {
            TLVElement(context: 0, .uint(id))
            TLVElement(context: 1, .uint(fabricIndex))
            TLVElement(context: 2, .uint(subscriberNodeID))
            TLVElement.array(tag: .context(3)) { cats.map { TLVElement(.uint($0)) } }
            TLVElement.array(tag: .context(4)) { paths.map { $0.encoded() } }
            TLVElement.array(tag: .context(5)) { eventPaths.map { $0.encoded() } }
            TLVElement(context: 6, .bool(isFabricFiltered))
            TLVElement(context: 7, .uint(minIntervalSeconds))
            TLVElement(context: 8, .uint(maxIntervalSeconds))
            TLVElement(context: 9, .utf8(peerHost))
            TLVElement(context: 10, .uint(peerPort))
            if peerScopeID != 0 { TLVElement(context: 11, .uint(peerScopeID)) }
        }
    }

    init(decoding element: TLVElement) throws(StorageError) {
        func fail(_ what: String) -> StorageError { StorageError(key: .subscriptions, what) }
        let pathElements: [TLVElement], eventPathElements: [TLVElement]
        do throws(TLVFieldError) {
            id = try element.field(0).unsigned()
            fabricIndex = try element.field(1).unsigned()
            subscriberNodeID = try element.field(2).unsigned()
            cats = try element.field(3).array().map { e throws(TLVFieldError) in try e.unsigned() }
            pathElements = try element.field(4).array()
            eventPathElements = try element.field(5).array()
            isFabricFiltered = try element.field(6).bool()
            minIntervalSeconds = try element.field(7).unsigned()
            maxIntervalSeconds = try element.field(8).unsigned()
            peerHost = try element.field(9).string()
            peerPort = try element.field(10).unsigned()
            peerScopeID = try element.optionalField(11)?.unsigned() ?? 0
        } catch {
            throw fail("a stored subscription: \(error)")
        }
        do throws(IMError) {
            paths = try pathElements.map { e throws(IMError) in try AttributePath(decoding: e) }
            eventPaths = try eventPathElements.map { e throws(IMError) in try EventPath(decoding: e) }
        } catch {
            throw fail("a stored subscription's paths: \(error)")
        }
        guard fabricIndex != 0, subscriberNodeID != 0, maxIntervalSeconds >= minIntervalSeconds else {
            throw fail(
                "a stored subscription has fabric \(fabricIndex), node \(subscriberNodeID), intervals "
                    + "\(minIntervalSeconds)–\(maxIntervalSeconds)")
        }
    }

    /// The stored list's bytes.
    public static func encode(_ subscriptions: [PersistedSubscription]) -> [UInt8] {
        TLVElement.array { subscriptions.map { $0.encoded() } }.encoded()
    }

    /// Reads the stored list; a malformed value is an error naming what is wrong (never a partial list).
    public static func decode(_ bytes: [UInt8]) throws(StorageError) -> [PersistedSubscription] {
        let element: TLVElement
        do { element = try TLVElement(decoding: bytes) } catch {
            throw StorageError(key: .subscriptions, "not TLV: \(error)")
        }
        let items: [TLVElement]
        do { items = try element.array() } catch { throw StorageError(key: .subscriptions, "not an array: \(error)") }
        var seen = Set<UInt32>()
        var result: [PersistedSubscription] = []
        for item in items {
            let subscription = try PersistedSubscription(decoding: item)
            guard seen.insert(subscription.id).inserted else {
                throw StorageError(key: .subscriptions, "subscription id \(subscription.id) is stored twice")
            }
            result.append(subscription)
        }
        return result
    }
}

/// How long the node waits before its next attempt to resume a subscription whose subscriber did not answer: doubling
/// from `first` up to `ceiling`, so that a subscriber that is away briefly is reached soon and one that is gone costs
/// little. Pure, so that the schedule is checked without a clock.
public struct SubscriptionResumptionBackoff: Sendable, Equatable {
    public var first: Int64
    public var ceiling: Int64

    public init(first: Int64 = 2_000, ceiling: Int64 = 300_000) {
        self.first = first
        self.ceiling = ceiling
    }

    /// The wait (ms) after `failures` failed attempts (1 after the first).
    public func delay(afterFailures failures: Int) -> Int64 {
        guard failures > 0 else { return 0 }
        var delay = first
        for _ in 1..<failures {
            delay *= 2
            if delay >= ceiling { return ceiling }
        }
        return min(delay, ceiling)
    }
}

/// The node's stored subscriptions: those it is resuming and those it serves, written when they change.
public final class SubscriptionStore: Sendable {
    private let storage: any NodeStorage
    private let written = Locked<[UInt8]?>(nil)

    public init(storage: any NodeStorage) { self.storage = storage }

    /// The subscriptions stored by the last run.
    public func load() throws(StorageError) -> [PersistedSubscription] {
        guard let bytes = try storage.load(.subscriptions) else { return [] }
        written.withLock { $0 = bytes }
        return try PersistedSubscription.decode(bytes)
    }

    /// Stores `subscriptions` unless they are what is stored already.
    public func save(_ subscriptions: [PersistedSubscription]) throws(StorageError) {
        let bytes = PersistedSubscription.encode(subscriptions.sorted { $0.id < $1.id })
        guard written.withLock({ $0 }) != bytes else { return }
        try storage.store(.subscriptions, bytes)
        written.withLock { $0 = bytes }
    }
}
