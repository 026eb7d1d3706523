#if canImport(Glibc)
import Glibc  // pow
#elseif canImport(Darwin)
import Darwin
#endif
import HearthEngine
import HearthModel
import HearthSync

/// A dimmable light on a PWM channel (a MOSFET or a constant-current driver), with an optional relay that cuts
/// its power whenever it is not lit.
///
/// The engine renders transitions 50 times a second and calls the actuator at every step, so every step reaches
/// the PWM channel. Level 1…254 maps to duty through a gamma curve that starts at the lamp's minimum duty.
final class DimmerBinding: RetryingOutputBinding, EndpointActuator {
    let configuration: DimmerConfiguration
    let hardware: any HardwareBackend
    let runtime: BindingRuntime

    private struct State {
        var pwm: (any PWMOutput)?
        var relay: (any OutputLine)?
        var duty: UInt64 = 0
        var relayOn = false
        var started = false
        var retry = FaultRetry()
    }
    private let state = Locked(State())

    var wiring: String { configuration.wiring }

    init(_ configuration: DimmerConfiguration, context: BindingContext) {
        self.configuration = configuration
        hardware = context.hardware
        runtime = BindingRuntime(context: context, kind: "pwmDimmer", traits: [.onOff, .levelControl])
    }

    var actuator: (any EndpointActuator)? { self }

    /// The duty cycle for an output, in nanoseconds of the period.
    func dutyCycle(for output: EndpointOutput) -> UInt64 {
        guard output.isLit else { return 0 }
        // Identify blinking a light that is off shows full brightness, so it can be found.
        let level = (output.identifyPhase == true && output.onOff == false) ? 254 : Int(output.level ?? 254)
        let fraction = Self.dutyFraction(
            level: level, gamma: configuration.gamma, minimumDuty: configuration.minimumDuty)
        let period = configuration.periodNanoseconds
        return min(period, UInt64((Double(period) * fraction).rounded()))
    }

    /// minimumDuty + (1 − minimumDuty) · (level / 254)^gamma, for level 1…254.
    static func dutyFraction(level: Int, gamma: Double, minimumDuty: Double) -> Double {
        let x = Double(min(254, max(1, level))) / 254
        return minimumDuty + (1 - minimumDuty) * pow(x, gamma)
    }

    // MARK: EndpointActuator

    func drive(_ output: EndpointOutput) throws(HomeError) {
        let duty = dutyCycle(for: output)
        let lit = duty > 0
        let now = runtime.home?.clock.now
        try state.withLock { (s) throws(HomeError) in
            guard let pwm = s.pwm else {
                guard s.started else { return }
                throw .unavailable("the dimmer on \(configuration.pwm) is not available: "
                                   + (runtime.offlineReason ?? s.retry.pendingFault ?? "it is being re-requested"))
            }
            do throws(HardwareError) {
                // Power before light, light before power: the relay never switches a load under PWM.
                if lit, !s.relayOn, let relay = s.relay { try relay.set(true); s.relayOn = true }
                if duty != s.duty {
                    try pwm.setDutyCycle(duty)
                    s.duty = duty
                    // The write showed the chip answers: no probe writes the same duty again for an interval (a
                    // fade's step would otherwise be written twice every 5 s).
                    if let now { s.retry.answered(at: now) }
                }
                if !lit, s.relayOn, let relay = s.relay { try relay.set(false); s.relayOn = false }
            } catch {
                Self.release(&s, configuration: configuration)
                s.retry.record("driving the dimmer failed: \(error.message)")
                runtime.wake()
                throw .hardware("dimmer \(configuration.pwm): \(error.message)")
            }
        }
    }

    private static func release(_ s: inout State, configuration: DimmerConfiguration) {
        try? s.pwm?.stop()
        try? s.relay?.release(leaving: false)
        s.pwm = nil
        s.relay = nil
    }

    // MARK: Lifecycle

    func withRetry<R: Sendable>(_ body: (inout FaultRetry) -> R) -> R { state.withLock { body(&$0.retry) } }
    func markStarted() { state.withLock { $0.started = true } }

    func stop() {
        runtime.markStopped()
        let (pwm, relay) = state.withLock { s -> ((any PWMOutput)?, (any OutputLine)?) in
            defer { s.pwm = nil; s.relay = nil; s.retry.cancel() }
            return (s.pwm, s.relay)
        }
        do throws(HardwareError) { try pwm?.stop() } catch {
            runtime.log("stopping \(configuration.pwm) failed: \(error.message)")
        }
        do throws(HardwareError) { try relay?.release(leaving: false) } catch {
            runtime.log("releasing the relay \(configuration.relay?.description ?? "") failed: \(error.message)")
        }
        runtime.wake()
    }

    /// Writes the duty cycle it has again (a no-op for the kernel): a PWM chip has nothing to read that would tell
    /// it went away, but a write to a chip directory that is gone fails.
    func probe() -> String? {
        state.withLock { s -> String? in
            guard let pwm = s.pwm else { return nil }
            do throws(HardwareError) {
                try pwm.setDutyCycle(s.duty)
                return nil
            } catch {
                Self.release(&s, configuration: configuration)
                return "the dimmer's PWM channel stopped answering: \(error.message)"
            }
        }
    }

    func acquire(at now: EngineInstant) {
        guard let home = runtime.home, !runtime.isStopped else { return }
        guard let output = try? home.output(runtime.deviceID, type: runtime.typeName) else { return }
        let duty = dutyCycle(for: output)
        var pwm: (any PWMOutput)?
        var relay: (any OutputLine)?
        do throws(HardwareError) {
            // Power before light, as in `drive`: the channel starts dark (whatever a previous owner left it at),
            // the relay closes, and only then does the light come up.
            let channel = try hardware.openPWM(configuration.pwm)
            pwm = channel
            try channel.start(periodNanoseconds: configuration.periodNanoseconds, dutyCycleNanoseconds: 0,
                              polarity: configuration.polarity)
            if let pin = configuration.relay {
                relay = try hardware.openOutput(pin, initialValue: duty > 0, activeLow: configuration.relayActiveLow,
                                                drive: .pushPull)
            }
            if duty > 0 { try channel.setDutyCycle(duty) }
        } catch {
            try? pwm?.stop()
            try? relay?.release(leaving: false)
            state.withLock { $0.retry.failed(at: now) }
            runtime.goOffline("requesting the dimmer's hardware failed: \(error.message)")
            return
        }
        let accepted = state.withLock { s -> Bool in
            guard !runtime.isStopped else { return false }
            s.pwm = pwm
            s.relay = relay
            s.duty = duty
            s.relayOn = duty > 0
            s.retry.succeeded(probingAt: runtime.firstProbe(after: now))
            return true
        }
        guard accepted else {
            try? pwm?.stop()
            try? relay?.release(leaving: false)
            return
        }
        if let latest = try? home.output(runtime.deviceID, type: runtime.typeName), latest != output {
            try? drive(latest)
        }
        runtime.goOnline()
    }
}
