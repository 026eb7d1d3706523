// A value confined to one thread (an event loop, an exchange manager's owner) carried through a `@Sendable` closure
// that hops back to that thread before touching it: the compiler cannot see the hop, so the promise is written here.

/// A value only ever unwrapped on the thread that owns it.
struct LoopBound<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
