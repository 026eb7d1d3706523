import HearthSync

/// The parts of Home Assistant configs that depend on a device's type alone (its name, its place in the device
/// document, its traits), not on the device: the value and command templates. Every device of a type has the same
/// ones, so each is written and encoded as JSON once per hub and copied into every config after that; writing them
/// for each device was most of announcing 1,000 devices (callgrind).
final class TemplateCache: Sendable {
    private let templates = Locked<[String: DiscoveryJSON]>([:])

    /// The template `key` names, with its JSON: from the cache, or made by `make` and kept. `key` must say everything
    /// `make` depends on.
    func string(_ key: String, _ make: () -> String) -> DiscoveryJSON {
        if let known = templates.withLock({ $0[key] }) { return known }
        let s = make()
        var json: [UInt8] = []
        DiscoveryJSON.writeString(s, to: &json)
        let template = DiscoveryJSON.encodedString(s, json: json)
        templates.withLock { $0[key] = template }
        return template
    }
}
