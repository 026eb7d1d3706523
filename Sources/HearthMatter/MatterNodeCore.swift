// The socket-free core of a Matter node: the data model with the root endpoint's clusters, the commissioning state
// they share and the Interaction Model server, assembled from a configuration and the credentials the node is given.
// The node's transport hands it decrypted Interaction Model messages with their session's subject and sends back
// what it answers; `tick` lets the fail-safe expire on the node's clock.

/// What the node says about itself and where it keeps its state.
public struct MatterNodeConfiguration: Sendable {
    public var basicInformation: BasicInformationConfiguration
    /// The node's network interfaces, read whenever NetworkInterfaces or Networks is read.
    public var networkInterfaces: @Sendable () -> [NetworkInterfaceInfo]
    /// The first DataVersion handed out (random at each start, §7.10.3; fixed in tests).
    public var initialDataVersion: UInt32

    public init(basicInformation: BasicInformationConfiguration,
                networkInterfaces: @escaping @Sendable () -> [NetworkInterfaceInfo], initialDataVersion: UInt32) {
        self.basicInformation = basicInformation
        self.networkInterfaces = networkInterfaces
        self.initialDataVersion = initialDataVersion
    }
}

/// A Matter node without its transport.
public final class MatterNodeCore: Sendable {
    public let dataModel: DataModel
    public let interactionModel: InteractionModelServer
    public let commissioning: CommissioningState
    /// The commissioning window an administrator opened (AdministratorCommissioning), if any.
    public let window: CommissioningWindow
    /// The subscriptions kept across a restart.
    public let subscriptionStore: SubscriptionStore

    /// Loads the node's state from `storage` and builds the root endpoint. `started` and `now` are the node's clock.
    public init(configuration: MatterNodeConfiguration, storage: any NodeStorage, keys: any OperationalKeyFactory,
                verifier: any OperationalCertificateVerifier, attestation: any DeviceAttestationCredentials,
                started: MatterInstant, now: @escaping @Sendable () -> MatterInstant) throws(StorageError) {
        let commissioning = try CommissioningState(
            storage: storage, keys: keys, verifier: verifier, attestation: attestation)
        let eventNumbers = try EventNumberSource(storage: storage)
        let dataModel = DataModel(initialDataVersion: configuration.initialDataVersion,
                                  acl: { [commissioning] in commissioning.acl }, eventNumbers: eventNumbers, now: now)
        let interfaces = configuration.networkInterfaces
        let window = CommissioningWindow()
        dataModel.addEndpoint(
            EndpointDefinition(
                id: 0, deviceTypes: [.rootNode],
                clusters: [
                    AccessControlCluster(state: commissioning),
                    BasicInformationCluster(configuration: configuration.basicInformation, state: commissioning),
                    GeneralCommissioningCluster(state: commissioning),
                    NetworkCommissioningCluster {
                        interfaces().first
                            ?? NetworkInterfaceInfo(name: "eth0", isOperational: false, hardwareAddress: [])
                    },
                    GeneralDiagnosticsCluster(state: commissioning, interfaces: interfaces, started: started, now: now),
                    OperationalCredentialsCluster(state: commissioning),
                    GroupKeyManagementCluster(state: commissioning),
                    AdministratorCommissioningCluster(window: window, state: commissioning),
                ]))
        window.onChange { [weak dataModel] in
            dataModel?.markChanged(
                ConcreteClusterPath(endpoint: 0, cluster: AdministratorCommissioningCluster.clusterID))
        }
        commissioning.onChange { [weak dataModel] cluster in
            dataModel?.markChanged(ConcreteClusterPath(endpoint: 0, cluster: cluster))
        }
        // StartUp {0: SoftwareVersion}: a controller reading events learns that the node (re)started.
        dataModel.emitEvent(
            ConcreteEventPath(
                endpoint: 0, cluster: BasicInformationCluster.clusterID,
                event: BasicInformationCluster.startUpEvent),
            priority: .critical,
            data: .structure { TLVElement(context: 0, .uint(configuration.basicInformation.softwareVersion)) })
        let interactionModel = InteractionModelServer(dataModel: dataModel)
        commissioning.onFabricsRemoved { [weak interactionModel] fabrics in
            interactionModel?.removeSubscriptions { fabrics.contains($0.subject.fabricIndex) }
        }
        self.commissioning = commissioning
        self.window = window
        self.dataModel = dataModel
        self.interactionModel = interactionModel
        self.subscriptionStore = SubscriptionStore(storage: storage)
    }

    /// Handles one Interaction Model message of a session; the fail-safe is expired first if its time has come.
    public func receive(opcode: UInt8, payload: [UInt8], exchange: inout IMExchangeState, subject: SubjectDescriptor,
                        now: MatterInstant) -> IMReply {
        commissioning.expireIfDue(now: now)
        window.expireIfDue(now: now)
        return interactionModel.receive(
            opcode: opcode, payload: payload, exchange: &exchange, subject: subject, now: now)
    }

    /// Expires the fail-safe if due; call at `nextDeadline`.
    public func tick(now: MatterInstant) {
        commissioning.expireIfDue(now: now)
        window.expireIfDue(now: now)
    }

    /// When `tick` must next be called, if ever: the fail-safe's or the commissioning window's deadline.
    public var nextDeadline: MatterInstant? {
        [commissioning.nextDeadline, window.nextDeadline].compactMap { $0 }.min()
    }

    /// What the sessions must follow (fabrics added, removed, rolled back), emptied. The commissioning window follows
    /// them here: CommissioningComplete closes it, and its opener's fabric going clears AdminFabricIndex.
    public func takeEvents() -> [CommissioningEvent] {
        let events = commissioning.takeEvents()
        for event in events {
            if case .commissioningCompleted = event { try? window.close(.commissioned) }
            if case .fabricRemoved(let index) = event { window.fabricRemoved(index) }
        }
        return events
    }
}
