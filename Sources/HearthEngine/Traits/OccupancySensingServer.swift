public import HearthModel

/// Matter Occupancy Sensing (0x0406, revision 5; docs/clusters/occupancy-sensing.md): whether someone is there, from a
/// detector's raw signal (a PIR module's output) shaped by HoldTime.
///
/// Occupancy is set as soon as the detector reports, and stays set for HoldTime seconds after the detector's signal
/// last dropped; a detection within that time cancels the countdown, so several triggers make one occupied period.
/// HoldTime is writable within HoldTimeLimits (CONSTRAINT_ERROR outside, nothing changed) and kept across restarts;
/// a new HoldTime applies to a countdown already running, counted from when the signal dropped. The sensing modality
/// is the trait's features (a PIR binding adds `passiveInfrared`); the deprecated OccupancySensorType and
/// OccupancySensorTypeBitmap follow from them by the cluster's backward-compatibility table. The first reading after
/// start-up sets Occupancy without an OccupancyChanged event (nobody saw the state before it); later changes emit one.
public struct OccupancySensingServer: TraitServer {
    public static let occupancyBitmap = BitmapType("OccupancyBitmap", [(0, "occupied")])
    public static let sensorTypeEnum = EnumType("OccupancySensorTypeEnum", [
        (0, "pir"), (1, "ultrasonic"), (2, "pirAndUltrasonic"), (3, "physicalContact"),
    ])
    public static let sensorTypeBitmap = BitmapType("OccupancySensorTypeBitmap", [
        (0, "pir"), (1, "ultrasonic"), (2, "physicalContact"),
    ])
    public static let holdTimeLimitsStruct = StructType("HoldTimeLimitsStruct", [
        FieldDescriptor("holdTimeMin", .uint16, constraint: 1...0xFFFF),
        FieldDescriptor("holdTimeMax", .uint16, constraint: 10...0xFFFF),
        FieldDescriptor("holdTimeDefault", .uint16, constraint: 1...0xFFFF),
    ])

    public enum Attribute {
        public static let occupancy = AttributeDescriptor(id: 0x0000, name: "occupancy", type: .bitmap(occupancyBitmap))
        public static let occupancySensorType = AttributeDescriptor(id: 0x0001, name: "occupancySensorType",
                                                                    type: .enumeration(sensorTypeEnum))
        public static let occupancySensorTypeBitmap = AttributeDescriptor(id: 0x0002, name: "occupancySensorTypeBitmap",
                                                                          type: .bitmap(sensorTypeBitmap))
        public static let holdTime = AttributeDescriptor(id: 0x0003, name: "holdTime", type: .uint16, writable: true,
                                                         nonVolatile: true)
        public static let holdTimeLimits = AttributeDescriptor(id: 0x0004, name: "holdTimeLimits",
                                                               type: .structure(holdTimeLimitsStruct))
    }

    public enum Event {
        public static let occupancyChanged = EventDescriptor(id: 0x00, name: "occupancyChanged", fields: [
            FieldDescriptor("occupancy", .bitmap(occupancyBitmap)),
        ])
    }

    public static let descriptor = TraitDescriptor(
        id: .occupancySensing, clusterID: 0x0406, revision: 5,
        features: [
            .init(bit: 0, "other"), .init(bit: 1, "passiveInfrared"), .init(bit: 2, "ultrasonic"),
            .init(bit: 3, "physicalContact"), .init(bit: 4, "activeInfrared"), .init(bit: 5, "radar"),
            .init(bit: 6, "rfSensing"), .init(bit: 7, "vision"),
        ],
        attributes: [Attribute.occupancy, Attribute.occupancySensorType, Attribute.occupancySensorTypeBitmap,
                     Attribute.holdTime, Attribute.holdTimeLimits],
        events: [Event.occupancyChanged])

    /// The sensing modalities, Matter's feature bits 0–7 in order.
    public static let features = [
        "other", "passiveInfrared", "ultrasonic", "physicalContact", "activeInfrared", "radar",
        "rfSensing", "vision",
    ]

    /// HoldTimeLimits: what Hearth's timer supports unless the configuration narrows it (to what a detector can do).
    /// The widest limits by default, so a configured HoldTime checked before the configured limits arrive is never
    /// refused for limits that are about to change; the limits check it again when they arrive.
    public struct HoldTimeLimits: Sendable, Hashable {
        public var minimum = 1
        public var maximum = 0xFFFF
        public var defaultValue = 30
    }

    public let features: Set<String>
    public private(set) var occupied = false
    public private(set) var limits = HoldTimeLimits()
    /// A HoldTime configured, saved or written; nil uses the limits' default.
    private var chosenHoldTime: Int?
    /// Whether the detector has reported since start-up.
    public private(set) var hasReading = false
    /// When the detector's signal last dropped while occupied; the countdown runs from there.
    private var signalDropped: EngineInstant?

    public var holdTime: Int { chosenHoldTime ?? limits.defaultValue }

    public init(features: Set<String>) throws(HomeError) {
        if let f = features.subtracting(Self.features).sorted().first {
            throw .constraintError("occupancySensing has no feature '\(f)'; its features are "
                                   + Self.features.joined(separator: ", "))
        }
        guard !features.isEmpty else {
            throw .constraintError("occupancySensing needs at least one sensing feature (a pir binding adds "
                                   + "passiveInfrared); its features are " + Self.features.joined(separator: ", "))
        }
        self.features = features
    }

    /// OccupancySensorType from the features (PHY, US, PIR → the cluster's table; none of those three → pir).
    public var sensorType: Int {
        let pir = features.contains("passiveInfrared"), us = features.contains("ultrasonic")
        if pir && us { return 2 }
        if us { return 1 }
        if !pir && features.contains("physicalContact") { return 3 }
        return 0
    }

    /// OccupancySensorTypeBitmap from the features (none of PIR, US, PHY → pir).
    public var sensorTypeBitmap: Int {
        var bits = 0
        if features.contains("passiveInfrared") { bits |= 1 }
        if features.contains("ultrasonic") { bits |= 2 }
        if features.contains("physicalContact") { bits |= 4 }
        return bits == 0 ? 1 : bits
    }

    public func read(_ id: UInt32) -> Value? {
        switch id {
        case Attribute.occupancy.id: .int(occupied ? 1 : 0)
        case Attribute.occupancySensorType.id: .int(sensorType)
        case Attribute.occupancySensorTypeBitmap.id: .int(sensorTypeBitmap)
        case Attribute.holdTime.id: .int(holdTime)
        case Attribute.holdTimeLimits.id:
            .structure(["holdTimeMin": .int(limits.minimum), "holdTimeMax": .int(limits.maximum),
                        "holdTimeDefault": .int(limits.defaultValue)])
        default: nil
        }
    }

    public mutating func load(_ attribute: AttributeDescriptor, _ value: Value) throws(HomeError) {
        switch (attribute.id, value) {
        case (Attribute.occupancy.id, _):
            break  // the detector says whether someone is there
        case (Attribute.occupancySensorType.id, .int(let v)) where v == sensorType:
            break
        case (Attribute.occupancySensorTypeBitmap.id, .int(let v)) where v == sensorTypeBitmap:
            break
        case (Attribute.occupancySensorType.id, _), (Attribute.occupancySensorTypeBitmap.id, _):
            throw .constraintError(
                "\(attribute.name) follows the trait's features (\(features.sorted().joined(separator: ", "))); "
                    + "set features instead")
        case (Attribute.holdTime.id, .int(let seconds)):
            try checkHoldTime(seconds)
            chosenHoldTime = seconds
        case (Attribute.holdTimeLimits.id, .structure(let fields)):
            let minimum = fields["holdTimeMin"]?.intValue ?? 1
            let maximum = fields["holdTimeMax"]?.intValue ?? 0xFFFF
            let defaultValue = fields["holdTimeDefault"]?.intValue ?? minimum
            guard maximum >= minimum else {
                throw .constraintError("holdTimeLimits.holdTimeMax (\(maximum)) is below holdTimeMin (\(minimum))")
            }
            guard (minimum...maximum).contains(defaultValue) else {
                throw .constraintError(
                    "holdTimeLimits.holdTimeDefault \(defaultValue) is outside holdTimeMin…holdTimeMax "
                        + "(\(minimum)…\(maximum))")
            }
            limits = HoldTimeLimits(minimum: minimum, maximum: maximum, defaultValue: defaultValue)
            if let chosenHoldTime { try checkHoldTime(chosenHoldTime) }
        default:
            throw Self.unknownAttribute(attribute)
        }
    }

    private func checkHoldTime(_ seconds: Int) throws(HomeError) {
        guard (limits.minimum...limits.maximum).contains(seconds) else {
            throw .constraintError(
                "holdTime \(seconds) is out of range; allowed: \(limits.minimum)…\(limits.maximum) "
                    + "(holdTimeLimits)")
        }
    }

    public mutating func write(_ attribute: AttributeDescriptor, _ value: Value, context: inout TraitContext)
        throws(HomeError)
    {
        guard attribute.id == Attribute.holdTime.id, let seconds = value.intValue else {
            throw Self.unknownAttribute(attribute)
        }
        try checkHoldTime(seconds)
        chosenHoldTime = seconds
        // A countdown already running now ends HoldTime after the signal dropped; if that has passed, at once.
        if let dropped = signalDropped, dropped + Int64(seconds) * 1000 <= context.now {
            setOccupied(false, context: &context)
        }
    }

    public mutating func ingest(_ input: TraitInput, context: inout TraitContext) throws(HomeError) {
        guard case .binaryState(let detecting) = input else {
            throw .invalidCommand("occupancySensing takes a binary state, not \(input)")
        }
        if detecting {
            signalDropped = nil
            setOccupied(true, context: &context)
        } else if occupied && signalDropped == nil {
            signalDropped = context.now
        }
        hasReading = true
    }

    public var nextDeadline: EngineInstant? { signalDropped.map { $0 + Int64(holdTime) * 1000 } }

    public mutating func advance(context: inout TraitContext) {
        guard let due = nextDeadline, context.now >= due else { return }
        setOccupied(false, context: &context)
    }

    private mutating func setOccupied(_ value: Bool, context: inout TraitContext) {
        if !value { signalDropped = nil }
        guard value != occupied else { return }
        occupied = value
        if hasReading { context.emit(Event.occupancyChanged.name, ["occupancy": .int(value ? 1 : 0)]) }
    }
}
