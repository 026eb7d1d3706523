#if canImport(Glibc)
import Glibc
#endif

extension FuzzTarget {
    /// The input files at `path`: the file itself, or every regular file in the directory (not below), by name.
    public static func inputs(at path: String) -> [String] {
        var st = stat()
        guard stat(path, &st) == 0 else { return [path] }  // reading it then says what is wrong
        guard st.st_mode & S_IFMT == S_IFDIR else { return [path] }
        return Workspace.list(path).filter { !$0.hasPrefix(".") }.sorted().map { "\(path)/\($0)" }
            .filter { stat($0, &st) == 0 && st.st_mode & S_IFMT == S_IFREG }
    }

    /// Runs every file through the target, without the fuzzer; the files that broke a promise (or could not be
    /// read), each with why.
    public func replay(_ files: [String]) -> [(file: String, failure: FuzzFailure)] {
        var failures: [(file: String, failure: FuzzFailure)] = []
        for file in files {
            guard let bytes = Workspace.read(file) else {
                failures.append((file, FuzzFailure("cannot read it: \(String(cString: strerror(errno)))")))
                continue
            }
            do throws(FuzzFailure) { try run(bytes) } catch { failures.append((file, error)) }
        }
        return failures
    }
}
