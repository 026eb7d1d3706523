// What a cluster that does not answer at once looks like to the Interaction Model, and the events a cluster emits.
// A bridged device's commands and writes run on the device's lane in the hub (its hardware may take its time), so
// they finish after the node's thread has gone on: the Interaction Model checks paths, privileges and timing first,
// then hands the action over and sends the answer when the completion comes. Events are kept by the data model with
// their numbers, priorities and timestamps, for reads and subscriptions.

/// An event id within its cluster.
public typealias EventID = UInt32

/// A cluster whose commands and writes finish later, off the node's thread (a bridged device's run on its lane).
///
/// The data model calls these instead of the synchronous `invoke` and `write` once every check of the Interaction
/// Model has passed; the completion may be called on any thread, exactly once. A write's success does not move the
/// DataVersion by itself: the cluster marks what changed (`DataModel.markChanged`) when the value changes.
public protocol DeferredClusterServer: ClusterServer {
    func invoke(_ command: CommandID, fields: TLVElement?, context: ActionContext,
                completion: @escaping @Sendable (Result<CommandResult, IMError>) -> Void)
    func write(_ attribute: AttributeID, value: TLVValue, context: ActionContext,
               completion: @escaping @Sendable (IMError?) -> Void)
}

/// An event's priority (Matter 1.4 §7.19.2.17).
public enum EventPriority: UInt8, Sendable, Hashable {
    case debug = 0
    case info = 1
    case critical = 2
}

/// One event a cluster can emit.
public struct EventDefinition: Sendable, Hashable {
    public var id: EventID
    public var name: String
    public var priority: EventPriority
    public var readPrivilege: Privilege

    public init(_ id: EventID, _ name: String, priority: EventPriority = .info, read: Privilege = .view) {
        self.id = id
        self.name = name
        self.priority = priority
        self.readPrivilege = read
    }
}

/// An event's concrete path.
public struct ConcreteEventPath: Hashable, Sendable, CustomStringConvertible {
    public var endpoint: EndpointID
    public var cluster: ClusterID
    public var event: EventID

    public init(endpoint: EndpointID, cluster: ClusterID, event: EventID) {
        self.endpoint = endpoint
        self.cluster = cluster
        self.event = event
    }

    public var description: String {
        "\(endpoint)/0x\(String(cluster, radix: 16))/event 0x\(String(event, radix: 16))"
    }
}
