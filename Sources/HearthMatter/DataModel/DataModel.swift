// The node's data model: its endpoints, the cluster instances on each, their DataVersions, and the read, write and
// invoke of the Interaction Model against them — path expansion with wildcards, the access check, the global
// attributes and each request's status (a deferred cluster's write or command answers through a completion, after
// every check here). Endpoints can be added and removed while the node runs (a bridge's devices come and go); every
// endpoint gets its Descriptor cluster from here, so PartsList always follows. It also keeps the event log, and tells
// whoever registered a change hook (the node, for subscription reports) of every change.

import HearthSync

/// One endpoint: its device types, the endpoint it belongs to (a bridged device's aggregator), and its clusters.
public struct EndpointDefinition: Sendable {
    public var id: EndpointID
    public var deviceTypes: [DeviceTypeRevision]
    /// The endpoint whose PartsList includes this one besides the root's (nil: only the root's).
    public var parent: EndpointID?
    /// The clusters, without Descriptor (the data model adds it).
    public var clusters: [any ClusterServer]

    public init(id: EndpointID, deviceTypes: [DeviceTypeRevision], parent: EndpointID? = nil,
                clusters: [any ClusterServer]) {
        self.id = id
        self.deviceTypes = deviceTypes
        self.parent = parent
        self.clusters = clusters
    }
}

/// The data model of a node.
public final class DataModel: Sendable {
    private struct Endpoint {
        var definition: EndpointDefinition
        /// In id order, Descriptor included.
        var clusters: [any ClusterServer]
    }

    private struct State {
        var endpoints: [EndpointID: Endpoint] = [:]
        var order: [EndpointID] = []
        var dataVersions: [ConcreteClusterPath: UInt32] = [:]
        /// A DataVersion for a new cluster instance: random at start (§7.10.3), then one past the last given.
        var nextInitialVersion: UInt32
        /// Bumped on every change, so that a subscription can tell whether anything moved.
        var changeCount: UInt64 = 0
        var changed: Set<ConcreteClusterPath> = []
    }

    private let state: Locked<State>
    /// The Access Control List the access check reads (the AccessControl cluster's entries).
    private let acl: @Sendable () -> [ACLEntry]
    private let events: Locked<EventLog>
    private let eventNumbers: EventNumberSource
    /// The node's clock: an event's SystemTimestamp.
    private let now: @Sendable () -> MatterInstant
    private let changeHooks = Locked<[@Sendable () -> Void]>([])

    /// `initialDataVersion` is drawn at random by the node (injected, so tests are repeatable); `eventNumbers` numbers
    /// events (kept across restarts by the node), `now` timestamps them.
    public init(
        initialDataVersion: UInt32, acl: @escaping @Sendable () -> [ACLEntry],
        eventNumbers: EventNumberSource = EventNumberSource(), eventCapacity: EventLogCapacity = EventLogCapacity(),
        now: @escaping @Sendable () -> MatterInstant = { MatterInstant(milliseconds: 0) }
    ) {
        self.state = Locked(State(nextInitialVersion: initialDataVersion))
        self.acl = acl
        self.events = Locked(EventLog(capacity: eventCapacity))
        self.eventNumbers = eventNumbers
        self.now = now
    }

    // MARK: Changes

    /// Calls `hook` after every change a subscription may have to report: an attribute marked changed, an event
    /// emitted, an endpoint added or removed. It is called on the thread that made the change, outside the model's
    /// lock; the node hops to its event loop from it and gathers what is due.
    public func onChange(_ hook: @escaping @Sendable () -> Void) {
        changeHooks.withLock { $0.append(hook) }
    }

    private func changed() {
        for hook in changeHooks.withLock({ $0 }) { hook() }
    }

    // MARK: Endpoints

    /// Adds an endpoint (replacing one with its id), with a Descriptor cluster of its own.
    public func addEndpoint(_ definition: EndpointDefinition) {
        let descriptor = DescriptorCluster(endpoint: definition.id, model: self)
        let clusters = (definition.clusters + [descriptor]).sorted { $0.id < $1.id }
        state.withLock { state in
            if state.endpoints[definition.id] == nil {
                state.order.append(definition.id)
                state.order.sort()
            }
            state.endpoints[definition.id] = Endpoint(definition: definition, clusters: clusters)
            for cluster in clusters {
                let path = ConcreteClusterPath(endpoint: definition.id, cluster: cluster.id)
                if state.dataVersions[path] == nil {
                    state.dataVersions[path] = state.nextInitialVersion
                    state.nextInitialVersion &+= 1
                }
            }
            // PartsList of the root and of the parent changed.
            Self.bump(&state, ConcreteClusterPath(endpoint: 0, cluster: DescriptorCluster.clusterID))
            if let parent = definition.parent {
                Self.bump(&state, ConcreteClusterPath(endpoint: parent, cluster: DescriptorCluster.clusterID))
            }
        }
        changed()
    }

    /// Removes an endpoint and its clusters.
    public func removeEndpoint(_ id: EndpointID) {
        state.withLock { state in
            guard let removed = state.endpoints.removeValue(forKey: id) else { return }
            state.order.removeAll { $0 == id }
            for key in state.dataVersions.keys where key.endpoint == id { state.dataVersions[key] = nil }
            Self.bump(&state, ConcreteClusterPath(endpoint: 0, cluster: DescriptorCluster.clusterID))
            if let parent = removed.definition.parent {
                Self.bump(&state, ConcreteClusterPath(endpoint: parent, cluster: DescriptorCluster.clusterID))
            }
        }
        changed()
    }

    /// The endpoint ids, in order.
    public var endpointIDs: [EndpointID] { state.withLock { $0.order } }

    /// The definition of an endpoint (device types, parent), if present.
    public func endpoint(_ id: EndpointID) -> EndpointDefinition? { state.withLock { $0.endpoints[id]?.definition } }

    /// The cluster server at a path, if present.
    public func cluster(_ path: ConcreteClusterPath) -> (any ClusterServer)? {
        state.withLock { $0.endpoints[path.endpoint]?.clusters.first { $0.id == path.cluster } }
    }

    func clusters(on endpoint: EndpointID) -> [any ClusterServer] {
        state.withLock { $0.endpoints[endpoint]?.clusters ?? [] }
    }

    /// The endpoints whose PartsList includes `endpoint`'s descendants: every other endpoint for the root, the
    /// endpoints below it (at any depth) for another.
    func parts(of endpoint: EndpointID) -> [EndpointID] {
        state.withLock { state in
            if endpoint == 0 { return state.order.filter { $0 != 0 } }
            return state.order.filter { candidate in
                var parent = state.endpoints[candidate]?.definition.parent
                var hops = 0
                while let p = parent, hops < 64 {
                    if p == endpoint { return true }
                    parent = state.endpoints[p]?.definition.parent
                    hops += 1
                }
                return false
            }
        }
    }

    // MARK: DataVersion

    /// The cluster instance's DataVersion.
    public func dataVersion(_ path: ConcreteClusterPath) -> UInt32? { state.withLock { $0.dataVersions[path] } }

    /// Records that an attribute of a cluster instance changed: its DataVersion moves on.
    public func markChanged(_ path: ConcreteClusterPath) {
        state.withLock { Self.bump(&$0, path) }
        changed()
    }

    /// How many changes the model has seen; a subscription compares it with the count at its last report.
    public var changeCount: UInt64 { state.withLock { $0.changeCount } }

    /// The cluster instances changed since the last call (for subscriptions), emptied.
    public func takeChangedClusters() -> Set<ConcreteClusterPath> {
        state.withLock { state in
            defer { state.changed = [] }
            return state.changed
        }
    }

    /// The DataVersion of every cluster instance the paths cover (wildcards expanded over what exists now).
    public func versions(covering paths: [AttributePath]) -> [ConcreteClusterPath: UInt32] {
        state.withLock { state in
            var out: [ConcreteClusterPath: UInt32] = [:]
            for path in paths {
                for endpoint in path.endpoint.map({ [$0] }) ?? state.order {
                    for cluster in state.endpoints[endpoint]?.clusters ?? []
                    where path.cluster == nil || path.cluster == cluster.id {
                        let clusterPath = ConcreteClusterPath(endpoint: endpoint, cluster: cluster.id)
                        out[clusterPath] = state.dataVersions[clusterPath]
                    }
                }
            }
            return out
        }
    }

    private static func bump(_ state: inout State, _ path: ConcreteClusterPath) {
        guard let version = state.dataVersions[path] else { return }
        state.dataVersions[path] = version &+ 1
        state.changeCount &+= 1
        state.changed.insert(path)
    }

    // MARK: Events

    /// Records an event the cluster at `path` emitted, with the next event number and the node's timestamp, for reads
    /// and subscriptions; returns its number. `data` is the event's fields structure. May be called on any thread.
    @discardableResult
    public func emitEvent(_ path: ConcreteEventPath, priority: EventPriority, data: TLVElement) -> UInt64 {
        let timestamp = UInt64(clamping: now().milliseconds)
        let number = events.withLock { log in
            // Numbered under the log's lock, so that the log holds events in number order.
            let number = eventNumbers.take()
            log.append(
                EventRecord(number: number, path: path, priority: priority, systemTimestamp: timestamp, data: data))
            return number
        }
        changed()
        return number
    }

    /// The number the next event will get: a subscription has reported every event below it.
    public var nextEventNumber: UInt64 { events.withLock { _ in eventNumbers.next } }

    /// The events kept from number `minimum` on, in number order (for tests and diagnostics; reads go through
    /// `readEvents`, which checks access).
    public func loggedEvents(from minimum: UInt64 = 0) -> [EventRecord] { events.withLock { $0.events(from: minimum) } }

    /// The reports for a read's event paths: the events kept that a path names, numbered `minimum` or above and below
    /// `limit`, that the subject may read (each event's read privilege), in number order and each once; and a status
    /// for each concrete path to an endpoint, cluster or event that does not exist or that the subject may not read.
    public func readEvents(_ paths: [EventPath], from minimum: UInt64, below limit: UInt64 = .max,
                           context: ReadContext, statuses: Bool = true) -> [EventReportIB] {
        guard !paths.isEmpty else { return [] }
        var reports: [EventReportIB] = []
        if statuses {
            for path in paths {
                guard let concrete = path.concrete else { continue }
                if let error = eventPathError(concrete, subject: context.subject) {
                    reports.append(.status(EventStatusIB(path: path, status: StatusIB(error))))
                }
            }
        }
        var privileges: [ConcreteEventPath: Privilege?] = [:]
        for record in loggedEvents(from: minimum) where record.number < limit {
            guard paths.contains(where: { $0.matches(record.path) }) else { continue }
            let privilege: Privilege? = privileges[record.path] ?? {
                let found = cluster(ConcreteClusterPath(endpoint: record.path.endpoint, cluster: record.path.cluster))?
                    .events.first { $0.id == record.path.event }?.readPrivilege
                privileges[record.path] = .some(found)
                return found
            }()
            // An event of a cluster gone since is not read: nobody can say who may see it.
            guard let privilege else { continue }
            let clusterPath = ConcreteClusterPath(endpoint: record.path.endpoint, cluster: record.path.cluster)
            guard granted(context.subject, privilege, clusterPath) else { continue }
            reports.append(.data(record.dataIB))
        }
        return reports
    }

    /// Why a concrete event path names nothing the subject may read, if it does not.
    private func eventPathError(_ path: ConcreteEventPath, subject: SubjectDescriptor) -> IMError? {
        let clusterPath = ConcreteClusterPath(endpoint: path.endpoint, cluster: path.cluster)
        guard endpoint(path.endpoint) != nil else {
            return IMError(.unsupportedEndpoint, "no endpoint \(path.endpoint)")
        }
        guard let server = cluster(clusterPath) else {
            return IMError(.unsupportedCluster, "no cluster \(clusterPath)")
        }
        guard let definition = server.events.first(where: { $0.id == path.event }) else {
            return IMError(.unsupportedEvent, "no event \(path)")
        }
        guard granted(subject, definition.readPrivilege, clusterPath) else {
            return IMError(.unsupportedAccess, "reading \(path) needs \(definition.readPrivilege)")
        }
        return nil
    }

    // MARK: Access

    private func granted(_ subject: SubjectDescriptor, _ required: Privilege, _ path: ConcreteClusterPath) -> Bool {
        if subject.authMode == .pase { return true }
        let deviceTypes = endpoint(path.endpoint)?.deviceTypes.map(\.deviceType) ?? []
        return accessGranted(to: subject, required: required, on: path, deviceTypes: deviceTypes, acl: acl())
    }

    // MARK: Read

    /// The reports for a read's paths: data for each readable attribute, a status for each concrete path that
    /// fails; wildcards leave out what does not exist or may not be read (§8.4.3.2). Cluster instances whose
    /// DataVersion the client already has (`filters`) are left out.
    public func read(_ paths: [AttributePath], filters: [DataVersionFilter] = [], context: ReadContext)
        -> [AttributeReportIB]
    {
        var reports: [AttributeReportIB] = []
        var filtered: Set<ConcreteClusterPath> = []
        for filter in filters where dataVersion(filter.path) == filter.dataVersion { filtered.insert(filter.path) }
        for path in paths {
            if let concrete = path.concrete {
                if filtered.contains(concrete.clusterPath) { continue }
                reports.append(readConcrete(concrete, context: context))
            } else {
                for concrete in expand(path, subject: context.subject)
                where !filtered.contains(concrete.clusterPath) {
                    if case .data(let data) = readConcrete(concrete, context: context) { reports.append(.data(data)) }
                }
            }
        }
        return reports
    }

    /// The concrete attribute paths a wildcard path names that exist and that the subject may read.
    func expand(_ path: AttributePath, subject: SubjectDescriptor) -> [ConcreteAttributePath] {
        var out: [ConcreteAttributePath] = []
        let endpoints = path.endpoint.map { [$0] } ?? endpointIDs
        for endpoint in endpoints {
            if path.endpoint == nil && endpoint == 0 && path.wildcardFlags & AttributePath.skipRootNode != 0 {
                continue
            }
            for cluster in clusters(on: endpoint) where path.cluster == nil || path.cluster == cluster.id {
                if path.cluster == nil {
                    let flags = path.wildcardFlags
                    if flags & AttributePath.skipDiagnosticsClusters != 0
                        && Self.diagnosticsClusters.contains(cluster.id)
                    {
                        continue
                    }
                    if flags & AttributePath.skipCustomElements != 0 && cluster.id > 0x7FFF { continue }
                }
                let clusterPath = ConcreteClusterPath(endpoint: endpoint, cluster: cluster.id)
                for attribute in cluster.allAttributes where path.attribute == nil || path.attribute == attribute.id {
                    if path.attribute == nil && skipped(attribute, flags: path.wildcardFlags) { continue }
                    guard granted(subject, attribute.readPrivilege, clusterPath) else { continue }
                    out.append(ConcreteAttributePath(endpoint: endpoint, cluster: cluster.id, attribute: attribute.id))
                }
            }
        }
        return out
    }

    private static let diagnosticsClusters: Set<ClusterID> = [0x0032, 0x0033, 0x0034, 0x0035, 0x0036, 0x0037]

    private func skipped(_ attribute: AttributeDefinition, flags: UInt32) -> Bool {
        if flags == 0 { return false }
        let isGlobal = attribute.id >= 0xF000
        if flags & AttributePath.skipGlobalAttributes != 0 && isGlobal { return true }
        if flags & AttributePath.skipAttributeList != 0 && attribute.id == GlobalAttribute.attributeList { return true }
        if flags & AttributePath.skipCommandLists != 0
            && (attribute.id == GlobalAttribute.acceptedCommandList
                || attribute.id == GlobalAttribute.generatedCommandList)
        {
            return true
        }
        if flags & AttributePath.skipFixedAttributes != 0 && attribute.qualities.contains(.fixed) { return true }
        if flags & AttributePath.skipCustomElements != 0 && !isGlobal && attribute.id > 0x7FFF { return true }
        return false
    }

    /// One attribute's report: its data with the DataVersion, or the status saying why not.
    func readConcrete(_ path: ConcreteAttributePath, context: ReadContext) -> AttributeReportIB {
        func status(_ error: IMError) -> AttributeReportIB {
            .status(AttributeStatusIB(path: AttributePath(path), status: StatusIB(error)))
        }
        let clusterPath = path.clusterPath
        let server = cluster(clusterPath)
        let definition = server?.attributeDefinition(path.attribute)
        guard granted(context.subject, definition?.readPrivilege ?? .view, clusterPath) else {
            return status(IMError(.unsupportedAccess, "reading \(path) needs \(definition?.readPrivilege ?? .view)"))
        }
        guard endpoint(path.endpoint) != nil else {
            return status(IMError(.unsupportedEndpoint, "no endpoint \(path.endpoint)"))
        }
        guard let server else { return status(IMError(.unsupportedCluster, "no cluster \(clusterPath)")) }
        guard definition != nil else { return status(IMError(.unsupportedAttribute, "no attribute \(path)")) }
        do {
            let value = try readValue(server, path.attribute, context: context)
            return .data(AttributeDataIB(dataVersion: dataVersion(clusterPath), path: AttributePath(path), data: value))
        } catch {
            return status(error)
        }
    }

    private func readValue(_ server: any ClusterServer, _ attribute: AttributeID, context: ReadContext) throws(IMError)
        -> TLVValue
    {
        switch attribute {
        case GlobalAttribute.clusterRevision: return .uint(server.revision)
        case GlobalAttribute.featureMap: return .uint(server.featureMap)
        case GlobalAttribute.attributeList:
            return .array(server.allAttributes.map(\.id).sorted().map { TLVElement(.uint($0)) })
        case GlobalAttribute.acceptedCommandList:
            return .array(server.acceptedCommands.map { TLVElement(.uint($0.id)) })
        case GlobalAttribute.generatedCommandList:
            return .array(server.generatedCommands.map { TLVElement(.uint($0)) })
        default: return try server.read(attribute, context: context)
        }
    }

    // MARK: Write

    /// Writes one attribute (a whole list for a list attribute) and answers its status through `completion`: at once
    /// for a synchronous cluster, when the cluster finishes for a `DeferredClusterServer` (on whichever thread it
    /// finishes on). Nothing changes on refusal. Every check of the Interaction Model — access, existence,
    /// writability, timing, DataVersion — is done here first; a deferred cluster marks its change itself when the
    /// value moves.
    public func write(_ path: ConcreteAttributePath, value: TLVValue, dataVersion: UInt32?, context: ActionContext,
                      completion: @escaping @Sendable (StatusIB) -> Void) {
        let clusterPath = path.clusterPath
        let server: any ClusterServer
        do throws(IMError) {
            server = try checkWrite(path, value: value, dataVersion: dataVersion, context: context)
        } catch {
            completion(StatusIB(error))
            return
        }
        if let deferred = server as? any DeferredClusterServer {
            deferred.write(path.attribute, value: value, context: context) { error in
                completion(error.map(StatusIB.init) ?? .success)
            }
            return
        }
        do throws(IMError) {
            try server.write(path.attribute, value: value, context: context)
            markChanged(clusterPath)
            completion(.success)
        } catch {
            completion(StatusIB(error))
        }
    }

    private func checkWrite(_ path: ConcreteAttributePath, value: TLVValue, dataVersion: UInt32?,
                            context: ActionContext) throws(IMError) -> any ClusterServer {
        let clusterPath = path.clusterPath
        let server = cluster(clusterPath)
        let definition = server?.attributeDefinition(path.attribute)
        let required = definition?.writePrivilege ?? .operate
        guard granted(context.subject, required, clusterPath) else {
            throw IMError(.unsupportedAccess, "writing \(path) needs \(required)")
        }
        guard endpoint(path.endpoint) != nil else {
            throw IMError(.unsupportedEndpoint, "no endpoint \(path.endpoint)")
        }
        guard let server else { throw IMError(.unsupportedCluster, "no cluster \(clusterPath)") }
        guard let definition else { throw IMError(.unsupportedAttribute, "no attribute \(path)") }
        guard definition.isWritable else { throw IMError(.unsupportedWrite, "\(definition.name) is read-only") }
        if definition.qualities.contains(.timedWrite) && !context.isTimed {
            throw IMError(.needsTimedInteraction, "\(definition.name) is written only in a timed interaction")
        }
        if let dataVersion, dataVersion != self.dataVersion(clusterPath) {
            throw IMError(.dataVersionMismatch, "\(clusterPath) is no longer at DataVersion \(dataVersion)")
        }
        if definition.isList, case .array = value {} else if definition.isList {
            throw IMError(.invalidDataType, "\(definition.name) is a list; the write is a \(value.typeName)")
        }
        return server
    }

    // MARK: Invoke

    /// Runs one command at a concrete path and answers through `completion`: at once for a synchronous cluster, when
    /// the cluster finishes for a `DeferredClusterServer` (on whichever thread it finishes on). Access, existence and
    /// timing are checked here first.
    public func invoke(_ path: CommandPath, fields: TLVElement?, context: ActionContext,
                       completion: @escaping @Sendable (Result<CommandResult, IMError>) -> Void) {
        let server: any ClusterServer
        do throws(IMError) {
            server = try checkInvoke(path, context: context)
        } catch {
            completion(.failure(error))
            return
        }
        if let deferred = server as? any DeferredClusterServer {
            deferred.invoke(path.command, fields: fields, context: context, completion: completion)
            return
        }
        do throws(IMError) {
            completion(.success(try server.invoke(path.command, fields: fields, context: context)))
        } catch {
            completion(.failure(error))
        }
    }

    private func checkInvoke(_ path: CommandPath, context: ActionContext) throws(IMError) -> any ClusterServer {
        guard let endpointID = path.endpoint else {
            throw IMError(.invalidAction, "a command path needs an endpoint outside a group")
        }
        let clusterPath = ConcreteClusterPath(endpoint: endpointID, cluster: path.cluster)
        let server = cluster(clusterPath)
        let definition = server?.acceptedCommands.first { $0.id == path.command }
        let required = definition?.privilege ?? .operate
        guard granted(context.subject, required, clusterPath) else {
            throw IMError(.unsupportedAccess, "invoking \(path) needs \(required)")
        }
        guard endpoint(endpointID) != nil else { throw IMError(.unsupportedEndpoint, "no endpoint \(endpointID)") }
        guard let server else { throw IMError(.unsupportedCluster, "no cluster \(clusterPath)") }
        guard let definition else { throw IMError(.unsupportedCommand, "no command \(path)") }
        if definition.requiresTimedInvoke && !context.isTimed {
            throw IMError(.needsTimedInteraction, "\(definition.name) is invoked only in a timed interaction")
        }
        return server
    }
}
