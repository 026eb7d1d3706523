import HearthEngine
import HearthMatter
import HearthMatterBridge
import HearthModel

/// The bridge's promises for a command's fields from a controller: the first byte picks a command of a standard
/// trait, the rest is its fields as TLV. Fields that are not a structure of the command's fields' kinds are refused
/// with INVALID_COMMAND or CONSTRAINT_ERROR (never a crash, never another status); fields that are taken name only the
/// command's fields, and encode back to TLV that decodes to the same values (so what the engine saw is what was sent).
/// The engine's validation then takes or refuses them with a HomeError (never a crash).
enum MatterBridgeTarget {
    static let commands: [CommandDescriptor] = {
        var descriptors: [TraitDescriptor] = []
        for server in TraitRegistry.standard.servers.values { descriptors.append(server.descriptor) }
        descriptors.sort { $0.clusterID < $1.clusterID }
        var commands: [CommandDescriptor] = []
        for descriptor in descriptors { commands += descriptor.commands }
        return commands
    }()

    static func run(_ bytes: [UInt8]) throws(FuzzFailure) {
        guard let first = bytes.first, !commands.isEmpty else { return }
        let command = commands[Int(first) % commands.count]
        guard let element = try? TLVElement(decoding: bytes.dropFirst()) else { return }
        let values: [String: Value]
        do {
            guard let members = element.structureMembers else { return }
            values = try ValueTLV.decodeFields(members, command.fields, what: command.name, mismatch: .invalidCommand)
        } catch {
            try require(error.status == .invalidCommand || error.status == .constraintError,
                        "\(command.name)'s fields \(element) were refused with \(error.status)")
            return
        }
        for key in values.keys {
            try require(command.fields.contains { $0.name == key }, "\(command.name) got a field '\(key)' it has not")
        }
        let encoded = ValueTLV.encodeFields(values, command.fields)
        let again: [String: Value]
        do {
            again = try ValueTLV.decodeFields(encoded, command.fields, what: command.name, mismatch: .invalidCommand)
        } catch {
            throw FuzzFailure("\(command.name)'s fields \(values) encode to TLV that is refused: \(error)")
        }
        try require(again == values, "\(command.name)'s fields \(values) came back as \(again)")
        _ = try? command.validate(values)
    }
}
