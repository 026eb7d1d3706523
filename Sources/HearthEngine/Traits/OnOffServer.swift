public import HearthModel

/// Matter OnOff (0x0006, revision 6) with the Lighting (LT) and OffOnly features.
///
/// Timed on/off counts in tenths of a second on the engine clock, exactly as the cluster's
/// OnTime/OffWaitTime rules say, so a test can walk a countdown tick by tick.
public struct OnOffServer: TraitServer {
    public static let startUpOnOffEnum = EnumType("StartUpOnOffEnum", [(0, "off"), (1, "on"), (2, "toggle")])
    public static let effectIdentifierEnum = EnumType("EffectIdentifierEnum", [(0, "delayedAllOff"), (1, "dyingLight")])
    public static let onOffControlBitmap = BitmapType("OnOffControlBitmap", [(0, "acceptOnlyWhenOn")])

    public enum Attribute {
        public static let onOff = AttributeDescriptor(
            id: 0x0000, name: "onOff", type: .bool,
            changedByCommands: true, nonVolatile: true)
        public static let globalSceneControl = AttributeDescriptor(
            id: 0x4000, name: "globalSceneControl", type: .bool,
            changedByCommands: true)
        public static let onTime = AttributeDescriptor(
            id: 0x4001, name: "onTime", type: .uint16, writable: true,
            changedByCommands: true, nonVolatile: true)
        public static let offWaitTime = AttributeDescriptor(
            id: 0x4002, name: "offWaitTime", type: .uint16, writable: true,
            changedByCommands: true, nonVolatile: true)
        public static let startUpOnOff = AttributeDescriptor(
            id: 0x4003, name: "startUpOnOff",
            type: .enumeration(startUpOnOffEnum), nullable: true,
            writable: true, nonVolatile: true)
    }

    public enum Command {
        public static let off = CommandDescriptor(id: 0x00, name: "off")
        public static let on = CommandDescriptor(id: 0x01, name: "on")
        public static let toggle = CommandDescriptor(id: 0x02, name: "toggle")
        public static let offWithEffect = CommandDescriptor(id: 0x40, name: "offWithEffect", fields: [
            FieldDescriptor("effectIdentifier", .enumeration(effectIdentifierEnum)),
            FieldDescriptor("effectVariant", .uint8, default: .int(0)),
        ])
        public static let onWithRecallGlobalScene = CommandDescriptor(id: 0x41, name: "onWithRecallGlobalScene")
        public static let onWithTimedOff = CommandDescriptor(id: 0x42, name: "onWithTimedOff", fields: [
            FieldDescriptor("onOffControl", .bitmap(onOffControlBitmap), default: .int(0)),
            FieldDescriptor("onTime", .uint16, constraint: 0...0xFFFE),
            FieldDescriptor("offWaitTime", .uint16, constraint: 0...0xFFFE),
        ])
    }

    public static let listensToSignals = true

    public static let descriptor = TraitDescriptor(
        id: .onOff, clusterID: 0x0006, revision: 6,
        features: [.init(bit: 0, "lighting"), .init(bit: 1, "deadFrontBehavior"), .init(bit: 2, "offOnly")],
        attributes: [Attribute.onOff, Attribute.globalSceneControl, Attribute.onTime, Attribute.offWaitTime,
                     Attribute.startUpOnOff],
        commands: [Command.off, Command.on, Command.toggle, Command.offWithEffect, Command.onWithRecallGlobalScene,
                   Command.onWithTimedOff])

    /// OnTime and OffWaitTime tick every tenth of a second.
    static let tick: Int64 = 100
    /// 0xFFFF in OnTime or OffWaitTime means "forever": no countdown.
    static let forever = 0xFFFF

    public let isLighting: Bool
    public let isOffOnly: Bool
    public private(set) var onOff = false
    public private(set) var globalSceneControl = true
    public private(set) var onTime = 0
    public private(set) var offWaitTime = 0
    public private(set) var startUpOnOff: Int? = nil
    private var nextTick: EngineInstant?

    public init(features: Set<String>) throws(HomeError) {
        for f in features where f != "lighting" && f != "offOnly" {
            throw .constraintError("onOff has no feature '\(f)'; its features are lighting and offOnly")
        }
        if features.contains("lighting") && features.contains("offOnly") {
            throw .constraintError("onOff cannot have both lighting and offOnly (Matter forbids the pair)")
        }
        isLighting = features.contains("lighting")
        isOffOnly = features.contains("offOnly")
    }

    public func read(_ id: UInt32) -> Value? {
        switch id {
        case Attribute.onOff.id: .bool(onOff)
        case Attribute.globalSceneControl.id: isLighting ? .bool(globalSceneControl) : nil
        case Attribute.onTime.id: isLighting ? .int(onTime) : nil
        case Attribute.offWaitTime.id: isLighting ? .int(offWaitTime) : nil
        case Attribute.startUpOnOff.id: isLighting ? startUpOnOff.map(Value.int) ?? .null : nil
        default: nil
        }
    }

    public func supports(_ command: CommandDescriptor) -> Bool {
        switch command.id {
        case Command.off.id: true
        case Command.on.id, Command.toggle.id: !isOffOnly
        default: isLighting
        }
    }

    public mutating func load(_ attribute: AttributeDescriptor, _ value: Value) throws(HomeError) {
        switch (attribute.id, value) {
        case (Attribute.onOff.id, .bool(let b)): onOff = b
        case (Attribute.onTime.id, .int(let i)): onTime = i
        case (Attribute.offWaitTime.id, .int(let i)): offWaitTime = i
        case (Attribute.startUpOnOff.id, _): startUpOnOff = value.intValue
        default: throw Self.unknownAttribute(attribute)
        }
    }

    public mutating func startUp(context: inout TraitContext) {
        // Matter: 0 off, 1 on, 2 the opposite of before, null as before. The result is what gets
        // saved next, so Toggle flips the light on every power-up (as the reference server does).
        switch isLighting ? startUpOnOff : nil {
        case 0: onOff = false
        case 1: onOff = true
        case 2: onOff.toggle()
        default: break
        }
        onTime = min(onTime, Self.forever)
        scheduleCountdown(context: context, restart: true)
    }

    public mutating func write(_ attribute: AttributeDescriptor, _ value: Value, context: inout TraitContext)
        throws(HomeError)
    {
        try load(attribute, value)
        if attribute.id == Attribute.onTime.id || attribute.id == Attribute.offWaitTime.id {
            scheduleCountdown(context: context, restart: true)
        }
    }

    public mutating func invoke(_ arguments: CommandArguments, context: inout TraitContext) throws(HomeError) {
        switch arguments.command.id {
        case Command.off.id:
            setOnOff(false, context: &context)
        case Command.on.id:
            setOnOff(true, context: &context)
        case Command.toggle.id:
            setOnOff(!onOff, context: &context)
        case Command.offWithEffect.id:
            offWithEffect(identifier: arguments.int("effectIdentifier")!, variant: arguments.int("effectVariant")!,
                          context: &context)
        case Command.onWithRecallGlobalScene.id:
            // Discarded (with success) when the global scene is already in force.
            guard !globalSceneControl else { return }
            context.post(.recallGlobalScene)
            onOff = true
            globalSceneControl = true
            if onTime == 0 { offWaitTime = 0 }
        case Command.onWithTimedOff.id:
            onWithTimedOff(acceptOnlyWhenOn: arguments.int("onOffControl")! & 1 != 0,
                           onTime: arguments.int("onTime")!, offWaitTime: arguments.int("offWaitTime")!,
                           context: &context)
        default:
            throw .unsupportedCommand("onOff has no command \(arguments.command.name)")
        }
        scheduleCountdown(context: context, restart: false)
    }

    /// On, Off and Toggle, with the Lighting side effects on OnTime, OffWaitTime and GlobalSceneControl.
    private mutating func setOnOff(_ newValue: Bool, context: inout TraitContext) {
        let changed = onOff != newValue
        if newValue {
            if isLighting {
                if onTime == 0 { offWaitTime = 0 }
                globalSceneControl = true
            }
        } else if isLighting {
            onTime = 0
        }
        onOff = newValue
        if changed { context.post(.onOffCommanded(isOn: newValue)) }
    }

    private mutating func offWithEffect(identifier: Int, variant: Int, context: inout TraitContext) {
        guard globalSceneControl else {
            setOnOff(false, context: &context)
            return
        }
        // A variant the effect does not define falls back to the effect's default variant 0.
        let known = identifier == 0 ? 0...2 : 0...0
        context.post(.offWithEffect(identifier: identifier, variant: known.contains(variant) ? variant : 0))
        globalSceneControl = false
        onOff = false
        onTime = 0
    }

    private mutating func onWithTimedOff(acceptOnlyWhenOn: Bool, onTime newOnTime: Int, offWaitTime newOffWait: Int,
                                         context: inout TraitContext) {
        if acceptOnlyWhenOn && !onOff { return }
        if offWaitTime > 0 && !onOff {
            // The delayed-off guard: while it runs the light stays off; the guard may only shrink.
            offWaitTime = min(offWaitTime, newOffWait)
            return
        }
        let wasOn = onOff
        onOff = true
        if isLighting { globalSceneControl = true }
        onTime = max(onTime, newOnTime)
        offWaitTime = newOffWait
        if !wasOn { context.post(.onOffCommanded(isOn: true)) }
    }

    public mutating func receive(_ signal: EndpointSignal, context: inout TraitContext) {
        guard case .levelSetsOnOff(let isOn, let setsGlobalSceneControl) = signal else { return }
        // Lighting: a LevelControl command that turns OnOff off clears OnTime; one that turns it on
        // with OnTime 0 clears OffWaitTime.
        if isLighting {
            if isOn {
                if onTime == 0 { offWaitTime = 0 }
                if setsGlobalSceneControl { globalSceneControl = true }
            } else {
                onTime = 0
            }
        }
        onOff = isOn
        scheduleCountdown(context: context, restart: false)
    }

    private var countdownRuns: Bool {
        isLighting && onTime != Self.forever && offWaitTime != Self.forever
            && ((onOff && onTime > 0) || (!onOff && offWaitTime > 0))
    }

    private mutating func scheduleCountdown(context: TraitContext, restart: Bool) {
        if !countdownRuns {
            nextTick = nil
        } else if restart || nextTick == nil {
            nextTick = context.now + Self.tick
        }
    }

    public var nextDeadline: EngineInstant? { nextTick }

    public mutating func advance(context: inout TraitContext) {
        guard let due = nextTick, due <= context.now else { return }
        if onOff {
            if onTime > 0 {
                onTime -= 1
                if onTime == 0 {
                    offWaitTime = 0
                    setOnOff(false, context: &context)
                }
            }
        } else if offWaitTime > 0 {
            offWaitTime -= 1
        }
        nextTick = countdownRuns ? due + Self.tick : nil
    }

    public func render(into output: inout EndpointOutput) { output.onOff = onOff }
}

extension OnOffServer: SceneCapable {
    /// Matter: OnOff has the S quality.
    public static var sceneAttributes: [UInt32] { [Attribute.onOff.id] }

    /// On or Off as the scene stored it, with the Lighting side effects of On and Off but without LevelControl's
    /// on/off fade: LevelControl recalls the scene's level within the same transition.
    public mutating func recall(_ values: [UInt32: Value], of scene: SceneRecall, context: inout TraitContext) {
        guard case .bool(let on)? = values[Attribute.onOff.id], !(on && isOffOnly) else { return }
        if isLighting {
            if on {
                if onTime == 0 { offWaitTime = 0 }
                globalSceneControl = true
            } else {
                onTime = 0
            }
        }
        onOff = on
        scheduleCountdown(context: context, restart: false)
    }
}

extension OutputKey where Value == Bool {
    /// The OnOff attribute, as the endpoint's hardware shows it.
    public static var onOff: Self { .init(cluster: 0x0006, field: 0) }
}

extension EndpointOutput {
    /// The OnOff attribute; `nil` when the endpoint has no OnOff.
    public var onOff: Bool? {
        get { self[.onOff] }
        set { self[.onOff] = newValue }
    }
}
