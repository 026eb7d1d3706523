public import HearthModel

/// A trait whose values come from another hub: it holds what the owner last published and never acts
/// itself. Commands for it are routed to the owning hub by the MQTT layer; reaching the engine means
/// there was no route.
public struct MirroredTrait<Base: TraitServer>: TraitServer {
    public static var descriptor: TraitDescriptor { Base.descriptor }

    private var values: [UInt32: Value] = [:]
    private var commands: Set<String> = []

    public init(features: Set<String>) throws(HomeError) {}

    public func read(_ id: UInt32) -> Value? { values[id] }

    public func supports(_ command: CommandDescriptor) -> Bool { commands.contains(command.name) }

    public mutating func load(_ attribute: AttributeDescriptor, _ value: Value) throws(HomeError) {}

    public mutating func invoke(_ arguments: CommandArguments, context: inout TraitContext) throws(HomeError) {
        throw .unavailable("\(Self.descriptor.id) is mirrored from another hub and no route to it is known")
    }

    public mutating func ingest(_ input: TraitInput, context: inout TraitContext) throws(HomeError) {
        guard case .mirror(let named, let supported) = input else {
            throw .invalidCommand("a mirrored \(Self.descriptor.id) takes the owner's values only")
        }
        var next: [UInt32: Value] = [:]
        for attribute in Self.descriptor.attributes {
            if let v = named[attribute.name] { next[attribute.id] = v }
        }
        // Quiet attributes are not compared by the engine; a mirror reports what its owner reported.
        for attribute in Self.descriptor.attributes
        where attribute.hasQuietReporting && next[attribute.id] != values[attribute.id] {
            context.report(attribute.id)
        }
        values = next
        commands = Set(supported)
    }
}

/// Makes the mirrored variant of a trait server (opening the existential metatype).
func mirrored<T: TraitServer>(_ server: T.Type) -> any TraitServer.Type { MirroredTrait<T>.self }
