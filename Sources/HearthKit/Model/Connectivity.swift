internal import HearthModel

/// Whether a trait, device type or device can be reached, and where its data comes from (the Home APIs'
/// `SourceConnectivity`). `ConnectivityState` and `LocalityType` are the hub's own (`SharedVocabulary.swift`).
public struct SourceConnectivity: Sendable, Hashable, CustomStringConvertible {
    public var connectivityState: ConnectivityState
    public var dataSourceLocality: LocalityType

    public init(connectivityState: ConnectivityState, dataSourceLocality: LocalityType) {
        self.connectivityState = connectivityState
        self.dataSourceLocality = dataSourceLocality
    }

    /// Nothing heard yet.
    public static let unknown = SourceConnectivity(connectivityState: .unknown, dataSourceLocality: .unspecified)

    public var description: String { "\(connectivityState.rawValue), \(dataSourceLocality.rawValue)" }

    /// Whether a command or a write may be sent: the source is online and known (docs/model.md).
    public var acceptsCommands: Bool { connectivityState == .online && dataSourceLocality != .unspecified }

    /// A published `{"connectivityState":…,"dataSourceLocality":…}`; unknown words read as unknown.
    init(json: JSON?) {
        connectivityState =
            json?["connectivityState"]?.stringValue.flatMap(ConnectivityState.init(rawValue:)) ?? .unknown
        dataSourceLocality =
            json?["dataSourceLocality"]?.stringValue.flatMap(LocalityType.init(rawValue:)) ?? .unspecified
    }

    var json: JSON {
        .object([("connectivityState", .string(connectivityState.rawValue)),
                 ("dataSourceLocality", .string(dataSourceLocality.rawValue))])
    }

    /// The value of a whole from its parts, by the hub's own rule (`SourceConnectivity.aggregate` in HearthModel),
    /// so a client that recomputes a device's connectivity gets what a hub would publish.
    static func aggregate(_ parts: [SourceConnectivity]) -> SourceConnectivity {
        let model = HearthModel.SourceConnectivity.aggregate(
            parts.map { HearthModel.SourceConnectivity($0.connectivityState, $0.dataSourceLocality) })
        return SourceConnectivity(
            connectivityState: model.connectivityState, dataSourceLocality: model.dataSourceLocality)
    }
}

/// A trait's metadata (the Home APIs' `TraitMetadata`).
public struct TraitMetadata: Sendable, Hashable {
    public var sourceConnectivity: SourceConnectivity
}

/// A device type's metadata (the Home APIs' `DeviceTypeMetadata`).
public struct DeviceTypeMetadata: Sendable, Hashable {
    /// Exactly one type of a device is its primary one (the light of a light with a speaker).
    public var isPrimaryType: Bool
    /// Aggregated from the type's traits.
    public var sourceConnectivity: SourceConnectivity
}
