import Foundation
import HearthKitGenerator
import HearthModel
import HearthTestKit
import Testing

/// HearthKit's typed layer is generated from the hub's tables; these tests run the generator and hold the committed
/// output to it, so a trait added to the hub cannot be missing from HearthKit.
@Suite struct GeneratedTests {
    /// Sources/HearthKit/Generated of this checkout.
    static let directory = Repository.path("Sources/HearthKit/Generated")

    @Test func theCommittedFilesAreWhatTheGeneratorWrites() throws {
        let files = try HearthKitGenerator.files()
        let differences = try GeneratedDirectory.differences(files, in: Self.directory)
        #expect(differences.isEmpty, "run `swift run hearthkit-generate`: \(differences.joined(separator: "; "))")
    }

    @Test func everyTraitAndDeviceTypeOfTheHubIsGenerated() throws {
        let files = try HearthKitGenerator.files().map(\.path)
        let (traits, deviceTypes) = HearthKitGenerator.inputs()
        for trait in traits {
            let path =
                HearthKitGenerator.namespaceName(trait.id.namespace) + "/"
                    + HearthKitGenerator.traitTypeName(trait.id) + ".swift"
            #expect(files.contains(path), "\(trait.id) has no generated file")
        }
        #expect(traits.contains { $0.id.qualifiedName == "dev.hearth.simulatedSwitch" })
        let text = try HearthKitGenerator.files().first { $0.path == "DeviceTypes.swift" }?.text ?? ""
        for type in deviceTypes { #expect(text.contains("public struct \(type.name)DeviceType: DeviceType")) }
        // A setter exists for a writable attribute only, so writing a read-only one does not compile.
        for trait in traits {
            let path =
                HearthKitGenerator.namespaceName(trait.id.namespace) + "/"
                    + HearthKitGenerator.traitTypeName(trait.id) + ".swift"
            let source = try HearthKitGenerator.files().first { $0.path == path }?.text ?? ""
            for attribute in trait.attributes {
                let setter = "func set\(attribute.name.prefix(1).uppercased() + attribute.name.dropFirst())("
                #expect(source.contains(setter) == attribute.isWritable, "\(trait.id).\(attribute.name)")
            }
            for command in trait.commands { #expect(source.contains("public func \(command.name)(")) }
        }
        #expect(HearthKitGenerator.namespaceName("dev.hearth") == "DevHearth")
        #expect(HearthKitGenerator.namespaceName("matter") == "Matter")
    }

    @Test func aStaleOrEditedFileIsReported() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hearthkit-generated-\(UUID())")
            .path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let files = try HearthKitGenerator.files()
        try GeneratedDirectory.write(files, to: directory)
        #expect(try GeneratedDirectory.differences(files, in: directory).isEmpty)
        try "// edited\n".write(toFile: "\(directory)/Namespaces.swift", atomically: true, encoding: .utf8)
        try "// left over\n".write(toFile: "\(directory)/Matter/GoneTrait.swift", atomically: true, encoding: .utf8)
        let differences = try GeneratedDirectory.differences(files, in: directory)
        #expect(differences == ["changed \(directory)/Namespaces.swift", "stale \(directory)/Matter/GoneTrait.swift"])
        try GeneratedDirectory.write(files, to: directory)
        #expect(try GeneratedDirectory.differences(files, in: directory).isEmpty)
    }
}
