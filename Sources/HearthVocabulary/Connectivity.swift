// A source's connectivity and locality, as the Home APIs name them: what a hub publishes with every trait, device
// type and device, and what a client reads back.

/// Whether a trait's source can be reached (the Home APIs' `ConnectivityState`).
public enum ConnectivityState: String, Sendable, Hashable, CaseIterable {
    case unknown, online, offline
    /// Only for aggregates: some of the underlying traits are online and some are not.
    case partiallyOnline
}

/// Where a trait's data comes from (the Home APIs' `LocalityType`).
public enum DataSourceLocality: String, Sendable, Hashable, CaseIterable {
    /// Not known yet: the source has not been heard from.
    case unspecified
    /// This hub's own hardware.
    case direct
    /// Mirrored from another hub over the local broker.
    case localPeer
    /// Through a bridged or cloud broker, outside the local network.
    case remote
    /// Only for aggregates: the parts come from different places.
    case mixed
}
