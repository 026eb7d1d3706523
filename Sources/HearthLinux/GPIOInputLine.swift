import CGPIODShim
import Glibc
import HearthSync

/// A GPIO line this process watches for edges: a wall switch, a door contact, a motion sensor.
///
/// Meant to be owned by one dedicated thread that loops on ``waitForEvents(timeout:)``; any other thread may read
/// ``value()``, call ``interrupt()`` to end the loop, or ``release()``. Edges are reported by the kernel with their
/// interrupt-time timestamps, so debouncing can be exact even when the thread is scheduled late.
public final class GPIOInputLine: Sendable {
    public let chip: GPIOChip
    public let offset: Int
    public let consumer: String

    private struct State {
        /// `nil` once released.
        var line: GPIORequestPointer?
        /// The line's event descriptor (owned by the request, closed when it is released).
        var eventDescriptor: Int32
        var isWaiting = false
        /// A release asked for while a thread was blocked on `eventDescriptor`: done when that thread returns, so the
        /// descriptor cannot be closed (and its number reused) under a `poll`.
        var releasePending = false
        var isInterrupted = false
    }

    private let state: Locked<State>
    /// An eventfd polled next to the line's events; written once by ``interrupt()`` and never drained.
    private let interruptDescriptor: Int32

    /// Requests `offset` on `chip` for both-edge events.
    ///
    /// - Parameters:
    ///   - bias: the internal resistor; `.asIs` keeps the firmware's choice.
    ///   - activeLow: values and edges are inverted, so a switch to ground reads `true` when closed and closing it
    ///     is a `.rising` edge.
    ///   - consumer: at most 31 bytes.
    /// - Throws: ``LinuxIOError`` with `EBUSY` naming the holder, `EINVAL` for a bad offset or unsupported flags.
    public init(chip: GPIOChip, offset: Int, bias: GPIOBias = .asIs, activeLow: Bool = false,
                consumer: String = "hearthd") throws(LinuxIOError) {
        precondition(!consumer.isEmpty && consumer.utf8.count <= 31, "a GPIO consumer label is 1...31 bytes")
        let flags = gpioRequestFlags(activeLow: activeLow, bias: bias)
        let context = LinuxIOError.Context.gpioLine(chip: chip.name, offset: offset)
        let line = try chip.request(offset: offset) { handle in
            hearth_gpio_request_input(handle, UInt32(offset), consumer, flags)
        }
        let eventDescriptor: Int32
        let interruptDescriptor: Int32
        do {
            eventDescriptor = try Syscall.check("gpiod_line_event_fd", context) {
                chip.withChip { _ in hearth_gpio_event_fd(line.raw) }
            }
            interruptDescriptor = try Syscall.check("eventfd", context) { hearth_eventfd_open() }
        } catch {
            chip.release(line)
            throw error
        }
        self.chip = chip
        self.offset = offset
        self.consumer = consumer
        self.interruptDescriptor = interruptDescriptor
        state = Locked(State(line: line, eventDescriptor: eventDescriptor))
    }

    deinit {
        // No thread can be waiting: a waiter holds a strong reference.
        let chip = self.chip
        state.withLock { state in
            if let line = state.line { chip.release(line) }
        }
        close(interruptDescriptor)
    }

    /// The current logical value.
    public func value() throws(LinuxIOError) -> Bool {
        let chip = self.chip
        let offset = self.offset
        return try state.withLock { (state) throws(LinuxIOError) -> Bool in
            guard let line = state.line else { preconditionFailure("value() on GPIO line \(offset) after release") }
            return try chip.withChip { (_) throws(LinuxIOError) -> Bool in
                try Syscall.check("gpiod_line_get_value", .gpioLine(chip: chip.name, offset: offset)) {
                    hearth_gpio_get_value(line.raw)
                } == 1
            }
        }
    }

    /// Blocks until at least one edge arrives, `timeout` passes, or ``interrupt()`` is called, without polling.
    ///
    /// - Parameter timeout: `nil` waits indefinitely; `.zero` only collects what is already queued.
    /// - Returns: the queued edges, oldest first (up to 16 per call; call again to drain a burst). Empty on timeout
    ///   and, immediately and forever, once ``interrupt()`` has been called.
    /// - Throws: ``LinuxIOError`` if the chip goes away (`ENODEV`) or the event read fails.
    ///
    /// Only one thread may wait at a time; a second concurrent waiter is a bug and traps. After ``release()`` every
    /// wait returns an empty array at once.
    public func waitForEvents(timeout: Duration?) throws(LinuxIOError) -> [GPIOEdgeEvent] {
        if let timeout { precondition(timeout >= .zero, "waitForEvents timeout must not be negative") }
        let offset = self.offset
        let held = state.withLock { state -> (GPIORequestPointer, Int32)? in
            // Released lines are interrupted too, so a shutdown racing a waiter's loop ends it instead of trapping.
            if state.isInterrupted { return nil }
            guard let line = state.line else { return nil }
            precondition(!state.isWaiting, "only one thread may wait on GPIO line \(offset)")
            state.isWaiting = true
            return (line, state.eventDescriptor)
        }
        guard let (line, descriptor) = held else { return [] }
        defer { endWait() }
        let context = LinuxIOError.Context.gpioLine(chip: chip.name, offset: offset)
        guard try Self.waitForReadable(eventDescriptor: descriptor, interruptDescriptor: interruptDescriptor,
                                       timeout: timeout, context: context)
        else { return [] }
        return try Self.readEdgeEvents(line, context: context)
    }

    /// Wakes the thread blocked in ``waitForEvents(timeout:)`` and makes every later wait return at once.
    ///
    /// Sticky by design: a shutdown that races with the waiter re-entering the wait must still stop it.
    public func interrupt() {
        state.withLock { state in state.isInterrupted = true }
        // EAGAIN only means the counter is already non-zero, i.e. already signalled.
        _ = hearth_eventfd_signal(interruptDescriptor)
    }

    /// Whether ``interrupt()`` has been called.
    public var isInterrupted: Bool { state.withLock { $0.isInterrupted } }

    /// Gives the line back to the kernel and interrupts waits, now and later. If a thread is waiting, the release
    /// completes when that wait returns, so its descriptor is never closed under it. Releasing twice is a bug and
    /// traps.
    public func release() {
        let chip = self.chip
        let offset = self.offset
        state.withLock { state in
            precondition(
                state.line != nil && !state.releasePending, "GPIO line \(offset) on \(chip.name) released twice")
            state.isInterrupted = true
            if state.isWaiting {
                state.releasePending = true
            } else if let line = state.line {
                state.line = nil
                chip.release(line)
            }
        }
        _ = hearth_eventfd_signal(interruptDescriptor)
    }

    private func endWait() {
        let chip = self.chip
        state.withLock { state in
            state.isWaiting = false
            if state.releasePending, let line = state.line {
                state.line = nil
                state.releasePending = false
                chip.release(line)
            }
        }
    }

    /// The blocking part, holding no lock: `poll` on the line's events and the interrupt eventfd.
    ///
    /// - Returns: `true` when edge events are queued; `false` on timeout and once interrupted.
    /// - Throws: `ENODEV` when the event source hung up (the chip was removed).
    static func waitForReadable(eventDescriptor: Int32, interruptDescriptor: Int32, timeout: Duration?,
                                context: LinuxIOError.Context) throws(LinuxIOError) -> Bool {
        let deadline = timeout.map { timeout -> UInt64 in
            let sum = Syscall.monotonicNanoseconds().addingReportingOverflow(nanoseconds(timeout))
            return sum.overflow ? .max : sum.partialValue
        }
        var descriptors = [
            pollfd(fd: eventDescriptor, events: Int16(POLLIN), revents: 0),
            pollfd(fd: interruptDescriptor, events: Int16(POLLIN), revents: 0),
        ]
        let ready = try Syscall.check("poll", context) {
            // Recomputed on every EINTR retry so signals do not stretch the timeout.
            descriptors[0].revents = 0
            descriptors[1].revents = 0
            return poll(&descriptors, 2, pollMilliseconds(until: deadline))
        }
        if ready == 0 || descriptors[1].revents != 0 { return false }
        let revents = Int32(descriptors[0].revents)
        if revents & Int32(POLLIN) == 0 && revents & (Int32(POLLERR) | Int32(POLLHUP) | Int32(POLLNVAL)) != 0 {
            throw LinuxIOError(operation: "poll", context: context, errno: .noSuchDevice,
                               message: "the GPIO chip behind \(context) stopped delivering events: was it removed?")
        }
        return revents & Int32(POLLIN) != 0
    }

    /// Reads the queued edges (up to 16) of `line`, whose descriptor `poll` found readable. Holds no lock: only the
    /// one waiting thread reads a line's events, and the line stays requested until its wait ends.
    static func readEdgeEvents(_ line: GPIORequestPointer, context: LinuxIOError.Context)
        throws(LinuxIOError) -> [GPIOEdgeEvent] {
        var buffer = [hearth_gpio_edge_event](repeating: hearth_gpio_edge_event(), count: 16)
        let count = try Syscall.check("gpiod_line_read_edge_events", context) {
            buffer.withUnsafeMutableBufferPointer { events in
                hearth_gpio_read_edge_events(line.raw, events.baseAddress, UInt32(events.count))
            }
        }
        return buffer.prefix(Int(count)).compactMap(GPIOEdgeEvent.init)
    }

    /// `poll`'s timeout for `deadline`, rounded up so a wait never ends early; -1 for no deadline.
    static func pollMilliseconds(until deadline: UInt64?, now: UInt64 = Syscall.monotonicNanoseconds()) -> Int32 {
        guard let deadline else { return -1 }
        guard deadline > now else { return 0 }
        let (milliseconds, remainder) = (deadline - now).quotientAndRemainder(dividingBy: 1_000_000)
        return Int32(clamping: milliseconds + (remainder == 0 ? 0 : 1))
    }

    static func nanoseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        let whole = UInt64(clamping: seconds).multipliedReportingOverflow(by: 1_000_000_000)
        if whole.overflow { return .max }
        return whole.partialValue &+ UInt64(attoseconds / 1_000_000_000)
    }
}
