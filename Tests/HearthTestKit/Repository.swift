// Where the repository is, for tests that read its files (boards/, docs/schema/, the fuzz corpus, HearthKit's
// generated layer): found from this file's own path, which the compiler records, so it holds wherever the checkout is.

/// The checkout the tests were built from.
public enum Repository {
    /// The repository's root directory (this file is `Tests/HearthTestKit/Repository.swift` under it).
    public static let root: String = {
        var parts = String(#filePath).split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)
        return parts.joined(separator: "/")
    }()

    /// A path under the root: `Repository.path("boards/sim.yaml")`.
    public static func path(_ relative: String) -> String { "\(root)/\(relative)" }
}
