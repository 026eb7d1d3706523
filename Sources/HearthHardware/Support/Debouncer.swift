import HearthEngine

/// Software debounce on edge instants: a level counts only once the line has stayed at it for `window`
/// milliseconds; any number of flips inside the window give at most one change.
struct Debouncer: Sendable, Hashable {
    let window: Int64
    /// The last level that counted.
    private(set) var stable: Bool
    /// The level after the latest edge.
    private(set) var latest: Bool
    private(set) var lastEdge: EngineInstant?

    init(window: Int64, level: Bool) {
        self.window = window
        stable = level
        latest = level
    }

    /// An edge to `level` at `instant` (the kernel's timestamp).
    mutating func edge(to level: Bool, at instant: EngineInstant) {
        latest = level
        if let last = lastEdge, instant < last { return }
        lastEdge = instant
    }

    /// When `settle` next has something to decide.
    var deadline: EngineInstant? { lastEdge.map { $0 + window } }

    /// The new stable level if the line has been quiet for the window and ended elsewhere than it started.
    mutating func settle(at now: EngineInstant) -> Bool? {
        guard let last = lastEdge, now >= last + window else { return nil }
        lastEdge = nil
        guard latest != stable else { return nil }
        stable = latest
        return stable
    }

    /// Starts over at a known level (after the line was re-requested).
    mutating func reset(to level: Bool) {
        stable = level
        latest = level
        lastEdge = nil
    }
}
