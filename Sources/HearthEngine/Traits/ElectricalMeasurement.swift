public import HearthModel

/// The Measurement and Sensing data types (Matter cluster specification § 2.1) that Electrical Power Measurement and
/// Electrical Energy Measurement share: what is measured, and how accurately
/// (docs/clusters/electrical-power-measurement.md).
public enum ElectricalMeasurement {
    public static let measurementTypeEnum = EnumType("MeasurementTypeEnum", [
        (0, "unspecified"), (1, "voltage"), (2, "activeCurrent"), (3, "reactiveCurrent"), (4, "apparentCurrent"),
        (5, "activePower"), (6, "reactivePower"), (7, "apparentPower"), (8, "rmsVoltage"), (9, "rmsCurrent"),
        (10, "rmsPower"), (11, "frequency"), (12, "powerFactor"), (13, "neutralCurrent"), (14, "electricalEnergy"),
    ])

    /// The spec's int64 bound for power, voltage, current and energy: −2^62 … 2^62.
    public static let int64Limit = 1 << 62

    /// MeasurementAccuracyRangeStruct with the fields Hearth sends. PercentMax and FixedMax are optional in Matter (at
    /// least one of them); Hearth always sends both, and with both the larger bound applies, so 0 in one of them says
    /// what leaving it out says.
    public static let accuracyRangeStruct = StructType("MeasurementAccuracyRangeStruct", [
        FieldDescriptor("rangeMin", .int64),
        FieldDescriptor("rangeMax", .int64),
        FieldDescriptor("percentMax", .uint16, constraint: 0...10_000),
        FieldDescriptor("fixedMax", .uint64, constraint: 0...int64Limit),
    ])

    public static let accuracyStruct = StructType("MeasurementAccuracyStruct", [
        FieldDescriptor("measurementType", .enumeration(measurementTypeEnum)),
        FieldDescriptor("measured", .bool),
        FieldDescriptor("minMeasuredValue", .int64),
        FieldDescriptor("maxMeasuredValue", .int64),
        // Matter gives no maximum; a meter has a few ranges (one per gain setting, say), and 16 bounds what a client
        // or a peer may send.
        FieldDescriptor("accuracyRanges", .list(.structure(accuracyRangeStruct), maxCount: 16)),
    ])

    /// One MeasurementAccuracyStruct with a single range over `min…max`.
    public static func accuracy(_ type: String, measured: Bool, min: Int, max: Int, percentMax: Int, fixedMax: Int = 0)
        -> Value
    {
        .structure([
            "measurementType": .int(measurementTypeEnum.value(named: type) ?? 0),
            "measured": .bool(measured),
            "minMeasuredValue": .int(min),
            "maxMeasuredValue": .int(max),
            "accuracyRanges": .list([
                .structure([
                    "rangeMin": .int(min), "rangeMax": .int(max), "percentMax": .int(percentMax),
                    "fixedMax": .int(fixedMax),
                ])
            ]),
        ])
    }

    /// Checks one MeasurementAccuracyStruct (already of the right shape) against § 2.1.4.4's rules and returns its
    /// measurement type's name: the ranges start at MinMeasuredValue, follow each other without gaps in increasing
    /// order and end at or below MaxMeasuredValue, and each gives a percentage or a fixed bound.
    @discardableResult
    public static func check(_ entry: Value, what: String) throws(HomeError) -> String {
        guard let fields = entry.structureValue, let type = fields["measurementType"]?.intValue,
              let typeName = measurementTypeEnum.name(of: type), let min = fields["minMeasuredValue"]?.intValue,
              let max = fields["maxMeasuredValue"]?.intValue, let ranges = fields["accuracyRanges"]?.listValue
        else { throw .invalidDataType("\(what) is not a MeasurementAccuracyStruct") }
        guard min <= max else {
            throw .constraintError("\(what).minMeasuredValue \(min) is above maxMeasuredValue \(max)")
        }
        guard !ranges.isEmpty else { throw .constraintError("\(what).accuracyRanges needs at least one range") }
        var expectedMin = min
        for (i, range) in ranges.enumerated() {
            let at = "\(what).accuracyRanges[\(i)]"
            guard let r = range.structureValue, let lo = r["rangeMin"]?.intValue, let hi = r["rangeMax"]?.intValue,
                  let percent = r["percentMax"]?.intValue, let fixed = r["fixedMax"]?.intValue
            else { throw .invalidDataType("\(at) is not a MeasurementAccuracyRangeStruct") }
            guard lo == expectedMin else {
                throw .constraintError(
                    i == 0
                        ? "\(at).rangeMin \(lo) must equal minMeasuredValue \(min)"
                        : "\(at).rangeMin \(lo) must be one more than the previous rangeMax (\(expectedMin)): "
                            + "no gaps, in increasing order")
            }
            guard lo <= hi else { throw .constraintError("\(at).rangeMax \(hi) is below its rangeMin \(lo)") }
            guard hi <= max else { throw .constraintError("\(at).rangeMax \(hi) is above maxMeasuredValue \(max)") }
            guard percent > 0 || fixed > 0 else {
                throw .constraintError(
                    "\(at) gives no accuracy: set percentMax (hundredths of a percent) or fixedMax above 0")
            }
            expectedMin = hi &+ 1
        }
        return typeName
    }
}

/// One reading of a power meter, in Matter's units; `nil` where the meter could not measure.
public struct ElectricalReading: Sendable, Hashable {
    /// mW; positive is imported.
    public var activePower: Int?
    /// mV.
    public var voltage: Int?
    /// mA; positive flows into the load.
    public var activeCurrent: Int?
    /// How long ElectricalEnergyMeasurement waits between snapshots of the cumulative energy (ms, 1 s … 60 s):
    /// the binding's setting, carried with each reading so the engine needs no configuration of its own for it.
    public var snapshotInterval: Int64

    public init(activePower: Int?, voltage: Int? = nil, activeCurrent: Int? = nil, snapshotInterval: Int64 = 60_000) {
        self.activePower = activePower
        self.voltage = voltage
        self.activeCurrent = activeCurrent
        self.snapshotInterval = min(60_000, max(1_000, snapshotInterval))
    }

    /// The meter could not be read: every value unknown.
    public static let unknown = ElectricalReading(activePower: nil)
}

/// Matter Electrical Power Measurement (0x0090, docs/clusters/electrical-power-measurement.md) for a DC meter: the
/// latest ActivePower, Voltage and ActiveCurrent, null until a reading and again while the meter cannot be read.
///
/// Only DirectCurrent is implemented (an INA219/INA226 measures a DC load); the AC features are refused because their
/// attributes are not. Accuracy is fixed: the binding supplies the chip's, or the configuration gives one, and either
/// is checked against the Measurement Accuracy rules. The readings are never saved: after a restart they are stale.
public struct ElectricalPowerMeasurementServer: TraitServer {
    public static let powerModeEnum = EnumType("PowerModeEnum", [(0, "unknown"), (1, "dc"), (2, "ac")])
    public static let features = ["directCurrent", "alternatingCurrent", "polyphasePower", "harmonics", "powerQuality"]
    /// The measurement types Hearth reports, ActivePower first (the one the spec requires an accuracy for).
    public static let measurementTypes = ["activePower", "voltage", "activeCurrent"]

    public enum Attribute {
        public static let powerMode = AttributeDescriptor(
            id: 0x0000, name: "powerMode", type: .enumeration(powerModeEnum))
        public static let numberOfMeasurementTypes = AttributeDescriptor(
            id: 0x0001, name: "numberOfMeasurementTypes",
            type: .uint8, constraint: 1...0xFF)
        public static let accuracy = AttributeDescriptor(
            id: 0x0002, name: "accuracy",
            type: .list(.structure(ElectricalMeasurement.accuracyStruct), maxCount: 16))
        public static let voltage = AttributeDescriptor(id: 0x0004, name: "voltage", type: .int64, nullable: true)
        public static let activeCurrent = AttributeDescriptor(
            id: 0x0005, name: "activeCurrent", type: .int64,
            nullable: true)
        public static let activePower = AttributeDescriptor(
            id: 0x0008, name: "activePower", type: .int64, nullable: true)
    }

    public static let descriptor = TraitDescriptor(
        id: .electricalPowerMeasurement, clusterID: 0x0090, revision: 1,
        features: [
            .init(bit: 0, "directCurrent"), .init(bit: 1, "alternatingCurrent"), .init(bit: 2, "polyphasePower"),
            .init(bit: 3, "harmonics"), .init(bit: 4, "powerQuality"),
        ],
        attributes: [Attribute.powerMode, Attribute.numberOfMeasurementTypes, Attribute.accuracy, Attribute.voltage,
                     Attribute.activeCurrent, Attribute.activePower])

    /// What a meter with no better knowledge claims: estimated, within ±100 % over the whole int64 range.
    public static let defaultAccuracy = Value.list(measurementTypes.map {
        ElectricalMeasurement.accuracy($0, measured: false, min: -ElectricalMeasurement.int64Limit,
                                       max: ElectricalMeasurement.int64Limit, percentMax: 10_000)
    })

    public private(set) var accuracy = Self.defaultAccuracy
    public private(set) var reading = ElectricalReading.unknown

    public init(features: Set<String>) throws(HomeError) {
        for f in features.sorted() where f != "directCurrent" {
            guard Self.features.contains(f) else {
                throw .constraintError("electricalPowerMeasurement has no feature '\(f)'; its features are "
                                       + Self.features.joined(separator: ", "))
            }
            throw .constraintError("electricalPowerMeasurement's \(f) is not implemented; Hearth measures DC "
                                   + "(feature directCurrent)")
        }
        guard features.contains("directCurrent") else {
            throw .constraintError("electricalPowerMeasurement needs the feature directCurrent (DC measurements)")
        }
    }

    public func read(_ id: UInt32) -> Value? {
        switch id {
        case Attribute.powerMode.id: .int(1)  // DC
        case Attribute.numberOfMeasurementTypes.id: .int(Self.measurementTypes.count)
        case Attribute.accuracy.id: accuracy
        case Attribute.voltage.id: reading.voltage.map(Value.int) ?? .null
        case Attribute.activeCurrent.id: reading.activeCurrent.map(Value.int) ?? .null
        case Attribute.activePower.id: reading.activePower.map(Value.int) ?? .null
        default: nil
        }
    }

    public mutating func load(_ attribute: AttributeDescriptor, _ value: Value) throws(HomeError) {
        switch attribute.id {
        case Attribute.accuracy.id:
            guard let entries = value.listValue else { throw .invalidDataType("accuracy must be a list") }
            guard (1...Self.measurementTypes.count).contains(entries.count) else {
                throw .constraintError("accuracy has \(entries.count) entries; it takes 1 to numberOfMeasurementTypes "
                                       + "(\(Self.measurementTypes.count)), one per measurement type")
            }
            var seen: [String] = []
            for (i, entry) in entries.enumerated() {
                let type = try ElectricalMeasurement.check(entry, what: "accuracy[\(i)]")
                guard Self.measurementTypes.contains(type) else {
                    throw .constraintError("accuracy[\(i)].measurementType \(type) is not measured here; the types are "
                                           + Self.measurementTypes.joined(separator: ", "))
                }
                guard !seen.contains(type) else { throw .constraintError("accuracy lists \(type) twice") }
                seen.append(type)
            }
            guard seen.contains("activePower") else {
                throw .constraintError("accuracy needs an entry for activePower (the spec requires one)")
            }
            accuracy = value
        case Attribute.powerMode.id:
            guard value == .int(1) else { throw .constraintError("powerMode follows the features: dc (directCurrent)") }
        case Attribute.numberOfMeasurementTypes.id:
            guard value == .int(Self.measurementTypes.count) else {
                throw .constraintError("numberOfMeasurementTypes is \(Self.measurementTypes.count) here "
                                       + "(\(Self.measurementTypes.joined(separator: ", ")))")
            }
        case Attribute.voltage.id, Attribute.activeCurrent.id, Attribute.activePower.id:
            break  // a reading is never configured or restored: only the meter says what it is
        default:
            throw Self.unknownAttribute(attribute)
        }
    }

    public mutating func ingest(_ input: TraitInput, context: inout TraitContext) throws(HomeError) {
        guard case .electricalPower(let r) = input else {
            throw .invalidCommand("electricalPowerMeasurement takes power readings, not \(input)")
        }
        let limit = -ElectricalMeasurement.int64Limit...ElectricalMeasurement.int64Limit
        for (name, v) in [("activePower", r.activePower), ("voltage", r.voltage), ("activeCurrent", r.activeCurrent)] {
            if let v, !limit.contains(v) { throw .constraintError("\(name) \(v) is outside −2^62…2^62") }
        }
        reading = r
    }
}

/// Matter Electrical Energy Measurement (0x0091, docs/clusters/electrical-energy-measurement.md) with ImportedEnergy
/// and CumulativeEnergy: the energy a load drew over its lifetime, integrated from the power readings on the engine's
/// clock and kept across restarts.
///
/// Each reading adds the trapezoid between it and the previous one (imported power only; what is below 1 mWh is
/// carried, not rounded away). A reading after an unknown one starts afresh, so no energy is invented across a gap.
/// CumulativeEnergyImported is a snapshot of the total, taken at the first reading at least the binding's snapshot
/// interval after the last one (1 s … 60 s: the spec's reporting bounds) with a CumulativeEnergyMeasured event. It is
/// non-volatile: the state file keeps it, so a restart continues the total (the file is written when a snapshot
/// changes it, which bounds what a power cut can lose to one interval).
public struct ElectricalEnergyMeasurementServer: TraitServer {
    public static let features = ["importedEnergy", "exportedEnergy", "cumulativeEnergy", "periodicEnergy"]
    /// EnergyMeasurementStruct with the fields a cumulative measurement without UTC has: Energy and EndSystime.
    public static let energyMeasurementStruct = StructType("EnergyMeasurementStruct", [
        FieldDescriptor("energy", .int64, constraint: 0...ElectricalMeasurement.int64Limit),
        FieldDescriptor("endSystime", .uint64),
    ])

    public enum Attribute {
        public static let accuracy = AttributeDescriptor(id: 0x0000, name: "accuracy",
                                                         type: .structure(ElectricalMeasurement.accuracyStruct))
        public static let cumulativeEnergyImported = AttributeDescriptor(
            id: 0x0001, name: "cumulativeEnergyImported", type: .structure(energyMeasurementStruct), nullable: true,
            nonVolatile: true)
    }

    public enum Event {
        public static let cumulativeEnergyMeasured = EventDescriptor(
            id: 0x00, name: "cumulativeEnergyMeasured",
            fields: [
                FieldDescriptor("energyImported", .structure(energyMeasurementStruct))
            ])
    }

    public static let descriptor = TraitDescriptor(
        id: .electricalEnergyMeasurement, clusterID: 0x0091, revision: 1,
        features: [
            .init(bit: 0, "importedEnergy"), .init(bit: 1, "exportedEnergy"), .init(bit: 2, "cumulativeEnergy"),
            .init(bit: 3, "periodicEnergy"),
        ],
        attributes: [Attribute.accuracy, Attribute.cumulativeEnergyImported], events: [Event.cumulativeEnergyMeasured])

    public static let defaultAccuracy = ElectricalMeasurement.accuracy(
        "electricalEnergy", measured: false, min: 0, max: ElectricalMeasurement.int64Limit, percentMax: 10_000)

    /// mW·ms in one mWh.
    static let unit = 3_600_000

    public private(set) var accuracy = Self.defaultAccuracy
    /// The lifetime total in mWh, and what is below 1 mWh of it in doubled mW·ms (the trapezoid's halves, exact).
    public private(set) var total: Int?
    private var remainder = 0
    private var lastPower: PowerReading?
    /// CumulativeEnergyImported: the total at a snapshot and when it was taken (ms on the engine's clock).
    public private(set) var snapshot: EnergySnapshot?

    /// A power reading and when it came.
    struct PowerReading: Sendable, Equatable {
        var milliwatts: Int
        var at: EngineInstant
    }

    /// The lifetime total at a snapshot, in mWh, and when it was taken (ms on the engine's clock).
    public struct EnergySnapshot: Sendable, Equatable {
        public var energy: Int
        public var endSystime: Int64
    }
    private var lastSnapshotAt: EngineInstant?

    public init(features: Set<String>) throws(HomeError) {
        for f in features.sorted() where f != "importedEnergy" && f != "cumulativeEnergy" {
            guard Self.features.contains(f) else {
                throw .constraintError("electricalEnergyMeasurement has no feature '\(f)'; its features are "
                                       + Self.features.joined(separator: ", "))
            }
            throw .constraintError("electricalEnergyMeasurement's \(f) is not implemented; Hearth measures imported, "
                                   + "cumulative energy (features importedEnergy, cumulativeEnergy)")
        }
        guard features.contains("importedEnergy"), features.contains("cumulativeEnergy") else {
            throw .constraintError("electricalEnergyMeasurement needs the features importedEnergy and cumulativeEnergy")
        }
    }

    public func read(_ id: UInt32) -> Value? {
        switch id {
        case Attribute.accuracy.id: accuracy
        case Attribute.cumulativeEnergyImported.id:
            snapshot.map { .structure(["energy": .int($0.energy), "endSystime": .int(Int($0.endSystime))]) } ?? .null
        default: nil
        }
    }

    public mutating func load(_ attribute: AttributeDescriptor, _ value: Value) throws(HomeError) {
        switch attribute.id {
        case Attribute.accuracy.id:
            let type = try ElectricalMeasurement.check(value, what: "accuracy")
            guard type == "electricalEnergy" else {
                throw .constraintError("accuracy.measurementType must be electricalEnergy, not \(type)")
            }
            accuracy = value
        case Attribute.cumulativeEnergyImported.id:
            // A configured starting total, then the saved one: the meter continues from it.
            guard let energy = value.structureValue?["energy"]?.intValue else {
                total = nil
                return
            }
            total = energy
            remainder = 0
        default:
            throw Self.unknownAttribute(attribute)
        }
    }

    /// A total loaded from the configuration or the state file is what is known at start: shown from now on (the
    /// saved EndSystime belongs to the previous boot), until the first reading's snapshot.
    public mutating func startUp(context: inout TraitContext) {
        if let total { snapshot = EnergySnapshot(energy: total, endSystime: context.now.milliseconds) }
    }

    public mutating func ingest(_ input: TraitInput, context: inout TraitContext) throws(HomeError) {
        guard case .electricalPower(let r) = input else {
            throw .invalidCommand("electricalEnergyMeasurement takes power readings, not \(input)")
        }
        let now = context.now
        guard let power = r.activePower else {
            lastPower = nil  // unknown: the next reading starts a new segment
            return
        }
        var energy = total ?? 0
        if let last = lastPower, now > last.at {
            // Twice the trapezoid, in mW·ms: (P₁ + P₂) × Δt, imported power only.
            let (twice, o1) = (max(0, last.milliwatts)).addingReportingOverflow(max(0, power))
            let (area, o2) = twice.multipliedReportingOverflow(by: Int(now - last.at))
            let (sum, o3) = remainder.addingReportingOverflow(area)
            if !(o1 || o2 || o3) {
                energy += sum / (2 * Self.unit)
                remainder = sum % (2 * Self.unit)
            }
        }
        lastPower = PowerReading(milliwatts: power, at: now)
        total = min(energy, ElectricalMeasurement.int64Limit)
        if lastSnapshotAt.map({ now - $0 >= r.snapshotInterval }) ?? true {
            let value = total ?? 0
            snapshot = EnergySnapshot(energy: value, endSystime: now.milliseconds)
            lastSnapshotAt = now
            context.emit(Event.cumulativeEnergyMeasured.name, [
                "energyImported": .structure(["energy": .int(value), "endSystime": .int(Int(now.milliseconds))]),
            ])
        }
    }
}
