// Message counters (core specification 4.6): what a node sends with, and what it remembers of each peer to refuse
// duplicates and replays.

/// Where a counter that must never go back across restarts keeps the highest value it may use. The counter reserves
/// values ahead in blocks, so that storage is written once per block and a restart skips at most one block.
public protocol MessageCounterStore: Sendable {
    /// The limit stored last, or nil when there is none yet.
    func loadLimit() throws -> UInt32?
    /// Stores the new limit; the counter uses no value above the stored limit.
    func storeLimit(_ limit: UInt32) throws
}

/// What can go wrong taking the next counter value.
public enum MessageCounterError: Error, Sendable, Equatable {
    /// A session counter reached its end: the session must be closed and a new one established.
    case exhausted
    /// The store did not keep the reserved block; no value of it is used.
    case storeFailed(String)
}

/// A message counter: a session's (starting at a random value, never wrapping), the global unencrypted one
/// (random, wrapping), or one kept across restarts through a `MessageCounterStore`.
public struct MessageCounter: Sendable {
    /// Where the counters start: random in 1…2^28 (4.6.1.1).
    public static let initialRange: ClosedRange<UInt32> = 1...(1 << 28)
    /// How many values a persistent counter reserves per write.
    public static let defaultReservation: UInt32 = 1 << 12

    /// The value `next()` returns next.
    public private(set) var nextValue: UInt32
    private let wraps: Bool
    private var exhausted = false
    private let store: (any MessageCounterStore)?
    private let reservation: UInt32
    private var limit: UInt32

    /// A session's counter, from a random start; it never wraps.
    public static func session(start: UInt32) -> MessageCounter {
        MessageCounter(start: start, wraps: false)
    }

    /// The global unencrypted counter, from a random start; it wraps.
    public static func unencrypted(start: UInt32) -> MessageCounter {
        MessageCounter(start: start, wraps: true)
    }

    private init(start: UInt32, wraps: Bool) {
        nextValue = start
        self.wraps = wraps
        store = nil
        reservation = 0
        limit = .max
    }

    /// A counter that continues where the stored limit says, or from `start` the first time, and never goes back.
    public init(persistentIn store: any MessageCounterStore, start: UInt32, wraps: Bool = true,
                reservation: UInt32 = MessageCounter.defaultReservation) throws(MessageCounterError) {
        let stored: UInt32?
        do { stored = try store.loadLimit() } catch { throw .storeFailed("\(error)") }
        nextValue = stored.map { $0 &+ 1 } ?? start
        self.wraps = wraps
        self.store = store
        self.reservation = max(1, reservation)
        // Nothing reserved yet: the first `next()` writes.
        limit = nextValue &- 1
    }

    /// The next value to send with.
    public mutating func next() throws(MessageCounterError) -> UInt32 {
        if exhausted { throw .exhausted }
        let value = nextValue
        if let store, value == limit &+ 1 {
            let newLimit = value &+ (reservation - 1)
            do { try store.storeLimit(newLimit) } catch { throw .storeFailed("\(error)") }
            limit = newLimit
        }
        if value == .max && !wraps { exhausted = true } else { nextValue = value &+ 1 }
        return value
    }
}

/// What a receiver knows of a peer's counter: the largest it has accepted and which of the 32 before it it has seen
/// (4.6.5). Check with `check`, and `commit` only once the message is authenticated, so that a forged message changes
/// nothing.
public struct MessageReceptionState: Sendable, Equatable {
    /// The three rules of 4.6.5: encrypted unicast counters never roll over, so anything behind the window is a
    /// duplicate; encrypted group counters roll over and a counter behind the window is a duplicate; unencrypted
    /// counters roll over and a counter behind the window starts afresh (the peer may have restarted).
    public enum Kind: Sendable, Equatable {
        case encryptedUnicast
        case encryptedGroup
        case unencrypted
    }

    public static let windowSize: UInt32 = 32

    public let kind: Kind
    /// The largest counter accepted, nil before the first.
    public private(set) var maxCounter: UInt32?
    /// Bit n set: counter `maxCounter - (n + 1)` was received.
    public private(set) var window: UInt32

    /// A state that has seen nothing: the first counter is accepted, whatever it is.
    public init(kind: Kind) {
        self.kind = kind
        maxCounter = nil
        window = 0
    }

    /// A state synchronized at `maxCounter` (a secure session starts at 0 for its peer, whose counter starts at 1 or
    /// more), every counter of the window taken as received.
    public init(kind: Kind, synchronizedAt maxCounter: UInt32) {
        self.kind = kind
        self.maxCounter = maxCounter
        window = .max
    }

    /// Whether `counter` is new under the rules of the state's kind.
    public func isNew(_ counter: UInt32) -> Bool {
        guard let maxCounter else { return true }
        switch position(of: counter, from: maxCounter) {
        case .ahead: return true
        case .max: return false
        case .inWindow(let offset): return window & (1 << (offset - 1)) == 0
        case .behind: return kind == .unencrypted
        }
    }

    /// Records `counter` as received; call it only for a counter `isNew` accepted.
    public mutating func commit(_ counter: UInt32) {
        guard let max = maxCounter else {
            maxCounter = counter
            window = 0
            return
        }
        switch position(of: counter, from: max) {
        case .ahead(let distance):
            window = distance >= Self.windowSize + 1 ? 0
                : distance == Self.windowSize ? 1 << (Self.windowSize - 1)
                : (window << distance) | (1 << (distance - 1))
            maxCounter = counter
        case .inWindow(let offset):
            window |= 1 << (offset - 1)
        case .behind:
            // Only an unencrypted peer gets here: it starts afresh.
            maxCounter = counter
            window = 0
        case .max:
            break
        }
    }

    /// `isNew` then `commit`: for messages with nothing to authenticate.
    public mutating func accept(_ counter: UInt32) -> Bool {
        guard isNew(counter) else { return false }
        commit(counter)
        return true
    }

    private enum Position {
        case ahead(distance: UInt32)
        case max
        case inWindow(offset: UInt32)
        case behind
    }

    private func position(of counter: UInt32, from max: UInt32) -> Position {
        if counter == max { return .max }
        if kind == .encryptedUnicast {
            if counter > max { return .ahead(distance: counter - max) }
            let offset = max - counter
            return offset <= Self.windowSize ? .inWindow(offset: offset) : .behind
        }
        // With rollover: up to 2^31 - 1 ahead counts as ahead, the rest as behind.
        let delta = counter &- max
        if delta < 1 << 31 { return .ahead(distance: delta) }
        let offset = max &- counter
        return offset <= Self.windowSize ? .inWindow(offset: offset) : .behind
    }
}
