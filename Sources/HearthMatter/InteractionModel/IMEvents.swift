// The Interaction Model's event blocks (Matter 1.4 §10.6.8–§10.6.10, §10.6.12): the paths a read or subscription
// names events with (wildcards, the urgent flag), the filter that says which event numbers the client has already
// seen, and the reports that carry an event or a path's status. Decoded as strictly as the other blocks: a wrong
// type, a repeated member or a non-context tag is INVALID_ACTION.

/// `EventPathIB`: an event path in which endpoint, cluster and event may each be a wildcard (nil).
public struct EventPath: Hashable, Sendable, CustomStringConvertible {
    public var node: NodeID?
    public var endpoint: EndpointID?
    public var cluster: ClusterID?
    public var event: EventID?
    /// An urgent event is reported without waiting for the subscription's minimum interval.
    public var isUrgent: Bool

    public init(node: NodeID? = nil, endpoint: EndpointID? = nil, cluster: ClusterID? = nil, event: EventID? = nil,
                isUrgent: Bool = false) {
        self.node = node
        self.endpoint = endpoint
        self.cluster = cluster
        self.event = event
        self.isUrgent = isUrgent
    }

    public init(_ concrete: ConcreteEventPath) {
        self.init(endpoint: concrete.endpoint, cluster: concrete.cluster, event: concrete.event)
    }

    /// The concrete path, when nothing is a wildcard.
    public var concrete: ConcreteEventPath? {
        guard let endpoint, let cluster, let event else { return nil }
        return ConcreteEventPath(endpoint: endpoint, cluster: cluster, event: event)
    }

    /// Whether the path names the event at `path`.
    public func matches(_ path: ConcreteEventPath) -> Bool {
        (endpoint == nil || endpoint == path.endpoint) && (cluster == nil || cluster == path.cluster)
            && (event == nil || event == path.event)
    }

    public func encoded(tag: TLVTag = .anonymous) -> TLVElement {
        .list(tag: tag) {
            if let node { TLVElement(context: 0, .uint(node)) }
            if let endpoint { TLVElement(context: 1, .uint(endpoint)) }
            if let cluster { TLVElement(context: 2, .uint(cluster)) }
            if let event { TLVElement(context: 3, .uint(event)) }
            if isUrgent { TLVElement(context: 4, .bool(true)) }
        }
    }

    public init(decoding element: TLVElement) throws(IMError) {
        let what = "EventPathIB"
        guard let members = element.listMembers else {
            throw .malformed("\(what) is a \(element.value.typeName), not a list")
        }
        try checkMembers(members, in: what)
        let decoded = try tlv(what) { () throws(TLVFieldError) in
            (node: try element.optionalField(0)?.unsigned(NodeID.self),
             endpoint: try element.optionalField(1)?.unsigned(EndpointID.self),
             cluster: try element.optionalField(2)?.unsigned(ClusterID.self),
             event: try element.optionalField(3)?.unsigned(EventID.self),
             isUrgent: try element.optionalField(4)?.bool() ?? false)
        }
        if decoded.cluster == nil && decoded.event != nil {
            throw .malformed("\(what) names an event without its cluster")
        }
        self.init(node: decoded.node, endpoint: decoded.endpoint, cluster: decoded.cluster, event: decoded.event,
                  isUrgent: decoded.isUrgent)
    }

    public var description: String {
        func part(_ v: (some BinaryInteger)?) -> String { v.map { "0x" + String($0, radix: 16) } ?? "*" }
        return "\(endpoint.map(String.init) ?? "*")/\(part(cluster))/event \(part(event))\(isUrgent ? " (urgent)" : "")"
    }
}

/// `EventFilterIB`: the client has seen the events numbered below `eventMin` (of `node`, when it names one).
public struct EventFilter: Hashable, Sendable {
    public var node: NodeID?
    public var eventMin: UInt64

    public init(node: NodeID? = nil, eventMin: UInt64) {
        self.node = node
        self.eventMin = eventMin
    }

    public func encoded() -> TLVElement {
        .structure {
            if let node { TLVElement(context: 0, .uint(node)) }
            TLVElement(context: 1, .uint(eventMin))
        }
    }

    public init(decoding element: TLVElement) throws(IMError) {
        let what = "EventFilterIB"
        try requireStructure(element, what)
        (node, eventMin) = try tlv(what) { () throws(TLVFieldError) in
            (try element.optionalField(0)?.unsigned(NodeID.self), try element.field(1).unsigned(UInt64.self))
        }
    }
}

/// `EventDataIB`: one event, with its number, priority, timestamp and fields.
public struct EventDataIB: Equatable, Sendable {
    public var path: ConcreteEventPath
    public var eventNumber: UInt64
    public var priority: EventPriority
    /// Milliseconds since the Unix epoch, when the node knows the time.
    public var epochTimestamp: UInt64?
    /// Milliseconds since the node's boot (when there is no epoch timestamp).
    public var systemTimestamp: UInt64?
    public var data: TLVValue

    public init(path: ConcreteEventPath, eventNumber: UInt64, priority: EventPriority, epochTimestamp: UInt64? = nil,
                systemTimestamp: UInt64?, data: TLVValue) {
        self.path = path
        self.eventNumber = eventNumber
        self.priority = priority
        self.epochTimestamp = epochTimestamp
        self.systemTimestamp = systemTimestamp
        self.data = data
    }

    public func encoded(tag: TLVTag = .anonymous) -> TLVElement {
        .structure(tag: tag) {
            EventPath(path).encoded(tag: .context(0))
            TLVElement(context: 1, .uint(eventNumber))
            TLVElement(context: 2, .uint(priority.rawValue))
            if let epochTimestamp { TLVElement(context: 3, .uint(epochTimestamp)) }
            if let systemTimestamp { TLVElement(context: 4, .uint(systemTimestamp)) }
            TLVElement(context: 7, data)
        }
    }

    public init(decoding element: TLVElement) throws(IMError) {
        let what = "EventDataIB"
        try requireStructure(element, what)
        let eventPath = try EventPath(decoding: try tlv(what) { () throws(TLVFieldError) in try element.field(0) })
        guard let concrete = eventPath.concrete else { throw .malformed("\(what) path \(eventPath) is not concrete") }
        path = concrete
        let decoded = try tlv(what) { () throws(TLVFieldError) in
            (number: try element.field(1).unsigned(UInt64.self), priority: try element.field(2).unsigned(UInt8.self),
             epoch: try element.optionalField(3)?.unsigned(UInt64.self),
             system: try element.optionalField(4)?.unsigned(UInt64.self), data: try element.field(7).value)
        }
        guard let priority = EventPriority(rawValue: decoded.priority) else {
            throw .malformed("\(what) priority \(decoded.priority) is not a priority")
        }
        eventNumber = decoded.number
        self.priority = priority
        epochTimestamp = decoded.epoch
        systemTimestamp = decoded.system
        data = decoded.data
    }
}

/// `EventStatusIB`: why an event path has no events.
public struct EventStatusIB: Equatable, Sendable {
    public var path: EventPath
    public var status: StatusIB

    public init(path: EventPath, status: StatusIB) {
        self.path = path
        self.status = status
    }

    public func encoded(tag: TLVTag = .anonymous) -> TLVElement {
        .structure(tag: tag) {
            path.encoded(tag: .context(0))
            status.encoded(tag: .context(1))
        }
    }

    public init(decoding element: TLVElement) throws(IMError) {
        let what = "EventStatusIB"
        try requireStructure(element, what)
        path = try EventPath(decoding: try tlv(what) { () throws(TLVFieldError) in try element.field(0) })
        status = try StatusIB(decoding: try tlv(what) { () throws(TLVFieldError) in try element.field(1) })
    }
}

/// `EventReportIB`: either an event or a path's status.
public enum EventReportIB: Equatable, Sendable {
    case status(EventStatusIB)
    case data(EventDataIB)

    public func encoded() -> TLVElement {
        .structure {
            switch self {
            case .status(let status): status.encoded(tag: .context(0))
            case .data(let data): data.encoded(tag: .context(1))
            }
        }
    }

    public init(decoding element: TLVElement) throws(IMError) {
        let what = "EventReportIB"
        try requireStructure(element, what)
        switch (element[context: 0], element[context: 1]) {
        case (let status?, nil): self = .status(try EventStatusIB(decoding: status))
        case (nil, let data?): self = .data(try EventDataIB(decoding: data))
        default: throw .malformed("\(what) must hold exactly one of EventStatus and EventData")
        }
    }
}
