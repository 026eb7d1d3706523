// The root node's simpler clusters: BasicInformation (0x0028), GeneralCommissioning (0x0030), NetworkCommissioning
// with the Ethernet feature (0x0031), GroupKeyManagement with the IPK only (0x003F) and GeneralDiagnostics (0x0033).
// Ids, attributes and commands follow the Matter 1.4 cluster definitions.

/// A command's fields, read with INVALID_COMMAND for anything missing or mistyped (§8.8.3.3).
struct CommandFields {
    let element: TLVElement
    let command: String

    init(_ element: TLVElement?, _ command: String) throws(IMError) {
        self.element = element ?? TLVElement(.structure([]))
        self.command = command
    }

    private func field<T>(_ tag: UInt8, _ read: (TLVElement) throws(TLVFieldError) -> T) throws(IMError) -> T {
        do { return try read(try element.field(tag)) } catch {
            throw IMError(.invalidCommand, "\(command): \(error)")
        }
    }

    private func optional<T>(_ tag: UInt8, _ read: (TLVElement) throws(TLVFieldError) -> T) throws(IMError) -> T? {
        guard let member = element[context: tag] else { return nil }
        do { return try read(member) } catch { throw IMError(.invalidCommand, "\(command): \(error)") }
    }

    func unsigned<T: FixedWidthInteger & UnsignedInteger>(_ tag: UInt8, _ type: T.Type = T.self) throws(IMError) -> T {
        try field(tag) { (e) throws(TLVFieldError) in try e.unsigned(T.self) }
    }
    func bytes(_ tag: UInt8, count: Int? = nil) throws(IMError) -> [UInt8] {
        try field(tag) { (e) throws(TLVFieldError) in try e.bytes(count: count) }
    }
    func optionalBytes(_ tag: UInt8) throws(IMError) -> [UInt8]? {
        try optional(tag) { (e) throws(TLVFieldError) in try e.bytes() }
    }
    func string(_ tag: UInt8) throws(IMError) -> String {
        try field(tag) { (e) throws(TLVFieldError) in try e.string() }
    }
    func optionalBool(_ tag: UInt8) throws(IMError) -> Bool? {
        try optional(tag) { (e) throws(TLVFieldError) in try e.bool() }
    }
}

/// A response command's fields.
func responseFields(@TLVMembersBuilder _ members: () -> [TLVElement]) -> TLVElement {
    TLVElement(.structure(members()))
}

func unsupported(_ attribute: AttributeID, _ cluster: String) -> IMError {
    IMError(.unsupportedAttribute, "\(cluster) has no attribute 0x\(String(attribute, radix: 16))")
}

// MARK: - BasicInformation

/// What BasicInformation says about the node: from the hub's configuration.
public struct BasicInformationConfiguration: Sendable, Equatable {
    public var vendorName: String
    public var vendorID: UInt16
    public var productName: String
    public var productID: UInt16
    public var hardwareVersion: UInt16
    public var hardwareVersionString: String
    public var softwareVersion: UInt32
    public var softwareVersionString: String
    public var serialNumber: String
    /// A stable id for this node, not derived from its serial number (UniqueID, at most 32 characters).
    public var uniqueID: String
    public var productLabel: String?

    public init(vendorName: String = "Hearth", vendorID: UInt16 = 0xFFF1, productName: String = "Hearth hub",
                productID: UInt16 = 0x8000, hardwareVersion: UInt16 = 1, hardwareVersionString: String = "1",
                softwareVersion: UInt32 = 1, softwareVersionString: String = "1.0", serialNumber: String,
                uniqueID: String, productLabel: String? = nil) {
        self.vendorName = vendorName
        self.vendorID = vendorID
        self.productName = productName
        self.productID = productID
        self.hardwareVersion = hardwareVersion
        self.hardwareVersionString = hardwareVersionString
        self.softwareVersion = softwareVersion
        self.softwareVersionString = softwareVersionString
        self.serialNumber = serialNumber
        self.uniqueID = uniqueID
        self.productLabel = productLabel
    }
}

final class BasicInformationCluster: ClusterServer {
    static let clusterID: ClusterID = 0x0028
    enum Attribute {
        static let dataModelRevision: AttributeID = 0x00, vendorName: AttributeID = 0x01, vendorID: AttributeID = 0x02
        static let productName: AttributeID = 0x03, productID: AttributeID = 0x04, nodeLabel: AttributeID = 0x05
        static let location: AttributeID = 0x06, hardwareVersion: AttributeID = 0x07,
            hardwareVersionString: AttributeID = 0x08
        static let softwareVersion: AttributeID = 0x09, softwareVersionString: AttributeID = 0x0A
        static let productLabel: AttributeID = 0x0E, serialNumber: AttributeID = 0x0F, uniqueID: AttributeID = 0x12
        static let capabilityMinima: AttributeID = 0x13, specificationVersion: AttributeID = 0x15
        static let maxPathsPerInvoke: AttributeID = 0x16
    }

    /// StartUp, emitted when the node starts (ShutDown and Leave are not emitted by this node).
    static let startUpEvent: EventID = 0x00

    let id = BasicInformationCluster.clusterID
    let revision: UInt16 = 4
    let attributes: [AttributeDefinition]
    let events = [
        EventDefinition(startUpEvent, "StartUp", priority: .critical),
        EventDefinition(0x01, "ShutDown", priority: .critical),
        EventDefinition(0x02, "Leave", priority: .info),
    ]
    private let configuration: BasicInformationConfiguration
    private let state: CommissioningState

    init(configuration: BasicInformationConfiguration, state: CommissioningState) {
        self.configuration = configuration
        self.state = state
        var attributes = [
            AttributeDefinition(Attribute.dataModelRevision, "DataModelRevision", [.fixed]),
            AttributeDefinition(Attribute.vendorName, "VendorName", [.fixed]),
            AttributeDefinition(Attribute.vendorID, "VendorID", [.fixed]),
            AttributeDefinition(Attribute.productName, "ProductName", [.fixed]),
            AttributeDefinition(Attribute.productID, "ProductID", [.fixed]),
            AttributeDefinition(Attribute.nodeLabel, "NodeLabel", [.writable, .nonVolatile], write: .manage),
            AttributeDefinition(Attribute.location, "Location", [.writable, .nonVolatile], write: .administer),
            AttributeDefinition(Attribute.hardwareVersion, "HardwareVersion", [.fixed]),
            AttributeDefinition(Attribute.hardwareVersionString, "HardwareVersionString", [.fixed]),
            AttributeDefinition(Attribute.softwareVersion, "SoftwareVersion", [.fixed]),
            AttributeDefinition(Attribute.softwareVersionString, "SoftwareVersionString", [.fixed]),
            AttributeDefinition(Attribute.serialNumber, "SerialNumber", [.fixed]),
            AttributeDefinition(Attribute.uniqueID, "UniqueID", [.fixed]),
            AttributeDefinition(Attribute.capabilityMinima, "CapabilityMinima", [.fixed]),
            AttributeDefinition(Attribute.specificationVersion, "SpecificationVersion", [.fixed]),
            AttributeDefinition(Attribute.maxPathsPerInvoke, "MaxPathsPerInvoke", [.fixed]),
        ]
        if configuration.productLabel != nil {
            attributes.append(AttributeDefinition(Attribute.productLabel, "ProductLabel", [.fixed]))
        }
        self.attributes = attributes.sorted { $0.id < $1.id }
    }

    func read(_ attribute: AttributeID, context: ReadContext) throws(IMError) -> TLVValue {
        let c = configuration
        switch attribute {
        case Attribute.dataModelRevision: return .uint(UInt16(18))
        case Attribute.vendorName: return .utf8(c.vendorName)
        case Attribute.vendorID: return .uint(c.vendorID)
        case Attribute.productName: return .utf8(c.productName)
        case Attribute.productID: return .uint(c.productID)
        case Attribute.nodeLabel: return .utf8(state.settings.nodeLabel)
        case Attribute.location: return .utf8(state.settings.location)
        case Attribute.hardwareVersion: return .uint(c.hardwareVersion)
        case Attribute.hardwareVersionString: return .utf8(c.hardwareVersionString)
        case Attribute.softwareVersion: return .uint(c.softwareVersion)
        case Attribute.softwareVersionString: return .utf8(c.softwareVersionString)
        case Attribute.productLabel where c.productLabel != nil: return .utf8(c.productLabel!)
        case Attribute.serialNumber: return .utf8(c.serialNumber)
        case Attribute.uniqueID: return .utf8(c.uniqueID)
        case Attribute.capabilityMinima:
            return .structure([TLVElement(context: 0, .uint(UInt16(3))), TLVElement(context: 1, .uint(UInt16(3)))])
        case Attribute.specificationVersion: return .uint(UInt32(0x0104_0000))
        case Attribute.maxPathsPerInvoke: return .uint(UInt16(InteractionModelServer.maximumPathsPerInvoke))
        default: throw unsupported(attribute, "BasicInformation")
        }
    }

    func write(_ attribute: AttributeID, value: TLVValue, context: ActionContext) throws(IMError) {
        guard case .utf8(let text) = value else {
            throw IMError(.invalidDataType, "BasicInformation 0x\(String(attribute, radix: 16)) takes a string")
        }
        switch attribute {
        case Attribute.nodeLabel:
            guard text.utf8.count <= 32 else { throw IMError(.constraintError, "NodeLabel holds at most 32 bytes") }
            try state.updateSettings { $0.nodeLabel = text }
        case Attribute.location:
            guard text.utf8.count == 2 else { throw IMError(.constraintError, "Location is a two-letter country code") }
            try state.updateSettings { $0.location = text }
        default:
            throw IMError(.unsupportedWrite, "BasicInformation 0x\(String(attribute, radix: 16)) is read-only")
        }
    }
}

// MARK: - GeneralCommissioning

final class GeneralCommissioningCluster: ClusterServer {
    static let clusterID: ClusterID = 0x0030
    enum Attribute {
        static let breadcrumb: AttributeID = 0, basicCommissioningInfo: AttributeID = 1,
            regulatoryConfig: AttributeID = 2
        static let locationCapability: AttributeID = 3, supportsConcurrentConnection: AttributeID = 4
    }
    enum Command {
        static let armFailSafe: CommandID = 0x00, armFailSafeResponse: CommandID = 0x01
        static let setRegulatoryConfig: CommandID = 0x02, setRegulatoryConfigResponse: CommandID = 0x03
        static let commissioningComplete: CommandID = 0x04, commissioningCompleteResponse: CommandID = 0x05
    }

    let id = GeneralCommissioningCluster.clusterID
    let revision: UInt16 = 1
    let attributes = [
        AttributeDefinition(Attribute.breadcrumb, "Breadcrumb", [.writable], write: .administer),
        AttributeDefinition(Attribute.basicCommissioningInfo, "BasicCommissioningInfo", [.fixed]),
        AttributeDefinition(Attribute.regulatoryConfig, "RegulatoryConfig"),
        AttributeDefinition(Attribute.locationCapability, "LocationCapability", [.fixed]),
        AttributeDefinition(Attribute.supportsConcurrentConnection, "SupportsConcurrentConnection", [.fixed]),
    ]
    let acceptedCommands = [
        CommandDefinition(
            Command.armFailSafe, "ArmFailSafe", privilege: .administer, response: Command.armFailSafeResponse),
        CommandDefinition(
            Command.setRegulatoryConfig, "SetRegulatoryConfig", privilege: .administer,
            response: Command.setRegulatoryConfigResponse),
        CommandDefinition(
            Command.commissioningComplete, "CommissioningComplete", privilege: .administer,
            response: Command.commissioningCompleteResponse),
    ]
    let generatedCommands = [Command.armFailSafeResponse, Command.setRegulatoryConfigResponse,
                             Command.commissioningCompleteResponse]

    /// The fail-safe a commissioner should arm at first (BasicCommissioningInfo.FailSafeExpiryLengthSeconds).
    static let failSafeExpiryLengthSeconds: UInt16 = 60
    /// RegulatoryLocationTypeEnum: Indoor 0, Outdoor 1, IndoorOutdoor 2. An Ethernet hub may be anywhere indoors.
    static let locationCapability: UInt8 = 2

    private let state: CommissioningState

    init(state: CommissioningState) { self.state = state }

    func read(_ attribute: AttributeID, context: ReadContext) throws(IMError) -> TLVValue {
        switch attribute {
        case Attribute.breadcrumb: return .uint(state.breadcrumb)
        case Attribute.basicCommissioningInfo:
            return .structure([
                TLVElement(context: 0, .uint(Self.failSafeExpiryLengthSeconds)),
                TLVElement(context: 1, .uint(UInt16(CommissioningState.maximumCumulativeFailSafeSeconds))),
            ])
        case Attribute.regulatoryConfig: return .uint(state.settings.regulatoryConfig)
        case Attribute.locationCapability: return .uint(Self.locationCapability)
        case Attribute.supportsConcurrentConnection: return .bool(true)
        default: throw unsupported(attribute, "GeneralCommissioning")
        }
    }

    func write(_ attribute: AttributeID, value: TLVValue, context: ActionContext) throws(IMError) {
        guard attribute == Attribute.breadcrumb else { throw IMError(.unsupportedWrite, "read-only") }
        guard case .unsigned(let breadcrumb) = value else { throw IMError(.invalidDataType, "Breadcrumb is a uint64") }
        state.setBreadcrumb(breadcrumb)
    }

    func invoke(_ command: CommandID, fields: TLVElement?, context: ActionContext) throws(IMError) -> CommandResult {
        func answer(_ response: CommandID, _ code: CommissioningError, _ text: String) -> CommandResult {
            .response(response, responseFields {
                TLVElement(context: 0, .uint(code.rawValue))
                TLVElement(context: 1, .utf8(text))
            })
        }
        switch command {
        case Command.armFailSafe:
            let f = try CommandFields(fields, "ArmFailSafe")
            let seconds = try f.unsigned(0, UInt16.self), breadcrumb = try f.unsigned(1, UInt64.self)
            let code = state.armFailSafe(
                seconds: seconds, breadcrumb: breadcrumb, subject: context.subject, now: context.now)
            return answer(
                Command.armFailSafeResponse, code, code == .busyWithOtherAdmin ? "armed by another fabric" : "")
        case Command.setRegulatoryConfig:
            let f = try CommandFields(fields, "SetRegulatoryConfig")
            let config = try f.unsigned(0, UInt8.self), country = try f.string(1),
                breadcrumb = try f.unsigned(2, UInt64.self)
            guard config <= 2 else {
                throw IMError(.constraintError, "RegulatoryConfig \(config) is not a location type")
            }
            guard country.utf8.count == 2 else { throw IMError(.constraintError, "CountryCode must have two letters") }
            if config != Self.locationCapability && Self.locationCapability != 2 {
                return answer(Command.setRegulatoryConfigResponse, .valueOutsideRange, "the node cannot be used there")
            }
            try state.setRegulatoryConfig(config, breadcrumb: breadcrumb)
            try state.updateSettings { $0.location = country }
            return answer(Command.setRegulatoryConfigResponse, .ok, "")
        case Command.commissioningComplete:
            let (code, text) = state.commissioningComplete(subject: context.subject)
            return answer(Command.commissioningCompleteResponse, code, text)
        default:
            throw IMError(.unsupportedCommand, "GeneralCommissioning has no command 0x\(String(command, radix: 16))")
        }
    }
}

// MARK: - NetworkCommissioning (Ethernet)

/// A network interface the node reports (GeneralDiagnostics and NetworkCommissioning).
public struct NetworkInterfaceInfo: Sendable, Equatable {
    public var name: String
    public var isOperational: Bool
    /// The MAC address (6 bytes).
    public var hardwareAddress: [UInt8]
    public var ipv4Addresses: [[UInt8]]
    public var ipv6Addresses: [[UInt8]]

    public init(name: String, isOperational: Bool, hardwareAddress: [UInt8], ipv4Addresses: [[UInt8]] = [],
                ipv6Addresses: [[UInt8]] = []) {
        self.name = name
        self.isOperational = isOperational
        self.hardwareAddress = hardwareAddress
        self.ipv4Addresses = ipv4Addresses
        self.ipv6Addresses = ipv6Addresses
    }
}

final class NetworkCommissioningCluster: ClusterServer {
    static let clusterID: ClusterID = 0x0031
    /// The Ethernet feature (EN, bit 2).
    static let ethernetFeature: UInt32 = 1 << 2

    let id = NetworkCommissioningCluster.clusterID
    let revision: UInt16 = 1
    let featureMap = NetworkCommissioningCluster.ethernetFeature
    let attributes = [
        AttributeDefinition(0, "MaxNetworks", [.fixed], read: .administer),
        AttributeDefinition(1, "Networks", [.list], read: .administer),
        AttributeDefinition(4, "InterfaceEnabled", [.writable, .nonVolatile], write: .administer),
        AttributeDefinition(5, "LastNetworkingStatus", [.nullable], read: .administer),
        AttributeDefinition(6, "LastNetworkID", [.nullable], read: .administer),
        AttributeDefinition(7, "LastConnectErrorValue", [.nullable], read: .administer),
    ]
    private let interface: @Sendable () -> NetworkInterfaceInfo

    init(interface: @escaping @Sendable () -> NetworkInterfaceInfo) { self.interface = interface }

    func read(_ attribute: AttributeID, context: ReadContext) throws(IMError) -> TLVValue {
        switch attribute {
        case 0: return .uint(UInt8(1))
        case 1:
            let info = interface()
            // An Ethernet network's id is the interface's name (NetworkInfoStruct: NetworkID 0, Connected 1).
            return .array([TLVElement.structure {
                TLVElement(context: 0, .bytes(Array(info.name.utf8.prefix(32))))
                TLVElement(context: 1, .bool(info.isOperational))
            }])
        case 4: return .bool(true)
        case 5, 6, 7: return .null
        default: throw unsupported(attribute, "NetworkCommissioning")
        }
    }

    func write(_ attribute: AttributeID, value: TLVValue, context: ActionContext) throws(IMError) {
        guard attribute == 4 else { throw IMError(.unsupportedWrite, "read-only") }
        guard case .bool(let enabled) = value else { throw IMError(.invalidDataType, "InterfaceEnabled is a boolean") }
        // The hub's Ethernet is its only way in: it is not switched off from Matter.
        guard enabled else { throw IMError(.invalidInState, "the hub's Ethernet interface stays enabled") }
    }
}

// MARK: - GroupKeyManagement

final class GroupKeyManagementCluster: ClusterServer {
    static let clusterID: ClusterID = 0x003F
    enum Command {
        static let keySetWrite: CommandID = 0, keySetRead: CommandID = 1, keySetReadResponse: CommandID = 2
        static let keySetRemove: CommandID = 3, keySetReadAllIndices: CommandID = 4,
            keySetReadAllIndicesResponse: CommandID = 5
    }

    let id = GroupKeyManagementCluster.clusterID
    let revision: UInt16 = 1
    let attributes = [
        AttributeDefinition(0, "GroupKeyMap", [.list, .fabricScoped, .writable], write: .manage),
        AttributeDefinition(1, "GroupTable", [.list, .fabricScoped]),
        AttributeDefinition(2, "MaxGroupsPerFabric", [.fixed]),
        AttributeDefinition(3, "MaxGroupKeysPerFabric", [.fixed]),
    ]
    let acceptedCommands = [
        CommandDefinition(Command.keySetWrite, "KeySetWrite", privilege: .administer, timed: false),
        CommandDefinition(
            Command.keySetRead, "KeySetRead", privilege: .administer, response: Command.keySetReadResponse),
        CommandDefinition(Command.keySetRemove, "KeySetRemove", privilege: .administer),
        CommandDefinition(
            Command.keySetReadAllIndices, "KeySetReadAllIndices", privilege: .administer,
            response: Command.keySetReadAllIndicesResponse),
    ]
    let generatedCommands = [Command.keySetReadResponse, Command.keySetReadAllIndicesResponse]
    private let state: CommissioningState

    init(state: CommissioningState) { self.state = state }

    func read(_ attribute: AttributeID, context: ReadContext) throws(IMError) -> TLVValue {
        switch attribute {
        case 0, 1: return .array([])
        case 2: return .uint(UInt16(0))
        // Key set 0, the IPK, is the only one.
        case 3: return .uint(UInt16(1))
        default: throw unsupported(attribute, "GroupKeyManagement")
        }
    }

    func write(_ attribute: AttributeID, value: TLVValue, context: ActionContext) throws(IMError) {
        guard attribute == 0 else { throw IMError(.unsupportedWrite, "read-only") }
        guard case .array(let items) = value else { throw IMError(.invalidDataType, "GroupKeyMap is a list") }
        guard items.isEmpty else { throw IMError(.resourceExhausted, "this node holds no groups") }
    }

    func invoke(_ command: CommandID, fields: TLVElement?, context: ActionContext) throws(IMError) -> CommandResult {
        let fabric = state.fabrics.first { $0.index == context.subject.fabricIndex }
        switch command {
        case Command.keySetRead:
            let f = try CommandFields(fields, "KeySetRead")
            let keySet = try f.unsigned(0, UInt16.self)
            guard keySet == 0, fabric != nil else { throw IMError(.notFound, "no group key set \(keySet)") }
            // GroupKeySetStruct: the IPK's epoch keys are never read back (null), only their start times.
            return .response(Command.keySetReadResponse, responseFields {
                TLVElement.structure(tag: .context(0)) {
                    TLVElement(context: 0, .uint(UInt16(0)))
                    TLVElement(context: 1, .uint(UInt8(1)))
                    TLVElement(context: 2, .null)
                    TLVElement(context: 3, .uint(UInt64(0)))
                    TLVElement(context: 4, .null)
                    TLVElement(context: 5, .null)
                    TLVElement(context: 6, .null)
                    TLVElement(context: 7, .null)
                }
            })
        case Command.keySetReadAllIndices:
            return .response(Command.keySetReadAllIndicesResponse, responseFields {
                TLVElement.array(tag: .context(0)) { fabric == nil ? [] : [TLVElement(.uint(UInt16(0)))] }
            })
        case Command.keySetWrite:
            throw IMError(.resourceExhausted, "this node holds no group key set besides the IPK")
        case Command.keySetRemove:
            let f = try CommandFields(fields, "KeySetRemove")
            let keySet = try f.unsigned(0, UInt16.self)
            if keySet == 0 { throw IMError(.invalidCommand, "the IPK key set cannot be removed") }
            throw IMError(.notFound, "no group key set \(keySet)")
        default:
            throw IMError(.unsupportedCommand, "GroupKeyManagement has no command 0x\(String(command, radix: 16))")
        }
    }
}

// MARK: - GeneralDiagnostics

final class GeneralDiagnosticsCluster: ClusterServer {
    static let clusterID: ClusterID = 0x0033
    enum Command {
        static let testEventTrigger: CommandID = 0, timeSnapshot: CommandID = 1, timeSnapshotResponse: CommandID = 2
    }

    let id = GeneralDiagnosticsCluster.clusterID
    let revision: UInt16 = 2
    let attributes = [
        AttributeDefinition(0, "NetworkInterfaces", [.list]),
        AttributeDefinition(1, "RebootCount", [.nonVolatile]),
        AttributeDefinition(2, "UpTime"),
        AttributeDefinition(8, "TestEventTriggersEnabled"),
    ]
    let acceptedCommands = [
        CommandDefinition(Command.testEventTrigger, "TestEventTrigger", privilege: .manage),
        CommandDefinition(Command.timeSnapshot, "TimeSnapshot", response: Command.timeSnapshotResponse),
    ]
    let generatedCommands = [Command.timeSnapshotResponse]

    private let state: CommissioningState
    private let interfaces: @Sendable () -> [NetworkInterfaceInfo]
    private let started: MatterInstant
    private let uptime: @Sendable () -> MatterInstant

    /// `now` is the node's clock: UpTime is read from it.
    init(state: CommissioningState, interfaces: @escaping @Sendable () -> [NetworkInterfaceInfo],
         started: MatterInstant, now: @escaping @Sendable () -> MatterInstant) {
        self.state = state
        self.interfaces = interfaces
        self.started = started
        self.uptime = now
    }

    func read(_ attribute: AttributeID, context: ReadContext) throws(IMError) -> TLVValue {
        switch attribute {
        case 0:
            return .array(interfaces().map { info in
                TLVElement.structure {
                    TLVElement(context: 0, .utf8(info.name))
                    TLVElement(context: 1, .bool(info.isOperational))
                    TLVElement(context: 2, .null)
                    TLVElement(context: 3, .null)
                    TLVElement(context: 4, .bytes(info.hardwareAddress))
                    TLVElement.array(tag: .context(5)) { info.ipv4Addresses.map { TLVElement(.bytes($0)) } }
                    TLVElement.array(tag: .context(6)) { info.ipv6Addresses.map { TLVElement(.bytes($0)) } }
                    // InterfaceTypeEnum: Ethernet.
                    TLVElement(context: 7, .uint(UInt8(2)))
                }
            })
        case 1: return .uint(state.rebootCount)
        case 2: return .uint(UInt64(max(0, (uptime() - started) / 1000)))
        case 8: return .bool(false)
        default: throw unsupported(attribute, "GeneralDiagnostics")
        }
    }

    func invoke(_ command: CommandID, fields: TLVElement?, context: ActionContext) throws(IMError) -> CommandResult {
        switch command {
        case Command.testEventTrigger:
            // No test event triggers: TestEventTriggersEnabled is false, so every key is refused.
            throw IMError(.constraintError, "this node has no test event triggers")
        case Command.timeSnapshot:
            let milliseconds = UInt64(max(0, context.now - started))
            return .response(Command.timeSnapshotResponse, responseFields {
                TLVElement(context: 0, .uint(milliseconds))
                TLVElement(context: 1, .null)
            })
        default:
            throw IMError(.unsupportedCommand, "GeneralDiagnostics has no command 0x\(String(command, radix: 16))")
        }
    }
}
