// The commissioning window an administrator opens on a node that already has a fabric (Matter 1.4 §5.4.2.3, §11.19):
// an enhanced one with the PASE verifier, discriminator, iterations and salt the administrator sends (or the hub makes
// for `hearthd matter open-window`), or a basic one with the node's own passcode. While one is open the node accepts
// PASE with its verifier and advertises `_matterc._udp` beside its operational records. It closes on its timeout (on
// the injected clock, through `expireIfDue`), on CommissioningComplete, on RevokeCommissioning and on a reset.
//
// The window a node without a fabric has is not this: that one is implicit (the node's own passcode, always open
// until the first fabric), and WindowStatus reads WindowNotOpen for it, as the specification's attribute describes
// only windows opened through this cluster.

import HearthSync

/// WindowStatus (CommissioningWindowStatusEnum).
public enum CommissioningWindowStatus: UInt8, Sendable {
    case notOpen = 0
    case enhancedOpen = 1
    case basicOpen = 2
}

/// An open commissioning window.
public struct CommissioningWindowInfo: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// The Enhanced Commissioning Method: the opener's verifier and discriminator.
        case enhanced(verifier: PASEVerifier, discriminator: UInt16)
        /// The Basic Commissioning Method: the node's own passcode and discriminator.
        case basic
    }

    public var kind: Kind
    /// The fabric of the administrator that opened it; nil when the hub opened it locally, or once that fabric went.
    public var adminFabricIndex: FabricIndex?
    public var adminVendorID: UInt16?
    public var deadline: MatterInstant

    public var status: CommissioningWindowStatus {
        switch kind {
        case .enhanced: .enhancedOpen
        case .basic: .basicOpen
        }
    }
}

/// Why a window did not open or could not be revoked: each maps to the cluster's status (§11.19.6).
public enum CommissioningWindowError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A window is open already (cluster status Busy).
    case windowAlreadyOpen
    /// The fail-safe is armed: another commissioning is under way (cluster status Busy).
    case failSafeArmed
    /// The PASE parameters are not valid (cluster status PAKEParameterError).
    case pakeParameters(String)
    /// The timeout is outside MinCommissioningTimeout…15 minutes (INVALID_COMMAND).
    case timeoutOutOfRange(seconds: Int)
    /// The discriminator is over 4095 (INVALID_COMMAND).
    case discriminatorOutOfRange(Int)
    /// RevokeCommissioning with no window open (cluster status WindowNotOpen).
    case windowNotOpen

    public var description: String {
        switch self {
        case .windowAlreadyOpen: "a commissioning window is open already"
        case .failSafeArmed: "a commissioning is under way (the fail-safe is armed)"
        case .pakeParameters(let why): "the PASE parameters are not valid: \(why)"
        case .timeoutOutOfRange(let seconds):
            "a window's timeout is \(CommissioningWindow.minimumTimeoutSeconds)…"
                + "\(CommissioningWindow.maximumTimeoutSeconds) seconds, not \(seconds)"
        case .discriminatorOutOfRange(let value): "discriminator \(value) is over 4095"
        case .windowNotOpen: "no commissioning window is open"
        }
    }
}

/// What the node's sessions and advertisements must follow.
public enum CommissioningWindowEvent: Sendable, Equatable {
    case opened(CommissioningWindowStatus)
    case closed(CommissioningWindow.CloseReason)
}

/// The node's commissioning window: one owner behind one lock.
public final class CommissioningWindow: Sendable {
    /// MinCommissioningTimeout (§5.4.2.3.1): 3 minutes.
    public static let minimumTimeoutSeconds = 180
    /// The longest window: 15 minutes.
    public static let maximumTimeoutSeconds = 900

    public enum CloseReason: Sendable, Equatable {
        case timeout, commissioned, revoked, reset
    }

    private struct Inner {
        var window: CommissioningWindowInfo?
        var events: [CommissioningWindowEvent] = []
    }

    private let inner = Locked(Inner())
    private let changes: Locked<(@Sendable () -> Void)?> = Locked(nil)

    public init() {}

    /// Sets who hears that the cluster's attributes changed (its DataVersion moves).
    public func onChange(_ handler: @escaping @Sendable () -> Void) { changes.withLock { $0 = handler } }

    private func changed() { changes.withLock { $0 }?() }

    public var current: CommissioningWindowInfo? { inner.withLock { $0.window } }
    public var status: CommissioningWindowStatus { current?.status ?? .notOpen }
    public var nextDeadline: MatterInstant? { current?.deadline }

    /// The events since the last call, emptied.
    public func takeEvents() -> [CommissioningWindowEvent] {
        inner.withLock { state in
            defer { state.events = [] }
            return state.events
        }
    }

    /// Checks a window's timeout (seconds) against the specification's bounds.
    public static func checkTimeout(_ seconds: Int) throws(CommissioningWindowError) {
        guard (minimumTimeoutSeconds...maximumTimeoutSeconds).contains(seconds) else {
            throw .timeoutOutOfRange(seconds: seconds)
        }
    }

    /// Opens a window for `timeoutSeconds` from `now`, unless one is open or a commissioning is under way.
    public func open(_ kind: CommissioningWindowInfo.Kind, timeoutSeconds: Int, adminFabricIndex: FabricIndex?,
                     adminVendorID: UInt16?, failSafeArmed: Bool, now: MatterInstant) throws(CommissioningWindowError) {
        try inner.withLock { (state) throws(CommissioningWindowError) in
            guard state.window == nil else { throw .windowAlreadyOpen }
            guard !failSafeArmed else { throw .failSafeArmed }
            try Self.checkTimeout(timeoutSeconds)
            if case .enhanced(_, let discriminator) = kind, discriminator > SetupDiscriminator.maximum {
                throw .discriminatorOutOfRange(Int(discriminator))
            }
            let window = CommissioningWindowInfo(
                kind: kind, adminFabricIndex: adminFabricIndex, adminVendorID: adminVendorID,
                deadline: now + Int64(timeoutSeconds) * 1000)
            state.window = window
            state.events.append(.opened(window.status))
        }
        changed()
    }

    /// Closes the open window; throws `windowNotOpen` when there is none.
    public func close(_ reason: CloseReason) throws(CommissioningWindowError) {
        try inner.withLock { (state) throws(CommissioningWindowError) in
            guard state.window != nil else { throw .windowNotOpen }
            state.window = nil
            state.events.append(.closed(reason))
        }
        changed()
    }

    /// Closes the window if its time has come. Returns whether it did.
    @discardableResult
    public func expireIfDue(now: MatterInstant) -> Bool {
        let expired = inner.withLock { state -> Bool in
            guard let window = state.window, now >= window.deadline else { return false }
            state.window = nil
            state.events.append(.closed(.timeout))
            return true
        }
        if expired { changed() }
        return expired
    }

    /// The opener's fabric went: AdminFabricIndex and AdminVendorId read null (§11.19.7.2), the window stays open.
    func fabricRemoved(_ index: FabricIndex) {
        let cleared = inner.withLock { state -> Bool in
            guard state.window?.adminFabricIndex == index else { return false }
            state.window?.adminFabricIndex = nil
            state.window?.adminVendorID = nil
            return true
        }
        if cleared { changed() }
    }

    /// The verifier PASE uses now: the enhanced window's, the node's own for a basic window or a node without a
    /// fabric, else nil (the node is not commissionable).
    public func paseVerifier(nodeVerifier: PASEVerifier, isCommissioned: Bool) -> PASEVerifier? {
        switch current?.kind {
        case .enhanced(let verifier, _): verifier
        case .basic: nodeVerifier
        case nil: isCommissioned ? nil : nodeVerifier
        }
    }
}
