public import HearthModel

/// One change in the home, as the MQTT and persistence layers consume it.
public struct HomeEvent: Sendable, Hashable {
    public enum Change: Sendable, Hashable {
        /// An attribute's new value (quiet attributes only when Matter's reporting rules say so).
        case attribute(type: String, trait: TraitID, attribute: String, value: Value)
        /// A trait's source went online, offline, or moved.
        case connectivity(type: String, trait: TraitID, SourceConnectivity)
        /// A trait event, e.g. the Switch's `initialPress`.
        case event(type: String, trait: TraitID, name: String, fields: [String: Value])
        /// The device's name, room or structure changed.
        case metadata
        /// An attribute of the trait is no longer supported: a mirrored trait's owner stopped reporting it (or
        /// reported a value its descriptor refuses). No value to carry; the device's document changed.
        case unsupported(type: String, trait: TraitID, attribute: String)
        /// A trait's table that is no attribute changed (Groups' group table, Scenes Management's scene table).
        case table(type: String, trait: TraitID)
    }

    public var deviceID: String
    public var change: Change

    public init(deviceID: String, change: Change) {
        self.deviceID = deviceID
        self.change = change
    }
}
