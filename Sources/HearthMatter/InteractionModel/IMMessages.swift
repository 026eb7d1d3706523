// The Interaction Model's messages and information blocks (Matter 1.4 §10.6, §10.7) as value types that encode to,
// and strictly decode from, TLV with the specification's context tags. Anything that does not have the shape of its
// kind — a wrong type, a missing mandatory member, a non-context tag, a repeated member — is refused with
// INVALID_ACTION, before any of it reaches the data model. Unknown context tags are ignored, as the specification asks.

/// The `InteractionModelRevision` member every message carries.
private let revisionTag: UInt8 = 0xFF

/// Decodes a message's bytes as the anonymous TLV structure every Interaction Model message is.
func decodeMessageStructure(_ bytes: some Collection<UInt8>, _ what: String) throws(IMError) -> TLVElement {
    let element: TLVElement
    do { element = try TLVElement(decoding: bytes) } catch { throw .malformed("\(what) is not TLV: \(error)") }
    try requireStructure(element, what)
    return element
}

func requireStructure(_ element: TLVElement, _ what: String) throws(IMError) {
    guard let members = element.structureMembers else {
        throw .malformed("\(what) is a \(element.value.typeName), not a structure")
    }
    try checkMembers(members, in: what)
}

/// The members of a TLV array member `tag` of `element`, each decoded by `decode`; nil when the member is absent.
func decodeArray<T>(_ element: TLVElement, _ tag: UInt8, _ what: String,
                    _ decode: (TLVElement) throws(IMError) -> T) throws(IMError) -> [T]? {
    guard let member = element[context: tag] else { return nil }
    guard let items = member.arrayMembers else {
        throw .malformed("\(what) member \(tag) is a \(member.value.typeName), not an array")
    }
    var out: [T] = []
    out.reserveCapacity(items.count)
    for item in items {
        guard item.tag == .anonymous else { throw .malformed("\(what) member \(tag) has a tagged item") }
        out.append(try decode(item))
    }
    return out
}

func optionalBool(_ element: TLVElement, _ tag: UInt8, _ what: String) throws(IMError) -> Bool? {
    try tlv(what) { () throws(TLVFieldError) in try element.optionalField(tag)?.bool() }
}

func requiredBool(_ element: TLVElement, _ tag: UInt8, _ what: String) throws(IMError) -> Bool {
    try tlv(what) { () throws(TLVFieldError) in try element.field(tag).bool() }
}

extension TLVElement {
    /// The message's structure with its members and the revision member.
    static func message(@TLVMembersBuilder _ members: () -> [TLVElement]) -> TLVElement {
        TLVElement(.structure(members() + [TLVElement(context: revisionTag, .uint(interactionModelRevision))]))
    }
}

// MARK: - Information blocks

/// `StatusIB`: a status and, for a cluster's own failures, its cluster status.
public struct StatusIB: Hashable, Sendable {
    public var status: IMStatusCode
    public var clusterStatus: UInt8?

    public init(_ status: IMStatusCode, clusterStatus: UInt8? = nil) {
        self.status = status
        self.clusterStatus = clusterStatus
    }

    public init(_ error: IMError) { self.init(error.status, clusterStatus: error.clusterStatus) }

    public static let success = StatusIB(.success)

    public func encoded(tag: TLVTag) -> TLVElement {
        .structure(tag: tag) {
            TLVElement(context: 0, .uint(status.rawValue))
            if let clusterStatus { TLVElement(context: 1, .uint(clusterStatus)) }
        }
    }

    public init(decoding element: TLVElement) throws(IMError) {
        let what = "StatusIB"
        try requireStructure(element, what)
        (status, clusterStatus) = try tlv(what) { () throws(TLVFieldError) in
            (IMStatusCode(rawValue: try element.field(0).unsigned(UInt8.self)),
             try element.optionalField(1)?.unsigned(UInt8.self))
        }
    }
}

/// `AttributeDataIB`: an attribute's value at a path, with the cluster's DataVersion.
public struct AttributeDataIB: Equatable, Sendable {
    public var dataVersion: UInt32?
    public var path: AttributePath
    public var data: TLVValue

    public init(dataVersion: UInt32?, path: AttributePath, data: TLVValue) {
        self.dataVersion = dataVersion
        self.path = path
        self.data = data
    }

    public func encoded(tag: TLVTag = .anonymous) -> TLVElement {
        .structure(tag: tag) {
            if let dataVersion { TLVElement(context: 0, .uint(dataVersion)) }
            path.encoded(tag: .context(1))
            TLVElement(context: 2, data)
        }
    }

    public init(decoding element: TLVElement) throws(IMError) {
        let what = "AttributeDataIB"
        try requireStructure(element, what)
        dataVersion = try tlv(what) { () throws(TLVFieldError) in try element.optionalField(0)?.unsigned(UInt32.self) }
        path = try AttributePath(decoding: try tlv(what) { () throws(TLVFieldError) in try element.field(1) })
        data = try tlv(what) { () throws(TLVFieldError) in try element.field(2) }.value
    }
}

/// `AttributeStatusIB`: the status of an attribute path.
public struct AttributeStatusIB: Equatable, Sendable {
    public var path: AttributePath
    public var status: StatusIB

    public init(path: AttributePath, status: StatusIB) {
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
        let what = "AttributeStatusIB"
        try requireStructure(element, what)
        path = try AttributePath(decoding: try tlv(what) { () throws(TLVFieldError) in try element.field(0) })
        status = try StatusIB(decoding: try tlv(what) { () throws(TLVFieldError) in try element.field(1) })
    }
}

/// `AttributeReportIB`: either an attribute's data or its status.
public enum AttributeReportIB: Equatable, Sendable {
    case data(AttributeDataIB)
    case status(AttributeStatusIB)

    public func encoded() -> TLVElement {
        .structure {
            switch self {
            case .status(let status): status.encoded(tag: .context(0))
            case .data(let data): data.encoded(tag: .context(1))
            }
        }
    }

    public init(decoding element: TLVElement) throws(IMError) {
        let what = "AttributeReportIB"
        try requireStructure(element, what)
        switch (element[context: 0], element[context: 1]) {
        case (let status?, nil): self = .status(try AttributeStatusIB(decoding: status))
        case (nil, let data?): self = .data(try AttributeDataIB(decoding: data))
        default: throw .malformed("\(what) must hold exactly one of AttributeStatus and AttributeData")
        }
    }
}

/// `DataVersionFilterIB`: the DataVersion a client already has for a cluster instance.
public struct DataVersionFilter: Hashable, Sendable {
    public var path: ConcreteClusterPath
    public var dataVersion: UInt32

    public init(path: ConcreteClusterPath, dataVersion: UInt32) {
        self.path = path
        self.dataVersion = dataVersion
    }

    public func encoded() -> TLVElement {
        .structure {
            ClusterPathIB(endpoint: path.endpoint, cluster: path.cluster).encoded(tag: .context(0))
            TLVElement(context: 1, .uint(dataVersion))
        }
    }

    public init(decoding element: TLVElement) throws(IMError) {
        let what = "DataVersionFilterIB"
        try requireStructure(element, what)
        let cluster = try ClusterPathIB(decoding: try tlv(what) { () throws(TLVFieldError) in try element.field(0) })
        path = ConcreteClusterPath(endpoint: cluster.endpoint, cluster: cluster.cluster)
        dataVersion = try tlv(what) { () throws(TLVFieldError) in try element.field(1).unsigned(UInt32.self) }
    }
}

/// `CommandDataIB`: a command (request or response) with its fields.
public struct CommandDataIB: Equatable, Sendable {
    public var path: CommandPath
    /// The command's fields: a TLV structure (members with context tags), absent for a command without fields.
    public var fields: TLVElement?
    /// `CommandRef`, which pairs responses with requests in a batch invoke.
    public var commandRef: UInt16?

    public init(path: CommandPath, fields: TLVElement? = nil, commandRef: UInt16? = nil) {
        self.path = path
        self.fields = fields
        self.commandRef = commandRef
    }

    public func encoded(tag: TLVTag = .anonymous) -> TLVElement {
        .structure(tag: tag) {
            path.encoded(tag: .context(0))
            if let fields { TLVElement(context: 1, fields.value) }
            if let commandRef { TLVElement(context: 2, .uint(commandRef)) }
        }
    }

    public init(decoding element: TLVElement) throws(IMError) {
        let what = "CommandDataIB"
        try requireStructure(element, what)
        path = try CommandPath(decoding: try tlv(what) { () throws(TLVFieldError) in try element.field(0) })
        if let fields = element[context: 1] {
            guard fields.structureMembers != nil else {
                throw .malformed("\(what) CommandFields is a \(fields.value.typeName), not a structure")
            }
            self.fields = TLVElement(fields.value)
        }
        commandRef = try tlv(what) { () throws(TLVFieldError) in try element.optionalField(2)?.unsigned(UInt16.self) }
    }
}

/// `CommandStatusIB`: the status of a command path.
public struct CommandStatusIB: Equatable, Sendable {
    public var path: CommandPath
    public var status: StatusIB
    public var commandRef: UInt16?

    public init(path: CommandPath, status: StatusIB, commandRef: UInt16? = nil) {
        self.path = path
        self.status = status
        self.commandRef = commandRef
    }

    public func encoded(tag: TLVTag = .anonymous) -> TLVElement {
        .structure(tag: tag) {
            path.encoded(tag: .context(0))
            status.encoded(tag: .context(1))
            if let commandRef { TLVElement(context: 2, .uint(commandRef)) }
        }
    }

    public init(decoding element: TLVElement) throws(IMError) {
        let what = "CommandStatusIB"
        try requireStructure(element, what)
        path = try CommandPath(decoding: try tlv(what) { () throws(TLVFieldError) in try element.field(0) })
        status = try StatusIB(decoding: try tlv(what) { () throws(TLVFieldError) in try element.field(1) })
        commandRef = try tlv(what) { () throws(TLVFieldError) in try element.optionalField(2)?.unsigned(UInt16.self) }
    }
}

/// `InvokeResponseIB`: a command's response data or its status.
public enum InvokeResponseIB: Equatable, Sendable {
    case command(CommandDataIB)
    case status(CommandStatusIB)

    public func encoded() -> TLVElement {
        .structure {
            switch self {
            case .command(let data): data.encoded(tag: .context(0))
            case .status(let status): status.encoded(tag: .context(1))
            }
        }
    }

    public init(decoding element: TLVElement) throws(IMError) {
        let what = "InvokeResponseIB"
        try requireStructure(element, what)
        switch (element[context: 0], element[context: 1]) {
        case (let command?, nil): self = .command(try CommandDataIB(decoding: command))
        case (nil, let status?): self = .status(try CommandStatusIB(decoding: status))
        default: throw .malformed("\(what) must hold exactly one of Command and Status")
        }
    }
}

// MARK: - Messages

/// Read Request (opcode 0x02).
public struct ReadRequest: Equatable, Sendable {
    public var attributeRequests: [AttributePath]
    public var eventRequests: [EventPath]
    public var eventFilters: [EventFilter]
    public var isFabricFiltered: Bool
    public var dataVersionFilters: [DataVersionFilter]

    public init(attributeRequests: [AttributePath], eventRequests: [EventPath] = [], eventFilters: [EventFilter] = [],
                isFabricFiltered: Bool = true, dataVersionFilters: [DataVersionFilter] = []) {
        self.attributeRequests = attributeRequests
        self.eventRequests = eventRequests
        self.eventFilters = eventFilters
        self.isFabricFiltered = isFabricFiltered
        self.dataVersionFilters = dataVersionFilters
    }

    public func encoded() -> TLVElement {
        .message {
            if !attributeRequests.isEmpty {
                TLVElement.array(tag: .context(0)) { attributeRequests.map { $0.encoded() } }
            }
            if !eventRequests.isEmpty {
                TLVElement.array(tag: .context(1)) { eventRequests.map { $0.encoded() } }
            }
            if !eventFilters.isEmpty {
                TLVElement.array(tag: .context(2)) { eventFilters.map { $0.encoded() } }
            }
            TLVElement(context: 3, .bool(isFabricFiltered))
            if !dataVersionFilters.isEmpty {
                TLVElement.array(tag: .context(4)) { dataVersionFilters.map { $0.encoded() } }
            }
        }
    }

    public init(decoding bytes: some Collection<UInt8>) throws(IMError) {
        let what = "ReadRequestMessage"
        let element = try decodeMessageStructure(bytes, what)
        attributeRequests =
            try decodeArray(element, 0, what) { e throws(IMError) in try AttributePath(decoding: e) } ?? []
        eventRequests = try decodeArray(element, 1, what) { e throws(IMError) in try EventPath(decoding: e) } ?? []
        eventFilters = try decodeArray(element, 2, what) { e throws(IMError) in try EventFilter(decoding: e) } ?? []
        isFabricFiltered = try requiredBool(element, 3, what)
        dataVersionFilters =
            try decodeArray(element, 4, what) { e throws(IMError) in try DataVersionFilter(decoding: e) } ?? []
        if attributeRequests.isEmpty && eventRequests.isEmpty {
            throw .malformed("\(what) names no attribute and no event")
        }
    }
}

/// Report Data (opcode 0x05).
public struct ReportData: Equatable, Sendable {
    public var subscriptionID: UInt32?
    public var attributeReports: [AttributeReportIB]
    public var eventReports: [EventReportIB]
    public var moreChunkedMessages: Bool
    public var suppressResponse: Bool

    public init(
        subscriptionID: UInt32? = nil, attributeReports: [AttributeReportIB], eventReports: [EventReportIB] = [],
        moreChunkedMessages: Bool = false, suppressResponse: Bool = false
    ) {
        self.subscriptionID = subscriptionID
        self.attributeReports = attributeReports
        self.eventReports = eventReports
        self.moreChunkedMessages = moreChunkedMessages
        self.suppressResponse = suppressResponse
    }

    public func encoded() -> TLVElement {
        .message {
            if let subscriptionID { TLVElement(context: 0, .uint(subscriptionID)) }
            if !attributeReports.isEmpty {
                TLVElement.array(tag: .context(1)) { attributeReports.map { $0.encoded() } }
            }
            if !eventReports.isEmpty {
                TLVElement.array(tag: .context(2)) { eventReports.map { $0.encoded() } }
            }
            if moreChunkedMessages { TLVElement(context: 3, .bool(true)) }
            if suppressResponse { TLVElement(context: 4, .bool(true)) }
        }
    }

    public init(decoding bytes: some Collection<UInt8>) throws(IMError) {
        let what = "ReportDataMessage"
        let element = try decodeMessageStructure(bytes, what)
        subscriptionID = try tlv(what) { () throws(TLVFieldError) in try element.optionalField(0)?.unsigned(UInt32.self)
        }
        attributeReports =
            try decodeArray(element, 1, what) { e throws(IMError) in try AttributeReportIB(decoding: e) } ?? []
        eventReports = try decodeArray(element, 2, what) { e throws(IMError) in try EventReportIB(decoding: e) } ?? []
        moreChunkedMessages = try optionalBool(element, 3, what) ?? false
        suppressResponse = try optionalBool(element, 4, what) ?? false
    }
}

/// Write Request (opcode 0x06).
public struct WriteRequest: Equatable, Sendable {
    public var suppressResponse: Bool
    public var timedRequest: Bool
    public var writeRequests: [AttributeDataIB]
    public var moreChunkedMessages: Bool

    public init(suppressResponse: Bool = false, timedRequest: Bool = false, writeRequests: [AttributeDataIB],
                moreChunkedMessages: Bool = false) {
        self.suppressResponse = suppressResponse
        self.timedRequest = timedRequest
        self.writeRequests = writeRequests
        self.moreChunkedMessages = moreChunkedMessages
    }

    public func encoded() -> TLVElement {
        .message {
            if suppressResponse { TLVElement(context: 0, .bool(true)) }
            TLVElement(context: 1, .bool(timedRequest))
            TLVElement.array(tag: .context(2)) { writeRequests.map { $0.encoded() } }
            if moreChunkedMessages { TLVElement(context: 3, .bool(true)) }
        }
    }

    public init(decoding bytes: some Collection<UInt8>) throws(IMError) {
        let what = "WriteRequestMessage"
        let element = try decodeMessageStructure(bytes, what)
        suppressResponse = try optionalBool(element, 0, what) ?? false
        timedRequest = try requiredBool(element, 1, what)
        guard let writes = try decodeArray(element, 2, what, { e throws(IMError) in try AttributeDataIB(decoding: e) })
        else {
            throw .malformed("\(what) has no WriteRequests")
        }
        writeRequests = writes
        moreChunkedMessages = try optionalBool(element, 3, what) ?? false
    }
}

/// Write Response (opcode 0x07).
public struct WriteResponse: Equatable, Sendable {
    public var writeResponses: [AttributeStatusIB]

    public init(writeResponses: [AttributeStatusIB]) { self.writeResponses = writeResponses }

    public func encoded() -> TLVElement {
        .message { TLVElement.array(tag: .context(0)) { writeResponses.map { $0.encoded() } } }
    }

    public init(decoding bytes: some Collection<UInt8>) throws(IMError) {
        let what = "WriteResponseMessage"
        let element = try decodeMessageStructure(bytes, what)
        writeResponses =
            try decodeArray(element, 0, what) { e throws(IMError) in try AttributeStatusIB(decoding: e) } ?? []
    }
}

/// Invoke Request (opcode 0x08).
public struct InvokeRequest: Equatable, Sendable {
    public var suppressResponse: Bool
    public var timedRequest: Bool
    public var invokeRequests: [CommandDataIB]

    public init(suppressResponse: Bool = false, timedRequest: Bool = false, invokeRequests: [CommandDataIB]) {
        self.suppressResponse = suppressResponse
        self.timedRequest = timedRequest
        self.invokeRequests = invokeRequests
    }

    public func encoded() -> TLVElement {
        .message {
            TLVElement(context: 0, .bool(suppressResponse))
            TLVElement(context: 1, .bool(timedRequest))
            TLVElement.array(tag: .context(2)) { invokeRequests.map { $0.encoded() } }
        }
    }

    public init(decoding bytes: some Collection<UInt8>) throws(IMError) {
        let what = "InvokeRequestMessage"
        let element = try decodeMessageStructure(bytes, what)
        suppressResponse = try requiredBool(element, 0, what)
        timedRequest = try requiredBool(element, 1, what)
        guard let requests = try decodeArray(element, 2, what, { e throws(IMError) in try CommandDataIB(decoding: e) }),
              !requests.isEmpty else {
            throw .malformed("\(what) has no InvokeRequests")
        }
        invokeRequests = requests
    }
}

/// Invoke Response (opcode 0x09).
public struct InvokeResponse: Equatable, Sendable {
    public var suppressResponse: Bool
    public var invokeResponses: [InvokeResponseIB]
    public var moreChunkedMessages: Bool

    public init(suppressResponse: Bool = false, invokeResponses: [InvokeResponseIB], moreChunkedMessages: Bool = false)
    {
        self.suppressResponse = suppressResponse
        self.invokeResponses = invokeResponses
        self.moreChunkedMessages = moreChunkedMessages
    }

    public func encoded() -> TLVElement {
        .message {
            TLVElement(context: 0, .bool(suppressResponse))
            TLVElement.array(tag: .context(1)) { invokeResponses.map { $0.encoded() } }
            if moreChunkedMessages { TLVElement(context: 2, .bool(true)) }
        }
    }

    public init(decoding bytes: some Collection<UInt8>) throws(IMError) {
        let what = "InvokeResponseMessage"
        let element = try decodeMessageStructure(bytes, what)
        suppressResponse = try requiredBool(element, 0, what)
        invokeResponses =
            try decodeArray(element, 1, what) { e throws(IMError) in try InvokeResponseIB(decoding: e) } ?? []
        moreChunkedMessages = try optionalBool(element, 2, what) ?? false
    }
}

/// Status Response (opcode 0x01).
public struct StatusResponse: Equatable, Sendable {
    public var status: IMStatusCode

    public init(_ status: IMStatusCode) { self.status = status }

    public func encoded() -> TLVElement { .message { TLVElement(context: 0, .uint(UInt32(status.rawValue))) } }

    public init(decoding bytes: some Collection<UInt8>) throws(IMError) {
        let what = "StatusResponseMessage"
        let element = try decodeMessageStructure(bytes, what)
        let raw = try tlv(what) { () throws(TLVFieldError) in try element.field(0).unsigned(UInt32.self) }
        guard let code = UInt8(exactly: raw) else { throw .malformed("\(what) status \(raw) is not a status code") }
        status = IMStatusCode(rawValue: code)
    }
}

/// Timed Request (opcode 0x0A): the next Write or Invoke on this exchange must arrive within `timeout` ms.
public struct TimedRequest: Equatable, Sendable {
    public var timeoutMilliseconds: UInt16

    public init(timeoutMilliseconds: UInt16) { self.timeoutMilliseconds = timeoutMilliseconds }

    public func encoded() -> TLVElement { .message { TLVElement(context: 0, .uint(timeoutMilliseconds)) } }

    public init(decoding bytes: some Collection<UInt8>) throws(IMError) {
        let what = "TimedRequestMessage"
        let element = try decodeMessageStructure(bytes, what)
        timeoutMilliseconds = try tlv(what) { () throws(TLVFieldError) in try element.field(0).unsigned(UInt16.self) }
    }
}

/// Subscribe Request (opcode 0x03).
public struct SubscribeRequest: Equatable, Sendable {
    public var keepSubscriptions: Bool
    public var minIntervalFloorSeconds: UInt16
    public var maxIntervalCeilingSeconds: UInt16
    public var attributeRequests: [AttributePath]
    public var eventRequests: [EventPath]
    public var eventFilters: [EventFilter]
    public var isFabricFiltered: Bool
    public var dataVersionFilters: [DataVersionFilter]

    public init(keepSubscriptions: Bool = false, minIntervalFloorSeconds: UInt16, maxIntervalCeilingSeconds: UInt16,
                attributeRequests: [AttributePath], eventRequests: [EventPath] = [], eventFilters: [EventFilter] = [],
                isFabricFiltered: Bool = true, dataVersionFilters: [DataVersionFilter] = []) {
        self.keepSubscriptions = keepSubscriptions
        self.minIntervalFloorSeconds = minIntervalFloorSeconds
        self.maxIntervalCeilingSeconds = maxIntervalCeilingSeconds
        self.attributeRequests = attributeRequests
        self.eventRequests = eventRequests
        self.eventFilters = eventFilters
        self.isFabricFiltered = isFabricFiltered
        self.dataVersionFilters = dataVersionFilters
    }

    public func encoded() -> TLVElement {
        .message {
            TLVElement(context: 0, .bool(keepSubscriptions))
            TLVElement(context: 1, .uint(minIntervalFloorSeconds))
            TLVElement(context: 2, .uint(maxIntervalCeilingSeconds))
            if !attributeRequests.isEmpty {
                TLVElement.array(tag: .context(3)) { attributeRequests.map { $0.encoded() } }
            }
            if !eventRequests.isEmpty {
                TLVElement.array(tag: .context(4)) { eventRequests.map { $0.encoded() } }
            }
            if !eventFilters.isEmpty {
                TLVElement.array(tag: .context(5)) { eventFilters.map { $0.encoded() } }
            }
            TLVElement(context: 7, .bool(isFabricFiltered))
            if !dataVersionFilters.isEmpty {
                TLVElement.array(tag: .context(8)) { dataVersionFilters.map { $0.encoded() } }
            }
        }
    }

    public init(decoding bytes: some Collection<UInt8>) throws(IMError) {
        let what = "SubscribeRequestMessage"
        let element = try decodeMessageStructure(bytes, what)
        keepSubscriptions = try requiredBool(element, 0, what)
        (minIntervalFloorSeconds, maxIntervalCeilingSeconds) = try tlv(what) { () throws(TLVFieldError) in
            (try element.field(1).unsigned(UInt16.self), try element.field(2).unsigned(UInt16.self))
        }
        attributeRequests =
            try decodeArray(element, 3, what) { e throws(IMError) in try AttributePath(decoding: e) } ?? []
        eventRequests = try decodeArray(element, 4, what) { e throws(IMError) in try EventPath(decoding: e) } ?? []
        eventFilters = try decodeArray(element, 5, what) { e throws(IMError) in try EventFilter(decoding: e) } ?? []
        isFabricFiltered = try requiredBool(element, 7, what)
        dataVersionFilters =
            try decodeArray(element, 8, what) { e throws(IMError) in try DataVersionFilter(decoding: e) } ?? []
        if attributeRequests.isEmpty && eventRequests.isEmpty {
            throw .malformed("\(what) names no attribute and no event")
        }
        if minIntervalFloorSeconds > maxIntervalCeilingSeconds {
            throw .malformed(
                "\(what) has a floor of \(minIntervalFloorSeconds) s above its ceiling of "
                    + "\(maxIntervalCeilingSeconds) s")
        }
    }
}

/// Subscribe Response (opcode 0x04).
public struct SubscribeResponse: Equatable, Sendable {
    public var subscriptionID: UInt32
    public var maxIntervalSeconds: UInt16

    public init(subscriptionID: UInt32, maxIntervalSeconds: UInt16) {
        self.subscriptionID = subscriptionID
        self.maxIntervalSeconds = maxIntervalSeconds
    }

    public func encoded() -> TLVElement {
        .message {
            TLVElement(context: 0, .uint(subscriptionID))
            TLVElement(context: 2, .uint(maxIntervalSeconds))
        }
    }

    public init(decoding bytes: some Collection<UInt8>) throws(IMError) {
        let what = "SubscribeResponseMessage"
        let element = try decodeMessageStructure(bytes, what)
        (subscriptionID, maxIntervalSeconds) = try tlv(what) { () throws(TLVFieldError) in
            (try element.field(0).unsigned(UInt32.self), try element.field(2).unsigned(UInt16.self))
        }
    }
}
