// Keeps the Matter bridge's peer devices (`matter.bridge: home`) as this hub sees its peers: each device a peer's
// summary lists, of which this hub holds the owner's document, becomes a `PeerBridgedDevice` — its types and traits
// as the document has them, each value read by this hub's descriptor (a value it refuses is left out, as a mirror
// does), Reachable from the owner's connectivity as seen from here. A device this hub has itself, or that two peers
// list, is left out: requests for it do not go to one owner.

import HearthContract
import HearthEngine
import HearthJSON
import HearthMatterBridge
import HearthModel
import HearthSync

final class PeerBridgeFeed: Sendable {
    private let directory: PeerDirectory
    private let bridge: PeerBridge
    private let log: @Sendable (String) -> Void
    /// Held while the bridge is brought up to date, so that two threads' changes (the network thread's, the liveness
    /// loop's) are applied one after the other, each from the directory's state at the time.
    private let turn = Locked(())

    init(directory: PeerDirectory, bridge: PeerBridge, log: @escaping @Sendable (String) -> Void) {
        self.directory = directory
        self.bridge = bridge
        self.log = log
    }

    /// Puts what the directory knows now on the bridge and follows its changes.
    func start() {
        directory.watch { change in self.apply(change) }  // both live as long as the hub
        apply(.link)
    }

    func apply(_ change: PeerDirectory.PeerChange) {
        turn.withLock { _ in
            switch change {
            case .link, .hub:
                // A peer's summary or status can change who owns a device another peer lists: every peer again.
                for hub in directory.peerIDs() { replace(hub) }
            case .document(let hub, let device):
                guard let view = directory.view(of: hub, devices: device) else { return }
                let made = devices(of: hub, view)
                do {
                    if let one = made.first { try bridge.update(one) } else if bridge.endpoints(of: device) != nil,
                        directory.owner(of: device) == hub || directory.owner(of: device) == nil {
                        bridge.remove(device)
                    }
                } catch {
                    log("matter: hub '\(hub)''s device '\(device)' cannot be bridged: \(error)")
                }
            }
        }
    }

    private func replace(_ hub: String) {
        guard let view = directory.view(of: hub) else { return }
        do {
            try bridge.replace(hub: hub, devices: devices(of: hub, view))
        } catch {
            log("matter: hub '\(hub)''s devices cannot be bridged: \(error)")
        }
    }

    /// The devices of `view` this hub bridges, in the summary's order.
    private func devices(of hub: String, _ view: PeerDirectory.PeerView) -> [PeerBridgedDevice] {
        view.devices.compactMap { id, owner in
            guard !directory.home.contains(id), directory.owner(of: id) == hub,
                  let document = view.documents[id] else { return nil }
            return Self.device(id: id, hub: hub, document: document, registry: directory.home.registry,
                               connectivity: { view.connectivity($0 ?? owner) })
        }
    }

    /// A peer's device document as the bridge shows it; nil when it has no type this hub knows.
    static func device(id: String, hub: String, document: JSON, registry: TraitRegistry,
                       connectivity: (ConnectivityState?) -> SourceConnectivity) -> PeerBridgedDevice? {
        // `isMatterDevice` is not read: it says whether the device is on its own hub's node, false for every device of
        // a hub without Matter — the hubs whose devices this bridge is for.
        guard case .array(let typeEntries)? = document["types"] else { return nil }
        var types: [PeerBridgedDevice.DeviceType] = []
        for entry in typeEntries {
            guard case .string(let name)? = entry["type"], let descriptor = DeviceTypeDescriptor.named(name),
                  !types.contains(where: { $0.descriptor.name == name }),
                  case .object(let traitEntries)? = entry["traits"] else { continue }
            var traits: [PeerBridgedDevice.Trait] = []
            for (qualifiedName, owned) in traitEntries {
                let traitID = TraitID(qualifiedName: qualifiedName)
                guard descriptor.allows(traitID), let trait = registry.server(for: traitID)?.descriptor,
                      !traits.contains(where: { $0.id == traitID }) else { continue }
                var values: [String: Value] = [:]
                if case .object(let attributes)? = owned["attributes"] {
                    for (key, json) in attributes {
                        // As a mirror reads its owner: a value this hub's descriptor refuses is left out, never
                        // guessed.
                        if let attribute = trait.attribute(named: key),
                            let v = try? ValueCoding.value(json, as: attribute.type, what: key),
                            (try? attribute.type.check(
                                v, nullable: attribute.isNullable, constraint: attribute.constraint,
                                what: key)) != nil
                        {
                            values[key] = v
                        }
                    }
                }
                var commands: [String] = []
                if case .array(let names)? = owned["commands"] {
                    for n in names { if case .string(let s) = n, trait.command(named: s) != nil { commands.append(s) } }
                }
                traits.append(PeerBridgedDevice.Trait(traitID, values: values, commands: commands))
            }
            let type = PeerBridgedDevice.DeviceType(descriptor, traits: traits)
            if entry["isPrimaryType"] == .bool(true) { types.insert(type, at: 0) } else { types.append(type) }
        }
        guard !types.isEmpty else { return nil }
        var ownerState: ConnectivityState?
        if case .string(let raw)? = document["sourceConnectivity"]?["connectivityState"] {
            ownerState = ConnectivityState(rawValue: raw)
        }
        let name: String = if case .string(let n)? = document["name"] { n } else { id }
        return PeerBridgedDevice(id: id, hub: hub, name: name,
                                 isReachable: connectivity(ownerState).connectivityState == .online, types: types)
    }
}
