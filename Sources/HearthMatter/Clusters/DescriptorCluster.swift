// Descriptor (0x001D): what an endpoint is (device types), which clusters it serves and which endpoints are its
// parts. Read from the data model itself, so it can never disagree with what the node serves.

/// The Descriptor cluster of one endpoint.
final class DescriptorCluster: ClusterServer {
    static let clusterID: ClusterID = 0x001D

    enum Attribute {
        static let deviceTypeList: AttributeID = 0
        static let serverList: AttributeID = 1
        static let clientList: AttributeID = 2
        static let partsList: AttributeID = 3
    }

    let id: ClusterID = DescriptorCluster.clusterID
    let revision: UInt16 = 2
    let attributes: [AttributeDefinition] = [
        AttributeDefinition(Attribute.deviceTypeList, "DeviceTypeList", [.list, .fixed]),
        AttributeDefinition(Attribute.serverList, "ServerList", [.list, .fixed]),
        AttributeDefinition(Attribute.clientList, "ClientList", [.list, .fixed]),
        AttributeDefinition(Attribute.partsList, "PartsList", [.list]),
    ]

    private let endpoint: EndpointID
    /// Unowned: the model owns its endpoints and so this cluster.
    private unowned let model: DataModel

    init(endpoint: EndpointID, model: DataModel) {
        self.endpoint = endpoint
        self.model = model
    }

    func read(_ attribute: AttributeID, context: ReadContext) throws(IMError) -> TLVValue {
        switch attribute {
        case Attribute.deviceTypeList:
            let types = model.endpoint(endpoint)?.deviceTypes ?? []
            return .array(types.map { type in
                .structure {
                    TLVElement(context: 0, .uint(type.deviceType))
                    TLVElement(context: 1, .uint(type.revision))
                }
            })
        case Attribute.serverList:
            return .array(model.clusters(on: endpoint).map { TLVElement(.uint($0.id)) })
        case Attribute.clientList:
            return .array([])
        case Attribute.partsList:
            return .array(model.parts(of: endpoint).map { TLVElement(.uint($0)) })
        default:
            throw IMError(.unsupportedAttribute, "Descriptor has no attribute 0x\(String(attribute, radix: 16))")
        }
    }
}
