// The running hub's Matter node as its web page administers it: the administration the `hearthd matter …` commands
// use (`MatterAdministration`), the hub's own pairing values, and whether the node can be commissioned now — without
// a fabric, or through a window that is open — with the window's remaining time on the node's clock.

public import HearthMatter

/// What the web page's Matter panel acts on.
public struct HubMatter: Sendable {
    public let administration: MatterAdministration
    /// The hub's own passcode and discriminator: what a controller uses while the hub has no fabric.
    public let pairing: MatterPairing

    public init(administration: MatterAdministration, pairing: MatterPairing) {
        self.administration = administration
        self.pairing = pairing
    }

    /// Whether the node can be commissioned now, and through which window.
    public struct Commissioning: Sendable, Equatable {
        /// A commissioning window opened on a node with fabrics.
        public struct Window: Sendable, Equatable {
            /// Enhanced: the opener's passcode (which the node does not know); basic: the hub's own.
            public var isEnhanced: Bool
            /// The discriminator it advertises (an enhanced window's own; nil for a basic one, which uses the hub's).
            public var discriminator: UInt16?
            /// Seconds until it closes, rounded up.
            public var remainingSeconds: Int
            /// The fabric of the administrator that opened it; nil when the hub opened it.
            public var openedByFabric: FabricIndex?

            public init(isEnhanced: Bool, discriminator: UInt16?, remainingSeconds: Int, openedByFabric: FabricIndex?) {
                self.isEnhanced = isEnhanced
                self.discriminator = discriminator
                self.remainingSeconds = remainingSeconds
                self.openedByFabric = openedByFabric
            }
        }

        public var isCommissioned: Bool
        public var window: Window?

        public init(isCommissioned: Bool, window: Window?) {
            self.isCommissioned = isCommissioned
            self.window = window
        }
    }

    /// Read on the node's event loop, as its own requests read it.
    public func commissioning() async throws(MatterAdministrationError) -> Commissioning {
        try await administration.node.administer { (core, now) throws(MatterAdministrationError) in
            _ = core.window.expireIfDue(now: now)
            let window = core.window.current.map { info in
                var discriminator: UInt16?
                if case .enhanced(_, let d) = info.kind { discriminator = d }
                let left = max(0, info.deadline - now)
                return Commissioning.Window(
                    isEnhanced: discriminator != nil, discriminator: discriminator,
                    remainingSeconds: Int((left + 999) / 1000), openedByFabric: info.adminFabricIndex)
            }
            return Commissioning(isCommissioned: !core.commissioning.fabrics.isEmpty, window: window)
        }
    }
}
