public import HearthModel

/// Matter Identify (0x0003): the light blinks (or the indicator shows) so a user can find the device.
///
/// IdentifyTime counts down in seconds; while it runs, the endpoint's output alternates every half
/// second, which a relay or a dimmer renders as a visible blink.
public struct IdentifyServer: TraitServer {
    public static let identifyTypeEnum = EnumType("IdentifyTypeEnum", [
        (0, "none"), (1, "lightOutput"), (2, "visibleIndicator"), (3, "audibleBeep"), (4, "display"), (5, "actuator"),
    ])

    public enum Attribute {
        public static let identifyTime = AttributeDescriptor(id: 0x0000, name: "identifyTime", type: .uint16,
                                                             writable: true, changedByCommands: true)
        public static let identifyType = AttributeDescriptor(id: 0x0001, name: "identifyType",
                                                             type: .enumeration(identifyTypeEnum))
    }

    public enum Command {
        public static let identify = CommandDescriptor(id: 0x00, name: "identify", fields: [
            FieldDescriptor("identifyTime", .uint16),
        ])
    }

    public static let descriptor = TraitDescriptor(
        id: .identify, clusterID: 0x0003, revision: 5, attributes: [Attribute.identifyTime, Attribute.identifyType],
        commands: [Command.identify])

    /// Half a blink period.
    static let blinkHalfPeriod: Int64 = 500

    public private(set) var identifyTime = 0
    public private(set) var identifyType = 1
    private var started: EngineInstant?
    private var nextEvent: EngineInstant?
    private var nextSecond: EngineInstant?
    private var lit = false

    public init(features: Set<String>) throws(HomeError) {
        if let f = features.first { throw .constraintError("identify has no feature '\(f)'") }
    }

    public func read(_ id: UInt32) -> Value? {
        switch id {
        case Attribute.identifyTime.id: .int(identifyTime)
        case Attribute.identifyType.id: .int(identifyType)
        default: nil
        }
    }

    public mutating func load(_ attribute: AttributeDescriptor, _ value: Value) throws(HomeError) {
        switch (attribute.id, value) {
        case (Attribute.identifyType.id, .int(let i)): identifyType = i
        case (Attribute.identifyTime.id, .int): break  // a countdown is never restored
        default: throw Self.unknownAttribute(attribute)
        }
    }

    public mutating func write(_ attribute: AttributeDescriptor, _ value: Value, context: inout TraitContext)
        throws(HomeError)
    {
        guard attribute.id == Attribute.identifyTime.id, let seconds = value.intValue else {
            throw Self.unknownAttribute(attribute)
        }
        identify(for: seconds, context: context)
    }

    public mutating func invoke(_ arguments: CommandArguments, context: inout TraitContext) throws(HomeError) {
        identify(for: arguments.int("identifyTime")!, context: context)
    }

    private mutating func identify(for seconds: Int, context: TraitContext) {
        identifyTime = seconds
        if seconds == 0 {
            started = nil
            nextEvent = nil
            nextSecond = nil
            lit = false
        } else {
            if started == nil { lit = true }
            started = started ?? context.now
            nextSecond = context.now + 1000
            nextEvent = min(context.now + Self.blinkHalfPeriod, nextSecond!)
        }
    }

    public var nextDeadline: EngineInstant? { nextEvent }

    public mutating func advance(context: inout TraitContext) {
        guard let started, let second = nextSecond else { return }
        let now = context.now
        if now >= second {
            identifyTime -= 1
            if identifyTime <= 0 {
                identify(for: 0, context: context)
                return
            }
            nextSecond = second + 1000
        }
        lit = ((now - started) / Self.blinkHalfPeriod) % 2 == 0
        let nextBlink = started + ((now - started) / Self.blinkHalfPeriod + 1) * Self.blinkHalfPeriod
        nextEvent = min(nextBlink, nextSecond!)
    }

    public func render(into output: inout EndpointOutput) {
        if started != nil && identifyType == 1 { output.identifyPhase = lit }
    }
}

extension OutputKey where Value == Bool {
    /// Identify's blink: `true` in the lit half, `false` in the dark half; unset while Identify is not running.
    public static var identifyPhase: Self { .init(cluster: 0x0003, field: 0) }
}

extension EndpointOutput {
    /// Identify is running: `true` in the lit half of the blink, `false` in the dark half.
    public var identifyPhase: Bool? {
        get { self[.identifyPhase] }
        set { self[.identifyPhase] = newValue }
    }
}
