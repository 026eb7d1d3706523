/// A trait's, device type's or device's connectivity and locality.
public struct SourceConnectivity: Sendable, Hashable, CustomStringConvertible {
    public var connectivityState: ConnectivityState
    public var dataSourceLocality: DataSourceLocality

    public init(_ state: ConnectivityState, _ locality: DataSourceLocality) {
        connectivityState = state
        dataSourceLocality = locality
    }

    /// This hub's own hardware, working.
    public static let directOnline = SourceConnectivity(.online, .direct)
    /// Nothing heard yet.
    public static let notHeardFrom = SourceConnectivity(.unknown, .unspecified)

    /// Commands can be sent only to a trait whose source is online and known.
    public var acceptsCommands: Bool { connectivityState == .online && dataSourceLocality != .unspecified }

    public var description: String { "\(connectivityState.rawValue)/\(dataSourceLocality.rawValue)" }

    /// Combines parts into the value of the whole, as `shared/spec/home-api.md` documents.
    ///
    /// States: all online → online; all offline → offline; nothing but unknown (or nothing) → unknown;
    /// any other mix → partiallyOnline. Localities: unspecified parts are ignored while others are
    /// known; one known locality → it; several → mixed; none → unspecified.
    @inlinable
    public static func aggregate<S: Sequence>(_ parts: S) -> SourceConnectivity where S.Element == SourceConnectivity {
        var online = false, offline = false, unknown = false, partial = false
        var locality: DataSourceLocality?
        var mixed = false
        for part in parts {
            switch part.connectivityState {
            case .online: online = true
            case .offline: offline = true
            case .unknown: unknown = true
            case .partiallyOnline: partial = true
            }
            switch part.dataSourceLocality {
            case .unspecified: break
            case .mixed: mixed = true
            case let l:
                if let seen = locality, seen != l { mixed = true }
                locality = l
            }
        }
        let state: ConnectivityState
        switch (online, offline, unknown, partial) {
        case (true, false, false, false): state = .online
        case (false, true, false, false): state = .offline
        case (false, false, _, false): state = .unknown
        default: state = .partiallyOnline
        }
        return SourceConnectivity(state, mixed ? .mixed : (locality ?? .unspecified))
    }
}
