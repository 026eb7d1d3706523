// The devices as this client sees them: every hub's documents, in a stable order, with each trait's connectivity
// and locality as seen from the chosen hub (`Options.hub`) — the rule a hub applies to its own mirrors
// (docs/peer-routing.md): a device whose owner says `offline`, or seen while our own broker link is down, is offline;
// another hub's device is as the chosen hub sees it (its `<prefix>/<hub>/home`): `localPeer` (or `remote`, through a
// bridge), `unknown` until that hub has heard from its owner, `offline` when it says so.
extension Home {
    func view(of s: State) -> [HomeDevice] {
        let via = options.hub
        var hubs = s.hubs.keys.sorted()
        if let via, let i = hubs.firstIndex(of: via) {
            hubs.remove(at: i)
            hubs.insert(via, at: 0)
        }
        let viaDown = via.map { s.hubs[$0]?.status == "offline" } ?? false
        let seenByVia = via.map { peerDevices(seenBy: $0, s) } ?? [:]
        var devices: [HomeDevice] = []
        for hub in hubs {
            guard let record = s.hubs[hub] else { continue }
            var ids = record.documentOrder
            // The summary is the hub's list of its devices: a document it no longer lists is a leftover.
            if let summary = record.summary?.json {
                ids = summary.arrayValue.compactMap { $0["id"]?.stringValue }.filter { record.documents[$0] != nil }
            }
            let isPeer = via != nil && via != hub
            for id in ids {
                guard let json = record.documents[id]?.json else { continue }
                var adjustment = Adjustment()
                if !s.linkUp || record.status == "offline" { adjustment.offline = true }
                if isPeer {
                    // Seen through another hub: as that hub sees it, which it publishes in its view of the home.
                    let seen = seenByVia["\(hub)/\(id)"]
                    adjustment.locality = seen?.dataSourceLocality == .remote ? .remote : .localPeer
                    switch seen?.connectivityState {
                    case nil, .unknown?: adjustment.notHeardFrom = true
                    case .offline?: adjustment.offline = true
                    case .online?, .partiallyOnline?: break
                    }
                    if viaDown { adjustment.offline = true }
                }
                let shown = adjustment.changesAnything ? Self.rewrite(json, adjustment) : json
                devices.append(HomeDevice(json: shown, hub: hub, home: self))
            }
        }
        return devices
    }

    /// How a hub sees the devices of other hubs, from its view of the home (`<prefix>/<hub>/home`), by "hub/id".
    private func peerDevices(seenBy hub: String, _ s: State) -> [String: SourceConnectivity] {
        var seen: [String: SourceConnectivity] = [:]
        for entry in s.hubs[hub]?.homeView?.json?.arrayValue ?? [] {
            guard let owner = entry["hub"]?.stringValue, owner != hub, let id = entry["id"]?.stringValue else {
                continue
            }
            seen["\(owner)/\(id)"] = SourceConnectivity(json: entry["sourceConnectivity"])
        }
        return seen
    }

    struct Adjustment {
        /// The owner (or the hub it is seen through, or our own broker link) is down.
        var offline = false
        /// The hub it is seen through has not heard from the owner yet.
        var notHeardFrom = false
        /// Another hub's hardware: `localPeer` or `remote` where the owner says `direct`.
        var locality: LocalityType?

        var changesAnything: Bool { offline || notHeardFrom || locality != nil }
    }

    /// A document with every trait's connectivity adjusted, and each type's and the device's recomputed from them.
    static func rewrite(_ document: JSON, _ adjustment: Adjustment) -> JSON {
        func adjusted(_ json: JSON?) -> SourceConnectivity {
            var c = SourceConnectivity(json: json)
            if let locality = adjustment.locality, c.dataSourceLocality == .direct { c.dataSourceLocality = locality }
            if adjustment.notHeardFrom { c = .unknown }
            if adjustment.offline {
                c.connectivityState = .offline
                if c.dataSourceLocality == .unspecified, let locality = adjustment.locality {
                    c.dataSourceLocality = locality
                }
            }
            return c
        }
        var typeParts: [SourceConnectivity] = []
        let types = document["types"]?.arrayValue.map { type -> JSON in
            var traitParts: [SourceConnectivity] = []
            let traits = type["traits"]?.members.map { name, trait -> (key: String, value: JSON) in
                let c = adjusted(trait["sourceConnectivity"])
                traitParts.append(c)
                return (name, trait.replacing("sourceConnectivity", with: c.json))
            } ?? []
            let c = traitParts.isEmpty ? adjusted(type["sourceConnectivity"]) : .aggregate(traitParts)
            typeParts.append(c)
            return type.replacing("traits", with: .object(traits)).replacing("sourceConnectivity", with: c.json)
        } ?? []
        let c = typeParts.isEmpty ? adjusted(document["sourceConnectivity"]) : .aggregate(typeParts)
        return document.replacing("types", with: .array(types)).replacing("sourceConnectivity", with: c.json)
    }
}

extension JSON {
    /// An object with `key`'s value replaced where it stands (or added at the end); other values unchanged.
    func replacing(_ key: String, with value: JSON) -> JSON {
        guard case .object(var members) = self else { return self }
        if let i = members.firstIndex(where: { $0.key == key }) {
            members[i].value = value
        } else {
            members.append((key, value))
        }
        return .object(members)
    }
}
