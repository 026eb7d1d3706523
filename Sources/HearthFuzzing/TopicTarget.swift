import HearthContract

/// The topic scheme's promises (`docs/mqtt-api.md`, `TopicScheme`): a prefix is levels split by '/', none empty,
/// with no '+', '#' or NUL, not starting with '$'; a hub or device id is one level (no '/', '+', '#', NUL); the
/// device id read from a `set` topic is exactly the one that topic was made from, and so is a group id read from a
/// group topic.
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
        // What the hub reads from a topic is what that topic was made from.
        if let id = scheme.deviceID(fromSetTopic: topic) {
            try require(!id.isEmpty && !id.utf8.contains(UInt8(ascii: "/")), "device id '\(shown(id))' from '\(shown(topic))'")
            try require(Array(scheme.set(id).utf8) == Array(topic.utf8),
                        "'\(shown(topic))' read as device '\(shown(id))', whose set topic is '\(shown(scheme.set(id)))'")
        } else if let levels = scheme.levels(of: topic, maxSplits: 3), levels.count == 4,
                  levels[0].elementsEqual(hub.utf8), levels[1].elementsEqual("devices".utf8),
                  levels[3].elementsEqual("set".utf8), !levels[2].isEmpty {
            throw FuzzFailure("'\(shown(topic))' is a set topic of hub '\(shown(hub))', but no device id was read from it")
        }
        // A group id read from a topic is 1…65535 and that topic is exactly its group topic (no "007", no "+1").
        if let group = scheme.groupID(fromSetTopic: topic) {
            try require((1...0xFFFF).contains(group), "group \(group) from '\(shown(topic))'")
            try require(Array(scheme.groupSet(group).utf8) == Array(topic.utf8),
                        "'\(shown(topic))' read as group \(group), whose topic is '\(shown(scheme.groupSet(group)))'")
        }
        // Every level of a topic under the prefix, joined again, is the topic.
        if let levels = scheme.levels(of: topic, maxSplits: Int.max) {
            var joined = Array(prefix.utf8)
            for level in levels { joined.append(UInt8(ascii: "/")); joined += Array(level) }
            try require(joined == Array(topic.utf8), "levels of '\(shown(topic))' do not join back to it")
        } else {
            try require(!topic.utf8.starts(with: Array(prefix.utf8) + [UInt8(ascii: "/")]),
                        "'\(shown(topic))' is under prefix '\(shown(prefix))' but has no levels")
        }
        // A good id round-trips through its set topic; the third line is tried as an id too.
        if isValidLevel(topic) {
            try require(scheme.deviceID(fromSetTopic: scheme.set(topic)) == topic,
                        "device '\(shown(topic))' is not read back from its own set topic")
        }
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
        !level.isEmpty && !level.utf8.contains { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "#") || $0 == 0 }
    }
}
