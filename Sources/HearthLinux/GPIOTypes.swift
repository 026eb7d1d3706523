import CGPIODShim

/// How an output line drives the wire.
public enum GPIODrive: Sendable, Hashable, CaseIterable {
    /// Drives both high and low: the default, and what a relay driver board or MOSFET gate expects.
    case pushPull
    /// Drives low only and floats high: for wired-OR buses and for switching a load powered from a different
    /// voltage through an external pull-up.
    case openDrain
    /// Drives high only and floats low.
    case openSource

    /// The request flag bits for this drive (`HEARTH_GPIO_FLAG_*`).
    var requestFlags: UInt32 {
        switch self {
        case .pushPull: 0
        case .openDrain: UInt32(HEARTH_GPIO_FLAG_OPEN_DRAIN)
        case .openSource: UInt32(HEARTH_GPIO_FLAG_OPEN_SOURCE)
        }
    }

    /// The drive a line-info flag word reports.
    init(flags: UInt32) {
        self = flags & UInt32(HEARTH_GPIO_FLAG_OPEN_DRAIN) != 0 ? .openDrain
            : flags & UInt32(HEARTH_GPIO_FLAG_OPEN_SOURCE) != 0 ? .openSource : .pushPull
    }
}

/// The internal resistor on an input line.
///
/// Wall switches wired to ground need ``pullUp`` unless the board has its own resistor; leaving a switch input
/// floating produces phantom edges from mains hum.
public enum GPIOBias: Sendable, Hashable, CaseIterable {
    /// Keep whatever the firmware or device tree configured (no flag); what line info says when the kernel does
    /// not know.
    case asIs
    /// No pull resistor.
    case disabled
    /// Pull towards 3.3 V.
    case pullUp
    /// Pull towards ground.
    case pullDown

    /// The request flag bits for this bias (`HEARTH_GPIO_FLAG_BIAS_*`).
    var requestFlags: UInt32 {
        switch self {
        case .asIs: 0
        case .disabled: UInt32(HEARTH_GPIO_FLAG_BIAS_DISABLE)
        case .pullUp: UInt32(HEARTH_GPIO_FLAG_BIAS_PULL_UP)
        case .pullDown: UInt32(HEARTH_GPIO_FLAG_BIAS_PULL_DOWN)
        }
    }

    /// The bias a line-info flag word reports; none reads as ``asIs``.
    init(flags: UInt32) {
        self = flags & UInt32(HEARTH_GPIO_FLAG_BIAS_DISABLE) != 0 ? .disabled
            : flags & UInt32(HEARTH_GPIO_FLAG_BIAS_PULL_UP) != 0 ? .pullUp
            : flags & UInt32(HEARTH_GPIO_FLAG_BIAS_PULL_DOWN) != 0 ? .pullDown : .asIs
    }
}

/// The full flag word for a request (CGPIODShim's `HEARTH_GPIO_FLAG_*`, the same bits for libgpiod 1 and 2).
///
/// The enums above make the combinations libgpiod rejects with `EINVAL` (two drives, two biases) unrepresentable,
/// so the only checks left are the kernel's.
func gpioRequestFlags(activeLow: Bool, drive: GPIODrive = .pushPull, bias: GPIOBias = .asIs) -> UInt32 {
    (activeLow ? UInt32(HEARTH_GPIO_FLAG_ACTIVE_LOW) : 0) | drive.requestFlags | bias.requestFlags
}

/// One edge seen by the kernel on an input line.
public struct GPIOEdgeEvent: Sendable, Hashable, CustomStringConvertible {
    public enum Edge: Sendable, Hashable {
        /// Logical low → high; with active-low this is the wire going low.
        case rising
        /// Logical high → low.
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

    /// Converts CGPIODShim's event; `nil` for an event type it does not know.
    init?(_ event: hearth_gpio_edge_event) {
        switch event.edge {
        case Int32(HEARTH_GPIO_EDGE_RISING): edge = .rising
        case Int32(HEARTH_GPIO_EDGE_FALLING): edge = .falling
        default: return nil
        }
        timestampNanoseconds = event.timestamp_ns
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

extension GPIOLineInfo {
    /// Converts CGPIODShim's line info.
    init(offset: Int, _ info: hearth_gpio_line_info) {
        self.init(offset: offset, name: Self.string(info.name), consumer: Self.string(info.consumer),
                  isUsed: info.used, direction: info.output ? .output : .input,
                  isActiveLow: info.flags & UInt32(HEARTH_GPIO_FLAG_ACTIVE_LOW) != 0,
                  drive: GPIODrive(flags: info.flags), bias: GPIOBias(flags: info.flags))
    }

    /// A fixed-size C name field up to its first NUL (or its end); `nil` when empty.
    static func string<Field>(_ field: Field) -> String? {
        withUnsafeBytes(of: field) { bytes in
            let text = bytes.prefix { $0 != 0 }
            return text.isEmpty ? nil : String(decoding: text, as: UTF8.self)
        }
    }
}
