internal import CMosquitto
#if canImport(Glibc)
internal import Glibc
#endif

/// A failed libmosquitto call, or a connection the broker refused or ended.
///
/// Every libmosquitto call that returns an error code goes through ``check(_:_:)``, which turns any
/// code other than `MOSQ_ERR_SUCCESS` into one of these.
public struct MQTTError: Error, Sendable, Hashable, CustomStringConvertible {
    /// libmosquitto's error codes (`enum mosq_err_t`), with Swift names.
    public enum Code: Sendable, Hashable {
        /// `MOSQ_ERR_AUTH_CONTINUE`
        case authContinue
        /// `MOSQ_ERR_NO_SUBSCRIBERS`
        case noSubscribers
        /// `MOSQ_ERR_SUB_EXISTS`
        case subscriptionExists
        /// `MOSQ_ERR_CONN_PENDING`
        case connectionPending
        /// `MOSQ_ERR_NOMEM`
        case outOfMemory
        /// `MOSQ_ERR_PROTOCOL`
        case protocolError
        /// `MOSQ_ERR_INVAL`
        case invalidArgument
        /// `MOSQ_ERR_NO_CONN`
        case notConnected
        /// `MOSQ_ERR_CONN_REFUSED`
        case connectionRefused
        /// `MOSQ_ERR_NOT_FOUND`
        case notFound
        /// `MOSQ_ERR_CONN_LOST`
        case connectionLost
        /// `MOSQ_ERR_TLS`
        case tls
        /// `MOSQ_ERR_PAYLOAD_SIZE`
        case payloadTooLarge
        /// `MOSQ_ERR_NOT_SUPPORTED`
        case notSupported
        /// `MOSQ_ERR_AUTH`
        case authenticationFailed
        /// `MOSQ_ERR_ACL_DENIED`
        case accessDenied
        /// `MOSQ_ERR_UNKNOWN`
        case unknown
        /// `MOSQ_ERR_ERRNO`: a system call failed; see ``MQTTError/systemErrno``.
        case system
        /// `MOSQ_ERR_EAI`: the host name could not be resolved (getaddrinfo).
        case addressResolution
        /// `MOSQ_ERR_PROXY`
        case proxy
        /// `MOSQ_ERR_PLUGIN_DEFER`
        case pluginDefer
        /// `MOSQ_ERR_MALFORMED_UTF8`
        case malformedUTF8
        /// `MOSQ_ERR_KEEPALIVE`: the broker stopped answering pings.
        case keepAliveTimeout
        /// `MOSQ_ERR_LOOKUP`
        case lookup
        /// `MOSQ_ERR_MALFORMED_PACKET`
        case malformedPacket
        /// `MOSQ_ERR_DUPLICATE_PROPERTY`
        case duplicateProperty
        /// `MOSQ_ERR_TLS_HANDSHAKE`
        case tlsHandshake
        /// `MOSQ_ERR_QOS_NOT_SUPPORTED`
        case qosNotSupported
        /// `MOSQ_ERR_OVERSIZE_PACKET`
        case oversizePacket
        /// `MOSQ_ERR_OCSP`
        case ocsp
        /// `MOSQ_ERR_TIMEOUT`
        case timeout
        /// `MOSQ_ERR_RETAIN_NOT_SUPPORTED`
        case retainNotSupported
        /// `MOSQ_ERR_TOPIC_ALIAS_INVALID`
        case topicAliasInvalid
        /// `MOSQ_ERR_ADMINISTRATIVE_ACTION`
        case administrativeAction
        /// `MOSQ_ERR_ALREADY_EXISTS`
        case alreadyExists
        /// A code this wrapper does not know (a newer libmosquitto).
        case unrecognized(Int32)

        private static let table: [(Code, mosq_err_t)] = [
            (.authContinue, MOSQ_ERR_AUTH_CONTINUE), (.noSubscribers, MOSQ_ERR_NO_SUBSCRIBERS),
            (.subscriptionExists, MOSQ_ERR_SUB_EXISTS), (.connectionPending, MOSQ_ERR_CONN_PENDING),
            (.outOfMemory, MOSQ_ERR_NOMEM), (.protocolError, MOSQ_ERR_PROTOCOL),
            (.invalidArgument, MOSQ_ERR_INVAL), (.notConnected, MOSQ_ERR_NO_CONN),
            (.connectionRefused, MOSQ_ERR_CONN_REFUSED), (.notFound, MOSQ_ERR_NOT_FOUND),
            (.connectionLost, MOSQ_ERR_CONN_LOST), (.tls, MOSQ_ERR_TLS),
            (.payloadTooLarge, MOSQ_ERR_PAYLOAD_SIZE), (.notSupported, MOSQ_ERR_NOT_SUPPORTED),
            (.authenticationFailed, MOSQ_ERR_AUTH), (.accessDenied, MOSQ_ERR_ACL_DENIED),
            (.unknown, MOSQ_ERR_UNKNOWN), (.system, MOSQ_ERR_ERRNO),
            (.addressResolution, MOSQ_ERR_EAI), (.proxy, MOSQ_ERR_PROXY),
            (.pluginDefer, MOSQ_ERR_PLUGIN_DEFER), (.malformedUTF8, MOSQ_ERR_MALFORMED_UTF8),
            (.keepAliveTimeout, MOSQ_ERR_KEEPALIVE), (.lookup, MOSQ_ERR_LOOKUP),
            (.malformedPacket, MOSQ_ERR_MALFORMED_PACKET), (.duplicateProperty, MOSQ_ERR_DUPLICATE_PROPERTY),
            (.tlsHandshake, MOSQ_ERR_TLS_HANDSHAKE), (.qosNotSupported, MOSQ_ERR_QOS_NOT_SUPPORTED),
            (.oversizePacket, MOSQ_ERR_OVERSIZE_PACKET), (.ocsp, MOSQ_ERR_OCSP),
            (.timeout, MOSQ_ERR_TIMEOUT), (.retainNotSupported, MOSQ_ERR_RETAIN_NOT_SUPPORTED),
            (.topicAliasInvalid, MOSQ_ERR_TOPIC_ALIAS_INVALID),
            (.administrativeAction, MOSQ_ERR_ADMINISTRATIVE_ACTION), (.alreadyExists, MOSQ_ERR_ALREADY_EXISTS),
        ]

        /// The code for libmosquitto's integer return value.
        public init(rawValue: Int32) {
            self = Self.table.first { Int32($0.1.rawValue) == rawValue }?.0 ?? .unrecognized(rawValue)
        }

        /// libmosquitto's integer value for this code.
        public var rawValue: Int32 {
            if case .unrecognized(let raw) = self { return raw }
            return Int32(Self.table.first { $0.0 == self }!.1.rawValue)
        }
    }

    /// What went wrong, as libmosquitto classifies it.
    public var code: Code
    /// The `errno` value when ``code`` is ``Code/system`` (`MOSQ_ERR_ERRNO`), else `nil`.
    public var systemErrno: Int32?
    /// The MQTT reason code the broker sent (CONNACK or DISCONNECT), when the broker is the one refusing or ending
    /// the connection: MQTT v5 reason codes (≥ 0x80) or MQTT v3.1.1 CONNACK return codes (1–5).
    public var reasonCode: Int32?
    /// Which operation failed, and on what: "connect to 127.0.0.1:1883", "publish to 'home/lamp/state'".
    public var context: String
    /// libmosquitto's text for the code (`mosquitto_strerror`), or for ``reasonCode`` when the broker sent one.
    public var message: String

    /// An error for libmosquitto's return value `rc`, in `context`. Reads `errno` for `MOSQ_ERR_ERRNO`, so call
    /// it right after the failing C call.
    init(returnCode rc: Int32, context: String, errno capturedErrno: Int32? = nil) {
        code = Code(rawValue: rc)
        systemErrno = code == .system ? (capturedErrno ?? errno) : nil
        reasonCode = nil
        self.context = context
        // mosquitto_strerror(MOSQ_ERR_ERRNO) is strerror(errno) of whatever errno is now: use the captured one.
        if let systemErrno, let description = strerror(systemErrno) {
            message = String(cString: description)
        } else {
            message = String(cString: mosquitto_strerror(rc))
        }
    }

    /// An error for an MQTT reason code the broker sent: a refused CONNACK or a v5 DISCONNECT.
    init(code: Code, reasonCode: Int32, protocolVersion: MQTTProtocolVersion, context: String) {
        self.code = code
        systemErrno = nil
        self.reasonCode = reasonCode
        self.context = context
        if protocolVersion == .v5 || reasonCode >= 0x80 {
            message = String(cString: mosquitto_reason_string(reasonCode))
        } else {
            message = String(cString: mosquitto_connack_string(reasonCode))
        }
    }

    /// An error this wrapper raises itself (an argument libmosquitto would misread, a stopped client).
    init(code: Code, context: String, message: String) {
        self.code = code
        systemErrno = nil
        reasonCode = nil
        self.context = context
        self.message = message
    }

    public var description: String {
        var text = "MQTT \(context) failed: \(message)"
        if let reasonCode { text += " [reason \(reasonCode)]" }
        return text
    }
}

/// libmosquitto's process-wide initialisation, run exactly once (Swift initialises globals with `swift_once`, which is
/// thread-safe). Never cleaned up: clients may live until exit.
private let libraryInitialisation: Int32 = mosquitto_lib_init()

/// Makes sure `mosquitto_lib_init` has run; call before any other libmosquitto call.
@inline(__always)
func ensureLibraryInitialised() throws(MQTTError) {
    try check(libraryInitialisation, "initialise libmosquitto")
}

/// The one funnel every libmosquitto call returning an error code goes through: `MOSQ_ERR_SUCCESS` returns, anything
/// else throws an ``MQTTError`` carrying the code, `errno` (read here, immediately after the call) and `context`.
@inline(__always)
func check(_ rc: Int32, _ context: @autoclosure () -> String) throws(MQTTError) {
    if rc == Int32(MOSQ_ERR_SUCCESS.rawValue) { return }
    let capturedErrno = errno
    throw MQTTError(returnCode: rc, context: context(), errno: capturedErrno)
}
