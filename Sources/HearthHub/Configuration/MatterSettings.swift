import HearthConfig

/// The `matter:` section: whether the hub is a Matter node, where it listens, and the fixed pairing values a test
/// may give it. Pairing values not given are chosen at the first start and kept in the state directory.
public struct MatterSettings: Sendable, Equatable {
    /// nil when not written: the hub decides by its board (on for a board, off for the simulated one, where many
    /// hubs may share a machine and its port).
    public var enabled: Bool?
    public var port = 5540
    /// Empty: every interface but loopback.
    public var interfaces: [String] = []
    public var discriminator: Int?
    public var passcode: Int?
    /// What the bridge shows: the hub's own devices, or the whole home as the hub sees it (its peers' devices too).
    public var bridge: BridgeScope = .hub

    /// `matter.bridge`: whose devices the hub's Matter bridge shows.
    public enum BridgeScope: String, Sendable, Equatable, CaseIterable {
        /// The hub's own devices (a peer's are left to the peer's bridge).
        case hub
        /// Every device of the home the hub sees: its own and its peers', a peer's reached through peer routing.
        case home
    }

    public init() {}

    /// Matter's discriminator is 12 bits.
    public static let discriminators = 0...0xFFF
    /// Matter's passcodes: 1…99 999 998 (27 bits, eight decimal digits), less `trivialPasscodes`.
    public static let passcodes = 1...99_999_998
    /// The passcodes the specification forbids because they are guessed first.
    public static let trivialPasscodes: Set<Int> = [
        0, 11_111_111, 22_222_222, 33_333_333, 44_444_444, 55_555_555, 66_666_666, 77_777_777, 88_888_888,
        99_999_999, 12_345_678, 87_654_321,
    ]

    /// Whether the node runs on a board that `simulated` says is (or is not) the simulated one.
    public func isEnabled(simulatedBoard: Bool) -> Bool { enabled ?? !simulatedBoard }
}

extension HubConfiguration {
    static func readMatter(_ m: ConfigMap, into settings: inout MatterSettings) {
        if let enabled = m.bool("enabled") { settings.enabled = enabled }
        if let port = m.int("port") { settings.port = port }
        if let names = m["interfaces"]?.list {
            settings.interfaces = names.compactMap(\.string)
            if let empty = names.first(where: { $0.string?.isEmpty == true }) {
                empty.problem("an interface name is not empty, e.g. eth0")
            }
        }
        if let discriminator = m.int("discriminator") { settings.discriminator = discriminator }
        if let scope = m.text("bridge").flatMap(MatterSettings.BridgeScope.init(rawValue:)) { settings.bridge = scope }
        if let passcode = m.int("passcode") {
            if MatterSettings.trivialPasscodes.contains(passcode) {
                m["passcode"]?.problem(
                    "\(passcode) is a passcode Matter forbids because it is guessed first; pick another")
            } else {
                settings.passcode = passcode
            }
        }
    }
}
