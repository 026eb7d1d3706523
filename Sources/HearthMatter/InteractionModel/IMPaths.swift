// The paths of the Interaction Model (Matter 1.4 §10.6.2, §10.6.9–§10.6.11): what a request names, with wildcards,
// and what a response names, concrete. Each path encodes as the TLV list of its kind with the exact context tags.

/// An endpoint number (0 is the root node).
public typealias EndpointID = UInt16
/// A cluster id (a manufacturer's in its vendor prefix).
public typealias ClusterID = UInt32
/// An attribute id within its cluster.
public typealias AttributeID = UInt32
/// A command id within its cluster.
public typealias CommandID = UInt32
/// A fabric's index on this node: 1…254, never 0 (0 means "no fabric" in the specification).
public typealias FabricIndex = UInt8
/// An operational node id.
public typealias NodeID = UInt64

/// `AttributePathIB`: an attribute path in which endpoint, cluster and attribute may each be a wildcard (nil).
public struct AttributePath: Hashable, Sendable, CustomStringConvertible {
    public var node: NodeID?
    public var endpoint: EndpointID?
    public var cluster: ClusterID?
    public var attribute: AttributeID?
    /// In a write: absent to replace a whole list, `.append` (null on the wire) to add one item to it.
    public var listIndex: ListIndex?
    /// `WildcardPathFlags`: which kinds of paths a wildcard leaves out.
    public var wildcardFlags: UInt32 = 0

    public enum ListIndex: Hashable, Sendable {
        /// Null on the wire: append the item to the list.
        case append
        /// A list item by position (not used by Matter 1.4 writes; refused).
        case index(UInt16)
    }

    public init(
        node: NodeID? = nil, endpoint: EndpointID? = nil, cluster: ClusterID? = nil, attribute: AttributeID? = nil,
        listIndex: ListIndex? = nil, wildcardFlags: UInt32 = 0
    ) {
        self.node = node
        self.endpoint = endpoint
        self.cluster = cluster
        self.attribute = attribute
        self.listIndex = listIndex
        self.wildcardFlags = wildcardFlags
    }

    public init(_ concrete: ConcreteAttributePath, listIndex: ListIndex? = nil) {
        self.init(
            endpoint: concrete.endpoint, cluster: concrete.cluster, attribute: concrete.attribute, listIndex: listIndex)
    }

    public var isWildcard: Bool { endpoint == nil || cluster == nil || attribute == nil }

    /// The concrete path, when nothing is a wildcard.
    public var concrete: ConcreteAttributePath? {
        guard let endpoint, let cluster, let attribute else { return nil }
        return ConcreteAttributePath(endpoint: endpoint, cluster: cluster, attribute: attribute)
    }

    /// WildcardPathFlags bits (§10.6.2.1).
    public static let skipRootNode: UInt32 = 1 << 0
    public static let skipGlobalAttributes: UInt32 = 1 << 1
    public static let skipAttributeList: UInt32 = 1 << 2
    public static let skipCommandLists: UInt32 = 1 << 4
    public static let skipCustomElements: UInt32 = 1 << 5
    public static let skipFixedAttributes: UInt32 = 1 << 6
    public static let skipChangesOmittedAttributes: UInt32 = 1 << 7
    public static let skipDiagnosticsClusters: UInt32 = 1 << 8

    public func encoded(tag: TLVTag = .anonymous) -> TLVElement {
        .list(tag: tag) {
            if let node { TLVElement(context: 1, .uint(node)) }
            if let endpoint { TLVElement(context: 2, .uint(endpoint)) }
            if let cluster { TLVElement(context: 3, .uint(cluster)) }
            if let attribute { TLVElement(context: 4, .uint(attribute)) }
            switch listIndex {
            case nil: [TLVElement]()
            case .append: TLVElement(context: 5, .null)
            case .index(let i): TLVElement(context: 5, .uint(i))
            }
            if wildcardFlags != 0 { TLVElement(context: 6, .uint(wildcardFlags)) }
        }
    }

    public init(decoding element: TLVElement) throws(IMError) {
        let what = "AttributePathIB"
        guard let members = element.listMembers else {
            throw .malformed("\(what) is a \(element.value.typeName), not a list")
        }
        try checkMembers(members, in: what)
        let compression = try tlv(what) { () throws(TLVFieldError) in try element.optionalField(0)?.bool() }
        // EnableTagCompression asks to inherit parts of the previous path; a server may refuse it.
        if compression == true { throw .malformed("\(what) asks for tag compression, which this node does not accept") }
        let decoded = try tlv(what) { () throws(TLVFieldError) in
            (node: try element.optionalField(1)?.unsigned(NodeID.self),
             endpoint: try element.optionalField(2)?.unsigned(EndpointID.self),
             cluster: try element.optionalField(3)?.unsigned(ClusterID.self),
             attribute: try element.optionalField(4)?.unsigned(AttributeID.self),
             listIndex: try element.optionalField(5).map { (index) throws(TLVFieldError) -> ListIndex in
                 index.isNull ? .append : .index(try index.unsigned(UInt16.self))
             },
             flags: try element.optionalField(6)?.unsigned(UInt32.self) ?? 0)
        }
        self.init(
            node: decoded.node, endpoint: decoded.endpoint, cluster: decoded.cluster, attribute: decoded.attribute,
            listIndex: decoded.listIndex, wildcardFlags: decoded.flags)
    }

    public var description: String {
        func part(_ v: (some BinaryInteger)?) -> String { v.map { "0x" + String($0, radix: 16) } ?? "*" }
        var text = "\(endpoint.map(String.init) ?? "*")/\(part(cluster))/\(part(attribute))"
        if let listIndex { text += listIndex == .append ? "[+]" : "[\(listIndex)]" }
        return text
    }
}

/// One attribute of one cluster instance on one endpoint.
public struct ConcreteAttributePath: Hashable, Sendable, CustomStringConvertible {
    public var endpoint: EndpointID
    public var cluster: ClusterID
    public var attribute: AttributeID

    public init(endpoint: EndpointID, cluster: ClusterID, attribute: AttributeID) {
        self.endpoint = endpoint
        self.cluster = cluster
        self.attribute = attribute
    }

    public var clusterPath: ConcreteClusterPath { ConcreteClusterPath(endpoint: endpoint, cluster: cluster) }

    public var description: String { "\(endpoint)/0x\(String(cluster, radix: 16))/0x\(String(attribute, radix: 16))" }
}

/// One cluster instance: a cluster on an endpoint.
public struct ConcreteClusterPath: Hashable, Sendable, CustomStringConvertible {
    public var endpoint: EndpointID
    public var cluster: ClusterID

    public init(endpoint: EndpointID, cluster: ClusterID) {
        self.endpoint = endpoint
        self.cluster = cluster
    }

    public var description: String { "\(endpoint)/0x\(String(cluster, radix: 16))" }
}

/// `CommandPathIB`: a command path; the endpoint may be a wildcard (a group invoke), cluster and command may not.
public struct CommandPath: Hashable, Sendable, CustomStringConvertible {
    public var endpoint: EndpointID?
    public var cluster: ClusterID
    public var command: CommandID

    public init(endpoint: EndpointID?, cluster: ClusterID, command: CommandID) {
        self.endpoint = endpoint
        self.cluster = cluster
        self.command = command
    }

    public func encoded(tag: TLVTag = .anonymous) -> TLVElement {
        .list(tag: tag) {
            if let endpoint { TLVElement(context: 0, .uint(endpoint)) }
            TLVElement(context: 1, .uint(cluster))
            TLVElement(context: 2, .uint(command))
        }
    }

    public init(decoding element: TLVElement) throws(IMError) {
        let what = "CommandPathIB"
        guard let members = element.listMembers else {
            throw .malformed("\(what) is a \(element.value.typeName), not a list")
        }
        try checkMembers(members, in: what)
        (endpoint, cluster, command) = try tlv(what) { () throws(TLVFieldError) in
            (try element.optionalField(0)?.unsigned(EndpointID.self), try element.field(1).unsigned(ClusterID.self),
             try element.field(2).unsigned(CommandID.self))
        }
    }

    public var description: String {
        "\(endpoint.map(String.init) ?? "*")/0x\(String(cluster, radix: 16))/0x\(String(command, radix: 16))"
    }
}

/// `ClusterPathIB`, as a DataVersionFilterIB names it: node, endpoint and cluster, all concrete in practice.
struct ClusterPathIB: Hashable, Sendable {
    var node: NodeID?
    var endpoint: EndpointID
    var cluster: ClusterID

    func encoded(tag: TLVTag = .anonymous) -> TLVElement {
        .list(tag: tag) {
            if let node { TLVElement(context: 0, .uint(node)) }
            TLVElement(context: 1, .uint(endpoint))
            TLVElement(context: 2, .uint(cluster))
        }
    }

    init(node: NodeID? = nil, endpoint: EndpointID, cluster: ClusterID) {
        self.node = node
        self.endpoint = endpoint
        self.cluster = cluster
    }

    init(decoding element: TLVElement) throws(IMError) {
        let what = "ClusterPathIB"
        guard let members = element.listMembers else {
            throw .malformed("\(what) is a \(element.value.typeName), not a list")
        }
        try checkMembers(members, in: what)
        (node, endpoint, cluster) = try tlv(what) { () throws(TLVFieldError) in
            (try element.optionalField(0)?.unsigned(NodeID.self), try element.field(1).unsigned(EndpointID.self),
             try element.field(2).unsigned(ClusterID.self))
        }
    }
}

/// Refuses members that are not context-tagged or that repeat (a TLV list may repeat a tag; no message member may).
/// Unknown context tags are let through: the specification asks receivers to ignore them, so that a newer
/// controller's optional fields do not break an older node.
func checkMembers(_ members: [TLVElement], in what: String) throws(IMError) {
    var seen: Set<UInt8> = []
    for member in members {
        guard case .context(let n) = member.tag else {
            throw .malformed("\(what) has a member that is not context-tagged (\(member.tag))")
        }
        guard seen.insert(n).inserted else { throw .malformed("\(what) has member \(n) twice") }
    }
}

/// Runs a TLV accessor, turning its member error into INVALID_ACTION naming `what`.
func tlv<T>(_ what: String, _ body: () throws(TLVFieldError) -> T) throws(IMError) -> T {
    do { return try body() } catch { throw .malformed(what, error) }
}
