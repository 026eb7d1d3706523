import CGPIOD
import Glibc

/// How an output line drives the wire.
public enum GPIODrive: Sendable, Hashable, CaseIterable {
    /// Drives both high and low: the default, and what a relay driver board or MOSFET gate expects.
    case pushPull
    /// Drives low only and floats high (`GPIOD_LINE_REQUEST_FLAG_OPEN_DRAIN`): for wired-OR buses and for
    /// switching a load powered from a different voltage through an external pull-up.
    case openDrain
    /// Drives high only and floats low (`GPIOD_LINE_REQUEST_FLAG_OPEN_SOURCE`).
    case openSource

    /// The libgpiod v1 request flag bits for this drive.
    var requestFlags: Int32 {
        switch self {
        case .pushPull: 0
        case .openDrain: Int32(GPIOD_LINE_REQUEST_FLAG_OPEN_DRAIN)
        case .openSource: Int32(GPIOD_LINE_REQUEST_FLAG_OPEN_SOURCE)
        }
    }
}

/// The internal resistor on an input line.
///
/// Wall switches wired to ground need ``pullUp`` unless the board has its own resistor; leaving a switch input
/// floating produces phantom edges from mains hum.
public enum GPIOBias: Sendable, Hashable, CaseIterable {
    /// Keep whatever the firmware or device tree configured (no flag).
    case asIs
    /// No pull resistor (`GPIOD_LINE_REQUEST_FLAG_BIAS_DISABLE`).
    case disabled
    /// Pull towards 3.3 V (`GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_UP`).
    case pullUp
    /// Pull towards ground (`GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_DOWN`).
    case pullDown

    /// The libgpiod v1 request flag bits for this bias.
    var requestFlags: Int32 {
        switch self {
        case .asIs: 0
        case .disabled: Int32(GPIOD_LINE_REQUEST_FLAG_BIAS_DISABLE)
        case .pullUp: Int32(GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_UP)
        case .pullDown: Int32(GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_DOWN)
        }
    }

    /// The bias libgpiod reports for a line (`GPIOD_LINE_BIAS_*`); unknown values read as ``asIs``.
    init(lineInfoBias: Int32) {
        switch lineInfoBias {
        case Int32(GPIOD_LINE_BIAS_DISABLE): self = .disabled
        case Int32(GPIOD_LINE_BIAS_PULL_UP): self = .pullUp
        case Int32(GPIOD_LINE_BIAS_PULL_DOWN): self = .pullDown
        default: self = .asIs
        }
    }
}

/// The full libgpiod v1 flag word for a request.
///
/// The enums above make the combinations libgpiod rejects with `EINVAL` (two drives, two biases) unrepresentable,
/// so the only checks left are the kernel's.
func gpioRequestFlags(activeLow: Bool, drive: GPIODrive = .pushPull, bias: GPIOBias = .asIs) -> Int32 {
    (activeLow ? Int32(GPIOD_LINE_REQUEST_FLAG_ACTIVE_LOW) : 0) | drive.requestFlags | bias.requestFlags
}

/// One edge seen by the kernel on an input line.
public struct GPIOEdgeEvent: Sendable, Hashable, CustomStringConvertible {
    public enum Edge: Sendable, Hashable {
        /// Logical low → high (`GPIOD_LINE_EVENT_RISING_EDGE`); with active-low this is the wire going low.
        case rising
        /// Logical high → low (`GPIOD_LINE_EVENT_FALLING_EDGE`).
        case falling
    }

    public var edge: Edge
    /// When the kernel's interrupt handler saw the edge, in nanoseconds of `CLOCK_MONOTONIC` (kernels ≥ 5.7;
    /// older kernels used `CLOCK_REALTIME`). Debounce on this, not on the time the event was read.
    public var timestampNanoseconds: UInt64

    public init(edge: Edge, timestampNanoseconds: UInt64) {
        self.edge = edge
        self.timestampNanoseconds = timestampNanoseconds
    }

    /// Converts libgpiod's event; `nil` for an event type this version does not know.
    init?(_ event: gpiod_line_event) {
        switch event.event_type {
        case Int32(GPIOD_LINE_EVENT_RISING_EDGE): edge = .rising
        case Int32(GPIOD_LINE_EVENT_FALLING_EDGE): edge = .falling
        default: return nil
        }
        timestampNanoseconds = Self.nanoseconds(event.ts)
    }

    static func nanoseconds(_ time: timespec) -> UInt64 {
        UInt64(max(0, time.tv_sec)) &* 1_000_000_000 &+ UInt64(max(0, time.tv_nsec))
    }

    public var description: String { "\(edge) @ \(timestampNanoseconds) ns" }
}

/// A snapshot of what the kernel says about a line, for diagnostics ("who holds GPIO 17?") and for checking that a
/// request took effect.
public struct GPIOLineInfo: Sendable, Hashable {
    public enum Direction: Sendable, Hashable { case input, output }

    public var offset: Int
    /// The name from the device tree (`gpio-line-names`), e.g. `GPIO17`; `nil` if unnamed.
    public var name: String?
    /// The label of whoever holds the line, e.g. `hearthd`; `nil` if nobody does or the holder gave none.
    public var consumer: String?
    /// Whether the line is requested by anyone, including the kernel itself (a hog, a driver).
    public var isUsed: Bool
    public var direction: Direction
    public var isActiveLow: Bool
    public var drive: GPIODrive
    public var bias: GPIOBias
}
