public import HearthModel

/// Matter Window Covering (0x0102, docs/clusters/window-covering.md) with the Lift (LF) and PositionAwareLift (PA_LF)
/// features: a blind, shade or shutter that moves up and down and knows where it is.
///
/// Positions are in hundredths of a percent closed: 0 is fully open (up), 10000 fully closed. The trait holds what
/// clients asked (TargetPositionLiftPercent100ths) and renders it for the binding while a move is asked for; the
/// binding runs the motor, estimates where the covering is and reports it back (`report(["position", "motion",
/// "target"])`), which sets CurrentPositionLiftPercent100ths and OperationalStatus. The current position survives a
/// restart (N quality); after one the target is the current position, so nothing moves until a client asks.
public struct WindowCoveringServer: TraitServer {
    public static let typeEnum = EnumType(
        "TypeEnum",
        [
            (0, "rollershade"), (1, "rollershade2Motor"), (2, "rollershadeExterior"), (3, "rollershadeExterior2Motor"),
            (4, "drapery"), (5, "awning"), (6, "shutter"), (9, "projectorScreen"), (0xFF, "unknown"),
        ])
    public static let endProductTypeEnum = EnumType(
        "EndProductTypeEnum",
        [
            (0, "rollerShade"), (1, "romanShade"), (2, "balloonShade"), (3, "wovenWood"), (4, "pleatedShade"),
            (5, "cellularShade"), (6, "layeredShade"), (7, "layeredShade2D"), (8, "sheerShade"), (11, "interiorBlind"),
            (13, "exteriorVenetianBlind"), (17, "rollerShutter"), (18, "exteriorVerticalScreen"),
            (19, "awningTerracePatio"),
            (20, "awningVerticalScreen"), (22, "swingingShutter"), (23, "slidingShutter"), (0xFF, "unknown"),
        ])
    public static let configStatusBitmap = BitmapType(
        "ConfigStatusBitmap",
        [
            (0, "operational"), (1, "onlineReserved"), (2, "liftMovementReversed"), (3, "liftPositionAware"),
        ])
    /// Matter's OperationalStatusBitmap is three two-bit MovementStatus fields (global, lift, tilt: 0 stopped, 1
    /// opening, 2 closing); as bits, each field's two values are its two bits.
    public static let operationalStatusBitmap = BitmapType("OperationalStatusBitmap", [
        (0, "globalOpening"), (1, "globalClosing"), (2, "liftOpening"), (3, "liftClosing"),
    ])
    public static let modeBitmap = BitmapType("ModeBitmap", [(0, "motorDirectionReversed"), (2, "maintenanceMode")])

    public enum Attribute {
        public static let type = AttributeDescriptor(id: 0x0000, name: "type", type: .enumeration(typeEnum))
        public static let configStatus = AttributeDescriptor(id: 0x0007, name: "configStatus",
                                                             type: .bitmap(configStatusBitmap))
        public static let currentPositionLiftPercentage = AttributeDescriptor(
            id: 0x0008, name: "currentPositionLiftPercentage", type: .uint8, nullable: true, changedByCommands: true,
            constraint: 0...100)
        public static let operationalStatus = AttributeDescriptor(
            id: 0x000A, name: "operationalStatus", type: .bitmap(operationalStatusBitmap), changedByCommands: true)
        public static let targetPositionLiftPercent100ths = AttributeDescriptor(
            id: 0x000B, name: "targetPositionLiftPercent100ths", type: .uint16, nullable: true, changedByCommands: true,
            constraint: 0...10000)
        public static let endProductType = AttributeDescriptor(id: 0x000D, name: "endProductType",
                                                               type: .enumeration(endProductTypeEnum))
        public static let currentPositionLiftPercent100ths = AttributeDescriptor(
            id: 0x000E, name: "currentPositionLiftPercent100ths", type: .uint16, nullable: true,
            changedByCommands: true,
            nonVolatile: true, constraint: 0...10000)
        public static let mode = AttributeDescriptor(
            id: 0x0017, name: "mode", type: .bitmap(modeBitmap), writable: true,
            nonVolatile: true)
    }

    public enum Command {
        public static let upOrOpen = CommandDescriptor(id: 0x00, name: "upOrOpen")
        public static let downOrClose = CommandDescriptor(id: 0x01, name: "downOrClose")
        public static let stopMotion = CommandDescriptor(id: 0x02, name: "stopMotion")
        public static let goToLiftPercentage = CommandDescriptor(id: 0x05, name: "goToLiftPercentage", fields: [
            FieldDescriptor("liftPercent100thsValue", .uint16, constraint: 0...10000),
        ])
    }

    public static let descriptor = TraitDescriptor(
        id: .windowCovering, clusterID: 0x0102, revision: 5,
        features: [
            .init(bit: 0, "lift"), .init(bit: 1, "tilt"), .init(bit: 2, "positionAwareLift"),
            .init(bit: 3, "absolutePosition"), .init(bit: 4, "positionAwareTilt"),
        ],
        attributes: [Attribute.type, Attribute.configStatus, Attribute.currentPositionLiftPercentage,
                     Attribute.operationalStatus, Attribute.targetPositionLiftPercent100ths, Attribute.endProductType,
                     Attribute.currentPositionLiftPercent100ths, Attribute.mode],
        commands: [Command.upOrOpen, Command.downOrClose, Command.stopMotion, Command.goToLiftPercentage])

    /// MovementStatus: what a binding reports as `motion`.
    public enum Motion: Int, Sendable {
        case stopped = 0, opening = 1, closing = 2
    }

    public static let fullyOpen = 0
    public static let fullyClosed = 10000

    public private(set) var type = 0
    public private(set) var endProductType = 0
    public private(set) var mode = 0
    /// Where the binding last said the covering is; nil until it has been to an end (or was restored).
    public private(set) var current: Int?
    public private(set) var target: Int?
    public private(set) var motion = Motion.stopped
    /// A client asked for a move the binding has not finished: the target is rendered for it.
    public private(set) var isMoveRequested = false

    public init(features: Set<String>) throws(HomeError) {
        for f in features where f != "lift" && f != "positionAwareLift" {
            throw .constraintError("windowCovering has no feature '\(f)'; its features are lift and positionAwareLift")
        }
        guard features.contains("lift") else { throw .constraintError("windowCovering needs the lift feature") }
    }

    public var isMotorReversed: Bool { mode & 1 != 0 }
    public var isInMaintenance: Bool { mode & 4 != 0 }
    /// Operational, online, position-aware; the reversal as Mode says.
    public var configStatus: Int { 0b1011 | (isMotorReversed ? 0b100 : 0) }
    public var operationalStatus: Int { motion.rawValue | motion.rawValue << 2 }

    public func read(_ id: UInt32) -> Value? {
        switch id {
        case Attribute.type.id: .int(type)
        case Attribute.configStatus.id: .int(configStatus)
        case Attribute.currentPositionLiftPercentage.id: current.map { .int($0 / 100) } ?? .null
        case Attribute.operationalStatus.id: .int(operationalStatus)
        case Attribute.targetPositionLiftPercent100ths.id: target.map(Value.int) ?? .null
        case Attribute.endProductType.id: .int(endProductType)
        case Attribute.currentPositionLiftPercent100ths.id: current.map(Value.int) ?? .null
        case Attribute.mode.id: .int(mode)
        default: nil
        }
    }

    public mutating func load(_ attribute: AttributeDescriptor, _ value: Value) throws(HomeError) {
        let i = value.intValue
        switch attribute.id {
        case Attribute.type.id: type = i ?? 0
        case Attribute.endProductType.id: endProductType = i ?? 0
        case Attribute.mode.id: mode = i ?? 0
        case Attribute.currentPositionLiftPercent100ths.id:
            if let i, !(0...Self.fullyClosed).contains(i) {
                throw .constraintError("currentPositionLiftPercent100ths \(i) is out of range 0…10000")
            }
            current = i
        default:
            throw .unsupportedAttribute("\(attribute.name) follows from the covering's motion; it cannot be set")
        }
    }

    public mutating func startUp(context: inout TraitContext) {
        target = current
        motion = .stopped
        isMoveRequested = false
    }

    public mutating func write(_ attribute: AttributeDescriptor, _ value: Value, context: inout TraitContext)
        throws(HomeError)
    {
        guard attribute.id == Attribute.mode.id, let bits = value.intValue else {
            throw .unsupportedWrite("\(attribute.name) is read-only")
        }
        mode = bits
    }

    public mutating func invoke(_ arguments: CommandArguments, context: inout TraitContext) throws(HomeError) {
        // Matter: a covering in maintenance answers every motion command BUSY.
        if isInMaintenance { throw HomeError(.busy, "the window covering is in maintenance mode") }
        switch arguments.command.id {
        case Command.upOrOpen.id: move(to: Self.fullyOpen)
        case Command.downOrClose.id: move(to: Self.fullyClosed)
        case Command.goToLiftPercentage.id: move(to: arguments.int("liftPercent100thsValue")!)
        default:  // stopMotion
            isMoveRequested = false
            target = current
        }
    }

    private mutating func move(to position: Int) {
        target = position
        isMoveRequested = true
    }

    /// What the binding estimates: `position` (0…10000 or null when unknown), `motion` (0 stopped, 1 opening,
    /// 2 closing: where it is heading, during a pause before reversing too) and `target` (the target it works
    /// towards, or null). A stop reported for the target the trait still asks for ends the move there: reached, cut
    /// off or stopped by an end stop, the target becomes where the covering stopped.
    public mutating func ingest(_ input: TraitInput, context: inout TraitContext) throws(HomeError) {
        guard case .report(let values) = input else {
            throw .invalidCommand("windowCovering takes a report of position, motion and target, not \(input)")
        }
        for key in values.keys where !["position", "motion", "target"].contains(key) {
            throw .invalidCommand("windowCovering's report has no '\(key)'; it takes position, motion and target")
        }
        func position(_ key: String) throws(HomeError) -> Int?? {
            guard let v = values[key] else { return .none }
            if v.isNull { return .some(nil) }
            guard let p = v.intValue, (0...Self.fullyClosed).contains(p) else {
                throw .constraintError("windowCovering's reported \(key) \(v) is not a position 0…10000 or null")
            }
            return .some(p)
        }
        let reported = try position("position")
        let reportedTarget = try position("target")
        var newMotion = motion
        if let m = values["motion"] {
            guard let raw = m.intValue, let parsed = Motion(rawValue: raw) else {
                throw .constraintError("windowCovering's reported motion \(m) is not 0, 1 or 2")
            }
            newMotion = parsed
        }
        if let p = reported { current = p }
        motion = newMotion
        if newMotion == .stopped, isMoveRequested, let t = reportedTarget, t == target { isMoveRequested = false }
        // Standing still with nothing asked: the target is where it stands (a stop is reported after StopMotion).
        if newMotion == .stopped, !isMoveRequested { target = current }
    }

    public func render(into output: inout EndpointOutput) {
        if isMoveRequested, let target { output.coverTarget = UInt16(clamping: target) }
        if isMotorReversed { output.coverReversed = true }
    }
}

extension OutputKey where Value == UInt16 {
    /// Where a window covering should go, in 100ths of a percent closed; unset: stay (stop) where it is.
    public static var coverTarget: Self { .init(cluster: 0x0102, field: 0) }
}

extension OutputKey where Value == Bool {
    /// The motor turns the other way: up is the wire named down.
    public static var coverReversed: Self { .init(cluster: 0x0102, field: 1) }
}

extension EndpointOutput {
    /// Where a window covering should go (0 open … 10000 closed); nil: stop where it is.
    public var coverTarget: UInt16? {
        get { self[.coverTarget] }
        set { self[.coverTarget] = newValue }
    }

    /// Window Covering's Mode has MotorDirectionReversed.
    public var coverReversed: Bool {
        get { self[.coverReversed] ?? false }
        set { self[.coverReversed] = newValue ? true : nil }
    }
}
