import HearthContract

/// The topic scheme's promises (`docs/mqtt-api.md`, `TopicScheme`): a prefix is levels split by '/', none empty,
/// with no '+', '#' or NUL, not starting with '$'; a hub or device id is one level (no '/', '+', '#', NUL); what
/// `classify` reads from a topic is what a plain split into levels says, and the topic made from it is that topic
/// byte for byte; every topic the scheme makes is read back as the value it was made from.
///
/// MQTT and brokers see bytes, so the rules are checked here on bytes, and the checks the hub makes
/// (`problem(withPrefix:)`, `problem(withLevel:)`) must agree with them both ways: refusing a good name is a
/// bug too. Input: `prefix\nhub\ntopic` (missing lines default to `hearth`, `hub` and empty).
enum TopicTarget {
    static func run(_ bytes: [UInt8]) throws(FuzzFailure) {
        let parts = bytes.split(separator: UInt8(ascii: "\n"), maxSplits: 2, omittingEmptySubsequences: false)
        let prefix = parts.count > 0 ? String(decoding: parts[0], as: UTF8.self) : "hearth"
        let hub = parts.count > 1 ? String(decoding: parts[1], as: UTF8.self) : "hub"
        let topic = parts.count > 2 ? String(decoding: parts[2], as: UTF8.self) : ""

        let prefixProblem = TopicScheme.problem(withPrefix: prefix)
        try require((prefixProblem == nil) == isValidPrefix(prefix),
                    "problem(withPrefix: \"\(shown(prefix))\") is \(prefixProblem.map { "'\($0)'" } ?? "nil")")
        for level in [hub, topic] {
            let problem = TopicScheme.problem(withLevel: level)
            try require((problem == nil) == isValidLevel(level),
                        "problem(withLevel: \"\(shown(level))\") is \(problem.map { "'\($0)'" } ?? "nil")")
        }
        guard prefixProblem == nil, TopicScheme.problem(withLevel: hub) == nil else { return }

        let scheme = TopicScheme(prefix: prefix, hub: hub)
        // What a hub reads from a topic is what an independent reading of its levels says, and the topic is exactly
        // the one made from what was read.
        let read = scheme.classify(topic)
        let expected = expectedTopic(topic, prefix: prefix)
        try require(
            read == expected && (read.map { r in expected.map { identical(r, $0) } ?? false } ?? true),
            "'\(shown(topic))' read as \(read.map(described) ?? "nil"), expected \(expected.map(described) ?? "nil")")
        if let read {
            try require(Array(scheme.topic(read).utf8) == Array(topic.utf8),
                        "'\(shown(topic))' read as \(described(read)), whose topic is '\(shown(scheme.topic(read)))'")
        }
        if let id = scheme.deviceID(fromSetTopic: topic) {
            try require(read == .set(hub: hub, device: id), "'\(shown(topic))' gave device id '\(shown(id))'")
        }
        if let group = scheme.groupID(fromSetTopic: topic) {
            try require(read == .groupSet(group: group), "'\(shown(topic))' gave group \(group)")
        }

        // Every topic the scheme makes is read back as what it was made from: this hub's, another's, the third line
        // as a hub and as a device id, and a group from the input's bytes.
        var hubs = [hub, hub == "other" ? "another" : "other"]
        var devices = ["lamp"]
        if isValidLevel(topic) {
            hubs.append(topic)
            devices.append(topic)
        }
        var made: [HubTopic] = []
        for h in hubs {
            made += [
                .status(hub: h), .heartbeat(hub: h), .summary(hub: h), .setWithoutDevice(hub: h), .responses(hub: h),
                .answers(hub: h), .home(hub: h), .groups(hub: h), .discoverySync(hub: h)
            ]
            for d in devices {
                made += [.document(hub: h, device: d), .set(hub: h, device: d), .events(hub: h, device: d)]
            }
        }
        let seed = bytes.reduce(0) { ($0 &* 31 &+ Int($1)) & 0xFFFF }
        for group in [1, 0xFFFF, 1 + seed % 0xFFFF] { made.append(.groupSet(group: group)) }
        for value in made {
            let made = scheme.topic(value)
            let back = scheme.classify(made)
            try require(
                back.map { identical($0, value) } == true,
                "\(described(value)) made '\(shown(made))', read back as "
                    + "\(back.map(described) ?? "nil")")
        }
        // The named topics are the ones the values make.
        let named: [(String, HubTopic)] = [
            (scheme.status, .status(hub: hub)), (scheme.heartbeat, .heartbeat(hub: hub)),
            (scheme.devices, .summary(hub: hub)),
            (scheme.responses, .responses(hub: hub)), (scheme.answers, .answers(hub: hub)),
            (scheme.home, .home(hub: hub)),
            (scheme.groups, .groups(hub: hub)), (scheme.discoverySync, .discoverySync(hub: hub)),
        ] + devices.flatMap { d -> [(String, HubTopic)] in
            [(scheme.device(d), .document(hub: hub, device: d)), (scheme.set(d), .set(hub: hub, device: d)),
             (scheme.events(d), .events(hub: hub, device: d))]
        }
        for (topic, value) in named {
            try require(topic == scheme.topic(value), "'\(shown(topic))' is named for \(described(value)), which makes "
                        + "'\(shown(scheme.topic(value)))'")
        }
        // A good id round-trips through its set topic; the third line is tried as an id too.
        if isValidLevel(topic) {
            try require(scheme.deviceID(fromSetTopic: scheme.set(topic)) == topic,
                        "device '\(shown(topic))' is not read back from its own set topic")
        }
    }

    /// What `topic` is under `prefix`, read the plain way: split into levels and matched against the table of
    /// `docs/mqtt-api.md`.
    static func expectedTopic(_ topic: String, prefix: String) -> HubTopic? {
        let t = Array(topic.utf8), p = Array(prefix.utf8)
        guard t.count > p.count, t.starts(with: p), t[p.count] == UInt8(ascii: "/") else { return nil }
        let levels = t[(p.count + 1)...].split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
            .map { String(decoding: $0, as: UTF8.self) }
        switch levels.count {
        case 2 where !levels[0].isEmpty:
            let hub = levels[0]
            switch levels[1] {
            case "status": return .status(hub: hub)
            case "heartbeat": return .heartbeat(hub: hub)
            case "devices": return .summary(hub: hub)
            case "responses": return .responses(hub: hub)
            case "answers": return .answers(hub: hub)
            case "home": return .home(hub: hub)
            case "groups": return .groups(hub: hub)
            case "discovery-sync": return .discoverySync(hub: hub)
            default: return nil
            }
        case 3:
            if levels[0] == "groups", levels[2] == "set", let group = Int(levels[1]), (1...0xFFFF).contains(group),
               String(group) == levels[1] {
                return .groupSet(group: group)
            }
            guard !levels[0].isEmpty, levels[1] == "devices", !levels[2].isEmpty else { return nil }
            return .document(hub: levels[0], device: levels[2])
        case 4 where !levels[0].isEmpty && levels[1] == "devices":
            switch levels[3] {
            case "set":
                return levels[2].isEmpty ? .setWithoutDevice(hub: levels[0]) : .set(hub: levels[0], device: levels[2])
            case "events" where !levels[2].isEmpty: return .events(hub: levels[0], device: levels[2])
            default: return nil
            }
        default:
            return nil
        }
    }

    static func described(_ value: HubTopic) -> String { shown("\(value)") }

    /// Whether `a` and `b` are one value with ids of the same bytes (`==` on strings takes canonically equivalent
    /// spellings for one, and the broker does not).
    static func identical(_ a: HubTopic, _ b: HubTopic) -> Bool {
        func ids(_ v: HubTopic) -> [[UInt8]] {
            switch v {
            case .document(let hub, let device), .set(let hub, let device), .events(let hub, let device):
                return [Array(hub.utf8), Array(device.utf8)]
            default:
                return [Array((v.hub ?? "").utf8)]
            }
        }
        return a == b && ids(a) == ids(b)
    }

    /// The prefix rule on bytes.
    static func isValidPrefix(_ prefix: String) -> Bool {
        let b = Array(prefix.utf8)
        guard let first = b.first, first != UInt8(ascii: "$") else { return false }
        if b.contains(where: { $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "#") || $0 == 0 }) { return false }
        return !b.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).contains { $0.isEmpty }
    }

    /// The rule for one level (a hub or device id) on bytes.
    static func isValidLevel(_ level: String) -> Bool {
        !level.isEmpty
            && !level.utf8.contains {
                $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "#") || $0 == 0
            }
    }
}
