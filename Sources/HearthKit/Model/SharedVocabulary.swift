// The words a client shares with the hub: HearthVocabulary's error codes and Matter statuses, connectivity and
// locality, the same types HearthModel uses. HearthKit names them rather than having copies generated, so a client
// never meets a code it cannot name, and a value the hub computes with (`SourceConnectivity.aggregate` in
// HearthModel) needs no translation. Re-exported: `error.code == .notFound` needs only `import HearthKit`.
@_exported public import HearthVocabulary

extension HomeError {
    /// The Google Home APIs' canonical error codes (gRPC's): what an app branches on.
    public typealias Code = HomeErrorCode
    /// Matter interaction-model statuses in lowerCamelCase, with the status byte on the wire (`rawStatus`) and the
    /// canonical code a hub answers with for each (`canonicalCode`).
    public typealias Status = HomeErrorStatus
}

/// Where a trait's data comes from; `mixed` only for device types and devices. The Home APIs' name for
/// `DataSourceLocality`.
public typealias LocalityType = DataSourceLocality
