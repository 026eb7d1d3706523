import HearthEngine
import HearthModel
import HearthSync

/// A fan with one to three speed taps, a relay each: Fan Control with MultiSpeed, SpeedMax the number of taps, speed n
/// on tap n. Two taps on together short the motor's windings, so a change of speed is break before make: the old tap
/// off at once, the new one on only `switchPause` later, on the home's clock (`tick(at:)`), never by sleeping.
///
/// The lines are requested all off, and the first tap goes on a pause after: a tap a previous run left on (a killed
/// process leaves its lines as they were) is off for a full pause before another one closes.
final class RelayFanBinding: RetryingOutputBinding, EndpointActuator {
    let configuration: RelayFanConfiguration
    let hardware: any HardwareBackend
    let runtime: BindingRuntime

    private struct State {
        var lines: [any OutputLine] = []
        /// The tap that is on (an index into `lines`).
        var on: Int?
        /// The tap to put on at `at`, once the pause after the last one went off has passed.
        var pending: (tap: Int, at: EngineInstant)?
        /// When a tap last went off (or the lines were requested).
        var offSince: EngineInstant?
        var started = false
        var retry = FaultRetry()
    }
    private let state = Locked(State())

    var wiring: String { configuration.wiring }

    init(_ configuration: RelayFanConfiguration, context: BindingContext) {
        self.configuration = configuration
        hardware = context.hardware
        runtime = BindingRuntime(context: context, kind: "relayFan", traits: [.fanControl])
    }

    var actuator: (any EndpointActuator)? { self }
    var requiredFeatures: [TraitID: Set<String>] { [.fanControl: ["multiSpeed"]] }
    var traitAttributes: [TraitID: [String: Value]] { [.fanControl: ["speedMax": .int(configuration.taps.count)]] }

    /// The tap for a rendered output: speed n is tap n − 1; speed 0 (or none) is every tap off.
    func tap(for output: EndpointOutput) -> Int? {
        guard let speed = output.fanSpeed.map(Int.init), speed > 0 else { return nil }
        return min(speed, configuration.taps.count) - 1
    }

    func drive(_ output: EndpointOutput) throws(HomeError) {
        let desired = tap(for: output)
        let now = runtime.home?.clock.now ?? EngineInstant(milliseconds: 0)
        let needsTick = try state.withLock { (s) throws(HomeError) -> Bool in
            guard !s.lines.isEmpty else {
                guard s.started else { return false }
                throw .unavailable("the fan's taps are not available: "
                                   + (runtime.offlineReason ?? s.retry.pendingFault ?? "they are being re-requested"))
            }
            do throws(HardwareError) {
                return try Self.switchTo(desired, &s, now: now, pause: configuration.switchPause)
            } catch {
                Self.release(&s)
                s.retry.record("switching the fan's taps failed: \(error.message)")
                runtime.wake()
                throw .hardware("fan taps: \(error.message)")
            }
        }
        if needsTick { runtime.wake() }
    }

    /// Breaks the tap that is on unless it is `desired`, and makes `desired` now if the pause has passed, else at its
    /// end. Returns whether a tap waits for `tick`.
    private static func switchTo(_ desired: Int?, _ s: inout State, now: EngineInstant, pause: Int64)
        throws(HardwareError) -> Bool
    {
        if let on = s.on, on != desired {
            s.on = nil
            s.offSince = now
            try s.lines[on].set(false)
        }
        s.pending = nil
        guard let desired, s.on != desired else { return false }
        let at = s.offSince.map { $0 + pause } ?? now
        if at <= now {
            try make(desired, &s)
            return false
        }
        s.pending = (desired, at)
        return true
    }

    /// Puts `tap` on: only ever with every other tap off.
    private static func make(_ tap: Int, _ s: inout State) throws(HardwareError) {
        guard s.on == nil else { return }  // never reached: every caller breaks the tap that is on first
        try s.lines[tap].set(true)
        s.on = tap
    }

    private static func release(_ s: inout State) {
        for line in s.lines { try? line.release(leaving: false) }
        s.lines = []
        s.on = nil
        s.pending = nil
    }

    var nextDeadline: EngineInstant? {
        let pending = state.withLock { $0.pending?.at }
        switch (pending, retryDeadline) {
        case let (a?, b?): return min(a, b)
        case let (a?, nil): return a
        case let (nil, b): return b
        }
    }

    func tick(at now: EngineInstant) {
        state.withLock { s in
            guard let (tap, at) = s.pending, at <= now, !s.lines.isEmpty else { return }
            s.pending = nil
            do throws(HardwareError) { try Self.make(tap, &s) } catch {
                Self.release(&s)
                s.retry.record("switching the fan's taps failed: \(error.message)")
            }
        }
        retryTick(at: now)
    }

    func withRetry<R: Sendable>(_ body: (inout FaultRetry) -> R) -> R { state.withLock { body(&$0.retry) } }
    func markStarted() { state.withLock { $0.started = true } }

    func stop() {
        runtime.markStopped()
        let lines = state.withLock { s -> [any OutputLine] in
            defer { s.lines = []; s.on = nil; s.pending = nil; s.retry.cancel() }
            return s.lines
        }
        for (line, pin) in zip(lines, configuration.taps) {
            do throws(HardwareError) { try line.release(leaving: false) } catch {
                runtime.log("releasing the fan's tap \(pin) failed: \(error.message)")
            }
        }
        runtime.wake()
    }

    /// Reads each line back: on a chip that went away the kernel answers ENODEV.
    func probe() -> String? {
        state.withLock { s -> String? in
            for line in s.lines {
                do throws(HardwareError) { _ = try line.value() } catch {
                    Self.release(&s)
                    return "the fan's taps stopped answering: \(error.message)"
                }
            }
            return nil
        }
    }

    /// Requests every tap off, then switches to the home's speed after a pause (see the type's comment).
    func acquire(at now: EngineInstant) {
        guard let home = runtime.home, !runtime.isStopped else { return }
        var lines: [any OutputLine] = []
        do throws(HardwareError) {
            for pin in configuration.taps {
                lines.append(try hardware.openOutput(pin, initialValue: false, activeLow: configuration.activeLow,
                                                     drive: .pushPull))
            }
        } catch {
            for line in lines { try? line.release(leaving: false) }
            state.withLock { $0.retry.failed(at: now) }
            runtime.goOffline("requesting the fan's taps failed: \(error.message)")
            return
        }
        let accepted = state.withLock { s -> Bool in
            guard !runtime.isStopped else { return false }
            s.lines = lines
            s.on = nil
            s.offSince = now
            s.retry.succeeded(probingAt: runtime.firstProbe(after: now))
            return true
        }
        guard accepted else {
            for line in lines { try? line.release(leaving: false) }
            return
        }
        if let output = try? home.output(runtime.deviceID, type: runtime.typeName) { try? drive(output) }
        runtime.goOnline()
    }
}
