// Subscriptions: AsyncSequences where the Home APIs for iOS have Combine publishers. Each stream is a watcher in the
// home's state; ending the consumer's task (or dropping the stream) removes it, and `close()` finishes all of them.
internal import HearthSync

/// `home.devices()`: the whole set of devices, as a snapshot or as streams of changes.
public struct HomeDevicesQuery: Sendable {
    let home: Home

    /// The devices now.
    ///
    /// - Throws: `cancelled` once the home is closed.
    public func list() async throws -> [HomeDevice] {
        let (closed, devices) = home.state.withLock { ($0.closed, $0.devices) }
        if closed { throw HomeError.cancelled("the home was closed") }
        return devices
    }

    /// The whole set now, then again on every change (when the consumer is slower, only the newest set is kept).
    public func batched() -> AsyncStream<[HomeDevice]> {
        let (stream, continuation) = AsyncStream.makeStream(of: [HomeDevice].self, bufferingPolicy: .bufferingNewest(1))
        home.register(.all(continuation)) { s in
            continuation.yield(s.devices)
            return true
        }
        return stream
    }

    /// Each device that changes, from now on (not the devices as they are: ``list()`` gives those).
    public func stream() -> AsyncStream<HomeDevice> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: HomeDevice.self, bufferingPolicy: .bufferingNewest(4096))
        home.register(.changes(continuation))
        return stream
    }
}

extension Home {
    /// Every device of the home: ``HomeDevicesQuery/list()``, ``HomeDevicesQuery/batched()``,
    /// ``HomeDevicesQuery/stream()``.
    public func devices() -> HomeDevicesQuery { HomeDevicesQuery(home: self) }

    /// The device with this id now, then whenever it changes. Fails with `notFound` when the home has no such device
    /// (or when it is removed); finishes when the home is closed or the consumer's task is cancelled.
    public func device(id: String) -> AsyncThrowingStream<HomeDevice, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: HomeDevice.self, throwing: (any Error).self,
                                                                     bufferingPolicy: .bufferingNewest(1))
        let outcome = register(.one(id, continuation)) { s in
            guard let device = s.devices.first(where: { $0.id == id }) else { return false }
            continuation.yield(device)
            return true
        }
        if outcome == .declined { continuation.finish(throwing: HomeError.notFound("no device '\(id)' in the home")) }
        return stream
    }

    /// What the hubs publish, message by message (for tools that show the raw documents, like `hearth watch`): first
    /// what is known now (statuses, summaries, documents), then ``PublishedUpdate/live``, then every change.
    public func updates() -> AsyncStream<PublishedUpdate> {
        let (stream, continuation) = AsyncStream.makeStream(of: PublishedUpdate.self, bufferingPolicy: .unbounded)
        register(.raw(continuation)) { s in
            for hub in s.statusOrder { continuation.yield(.status(hub: hub, status: s.hubs[hub]?.status)) }
            for (hub, record) in s.hubs.sorted(by: { $0.key < $1.key }) {
                if let summary = record.summary { continuation.yield(.summary(hub: hub, summary)) }
                for id in record.documentOrder {
                    if let document = record.documents[id] {
                        continuation.yield(.document(hub: hub, device: id, document))
                    }
                }
            }
            continuation.yield(.live)
            return true
        }
        return stream
    }

    /// The connection to the broker going down and coming back.
    public func connectionChanges() -> AsyncStream<ConnectionChange> {
        let (stream, continuation) = AsyncStream.makeStream(of: ConnectionChange.self, bufferingPolicy: .unbounded)
        let id = state.withLock { s -> Int? in
            guard !s.closed else { return nil }
            s.nextID += 1
            s.connectionWatchers[s.nextID] = continuation
            return s.nextID
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.connectionWatchers.removeValue(forKey: id) }
        }
        return stream
    }

    /// How many streams of this home are running now. A stream's consumer that ends (its task cancelled, the stream
    /// dropped) removes its subscription; this shows it.
    public var subscriptionCount: Int { state.withLock { $0.watchers.count + $0.connectionWatchers.count } }

    /// The device with this id as seen now.
    func current(_ id: String, hub: String?) -> HomeDevice? {
        state.withLock { s in s.devices.first { $0.id == id && (hub == nil || $0.hub == hub) } }
    }

    // MARK: Watchers

    struct Watcher: Sendable {
        enum Kind: Sendable {
            case all(AsyncStream<[HomeDevice]>.Continuation)
            case changes(AsyncStream<HomeDevice>.Continuation)
            case one(String, AsyncThrowingStream<HomeDevice, any Error>.Continuation)
            case raw(AsyncStream<PublishedUpdate>.Continuation)
        }

        let kind: Kind

        var finish: @Sendable () -> Void {
            switch kind {
            case .all(let c): { c.finish() }
            case .changes(let c): { c.finish() }
            case .one(_, let c): { c.finish() }
            case .raw(let c): { c.finish() }
            }
        }

        func raw(_ update: PublishedUpdate) {
            if case .raw(let c) = kind { c.yield(update) }
        }

        /// Yields what changed between `old` and `devices`; returns how to end the stream when it ends here.
        func deliver(_ devices: [HomeDevice], old: [HomeDevice]) -> (@Sendable () -> Void)? {
            switch kind {
            case .all(let c):
                c.yield(devices)
            case .changes(let c):
                var before: [String: HomeDevice] = [:]
                for d in old { before[d.key] = d }
                for d in devices where before[d.key] != d { c.yield(d) }
            case .one(let id, let c):
                let now = devices.first { $0.id == id }
                guard let now else {
                    return { c.finish(throwing: HomeError.notFound("device '\(id)' was removed from the home")) }
                }
                if now != old.first(where: { $0.id == id }) { c.yield(now) }
            case .raw:
                break
            }
            return nil
        }
    }

    enum Registration { case added, declined, closed }

    /// Adds a watcher and gives it its first values under the lock, so no change slips between the two. When
    /// `initial` returns false the watcher is not added (the caller ends the stream); a closed home finishes it.
    @discardableResult
    func register(_ kind: Watcher.Kind, initial: (State) -> Bool = { _ in true }) -> Registration {
        let watcher = Watcher(kind: kind)
        let id = state.withLock { s -> Int in
            s.nextID += 1
            return s.nextID
        }
        switch kind {
        case .all(let c): c.onTermination = { [weak self] _ in self?.unregister(id) }
        case .changes(let c): c.onTermination = { [weak self] _ in self?.unregister(id) }
        case .one(_, let c): c.onTermination = { [weak self] _ in self?.unregister(id) }
        case .raw(let c): c.onTermination = { [weak self] _ in self?.unregister(id) }
        }
        let outcome = state.withLock { s -> Registration in
            guard !s.closed else { return .closed }
            guard initial(s) else { return .declined }
            s.watchers[id] = watcher
            return .added
        }
        if outcome == .closed { watcher.finish() }
        return outcome
    }

    func unregister(_ id: Int) {
        _ = state.withLock { $0.watchers.removeValue(forKey: id) }
    }
}

// MARK: - What the hubs published, as published

extension Home {
    /// The hubs that published a status under the prefix, in the order the statuses arrived.
    public func hubStatuses() -> [HubStatus] {
        state.withLock { s in
            s.statusOrder.compactMap { hub in s.hubs[hub]?.status.map { HubStatus(hub: hub, status: $0) } }
        }
    }

    /// A hub's device summary (`<prefix>/<hub>/devices`), or nil when it has published none.
    public func summary(ofHub hub: String) -> PublishedMessage? { state.withLock { $0.hubs[hub]?.summary } }

    /// A hub's view of the whole home (`<prefix>/<hub>/home`: its devices and every peer's, each with its hub).
    public func homeView(ofHub hub: String) -> PublishedMessage? { state.withLock { $0.hubs[hub]?.homeView } }

    /// A device's document as its hub published it, or nil.
    public func document(ofHub hub: String, device: String) -> PublishedMessage? {
        state.withLock { $0.hubs[hub]?.documents[device] }
    }
}
