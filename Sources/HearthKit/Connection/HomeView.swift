// The devices as this client sees them: every hub's documents, in a stable order, with each trait's connectivity
// and locality as seen from the chosen hub (`Options.hub`) — the rule a hub applies to its own mirrors
// (docs/peer-routing.md): a device whose owner says `offline`, or seen while our own broker link is down, is offline;
// another hub's hardware is `localPeer` (or `remote`, when the chosen hub reaches that hub through a bridge).
extension Home {
    func view(of s: State) -> [HomeDevice] {
        let via = options.hub
        var hubs = s.hubs.keys.sorted()
        if let via, let i = hubs.firstIndex(of: via) {
            hubs.remove(at: i)
            hubs.insert(via, at: 0)
        }
        let viaDown = via.map { s.hubs[$0]?.status == "offline" } ?? false
        let remote = via.map { remoteHubs(seenBy: $0, s) } ?? []
        var devices: [HomeDevice] = []
        for hub in hubs {
            guard let record = s.hubs[hub] else { continue }
            var ids = record.documentOrder
            // The summary is the hub's list of its devices: a document it no longer lists is a leftover.
            if let summary = record.summary?.json {
                ids = summary.arrayValue.compactMap { $0["id"]?.stringValue }.filter { record.documents[$0] != nil }
            }
            let isPeer = via != nil && via != hub
            let offline = !s.linkUp || record.status == "offline" || (isPeer && viaDown)
            let locality: LocalityType? = isPeer ? (remote.contains(hub) ? .remote : .localPeer) : nil
            for id in ids {
                guard let json = record.documents[id]?.json else { continue }
                let seen = offline || locality != nil ? Self.rewrite(json, offline: offline, locality: locality) : json
                devices.append(HomeDevice(json: seen, hub: hub, home: self))
            }
        }
        return devices
    }

    /// The hubs that `hub`'s view of the home (`<prefix>/<hub>/home`) says it reaches through a bridge.
    private func remoteHubs(seenBy hub: String, _ s: State) -> Set<String> {
        var remote = Set<String>()
        for entry in s.hubs[hub]?.homeView?.json?.arrayValue ?? [] {
            guard let owner = entry["hub"]?.stringValue, owner != hub,
                  entry["sourceConnectivity"]?["dataSourceLocality"]?.stringValue == LocalityType.remote.rawValue
            else { continue }
            remote.insert(owner)
        }
        return remote
    }

    /// A document with every trait's connectivity adjusted, and each type's and the device's recomputed from them.
    static func rewrite(_ document: JSON, offline: Bool, locality: LocalityType?) -> JSON {
        func adjusted(_ json: JSON?) -> SourceConnectivity {
            var c = SourceConnectivity(json: json)
            if offline { c.connectivityState = .offline }
            if let locality, c.dataSourceLocality == .direct { c.dataSourceLocality = locality }
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
