// The message layer's names for the hub's time (HearthClock), re-exported so that every module that imports
// HearthMatter has the clocks too. Retransmissions, acknowledgement timers and session activity run on an injected
// clock, tested step by step without sleeping; the node shares the timeline of the rest of the hub.
@_exported public import HearthClock

/// A point on the hub's monotonic timeline, in milliseconds (MRP's intervals are whole milliseconds).
public typealias MatterInstant = HubInstant

/// The time source the message layer and the node run on.
public typealias MatterClock = HubClock

/// CLOCK_MONOTONIC, which never jumps when the wall clock is set.
public typealias MatterMonotonicClock = MonotonicClock

/// A clock that moves only when a test says so; sleepers wake when `advance` passes their deadline.
public typealias MatterManualClock = ManualClock
