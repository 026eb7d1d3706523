// `hearthkit-generate [--check] [DIRECTORY]`: writes HearthKit's typed layer from the hub's tables into DIRECTORY
// (default Sources/HearthKit/Generated under the current directory), removing generated files that are no longer
// produced. With --check it writes nothing and exits 1 when the directory differs. A build tool, so it may use
// Foundation.
import Foundation
import HearthKitGenerator

var arguments = Array(CommandLine.arguments.dropFirst())
let check = arguments.contains("--check")
arguments.removeAll { $0 == "--check" }
guard arguments.count <= 1, !arguments.contains(where: { $0.hasPrefix("-") }) else {
    FileHandle.standardError.write(Data("usage: hearthkit-generate [--check] [DIRECTORY]\n".utf8))
    exit(64)
}
let directory = arguments.first ?? "Sources/HearthKit/Generated"

do {
    let files = try HearthKitGenerator.files()
    let differences = try GeneratedDirectory.differences(files, in: directory)
    if check {
        for difference in differences { print(difference) }
        if !differences.isEmpty {
            print("\(directory) is out of date: run swift run hearthkit-generate")
            exit(1)
        }
        print("\(directory) is up to date (\(files.count) files)")
    } else {
        try GeneratedDirectory.write(files, to: directory)
        print("wrote \(files.count) files to \(directory)" + (differences.isEmpty ? " (no changes)" : ""))
    }
} catch {
    FileHandle.standardError.write(Data("hearthkit-generate: \(error)\n".utf8))
    exit(1)
}
