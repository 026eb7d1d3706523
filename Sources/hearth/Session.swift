// One connection for one command, through HearthKit (the CLI's only client path): connect and read what the hubs
// published, find the hub, send a request and wait for its answer. HearthKit's messages name no flag; here they are
// put in the CLI's words (--broker, --username, …) with the CLI's exit statuses.
import HearthContract
import HearthKit

/// The topics of the hub a command talks to, for messages.
struct HubTopics {
    let scheme: TopicScheme

    init(prefix: String, hub: String) {
        scheme = TopicScheme(prefix: prefix, hub: hub)
    }

    var hub: String { scheme.hub }
    var status: String { scheme.status }
    var devices: String { scheme.devices }
    var home: String { scheme.home }
}

/// A connected client and what one command needs around it.
final class Session {
    let options: GlobalOptions
    let home: Home
    /// Everything a command waits for (the broker, the published state, the answer) ends by --timeout after start.
    let deadline: ContinuousClock.Instant

    private init(options: GlobalOptions, home: Home, deadline: ContinuousClock.Instant) {
        self.options = options
        self.home = home
        self.deadline = deadline
    }

    deinit {
        home.close()
    }

    /// Connects to the broker and reads what the hubs published, within --timeout.
    static func connect(_ options: GlobalOptions) async throws -> Session {
        let deadline = ContinuousClock.now + .milliseconds(Int64((options.timeout * 1000).rounded()))
        let homeOptions = try options.homeOptions()
        do {
            let home = try await Home.connect(homeOptions, deadline: deadline)
            return Session(options: options, home: home, deadline: deadline)
        } catch let error as HomeError {
            throw connectionFailure(error, options)
        }
    }

    static func connectionFailure(_ error: HomeError, _ options: GlobalOptions) -> CLIError {
        if error.code == .cancelled { return CLIError(.success, "") }
        let broker = options.brokerDescription
        guard let failure = error.connectionFailure else { return CLIError(.brokerUnreachable, error.message) }
        let message: String
        switch failure.kind {
        case .setup:
            message = "cannot set up the connection to \(broker): \(failure.detail) (\(failure.context)); "
                + "check --ca-file, --cert and --key"
        case .refused:
            message = "the MQTT broker at \(broker) refused the connection: \(failure.detail); "
                + "check --username and --password (or $HEARTH_USERNAME, $HEARTH_PASSWORD)"
        case .tls:
            message = "TLS with the MQTT broker at \(broker) failed: \(failure.detail); "
                + "check --ca-file, --cert and --key (or --insecure for a certificate issued to another name)"
        case .hostLookup:
            message =
                "cannot resolve the broker's host in '\(broker)': \(failure.detail); check --broker or $HEARTH_BROKER"
        case .timedOut:
            message = "no connection to the MQTT broker at \(broker) within \(options.timeoutText); is it running and "
                + "reachable? Check --broker or $HEARTH_BROKER"
        case .unreachable, .sendFailed:
            var hint = "is it running? Check --broker or $HEARTH_BROKER"
            if options.usesTLS { hint += ", and whether it speaks TLS on that port" }
            message = "cannot reach the MQTT broker at \(broker): \(failure.detail); \(hint)"
        }
        return CLIError(.brokerUnreachable, message)
    }

    /// Whether the published state is known to be complete (see HearthKit's `Home.isSettled`).
    var isSettled: Bool { home.isSettled }

    /// The hubs that published a status under the prefix, with it ("online" or "offline"), in the order seen.
    func hubStatuses() -> [(hub: String, status: String)] {
        home.hubStatuses().map { ($0.hub, $0.status) }
    }

    /// The hub to talk to: --hub / $HEARTH_HUB, else the only one online.
    ///
    /// - Parameter requireOnline: refuse a named hub whose status is not `online`.
    func resolveHub(requireOnline: Bool = true) throws -> HubTopics {
        let statuses = hubStatuses()
        let online = statuses.filter { $0.status == "online" }.map(\.hub)
        let under = "under '\(options.prefix)/' on \(options.brokerDescription)"
        if let hub = options.resolvedHub {
            if requireOnline {
                if let status = statuses.first(where: { $0.hub == hub })?.status {
                    if status != "online" {
                        throw CLIError(.noHub, "hub '\(hub)' is \(status)\(Self.listing(online, "; online: "))")
                    }
                } else {
                    throw CLIError(.noHub, "no hub '\(hub)' \(under)"
                        + (online.isEmpty ? "; no hub is online" : "; online: \(online.joined(separator: ", "))")
                        + "; check --hub and --prefix")
                }
            }
            return HubTopics(prefix: options.prefix, hub: hub)
        }
        switch online.count {
        case 1:
            return HubTopics(prefix: options.prefix, hub: online[0])
        case 0:
            let offline = statuses.map(\.hub)
            throw CLIError(.noHub, "no hub is online \(under)"
                + (offline.isEmpty ? "; check --prefix, and that the hub runs"
                                   : "; offline: \(offline.joined(separator: ", "))"))
        default:
            throw CLIError(.noHub, "\(online.count) hubs are online \(under): \(online.joined(separator: ", ")); "
                + "choose one with --hub (or $HEARTH_HUB)")
        }
    }

    private static func listing(_ hubs: [String], _ lead: String) -> String {
        hubs.isEmpty ? "" : lead + hubs.joined(separator: ", ")
    }

    /// Sends one request for `device` to the hub and waits for its answer (which may be a refusal) until the
    /// session's deadline. `members` is the request without its transaction.
    func request(_ topics: HubTopics, device: String, _ members: [(key: String, value: JSON)]) async throws -> HubAnswer
    {
        do {
            return try await home.send(members, device: device, hub: topics.hub, deadline: deadline)
        } catch let error as HomeError {
            switch error.code {
            case .deadlineExceeded:
                throw CLIError(.timeout, "no answer from hub '\(topics.hub)' within \(options.timeoutText); "
                    + "is it online? (hearth hubs)")
            case .cancelled:
                throw CLIError(.success, "")
            default:
                if let failure = error.connectionFailure {
                    throw CLIError(.brokerUnreachable, "cannot send the request: \(failure.detail)")
                }
                throw CLIError(.brokerUnreachable, error.message)
            }
        }
    }
}
