/// Where a trait's definition comes from, so that two traits with one short name never collide.
///
/// Standard Matter clusters live in `matter`; a manufacturer's trait lives in its package-qualified
/// namespace (`com.example` for `com.example.spinner`).
public struct TraitID: Sendable, Hashable, CustomStringConvertible {
    public var namespace: String
    public var name: String

    public static let matterNamespace = "matter"

    public init(namespace: String, name: String) {
        self.namespace = namespace
        self.name = name
    }

    public static func matter(_ name: String) -> TraitID { TraitID(namespace: matterNamespace, name: name) }

    /// The name alone: ids that differ only by namespace are rare, and equality still compares both. Traits are found
    /// by id for every trait of every device at start-up and twice per request; hashing the namespace too was half
    /// of each lookup's cost.
    public func hash(into hasher: inout Hasher) { hasher.combine(name) }

    /// The key a client uses: `onOff` for a Matter trait, `com.example.spinner` for a manufacturer's.
    public var qualifiedName: String { namespace == Self.matterNamespace ? name : "\(namespace).\(name)" }

    /// Parses a client's key: `onOff`, `matter.onOff` or `com.example.spinner`.
    public init(qualifiedName: String) {
        // Scans bytes, not Characters: this runs for every request.
        let utf8 = qualifiedName.utf8
        if let dot = utf8.lastIndex(of: UInt8(ascii: ".")) {
            self.init(namespace: String(qualifiedName[..<dot]),
                      name: String(qualifiedName[qualifiedName.index(after: dot)...]))
        } else {
            self.init(namespace: Self.matterNamespace, name: qualifiedName)
        }
    }

    public var description: String { qualifiedName }
}

/// Describes one attribute of a trait: what it is and what a client may do with it.
///
/// `isWritable` and `isChangedByCommands` together give the four kinds of attribute of the Home APIs
/// (read-only/static, read-only/changed by commands, writable/not changed, writable/changed).
public struct AttributeDescriptor: Sendable, Hashable {
    public var id: UInt32
    public var name: String
    public var type: ValueType
    public var isNullable: Bool
    public var isWritable: Bool
    public var isChangedByCommands: Bool
    /// Matter's N quality: the value survives a restart (the persistence layer stores it).
    public var isNonVolatile: Bool
    /// Matter's Q quality: the engine reports it on its own schedule instead of on every change.
    public var hasQuietReporting: Bool
    /// The range the attribute allows beyond its type's (fixed bounds only; bounds that depend on
    /// other attributes, such as OnLevel within MinLevel…MaxLevel, are checked by the trait).
    public var constraint: ClosedRange<Int>?

    public init(
        id: UInt32, name: String, type: ValueType, nullable: Bool = false, writable: Bool = false,
        changedByCommands: Bool = false, nonVolatile: Bool = false, quiet: Bool = false,
        constraint: ClosedRange<Int>? = nil
    ) {
        self.id = id
        self.name = name
        self.type = type
        self.isNullable = nullable
        self.isWritable = writable
        self.isChangedByCommands = changedByCommands
        self.isNonVolatile = nonVolatile
        self.hasQuietReporting = quiet
        self.constraint = constraint
    }
}

/// One field of a command.
public struct FieldDescriptor: Sendable, Hashable {
    public var name: String
    public var type: ValueType
    public var isNullable: Bool
    /// The value used when the client leaves the field out; `nil` makes the field required.
    public var defaultValue: Value?
    public var constraint: ClosedRange<Int>?

    public init(_ name: String, _ type: ValueType, nullable: Bool = false, default defaultValue: Value? = nil,
                constraint: ClosedRange<Int>? = nil) {
        self.name = name
        self.type = type
        self.isNullable = nullable
        self.defaultValue = defaultValue
        self.constraint = constraint
    }
}

/// One command of a trait.
public struct CommandDescriptor: Sendable, Hashable {
    public var id: UInt32
    public var name: String
    public var fields: [FieldDescriptor]
    /// The fields of the command's response (Matter's `…Response` command), which the hub returns as the
    /// request's `result`; empty for a command answered with a plain status.
    public var response: [FieldDescriptor]

    public init(id: UInt32, name: String, fields: [FieldDescriptor] = [], response: [FieldDescriptor] = []) {
        self.id = id
        self.name = name
        self.fields = fields
        self.response = response
    }

    /// Validates a client's arguments against the fields and fills in defaults.
    ///
    /// Unknown and missing fields are `invalidCommand`, wrong kinds `invalidDataType`, values out of
    /// range `constraintError` (Matter's invoke checks, in that order).
    public func validate(_ arguments: [String: Value]) throws(HomeError) -> CommandArguments {
        for key in arguments.keys where !fields.contains(where: { $0.name == key }) {
            let known =
                fields.isEmpty ? "it takes none" : "its fields are " + fields.map(\.name).joined(separator: ", ")
            throw .invalidCommand("\(name) has no field '\(key)'; \(known)")
        }
        var values: [Value] = []
        values.reserveCapacity(fields.count)
        for field in fields {
            guard let value = arguments[field.name] ?? field.defaultValue else {
                throw .invalidCommand("\(name) needs the field '\(field.name)' (\(field.type))")
            }
            try field.type.check(value, nullable: field.isNullable, constraint: field.constraint,
                                 what: "\(name).\(field.name)")
            values.append(value)
        }
        return CommandArguments(command: self, values: values)
    }
}

/// A command's validated arguments, in field order, with defaults filled in.
public struct CommandArguments: Sendable {
    public let command: CommandDescriptor
    public let values: [Value]

    public subscript(_ field: String) -> Value {
        guard let i = command.fields.firstIndex(where: { $0.name == field }) else {
            preconditionFailure("\(command.name) has no field \(field)")
        }
        return values[i]
    }

    public func int(_ field: String) -> Int? { self[field].intValue }
    public func bool(_ field: String) -> Bool? { self[field].boolValue }
}

/// One event of a trait: Matter's event id, its name and its fields (the Switch's `initialPress` with `newPosition`).
public struct EventDescriptor: Sendable, Hashable {
    public var id: UInt32
    public var name: String
    public var fields: [FieldDescriptor]

    public init(id: UInt32, name: String, fields: [FieldDescriptor] = []) {
        self.id = id
        self.name = name
        self.fields = fields
    }

    public func field(named name: String) -> FieldDescriptor? { fields.first { $0.name == name } }
}

/// One feature of a trait: its bit in Matter's FeatureMap and its lowerCamelCase name (what a configuration says).
public struct FeatureDescriptor: Sendable, Hashable {
    public var bit: Int
    public var name: String

    public init(bit: Int, _ name: String) {
        self.bit = bit
        self.name = name
    }
}

/// Describes a trait: its identity, Matter cluster, attributes, commands and events.
public struct TraitDescriptor: Sendable, Hashable {
    public var id: TraitID
    public var clusterID: UInt32
    /// The Matter 1.4 revision of the cluster the trait implements (its ClusterRevision).
    public var revision: UInt16
    /// The cluster's features, with their FeatureMap bits; an instance has those its configuration names.
    public var features: [FeatureDescriptor]
    public var attributes: [AttributeDescriptor]
    public var commands: [CommandDescriptor]
    /// The events the trait can emit (e.g. the Switch's `initialPress`).
    public var events: [EventDescriptor]

    public init(id: TraitID, clusterID: UInt32, revision: UInt16 = 1, features: [FeatureDescriptor] = [],
                attributes: [AttributeDescriptor], commands: [CommandDescriptor] = [], events: [EventDescriptor] = []) {
        self.id = id
        self.clusterID = clusterID
        self.revision = revision
        self.features = features
        self.attributes = attributes
        self.commands = commands
        self.events = events
    }

    public func attribute(named name: String) -> AttributeDescriptor? { attributes.first { $0.name == name } }
    public func attribute(id: UInt32) -> AttributeDescriptor? { attributes.first { $0.id == id } }
    public func command(named name: String) -> CommandDescriptor? { commands.first { $0.name == name } }
    public func event(named name: String) -> EventDescriptor? { events.first { $0.name == name } }

    /// The FeatureMap of an instance with these features (names the trait does not know add nothing).
    public func featureMap(of names: Set<String>) -> UInt32 {
        features.reduce(0) { names.contains($1.name) ? $0 | 1 << UInt32($1.bit) : $0 }
    }
}
