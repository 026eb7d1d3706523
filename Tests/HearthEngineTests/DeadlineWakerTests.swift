import Dispatch
import HearthEngine
import HearthTestKit
import Testing

/// `DeadlineWaker.block(until:)`, the engine's timer thread's wait, on the real clock. Each blocking wait runs on a
/// thread of its own and the test waits for it with a time limit, so that a wait that never ends fails the test
/// instead of hanging it.
@Suite(.timeLimit(.minutes(1))) struct DeadlineWakerTests {
    /// Runs `block` on a thread; true once it has returned, false if it has not within 10 s. Both threads are
    /// libdispatch's overcommitting ones, never the pool Swift's tasks run on, which they could hold up.
    private func onAThread(_ waker: DeadlineWaker, _ block: @escaping @Sendable () -> Void) async -> Bool {
        let returned = DispatchSemaphore(value: 0)
        DispatchQueue(label: "hearth.test.blocked").async { block(); returned.signal() }
        return await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
            DispatchQueue(label: "hearth.test.waiting").async {
                let ended = returned.wait(timeout: .now() + .seconds(10)) == .success
                if !ended { waker.wake() }  // let the thread go, so the failure does not leave it behind
                c.resume(returning: ended)
            }
        }
    }

    @Test func returnsAtItsDeadline() async {
        let clock = MonotonicClock(), waker = DeadlineWaker()
        let deadline = clock.now + 20
        #expect(await onAThread(waker) { waker.block(until: deadline) })
        #expect(clock.now >= deadline)
        // A deadline already passed returns at once.
        #expect(await onAThread(waker) { waker.block(until: EngineInstant(milliseconds: clock.now.milliseconds - 5)) })
    }

    @Test(arguments: [nil, 3_600_000] as [Int64?]) func aWakeEndsTheWaitOfABlockedThread(delay: Int64?) async {
        let clock = MonotonicClock(), waker = DeadlineWaker()
        let deadline = delay.map { clock.now + $0 }
        let thread = Task { await onAThread(waker) { waker.block(until: deadline) } }
        #expect(await eventually { waker.isBlocking })
        waker.wake()
        #expect(await thread.value)  // returned because of the wake, not in an hour
        #expect(!waker.isBlocking)
    }

    @Test func aWakeWhileNoOneWaitsIsKeptForTheNextWaitOnly() async {
        let clock = MonotonicClock(), waker = DeadlineWaker()
        waker.wake()
        #expect(await onAThread(waker) { waker.block(until: nil) })  // returns because of the wake
        // The wake was taken: the next wait lasts until its deadline.
        let deadline = clock.now + 20
        #expect(await onAThread(waker) { waker.block(until: deadline) })
        #expect(clock.now >= deadline)
    }
}
