import HearthMatter
import HearthSync
import Testing

@Suite struct MessageCounterTests {
    @Test func sessionCountersIncreaseAndNeverWrap() throws {
        var counter = MessageCounter.session(start: .max - 1)
        let nextOfCounter = { () throws(MessageCounterError) -> UInt32 in try counter.next() }
        #expect(try nextOfCounter() == .max - 1)
        #expect(try nextOfCounter() == .max)
        #expect(throws: MessageCounterError.exhausted) { try nextOfCounter() }
        #expect(throws: MessageCounterError.exhausted) { try nextOfCounter() }
    }

    @Test func theUnencryptedCounterWraps() throws {
        var counter = MessageCounter.unencrypted(start: .max)
        let nextOfCounter = { () throws(MessageCounterError) -> UInt32 in try counter.next() }
        #expect(try nextOfCounter() == .max)
        #expect(try nextOfCounter() == 0)
        #expect(try nextOfCounter() == 1)
    }

    final class MemoryStore: MessageCounterStore {
        let limit = Locked<UInt32?>(nil)
        let writes = Locked(0)
        let failing = Locked(false)
        struct Refused: Error {}
        func loadLimit() throws -> UInt32? { limit.withLock { $0 } }
        func storeLimit(_ value: UInt32) throws {
            if failing.withLock({ $0 }) { throw Refused() }
            limit.withLock { $0 = value }
            writes.withLock { $0 += 1 }
        }
    }

    @Test func aPersistentCounterReservesAheadAndNeverGoesBack() throws {
        let store = MemoryStore()
        var counter = try MessageCounter(persistentIn: store, start: 1000, reservation: 10)
        let first = try (0..<25).map { _ in try counter.next() }
        #expect(first == Array(1000..<1025))
        #expect(store.writes.withLock { $0 } == 3)
        #expect(store.limit.withLock { $0 } == 1029)
        // A restart: the counter continues after the reserved block, never reusing a value it may have sent.
        var restarted = try MessageCounter(persistentIn: store, start: 1000, reservation: 10)
        let nextOfRestarted = { () throws(MessageCounterError) -> UInt32 in try restarted.next() }
        #expect(try nextOfRestarted() == 1030)
        #expect(store.limit.withLock { $0 } == 1039)
        // A store that fails: no value of the unreserved block is used.
        var failing = try MessageCounter(persistentIn: store, start: 0, reservation: 10)
        let nextOfFailing = { () throws(MessageCounterError) -> UInt32 in try failing.next() }
        store.failing.withLock { $0 = true }
        #expect(throws: MessageCounterError.storeFailed("Refused()")) { try nextOfFailing() }
        store.failing.withLock { $0 = false }
        #expect(try nextOfFailing() == 1040)
    }

    @Test func encryptedUnicastWindow() {
        var state = MessageReceptionState(kind: .encryptedUnicast, synchronizedAt: 0)

        let accept = { (counter: UInt32) in state.accept(counter) }
        #expect(accept(100))
        #expect(!accept(100))
        #expect(accept(99))
        #expect(!accept(99))
        #expect(accept(68))  // 32 behind: the window's last slot
        #expect(!accept(67))  // 33 behind: outside, a duplicate for encrypted unicast
        #expect(accept(150))
        #expect(!accept(100))  // now behind the window
        #expect(accept(149))
        // No rollover: a counter far below is old, not new.
        #expect(!state.isNew(1))
        #expect(accept(.max))
        #expect(!state.isNew(0))
    }

    @Test func checkingChangesNothingUntilCommitted() {
        var state = MessageReceptionState(kind: .encryptedUnicast, synchronizedAt: 0)

        let accept = { (counter: UInt32) in state.accept(counter) }
        #expect(accept(10))
        let before = state
        #expect(state.isNew(11))
        #expect(state == before)
        state.commit(11)
        #expect(!state.isNew(11))
    }

    @Test func shiftingByExactlyTheWindowKeepsTheOldMaximum() {
        var state = MessageReceptionState(kind: .encryptedUnicast, synchronizedAt: 0)

        let accept = { (counter: UInt32) in state.accept(counter) }
        #expect(accept(10))
        #expect(accept(42))  // 10 is now 32 behind, and was seen
        #expect(!state.isNew(10))
        #expect(state.isNew(11))
        #expect(accept(75))  // 42 is 33 behind: outside
        #expect(!state.isNew(42))
    }

    @Test func groupCountersRollOverAndRefuseWhatIsBehind() {
        var state = MessageReceptionState(kind: .encryptedGroup)

        let accept = { (counter: UInt32) in state.accept(counter) }
        #expect(accept(.max - 1))  // the first is trusted
        #expect(accept(2))  // rollover: ahead
        #expect(!accept(.max - 1))  // in the window, seen
        #expect(accept(.max))  // in the window, not seen
        #expect(!state.isNew(2 &- 40))  // behind the window: refused
    }

    @Test func unencryptedCountersStartAfreshWhenBehind() {
        var state = MessageReceptionState(kind: .unencrypted)

        let accept = { (counter: UInt32) in state.accept(counter) }
        #expect(accept(1000))
        #expect(!accept(1000))
        #expect(accept(999))
        #expect(accept(5))  // far behind: the peer restarted
        #expect(!accept(5))
        #expect(state.maxCounter == 5)
    }
}
