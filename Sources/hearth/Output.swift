// Output, errors and exit codes of the `hearth` command.
//
// Output goes straight to the file descriptors with write(2): no stdio buffering to flush before exit, lines of
// `hearth watch` reach a pipe at once, and no access to C's `stdout`/`stderr` globals (not concurrency-safe).
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The exit statuses of `hearth`, documented in `hearth --help`.
enum ExitStatus: Int32 {
    case success = 0
    /// The hub answered with an error (any code but notFound).
    case hubError = 1
    /// The device (or its type) does not exist: the hub's notFound, or no such device in the hub's list.
    case notFound = 2
    /// The broker is reachable but the hub did not answer (or publish what was asked for) within --timeout.
    case timeout = 3
    /// The broker could not be reached, or refused the connection (address, credentials, TLS).
    case brokerUnreachable = 4
    /// No hub to talk to: none online, several online without --hub, or the named hub is offline or unknown.
    case noHub = 5
}

/// A failure that ends the command: printed as `error: <message>` on stderr, with its exit status.
struct CLIError: Error {
    var status: ExitStatus
    var message: String

    init(_ status: ExitStatus, _ message: String) {
        self.status = status
        self.message = message
    }
}

enum Terminal {
    static func emit(_ text: String, to fd: Int32) {
        var bytes = Array(text.utf8)
        bytes.withUnsafeMutableBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    // The reader went away (`hearth watch | head -1` with SIGPIPE ignored): stop like SIGPIPE would.
                    if errno == EPIPE { exit(128 + SIGPIPE) }
                    return
                }
                offset += n
            }
        }
    }

    /// Writes `text` and a newline to standard output.
    static func out(_ text: String) { emit(text + "\n", to: 1) }

    /// Writes `text` and a newline to standard error.
    static func err(_ text: String) { emit(text + "\n", to: 2) }
}
