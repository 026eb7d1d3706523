import HearthConfig
import HearthContract
public import HearthEngine
import HearthHardware
import HearthHomeAssistant
import HearthLinux
import HearthMatter
import HearthMatterBridge
import HearthModel
import HearthMQTT
public import Logging
public import ServiceLifecycle
import UnixSignals
import Synchronization

/// A hub assembled from its configuration and ready to run: the engine's home restored from its saved state, the
/// hardware bindings holding their outputs in the start-up state, the MQTT door (with peer routing and Home
/// Assistant discovery), persistence, and the services that run them. `run()` runs them as one service group until
/// SIGTERM or SIGINT; another door onto the same home (Matter, a web page) is one more service, `add`ed before.
///
/// The order of assembly is the order a board needs: configuration → saved state → hardware in its start-up state
/// → the broker's client → everything published → `online`.
public final class Hub {
    public let home: Home
    /// The MQTT door: publishing, requests, peer routing.
    public let mqtt: MQTTHub
    /// The configuration's `web:` section and where the hub keeps its state: what the web page is served from.
    public let web: WebSettings
    public let stateDirectory: String
    let logger: Logger
    let notifier: SystemdNotifier
    /// What `starting` logs.
    private let startingMetadata: Logger.Metadata
    private var services: [ServiceGroupConfiguration.ServiceConfiguration]
    /// Asked for by whatever changed what the hub runs (`HubRestart`); `run()` then returns its exit status.
    public let restart = HubRestart()
    /// What the log view must never show (`LogRing.redact`): `secrets.yaml`'s values, the broker's password, the
    /// Matter pairing values.
    public internal(set) var secrets: [String] = []
    /// The Matter node, for the web page's administration; nil when `matter:` is off.
    public internal(set) var matter: HubMatter?

    /// Why no hub was assembled: the exit status `hearthd` ends with. The reasons are logged as they are found.
    public struct StartFailure: Error, Sendable {
        public let exitStatus: Int32
    }

    private init(
        home: Home, mqtt: MQTTHub, web: WebSettings, stateDirectory: String, logger: Logger, notifier: SystemdNotifier,
        startingMetadata: Logger.Metadata,
        services: [ServiceGroupConfiguration.ServiceConfiguration]
    ) {
        self.home = home
        self.mqtt = mqtt
        self.web = web
        self.stateDirectory = stateDirectory
        self.logger = logger
        self.notifier = notifier
        self.startingMetadata = startingMetadata
        self.services = services
    }

    /// Runs `service` with the hub's own, from `run()` until shutdown.
    public func add(_ service: any Service, named name: String) {
        services.append(.init(service: service, serviceName: name))
    }

    /// Runs every service until SIGTERM or SIGINT; returns the exit status.
    public func run() async -> Int32 {
        let restartService = ServiceGroupConfiguration.ServiceConfiguration(
            service: RestartService(restart: restart), successTerminationBehavior: .gracefullyShutdownGroup)
        var groupConfig = ServiceGroupConfiguration(services: services + [restartService],
                                                    gracefulShutdownSignals: [.sigterm, .sigint],
                                                    logger: logger)
        groupConfig.maximumGracefulShutdownDuration = .seconds(2)
        logger.info("starting", metadata: startingMetadata)
        do {
            try await ServiceGroup(configuration: groupConfig).run()
        } catch is MatterNodeError {
            // Logged by the service: a port or an interface of the configuration cannot be used, which restarting
            // will not fix.
            logger.error("stopped: the matter: settings cannot be used here")
            return HubDaemon.configurationError
        } catch {
            logger.error("stopped with an error: \(error)")
            return 1
        }
        notifier.notify("STOPPING=1")
        if let reason = restart.reason {
            logger.notice("stopped to restart: \(reason)")
            return HubRestart.exitStatus
        }
        logger.info("stopped")
        return 0
    }

    /// Reads the configuration, restores the saved state, starts the hardware and builds the MQTT door; logs every
    /// problem that stops it (nothing was started then, and the hardware is released).
    public static func assemble(
        _ source: HubConfiguration.Source, overrides: HubDaemon.Overrides = HubDaemon.Overrides(),
        hardware: any HardwareProvider, logger: Logger
    ) -> Result<Hub, StartFailure> {
        func failed(_ status: Int32) -> Result<Hub, StartFailure> { .failure(StartFailure(exitStatus: status)) }
        var plan: HubDaemon.Plan
        switch HubDaemon.plan(source, hardware: hardware, logger: logger, checkingWithEngine: false) {
        case .failure(let error):
            for p in error.problems { logger.critical("\(p)") }
            logger.critical("the configuration has \(error.problems.count) problem(s); nothing was started")
            return failed(HubDaemon.configurationError)
        case .success(let p): plan = p
        }
        for w in plan.warnings { logger.warning("\(w)") }
        StartupPages.release()  // the arguments and the configuration have been read: keep the peak low
        var config = plan.config
        if let dir = overrides.stateDirectory { config.stateDirectory = dir }
        if let broker = overrides.broker {
            if broker.usesTLS && config.mqtt.tls == nil { config.mqtt.tls = MQTTConnectOptions.TLS() }
            config.mqtt.host = broker.host
            config.mqtt.port = broker.port(usingTLS: config.mqtt.tls != nil)
            if let username = broker.username { config.mqtt.username = username }
            if let password = broker.password { config.mqtt.password = password }
        }

        // A restore from the web page staged the backup's state for this start (HubBackup).
        do throws(BackupError) {
            if let restored = try HubBackup.applyStagedRestore(stateDirectory: config.stateDirectory) {
                logger.notice("restored from a backup: \(restored.joined(separator: ", "))")
            }
        } catch {
            logger.critical("a staged restore cannot be applied: \(error); nothing was started")
            return failed(HubDaemon.stateError)
        }
        let store = StateStore(directory: config.stateDirectory)
        let saved: [String: SavedDevice]
        do throws(StateStoreError) {
            let (devices, warnings) = try store.load()
            for w in warnings { logger.warning("\(w)") }
            saved = devices
        } catch {
            // Starting from the configuration would overwrite the saved state at the first save.
            logger.critical("""
                the saved state is unusable: \(error). The file was left as it is: repair it or move it away \
                (the hub then starts from the configuration); nothing was started
                """)
            return failed(HubDaemon.stateError)
        }

        // A device is a Matter device when the hub's node is on and its configuration does not leave it off.
        let matterEnabled = config.matter.isEnabled(simulatedBoard: plan.board.isSimulated)
        if !matterEnabled { for i in plan.devices.indices { plan.devices[i].isMatterDevice = false } }

        let home: Home
        do throws(HomeError) {
            home = try Home(devices: plan.devices, saved: saved,
                            options: EngineOptions(stepsPerSecond: config.stepsPerSecond),
                            registry: HubDaemon.registry(hardware))
        } catch {
            // Named as `plan` names them when it checks with the engine itself (`hearthd check-config`).
            let problems = HubDaemon.problemsBuilding(plan, hardware: hardware)
            if problems.isEmpty {
                logger.critical("the configuration cannot be used: \(error.message)")
            } else {
                for p in problems { logger.critical("\(p)") }
                logger.critical("the configuration has \(problems.count) problem(s); nothing was started")
            }
            return failed(HubDaemon.configurationError)
        }
        for w in home.restoreWarnings { logger.warning("\(w)") }
        // The devices' configurations (with the YAML of their bindings) are in the home and the bindings now; kept
        // here they would weigh on a big hub's heap for its whole life (docs/benchmarks.md, "1,000 devices").
        plan.devices = []
        plan.config.devices = []
        config.devices = []
        for (_, binding) in plan.bindings { binding.start(home: home) }

        let topics = TopicScheme(prefix: config.prefix, hub: config.hubID)
        let client: MQTTClient
        do throws(MQTTError) {
            client = try MQTTClient(options: MQTTHub.clientOptions(config.mqtt, topics: topics))
        } catch {
            logger.critical("the MQTT settings cannot be used: \(error)")
            for (_, binding) in plan.bindings { binding.stop() }
            return failed(HubDaemon.configurationError)
        }
        let notifier = SystemdNotifier()
        let brokerName = "\(config.mqtt.host):\(config.mqtt.port)", hubID = config.hubID
        let announced = Atomic<Bool>(false)
        let bindingsByDevice = plan.bindings
        let router = PeerRouter(home: home, topics: topics, peers: config.peers, mirrors: config.mirrors,
                                bindings: config.bindings, bridgesHome: matterEnabled && config.matter.bridge == .home,
                                heartbeat: config.heartbeat, log: { logger.notice("\($0)") })
        let hardwareDevices = Set(plan.bindings.map(\.device))
        // Home Assistant's discovery (docs/home-assistant.md): announced on every connection and on its birth.
        let homeAssistant = config.homeAssistantDiscovery ? HubDaemon.homeAssistantBridge(
            home: home, client: client,
            options: HomeAssistantOptions(hub: config.hubID, hearthPrefix: config.prefix,
                                          discoveryPrefix: config.homeAssistantPrefix),
            log: { logger.notice("\($0)") }) : nil
        // Home Assistant's configs are built after the connection's documents and `online` are written: `online` runs
        // on the network thread, in the connection's callback, and libmosquitto writes what a callback queued only
        // once it returns, so building 1,000 configs there held them back. Still on the network thread, not a queue
        // of their own: another thread's malloc arena costs a hub with peers more memory (docs/benchmarks.md).
        let mqtt = MQTTHub(
            home: home, client: client, topics: topics,
            refresh: { id in for (device, b) in bindingsByDevice where device == id { b.refresh() } },
            hasHardware: { hardwareDevices.contains($0) },
            log: { logger.notice("\($0)") },
            online: {
                if let homeAssistant { client.afterWriting { homeAssistant.connected() } }
                HeapTrim.afterBurst()
                guard !announced.exchange(true, ordering: .relaxed) else {
                    logger.info("online again: reconnected and republished", metadata: ["broker": "\(brokerName)"])
                    return
                }
                let since = HubDaemon.millisecondsSinceExec().map {
                    "\($0) ms after exec, \(HubDaemon.cpuMillisecondsSoFar()) ms of CPU"
                } ?? "now"
                logger.info("online \(since): \(home.deviceIDs.count) devices published",
                            metadata: ["hub": "\(hubID)", "broker": "\(brokerName)"])
                notifier.notify("READY=1\nSTATUS=online")
                // What start-up alone touched (see StartupPages) need not stay in the hub's resident set.
                let released = StartupPages.release()
                logger.debug("released \(released) kB of start-up code and read-only data pages")
            }, router: router,
            other: { message in homeAssistant?.received(topic: message.topic, payload: message.payload) })

        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [
            .init(service: PersistenceService(home: home, store: store, interval: .seconds(1), clock: home.clock,
                                              logger: logger),
                  serviceName: "persistence"),
            .init(service: EngineService(home: home), serviceName: "engine"),
            .init(service: BindingsService(bindings: plan.bindings.map(\.binding)), serviceName: "hardware"),
            .init(service: MQTTService(hub: mqtt), serviceName: "mqtt"),
        ]
        var hubMatter: HubMatter?
        if matterEnabled {
            guard let matter = MatterHub.service(config, home: home, door: MQTTBridgeDoor(hub: mqtt), logger: logger)
            else {
                for (_, binding) in plan.bindings { binding.stop() }
                return failed(HubDaemon.stateError)
            }
            if let peers = matter.peers {
                router.feedBridge(peers, log: { logger.notice("\($0)") })
            }
            services.append(.init(service: matter, serviceName: "matter"))
            hubMatter = HubMatter(administration: matter.administration, pairing: matter.pairing)
        }
        if let interval = SystemdNotifier.watchdogInterval, notifier.isActive {
            services.append(
                .init(service: WatchdogService(notifier: notifier, interval: interval), serviceName: "watchdog"))
        }
        let hub = Hub(
            home: home, mqtt: mqtt, web: config.web, stateDirectory: config.stateDirectory, logger: logger,
            notifier: notifier,
            startingMetadata: [
                "hub": "\(config.hubID)", "board": "\(plan.board.name)",
                "devices": "\(home.deviceIDs.count)", "state": "\(store.file)"
            ],
            services: services)
        hub.matter = hubMatter
        hub.secrets = secretsForLogs(
            configFile: source.file, mqtt: config.mqtt,
            matter: matterEnabled ? try? MatterHub.pairing(config.matter, stateDirectory: config.stateDirectory) : nil)
        return .success(hub)
    }
}
