public import HearthModel

/// One trait's behaviour: a value-type state machine that Matter's cluster text describes.
///
/// The engine copies an endpoint before it lets a trait act and keeps the copy only when every step
/// succeeded, so a trait may throw at any point and never leaves state half-applied. A trait never
/// sees another trait directly: it posts `EndpointSignal`s (the couplings Matter defines, such as
/// OnOff's On moving LevelControl to OnLevel) and reads the endpoint's rendered output.
///
/// A trait is `Equatable` so that the engine can tell the traits a command left as they were from those it changed
/// without reading every attribute of both (``isUnchanged(since:)``).
public protocol TraitServer: Sendable, Equatable {
    static var descriptor: TraitDescriptor { get }

    /// Builds the trait with its features; attribute values from the configuration and from saved
    /// state arrive afterwards through `load`.
    init(features: Set<String>) throws(HomeError)

    /// The attribute's current value, or `nil` when this instance does not support it.
    /// By id, not descriptor: the engine reads on every change and must not copy descriptors to do it.
    func read(_ id: UInt32) -> Value?

    /// The values of the attributes `ids` into `values[start..<start + ids.count]` (which `values` has), nil where
    /// this instance does not support one. The engine and the document writer read a trait's attributes with one
    /// call: calling a method on an existential copies the trait out of it first, once per call.
    func read(_ ids: [UInt32], into values: inout [Value?], at start: Int)

    /// Which of `commands` this instance takes, as bits (bit i for `commands[i]`, the first 64 only), in one call
    /// for the same reason as ``read(_:into:at:)``.
    func supportedCommands(of commands: [CommandDescriptor]) -> UInt64

    /// Whether `receive` does anything: couplings are delivered only to traits that listen.
    static var listensToSignals: Bool { get }

    /// Whether this instance takes the command (features decide, e.g. OffOnly has no `toggle`).
    func supports(_ command: CommandDescriptor) -> Bool

    /// Sets an attribute from configuration or saved state, without the client-facing write rules
    /// (read-only attributes such as `vendorName` are configured this way).
    mutating func load(_ attribute: AttributeDescriptor, _ value: Value) throws(HomeError)

    /// Checks what depends on several configured attributes (a range's two ends), once the configuration's values
    /// are all loaded and before saved state is: `load` sees them one at a time, in name order.
    func checkConfiguration() throws(HomeError)

    /// Applies power-up behaviour (StartUpOnOff, StartUpCurrentLevel) once everything is loaded.
    mutating func startUp(context: inout TraitContext)

    /// A client's write. The engine has already checked that the attribute is supported and writable
    /// and that the value fits its type; the trait checks what depends on its state.
    mutating func write(_ attribute: AttributeDescriptor, _ value: Value, context: inout TraitContext) throws(HomeError)

    /// A client's command, with validated arguments. Only called for supported commands.
    mutating func invoke(_ arguments: CommandArguments, context: inout TraitContext) throws(HomeError)

    /// A coupling from another trait of the same endpoint.
    mutating func receive(_ signal: EndpointSignal, context: inout TraitContext)

    /// A reading from the hardware below (a measurement, a switch position).
    mutating func ingest(_ input: TraitInput, context: inout TraitContext) throws(HomeError)

    /// When the trait next needs `advance` (a transition step, a countdown tick).
    var nextDeadline: EngineInstant? { get }

    /// Runs timers that are due at `context.now`.
    mutating func advance(context: inout TraitContext)

    /// Adds what this trait wants the hardware to show.
    func render(into output: inout EndpointOutput)

    /// State the trait keeps across restarts that is no attribute (Groups' group table, Scenes Management's scene
    /// table); `nil` when it has none. Saved with the device and given back to ``restore(table:)`` at start-up.
    var table: Value? { get }

    /// Takes back what ``table`` saved, after configuration and before start-up. Invalid parts are skipped with
    /// an error naming them (the engine logs it; restoring never fails a start).
    mutating func restore(table: Value) throws(HomeError)

    /// Whether `earlier` is this trait in the same state, so that none of its attributes changed (a trait of
    /// another type never is). Every trait takes the one implementation there is. It is generic over `earlier`'s
    /// type so that a caller's `any TraitServer` is opened, not cast: `as? Self` copied the trait out and looked
    /// up the metadata of `Self?` on every call, a third of what it saved.
    func isUnchanged<Earlier: TraitServer>(since earlier: Earlier) -> Bool

    /// Whether the trait needs ``TraitContext/endpoint`` (what its sibling traits hold) to act: Scenes Management
    /// (to store a scene, and to know the groups), Groups (to know whether Identify runs).
    static var readsEndpoint: Bool { get }
}

extension TraitServer {
    public func isUnchanged<Earlier: TraitServer>(since earlier: Earlier) -> Bool {
        guard Earlier.self == Self.self else { return false }
        // The same type: read in place, as what it is.
        return withUnsafePointer(to: earlier) {
            $0.withMemoryRebound(to: Self.self, capacity: 1) { $0.pointee == self }
        }
    }

    public func read(_ attribute: AttributeDescriptor) -> Value? { read(attribute.id) }
    public func read(_ ids: [UInt32], into values: inout [Value?], at start: Int) {
        precondition(start >= 0 && values.count - start >= ids.count)
        ids.withUnsafeBufferPointer { ids in
            values.withUnsafeMutableBufferPointer { values in
                for j in ids.indices { values[start + j] = read(ids[j]) }
            }
        }
    }
    public func supportedCommands(of commands: [CommandDescriptor]) -> UInt64 {
        var bits: UInt64 = 0
        commands.withUnsafeBufferPointer { commands in
            for i in commands.indices where i < 64 && supports(commands[i]) { bits |= 1 << UInt64(i) }
        }
        return bits
    }
    public static var listensToSignals: Bool { false }
    public func supports(_ command: CommandDescriptor) -> Bool { true }
    public func checkConfiguration() throws(HomeError) {}
    public mutating func startUp(context: inout TraitContext) {}
    public mutating func write(_ attribute: AttributeDescriptor, _ value: Value, context: inout TraitContext)
        throws(HomeError)
    {
        try load(attribute, value)
    }
    public mutating func invoke(_ arguments: CommandArguments, context: inout TraitContext) throws(HomeError) {
        throw .unsupportedCommand("\(Self.descriptor.id) has no command \(arguments.command.name)")
    }
    public mutating func receive(_ signal: EndpointSignal, context: inout TraitContext) {}
    public mutating func ingest(_ input: TraitInput, context: inout TraitContext) throws(HomeError) {
        throw .unsupportedCluster("\(Self.descriptor.id) takes no hardware input")
    }
    public var nextDeadline: EngineInstant? { nil }
    public mutating func advance(context: inout TraitContext) {}
    public func render(into output: inout EndpointOutput) {}
    public var table: Value? { nil }
    public mutating func restore(table: Value) throws(HomeError) {}
    public static var readsEndpoint: Bool { false }

    /// The error for a configured or saved attribute this trait does not have.
    public static func unknownAttribute(_ attribute: AttributeDescriptor) -> HomeError {
        .unsupportedAttribute("\(descriptor.id) has no attribute \(attribute.name) to set")
    }
}

/// Couplings between traits of one endpoint, as Matter defines them.
public enum EndpointSignal: Sendable, Hashable {
    /// OnOff's own command (On, Off, Toggle, timed off, …) changed the state; LevelControl applies
    /// its "effect of On/Off commands" (fade to OnLevel, fade down and restore).
    case onOffCommanded(isOn: Bool)
    /// OnOff ran OffWithEffect with a stored global scene; LevelControl renders the effect.
    case offWithEffect(identifier: Int, variant: Int)
    /// OnOff's OnWithRecallGlobalScene: LevelControl restores the level stored by OffWithEffect.
    case recallGlobalScene
    /// A LevelControl `…WithOnOff` command (or the end of its transition) sets OnOff without a level effect.
    case levelSetsOnOff(isOn: Bool, setsGlobalSceneControl: Bool)
    /// LevelControl's CurrentLevel changed while its Options has CoupleColorTempToLevel: ColorControl follows it.
    /// `final` at the end of a change (a command without transition, a transition's last step), so the temperature is
    /// reported then as Matter's quiet reporting asks.
    case levelCouplesColorTemperature(level: Int, final: Bool)
    /// Groups removed the endpoint from these groups (all of them: `nil`); Scenes Management drops their scenes.
    case groupsRemoved([UInt16]?)
    /// Scenes Management recalls a scene: every ``SceneCapable`` trait moves to its stored values within the
    /// transition.
    case recallScene(SceneRecall)
}

/// What a scene recall asks of the endpoint's traits.
public struct SceneRecall: Sendable, Hashable {
    /// The stored values by cluster id, then attribute id (Matter's extension field sets).
    public var values: [UInt32: [UInt32: Value]]
    /// The transition in milliseconds.
    public var transitionTime: Int
    /// Whether the endpoint's OnOff was on before the recall (`nil` without OnOff).
    public var wasOn: Bool?

    public init(values: [UInt32: [UInt32: Value]], transitionTime: Int, wasOn: Bool?) {
        self.values = values
        self.transitionTime = transitionTime
        self.wasOn = wasOn
    }
}

/// A trait whose state a scene captures (Matter's S quality) and recalls with a transition. A trait joins scenes with
/// this one declaration: Scenes Management stores its ``sceneAttributes`` and hands them back to
/// ``recall(_:context:)``.
public protocol SceneCapable: TraitServer {
    /// The attributes a scene stores, by id, in the order they are recalled.
    static var sceneAttributes: [UInt32] { get }
    /// Moves to the stored `values` (only the attributes this trait captures; some may be missing, which keep their
    /// value) within `scene.transitionTime` ms. `scene` has every trait's values, for couplings Matter defines (a
    /// light that a scene turns on fades up from its minimum level).
    mutating func recall(_ values: [UInt32: Value], of scene: SceneRecall, context: inout TraitContext)
}

extension SceneCapable {
    /// What a scene stores of this trait now.
    public var sceneValues: [UInt32: Value] {
        var values: [UInt32: Value] = [:]
        for id in Self.sceneAttributes { if let v = read(id) { values[id] = v } }
        return values
    }
}

/// What a trait that ``TraitServer/readsEndpoint`` sees of its endpoint when it acts, before it acts.
public struct EndpointView: Sendable {
    /// The endpoint's traits, the acting one included.
    public let traits: [any TraitServer]

    /// The scene-capable traits' current values, by cluster id then attribute id.
    public var sceneValues: [UInt32: [UInt32: Value]] {
        var result: [UInt32: [UInt32: Value]] = [:]
        for t in traits {
            if let capable = t as? any SceneCapable { result[type(of: t).descriptor.clusterID] = capable.sceneValues }
        }
        return result
    }

    /// The scene-capable traits' cluster ids and captured attributes: what an extension field set may name.
    public var sceneAttributes: [UInt32: [UInt32]] {
        var result: [UInt32: [UInt32]] = [:]
        for t in traits {
            if let capable = type(of: t) as? any SceneCapable.Type {
                result[type(of: t).descriptor.clusterID] = capable.sceneAttributes
            }
        }
        return result
    }

    /// The first trait of type `T`.
    public func trait<T: TraitServer>(_: T.Type) -> T? {
        for t in traits { if let found = t as? T { return found } }
        return nil
    }
}

/// What hardware below a trait reports.
public enum TraitInput: Sendable, Hashable {
    /// A measured value in the attribute's units (0.01 %RH, 0.01 °C); `.null` when the reading is lost.
    case measurement(Value)
    /// A switch's position (0 released/off, 1 pressed/on).
    case switchPosition(Int)
    /// A two-state input after debounce: a door contact closed (`true`) or open, a motion detector's output active or
    /// not.
    case binaryState(Bool)
    /// A power meter's reading (ElectricalPowerMeasurement's values; ElectricalEnergyMeasurement integrates it).
    case electricalPower(ElectricalReading)
    /// What the owning hub published for a mirrored trait: attribute values by name, supported commands.
    case mirror([String: Value], commands: [String])
    /// Named values a binding estimates or measures for its trait (a window covering's position and motion): an open
    /// set, so new hardware needs no new case here. The trait names the keys it takes and rejects the rest.
    case report([String: Value])
}

/// What an endpoint's hardware should show, rendered from its traits after every change and step.
///
/// An open set of values keyed by trait: each trait declares its ``OutputKey``s beside its server (OnOff's `onOff`,
/// a window covering's target) and sets them in ``TraitServer/render(into:)``; a binding reads the keys of the traits
/// it drives. A new kind of output is a new key in the trait's own file, never a change here.
///
/// The values live inline (a handful per endpoint): the engine renders an endpoint several times per command and at
/// every transition step, and compares each rendering with the last, so a rendering allocates nothing until an
/// endpoint has more values than the inline slots hold.
public struct EndpointOutput: Sendable, Hashable {
    struct Slot: Sendable, Hashable, BitwiseCopyable {
        var key: UInt64
        var bits: Int64
    }

    static let inlineCapacity = 6
    private static let empty = Slot(key: 0, bits: 0)
    /// A homogeneous tuple, read and written through its bytes.
    private var inline: (Slot, Slot, Slot, Slot, Slot, Slot) = (empty, empty, empty, empty, empty, empty)
    private var inlineCount: UInt8 = 0

    @inline(__always)
    private func inlineSlot(_ i: Int) -> Slot {
        withUnsafeBytes(of: inline) { $0.load(fromByteOffset: i * MemoryLayout<Slot>.stride, as: Slot.self) }
    }

    @inline(__always)
    private mutating func setInline(_ i: Int, _ slot: Slot) {
        withUnsafeMutableBytes(of: &inline) {
            $0.storeBytes(of: slot, toByteOffset: i * MemoryLayout<Slot>.stride, as: Slot.self)
        }
    }
    /// The values beyond the inline slots: empty (no storage) on every endpoint Hearth has.
    private var overflow: [Slot] = []

    public init() {}

    /// The number of values set.
    public var count: Int { Int(inlineCount) + overflow.count }

    @inline(__always)
    private func index(of key: UInt64) -> Int? {
        let count = Int(inlineCount)
        // One pass over the tuple's bytes: a load per slot through `inlineSlot` cost a closure call each.
        let found = withUnsafeBytes(of: inline) { bytes -> Int? in
            let slots = bytes.bindMemory(to: Slot.self)
            for i in 0..<count where slots[i].key == key { return i }
            return nil
        }
        if let found { return found }
        if overflow.isEmpty { return nil }
        if let j = overflow.firstIndex(where: { $0.key == key }) { return Self.inlineCapacity + j }
        return nil
    }

    @inline(__always)
    private func slot(_ i: Int) -> Slot { i < Self.inlineCapacity ? inlineSlot(i) : overflow[i - Self.inlineCapacity] }

    @inline(__always)
    private mutating func set(_ key: UInt64, _ bits: Int64?) {
        let found = index(of: key)
        switch (found, bits) {
        case (let i?, let bits?):
            if i < Self.inlineCapacity {
                setInline(i, Slot(key: key, bits: bits))
            } else {
                overflow[i - Self.inlineCapacity].bits = bits
            }
        case (nil, let bits?):
            if Int(inlineCount) < Self.inlineCapacity {
                setInline(Int(inlineCount), Slot(key: key, bits: bits))
                inlineCount += 1
            } else {
                overflow.append(Slot(key: key, bits: bits))
            }
        case (let i?, nil):
            // The last value takes the removed one's place, so the used slots stay together.
            let lastIndex = count - 1
            let last = slot(lastIndex)
            if i < Self.inlineCapacity { setInline(i, last) } else { overflow[i - Self.inlineCapacity] = last }
            if lastIndex >= Self.inlineCapacity { overflow.removeLast() } else { inlineCount -= 1 }
        case (nil, nil):
            break
        }
    }

    /// The value a trait rendered for `key`, or nil when no trait of the endpoint set it.
    public subscript<V: OutputValue>(key: OutputKey<V>) -> V? {
        get { index(of: key.rawValue).flatMap { V(outputBits: slot($0).bits) } }
        set { set(key.rawValue, newValue?.outputBits) }
    }

    /// The same values, in any order.
    public static func == (a: EndpointOutput, b: EndpointOutput) -> Bool {
        guard a.count == b.count else { return false }
        // The traits of an endpoint render in one order, so two renderings usually hold their keys in the same order.
        if a.overflow.isEmpty && b.overflow.isEmpty {
            let count = Int(a.inlineCount)
            let same = withUnsafeBytes(of: a.inline) { x in
                withUnsafeBytes(of: b.inline) { y in
                    let xs = x.bindMemory(to: Slot.self), ys = y.bindMemory(to: Slot.self)
                    for i in 0..<count where xs[i] != ys[i] { return false }
                    return true
                }
            }
            if same { return true }
        }
        for i in 0..<a.count {
            let s = a.slot(i)
            guard let j = b.index(of: s.key), b.slot(j).bits == s.bits else { return false }
        }
        return true
    }

    public func hash(into hasher: inout Hasher) {
        // Order-independent, as `==` is.
        var sum: UInt64 = 0
        for i in 0..<count {
            let s = slot(i)
            sum &+= (s.key &* 0x9E37_79B9_7F4A_7C15) ^ UInt64(bitPattern: s.bits)
        }
        hasher.combine(count)
        hasher.combine(sum)
    }
}

/// A typed key of ``EndpointOutput``: one value a trait renders for its hardware, named by the trait's cluster and a
/// field number the trait chooses. Declared beside the trait, as
/// `extension OutputKey where Value == Bool { public static var onOff: Self { .init(cluster: 0x0006, field: 0) } }`.
public struct OutputKey<Value: OutputValue>: Sendable, Hashable {
    let rawValue: UInt64

    public init(cluster: UInt32, field: UInt8) {
        rawValue = UInt64(cluster) << 8 | UInt64(field)
    }
}

/// A value an ``EndpointOutput`` holds: anything that fits in 64 bits.
public protocol OutputValue: Sendable, Hashable {
    init?(outputBits: Int64)
    var outputBits: Int64 { get }
}

extension Bool: OutputValue {
    public init?(outputBits: Int64) { self = outputBits != 0 }
    public var outputBits: Int64 { self ? 1 : 0 }
}

extension Int: OutputValue {
    public init?(outputBits: Int64) { self = Int(truncatingIfNeeded: outputBits) }
    public var outputBits: Int64 { Int64(self) }
}

extension UInt8: OutputValue {
    public init?(outputBits: Int64) { self.init(exactly: outputBits) }
    public var outputBits: Int64 { Int64(self) }
}

extension UInt16: OutputValue {
    public init?(outputBits: Int64) { self.init(exactly: outputBits) }
    public var outputBits: Int64 { Int64(self) }
}

/// What a trait may do besides changing itself: post couplings, report quiet attributes, emit events.
public struct TraitContext: Sendable {
    public let now: EngineInstant
    /// How often outputs are rendered during a transition (20 ms at the default 50 steps/s).
    public let stepInterval: Int64
    /// The endpoint's output as it was before this trait acted (e.g. whether OnOff is on).
    public let output: EndpointOutput

    /// The endpoint before the trait acts; only for traits that ``TraitServer/readsEndpoint``.
    public internal(set) var endpoint: EndpointView?

    var signals: [EndpointSignal] = []
    var reports: [UInt32] = []
    var events: [(name: String, fields: [String: Value])] = []
    var response: [String: Value]?
    var tableChanged = false

    init(now: EngineInstant, stepInterval: Int64, output: EndpointOutput) {
        self.now = now
        self.stepInterval = stepInterval
        self.output = output
    }

    public mutating func post(_ signal: EndpointSignal) { signals.append(signal) }
    /// Reports a quiet (Q) attribute now; other attributes are reported whenever they change.
    public mutating func report(_ attributeID: UInt32) { reports.append(attributeID) }
    /// Emits a trait event (e.g. the Switch's `initialPress`).
    public mutating func emit(_ name: String, _ fields: [String: Value] = [:]) { events.append((name, fields)) }
    /// Answers the command with its response fields (Matter's `…Response`), by name.
    public mutating func respond(_ fields: [String: Value]) { response = fields }
    /// Says the trait's ``TraitServer/table`` changed: the device is saved and the hub republishes its groups.
    public mutating func tableDidChange() { tableChanged = true }
}
