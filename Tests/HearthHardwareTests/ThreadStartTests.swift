import Glibc
import HearthHardware
@testable import HearthHardwareLinux
import Synchronization
import Testing

/// The GPIO input's event thread: a system out of threads (pthread_create's EAGAIN) is an error the binding
/// hears of, not a trap that takes the hub down.
@Suite(.timeLimit(.minutes(1))) struct ThreadStartTests {
    final class Flag: Sendable {
        let value = Atomic<Bool>(false)
        var isSet: Bool { value.load(ordering: .relaxed) }
        func set() { value.store(true, ordering: .relaxed) }
    }

    /// Sets its flag when released: shows that a body that never ran is not leaked.
    final class Token: Sendable {
        let released: Flag
        init(_ released: Flag) { self.released = released }
        deinit { released.set() }
    }

    @Test func noThreadToGiveIsAHardwareErrorAndNothingLeaks() {
        let ran = Flag(), released = Flag()
        do {
            let token = Token(released)
            _ = try Thread.start({ [token] in _ = token; ran.set() }, for: "gpiochip0 line 8") { _, _, _ in EAGAIN }
            Issue.record("the thread cannot have started")
        } catch {
            #expect(error.errno == EAGAIN)
            #expect(error.operation == "pthread_create")
            #expect(error.context == "gpiochip0 line 8")
            #expect(error.description.contains("EAGAIN"), "\(error)")
        }
        #expect(!ran.isSet)
        #expect(released.isSet, "the body given to the thread that never started is released")
    }

    @Test func aThreadRunsItsBody() throws {
        let ran = Flag()
        let thread = try Thread.start({ ran.set() }, for: "a test")
        pthread_join(thread, nil)
        #expect(ran.isSet)
    }
}
