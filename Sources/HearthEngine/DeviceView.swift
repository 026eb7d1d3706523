public import HearthModel
import HearthSync

/// A device at one moment, read lazily: the values a `HomeDevice` snapshot holds, without copying every
/// descriptor into it.
///
/// A device document is written after every state change, on the path between a command and the
/// state a client waits for; building a full `HomeDevice` there (a `TraitSnapshot` with copied
/// descriptors per trait) cost as much as running the command. A view shares the engine's storage
/// (copy on write), so taking one is a few reference counts, and it never changes once taken.
public struct DeviceView: Sendable {
    let device: Home.Device

    public var id: String { device.id }
    public var name: String { device.name }
    public var structureID: String? { device.structureID }
    public var roomID: String? { device.roomID }
    public var isMatterDevice: Bool { device.isMatterDevice }
    public var typeCount: Int { device.endpoints.count }
    public func type(_ index: Int) -> DeviceTypeView { DeviceTypeView(endpoint: device.endpoints[index]) }
    /// The aggregate over the device's types, as `HomeDevice.sourceConnectivity`.
    public var sourceConnectivity: SourceConnectivity {
        .aggregate(device.endpoints.lazy.map { SourceConnectivity.aggregate($0.connectivity) })
    }

    // Reading in place, by index, without a view of each type and trait: for writers on the command path.

    public func sourceConnectivity(type t: Int) -> SourceConnectivity { .aggregate(device.endpoints[t].connectivity) }
    public func sourceConnectivity(type t: Int, trait k: Int) -> SourceConnectivity {
        device.endpoints[t].connectivity[k]
    }
    /// The values of the attributes `ids` of the trait, nil where it does not support one, into
    /// `values[0..<ids.count]` (grown to that if shorter; its storage is reused, so a writer calling this per document
    /// allocates nothing).
    public func readValues(type t: Int, trait k: Int, of ids: [UInt32], into values: inout [Value?]) {
        if values.count < ids.count { values.append(contentsOf: repeatElement(nil, count: ids.count - values.count)) }
        device.endpoints.withUnsafeBufferPointer { endpoints in
            endpoints[t].traits.withUnsafeBufferPointer { traits in traits[k].read(ids, into: &values, at: 0) }
        }
    }

    /// Which of `commands` the trait takes, as bits (bit i for `commands[i]`, the first 64 only); it can
    /// change for a trait mirrored from a peer.
    public func supportedCommands(type t: Int, trait k: Int, of commands: [CommandDescriptor]) -> UInt64 {
        device.endpoints.withUnsafeBufferPointer { endpoints in
            endpoints[t].traits.withUnsafeBufferPointer { traits in traits[k].supportedCommands(of: commands) }
        }
    }
}

/// One device type of a `DeviceView`.
public struct DeviceTypeView: Sendable {
    let endpoint: Endpoint

    public var descriptor: DeviceTypeDescriptor { endpoint.descriptor }
    /// The type's name, without a copy of its whole descriptor.
    public var name: String { endpoint.descriptor.name }
    public var isPrimaryType: Bool { endpoint.isPrimary }
    public var traitCount: Int { endpoint.traits.count }
    public func traitDescriptor(_ index: Int) -> TraitDescriptor { type(of: endpoint.traits[index]).descriptor }
    /// A trait's id, without a copy of its descriptor.
    public func traitID(_ index: Int) -> TraitID { endpoint.traitID(at: index) }
    /// A trait's Matter FeatureMap.
    public func featureMap(_ index: Int) -> UInt32 { endpoint.featureMaps[index] }
    /// Whether the type mirrors another hub's device (its owner is another hub).
    public var isMirrored: Bool { endpoint.isMirrored }
    /// A trait's connectivity.
    public func connectivity(_ index: Int) -> SourceConnectivity { endpoint.connectivity[index] }
    /// One object for every device type whose traits are of the same types in the same order (the engine's tables
    /// shared by such endpoints): what a writer keys what it works out per list of traits by, instead of by each id.
    public var traitTypes: any AnyObject & Sendable { endpoint.traitTypes }
    /// An attribute's value, nil where the trait does not support it.
    public func value(trait index: Int, attribute id: UInt32) -> Value? { endpoint.traits[index].read(id) }
}

extension Home {
    /// The device as it is now, read lazily (see `DeviceView`); `device(_:)` for a full snapshot.
    public func view(_ id: String) throws(HomeError) -> DeviceView {
        try state.withLock { s throws(HomeError) in DeviceView(device: s.devices[try Self.deviceIndex(id, in: s)]) }
    }

    /// Every device as it is now, read lazily, in configuration order.
    public func views() -> [DeviceView] {
        state.withLock { s in s.devices.map(DeviceView.init) }
    }

    /// Calls `body` with a view of each device in configuration order, each taken when its turn comes (not a list of
    /// them all first). The lock is not held while `body` runs.
    public func forEachView(_ body: (DeviceView) throws -> Void) rethrows {
        var d = 0
        while let view = state.withLock({ s in d < s.devices.count ? DeviceView(device: s.devices[d]) : nil }) {
            try body(view)
            d += 1
        }
    }

    /// Whether the home has a device with this id.
    public func contains(_ id: String) -> Bool {
        state.withLock { $0.index[id] != nil }
    }
}
