public import HearthEngine
public import HearthModel

// What a simulated board adds to `HardwareBackend`: traits of its own on the inputs it keeps in memory. A file of its
// own because it speaks the engine's terms (trait configurations and events), which the real operations do not.

/// A backend whose inputs exist only in memory serves traits of its own on the device types that watch them: the
/// simulator's `dev.hearth.simulatedSwitch`, through which a person presses a switch, closes a door or walks past a
/// PIR. Real hardware is not one: its inputs are pressed by hand.
public protocol InputTraitsBackend: HardwareBackend {
    /// Traits the backend serves on a device type that watches the input `pin`, beyond those its binding reports.
    func traits(forInput pin: PinAddress) -> [TraitConfiguration]

    /// One of `traits(forInput: pin)` emitted `event` in the home (their commands do): act on the input.
    func traitEvent(_ event: String, of trait: TraitID, forInput pin: PinAddress)
}
