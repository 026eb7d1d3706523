import HearthEngine
import HearthModel
import HearthSync

/// A tunable-white (CCT) LED strip on two PWM channels, one per white (warm and cold, each through its own MOSFET),
/// with an optional relay that cuts the driver's power whenever the light is not lit.
///
/// The mixing curve keeps the light's brightness constant while its temperature moves:
///
///     total = minimumDuty + (1 − minimumDuty) · (level / 254)^gamma      (the pwmDimmer's curve, level 1…254)
///     w     = (mireds − coldMireds) / (warmMireds − coldMireds)          (clipped to 0…1: the warm share)
///     warm duty = total · w,   cold duty = total · (1 − w)
///
/// Why: the level sets how much light there is, the temperature only how it is split. The two duties always add up
/// to `total`, and the two whites of a CCT strip are the same LEDs behind different phosphors (the same count, current
/// and nearly the same efficacy), so the same total duty gives the same light whatever the split. Driving each
/// channel from its own curve instead (both full at the middle, as some controllers do) makes the middle of the range
/// up to twice as bright as its ends, and a temperature fade then pulses. The split is linear in mireds because
/// mireds, not kelvins, are what the eye sees as even steps of warmth (Matter moves temperatures in mireds for the
/// same reason), and at the ends it gives exactly the one white the strip has there: `coldMireds` is all cold,
/// `warmMireds` all warm. The cost: at full level in the middle of the range each channel runs at half duty, so the
/// strip is never brighter than one white at full — the price of constant brightness.
///
/// The engine renders transitions (of the level and of the temperature) 50 times a second and calls the actuator at
/// every step, so every step reaches both channels.
final class CCTDimmerBinding: RetryingOutputBinding, EndpointActuator {
    let configuration: CCTDimmerConfiguration
    let hardware: any HardwareBackend
    let runtime: BindingRuntime

    private struct State {
        var warm: (any PWMOutput)?
        var cold: (any PWMOutput)?
        var relay: (any OutputLine)?
        var duty = Duty(warm: 0, cold: 0)
        var relayOn = false
        var started = false
        var retry = FaultRetry()
    }
    private let state = Locked(State())

    /// Both channels' duty cycles, in nanoseconds of the period.
    struct Duty: Sendable, Hashable {
        var warm: UInt64
        var cold: UInt64
        var isLit: Bool { warm > 0 || cold > 0 }
    }

    var wiring: String { configuration.wiring }

    init(_ configuration: CCTDimmerConfiguration, context: BindingContext) {
        self.configuration = configuration
        hardware = context.hardware
        runtime = BindingRuntime(context: context, kind: "cctDimmer", traits: [.onOff, .levelControl, .colorControl])
    }

    var actuator: (any EndpointActuator)? { self }

    /// The strip's two whites are the light's physical range.
    var traitAttributes: [TraitID: [String: Value]] {
        [.colorControl: ["colorTempPhysicalMinMireds": .int(configuration.coldMireds),
                         "colorTempPhysicalMaxMireds": .int(configuration.warmMireds)]]
    }

    /// The duty cycles for an output.
    func duty(for output: EndpointOutput) -> Duty {
        guard output.isLit else { return Duty(warm: 0, cold: 0) }
        // Identify blinking a light that is off shows full brightness, so it can be found.
        let level = (output.identifyPhase == true && output.onOff == false) ? 254 : Int(output.level ?? 254)
        let total = DimmerBinding.dutyFraction(level: level, gamma: configuration.gamma,
                                               minimumDuty: configuration.minimumDuty)
        let w = Self.warmShare(mireds: output.colorTemperatureMireds.map(Int.init),
                               cold: configuration.coldMireds, warm: configuration.warmMireds)
        let period = Double(configuration.periodNanoseconds)
        let warm = (period * total * w).rounded()
        // The cold channel takes the rest of the total, so rounding never changes the sum.
        let sum = (period * total).rounded()
        return Duty(warm: UInt64(warm), cold: UInt64(max(0, sum - warm)))
    }

    /// The warm white's share of the light, 0 (all cold) … 1 (all warm); an endpoint without a temperature is an even
    /// mix.
    static func warmShare(mireds: Int?, cold: Int, warm: Int) -> Double {
        guard let mireds else { return 0.5 }
        return min(1, max(0, Double(mireds - cold) / Double(warm - cold)))
    }

    // MARK: EndpointActuator

    func drive(_ output: EndpointOutput) throws(HomeError) {
        let duty = duty(for: output)
        let now = runtime.home?.clock.now
        try state.withLock { (s) throws(HomeError) in
            guard let warm = s.warm, let cold = s.cold else {
                guard s.started else { return }
                throw .unavailable("the CCT strip on \(configuration.warm) and \(configuration.cold) is not available: "
                                   + (runtime.offlineReason ?? s.retry.pendingFault ?? "it is being re-requested"))
            }
            do throws(HardwareError) {
                // Power before light, light before power: the relay never switches a load under PWM.
                if duty.isLit, !s.relayOn, let relay = s.relay { try relay.set(true); s.relayOn = true }
                let written = duty != s.duty
                if duty.warm != s.duty.warm { try warm.setDutyCycle(duty.warm); s.duty.warm = duty.warm }
                if duty.cold != s.duty.cold { try cold.setDutyCycle(duty.cold); s.duty.cold = duty.cold }
                // The write showed the chips answer: no probe writes the same duties again for an interval (a
                // fade's step would otherwise be written twice every 5 s).
                if written, let now { s.retry.answered(at: now) }
                if !duty.isLit, s.relayOn, let relay = s.relay { try relay.set(false); s.relayOn = false }
            } catch {
                Self.release(&s)
                s.retry.record("driving the CCT strip failed: \(error.message)")
                runtime.wake()
                throw .hardware("CCT strip \(configuration.warm) + \(configuration.cold): \(error.message)")
            }
        }
    }

    private static func release(_ s: inout State) {
        try? s.warm?.stop()
        try? s.cold?.stop()
        try? s.relay?.release(leaving: false)
        s.warm = nil
        s.cold = nil
        s.relay = nil
    }

    // MARK: Lifecycle

    func withRetry<R: Sendable>(_ body: (inout FaultRetry) -> R) -> R { state.withLock { body(&$0.retry) } }
    func markStarted() { state.withLock { $0.started = true } }

    func stop() {
        runtime.markStopped()
        let (warm, cold, relay) = state.withLock { s -> ((any PWMOutput)?, (any PWMOutput)?, (any OutputLine)?) in
            defer { s.warm = nil; s.cold = nil; s.relay = nil; s.retry.cancel() }
            return (s.warm, s.cold, s.relay)
        }
        for (channel, address) in [(warm, configuration.warm), (cold, configuration.cold)] {
            do throws(HardwareError) { try channel?.stop() } catch {
                runtime.log("stopping \(address) failed: \(error.message)")
            }
        }
        do throws(HardwareError) { try relay?.release(leaving: false) } catch {
            runtime.log("releasing the relay \(configuration.relay?.description ?? "") failed: \(error.message)")
        }
        runtime.wake()
    }

    /// Writes both duty cycles it has again (a no-op for the kernel), as the pwmDimmer does: a PWM chip has nothing
    /// to read that would tell it went away, but a write to a chip directory that is gone fails. Both channels,
    /// because they may be on two chips.
    func probe() -> String? {
        state.withLock { s -> String? in
            guard let warm = s.warm, let cold = s.cold else { return nil }
            do throws(HardwareError) {
                try warm.setDutyCycle(s.duty.warm)
                try cold.setDutyCycle(s.duty.cold)
                return nil
            } catch {
                Self.release(&s)
                return "the CCT strip's PWM channels stopped answering: \(error.message)"
            }
        }
    }

    func acquire(at now: EngineInstant) {
        guard let home = runtime.home, !runtime.isStopped else { return }
        guard let output = try? home.output(runtime.deviceID, type: runtime.typeName) else { return }
        let duty = duty(for: output)
        var warm: (any PWMOutput)?
        var cold: (any PWMOutput)?
        var relay: (any OutputLine)?
        do throws(HardwareError) {
            // Power before light, as in `drive`: both channels start dark (whatever a previous owner left them at),
            // the relay closes, and only then does the light come up.
            let period = configuration.periodNanoseconds
            let w = try hardware.openPWM(configuration.warm)
            warm = w
            try w.start(periodNanoseconds: period, dutyCycleNanoseconds: 0, polarity: configuration.polarity)
            let c = try hardware.openPWM(configuration.cold)
            cold = c
            try c.start(periodNanoseconds: period, dutyCycleNanoseconds: 0, polarity: configuration.polarity)
            if let pin = configuration.relay {
                relay = try hardware.openOutput(pin, initialValue: duty.isLit, activeLow: configuration.relayActiveLow,
                                                drive: .pushPull)
            }
            if duty.warm > 0 { try w.setDutyCycle(duty.warm) }
            if duty.cold > 0 { try c.setDutyCycle(duty.cold) }
        } catch {
            try? warm?.stop()
            try? cold?.stop()
            try? relay?.release(leaving: false)
            state.withLock { $0.retry.failed(at: now) }
            runtime.goOffline("requesting the CCT strip's hardware failed: \(error.message)")
            return
        }
        let accepted = state.withLock { s -> Bool in
            guard !runtime.isStopped else { return false }
            s.warm = warm
            s.cold = cold
            s.relay = relay
            s.duty = duty
            s.relayOn = duty.isLit
            s.retry.succeeded(probingAt: runtime.firstProbe(after: now))
            return true
        }
        guard accepted else {
            try? warm?.stop()
            try? cold?.stop()
            try? relay?.release(leaving: false)
            return
        }
        if let latest = try? home.output(runtime.deviceID, type: runtime.typeName), latest != output {
            try? drive(latest)
        }
        runtime.goOnline()
    }
}
