import HearthSync
import HearthModel

/// One device type's membership of one group, with the scenes it holds for that group.
public struct GroupMembership: Sendable, Hashable {
    public struct SceneEntry: Sendable, Hashable {
        public var id: Int
        public var name: String
        /// Milliseconds.
        public var transitionTime: Int
    }

    public var group: Int
    public var deviceID: String
    public var type: String
    /// The name this member has for the group ("" if none).
    public var name: String
    public var scenes: [SceneEntry]
}

extension Home {
    /// Every group membership of every device type with Groups (mirrored types are their owner's), in group, device
    /// and type order: what the hub subscribes to and publishes on `<prefix>/<hub>/groups`.
    public func groupMemberships() -> [GroupMembership] {
        state.withLock { s in
            var result: [GroupMembership] = []
            for device in s.devices {
                for endpoint in device.endpoints {
                    guard let groups = endpoint.groups else { continue }
                    let scenes = endpoint.scenes?.scenes ?? [:]
                    for (id, name) in groups.groups {
                        let entries = scenes.filter { $0.key.group == id }.sorted { $0.key < $1.key }.map {
                            GroupMembership.SceneEntry(
                                id: Int($0.key.scene), name: $0.value.name, transitionTime: $0.value.transitionTime)
                        }
                        result.append(
                            GroupMembership(
                                group: Int(id), deviceID: device.id, type: endpoint.descriptor.name,
                                name: name, scenes: entries))
                    }
                }
            }
            return result.sorted { ($0.group, $0.deviceID, $0.type) < ($1.group, $1.deviceID, $1.type) }
        }
    }
}
