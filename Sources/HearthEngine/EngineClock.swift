// The engine's names for the hub's time (HearthClock), re-exported so that every module that imports the engine
// has the clocks too.
@_exported public import HearthClock

/// A point on the engine's timeline, which is the hub's.
public typealias EngineInstant = HubInstant

/// The time source the engine runs on: the hub's clock, injected so that transitions and timeouts are tested step by
/// step without sleeping.
public typealias EngineClock = HubClock
