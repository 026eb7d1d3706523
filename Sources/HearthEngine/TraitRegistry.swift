public import HearthModel

/// The traits the engine can run, by id. Adding a trait is one new file plus one line here.
public struct TraitRegistry: Sendable {
    public private(set) var servers: [TraitID: any TraitServer.Type] = [:]

    public init(_ servers: [any TraitServer.Type]) {
        for server in servers { register(server) }
    }

    public mutating func register(_ server: any TraitServer.Type) {
        servers[server.descriptor.id] = server
    }

    public func server(for id: TraitID) -> (any TraitServer.Type)? { servers[id] }

    /// Every standard trait Hearth implements.
    public static let standard = TraitRegistry([
        OnOffServer.self,
        LevelControlServer.self,
        IdentifyServer.self,
        BasicInformationServer.self,
        RelativeHumidityMeasurementServer.self,
        TemperatureMeasurementServer.self,
        SwitchServer.self,
        BooleanStateServer.self,
        OccupancySensingServer.self,
        ColorControlServer.self,
        GroupsServer.self,
        ScenesManagementServer.self,
        ElectricalPowerMeasurementServer.self,
        ElectricalEnergyMeasurementServer.self,
        FanControlServer.self,
        WindowCoveringServer.self,
    ])
}
