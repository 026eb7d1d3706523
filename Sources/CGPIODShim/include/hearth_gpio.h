#ifndef HEARTH_GPIO_H
#define HEARTH_GPIO_H

// The part of libgpiod HearthLinux uses, as one small C API that is the same whichever libgpiod is installed.
//
// libgpiod 1.x (Debian bookworm) and 2.x (Debian trixie, Raspberry Pi OS) have incompatible APIs; the files behind
// this header are compiled for the one <gpiod.h> declares (see gpiod_api.h), so HearthLinux has a single Swift
// binding and the choice is made by the headers found at build time, not by a build flag.
//
// Conventions: a function returning int returns -1 with errno set on failure; one returning a pointer returns NULL
// with errno set (never 0). Objects are not thread-safe: callers serialize every call on a chip and the requests
// taken from it, except hearth_gpio_read_edge_events, which only one thread calls for a request and which touches
// nothing but the request's descriptor and its own buffer.

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Request flags and line-info flags. The values are libgpiod v1's `GPIOD_LINE_REQUEST_FLAG_*` bits (the v1 binding
/// checks that at compile time); at most one drive and one bias flag may be set.
enum {
    HEARTH_GPIO_FLAG_OPEN_DRAIN = 1 << 0,
    HEARTH_GPIO_FLAG_OPEN_SOURCE = 1 << 1,
    HEARTH_GPIO_FLAG_ACTIVE_LOW = 1 << 2,
    HEARTH_GPIO_FLAG_BIAS_DISABLE = 1 << 3,
    HEARTH_GPIO_FLAG_BIAS_PULL_DOWN = 1 << 4,
    HEARTH_GPIO_FLAG_BIAS_PULL_UP = 1 << 5,
};

/// The kind of an edge event (the same numbers as both libgpiod versions use).
enum {
    HEARTH_GPIO_EDGE_RISING = 1,
    HEARTH_GPIO_EDGE_FALLING = 2,
};

/// The kernel's limit for chip names, labels, line names and consumers, including the terminating NUL.
#define HEARTH_GPIO_NAME_SIZE 32

/// An open GPIO chip. Close it with hearth_gpio_chip_close after every request taken from it is released.
struct hearth_gpio_chip;

/// One requested line (an output, or an input with both-edge detection).
struct hearth_gpio_request;

/// What the kernel says about one line.
struct hearth_gpio_line_info {
    /// The device-tree name, "" when unnamed.
    char name[HEARTH_GPIO_NAME_SIZE];
    /// The holder's label, "" when nobody holds it or the holder gave none.
    char consumer[HEARTH_GPIO_NAME_SIZE];
    /// HEARTH_GPIO_FLAG_* bits for the line's active-low, drive and bias state.
    uint32_t flags;
    /// Requested by anyone, the kernel included.
    bool used;
    /// Configured as an output.
    bool output;
};

/// One edge, with the kernel's timestamp (CLOCK_MONOTONIC, nanoseconds).
struct hearth_gpio_edge_event {
    uint64_t timestamp_ns;
    /// HEARTH_GPIO_EDGE_RISING or HEARTH_GPIO_EDGE_FALLING.
    int edge;
};

/// The libgpiod API this build uses: 1 or 2.
int hearth_gpio_api_version(void);

/// Opens the chip at a device path (e.g. /dev/gpiochip0). ENOENT: no such path; ENOTTY or ENODEV: not a GPIO chip.
struct hearth_gpio_chip *hearth_gpio_chip_open(const char *path);
void hearth_gpio_chip_close(struct hearth_gpio_chip *chip);
/// The kernel's name (gpiochip0), read when the chip was opened.
const char *hearth_gpio_chip_name(const struct hearth_gpio_chip *chip);
/// The driver's label (pinctrl-rp1), read when the chip was opened.
const char *hearth_gpio_chip_label(const struct hearth_gpio_chip *chip);
unsigned int hearth_gpio_chip_num_lines(const struct hearth_gpio_chip *chip);

/// The lowest offset of a line named `name`; -1 with ENOENT when there is none.
int hearth_gpio_chip_find_line(struct hearth_gpio_chip *chip, const char *name);
/// Fills `info` for the line at `offset`.
int hearth_gpio_chip_line_info(struct hearth_gpio_chip *chip, unsigned int offset,
                               struct hearth_gpio_line_info *info);

/// Requests `offset` as an output driving the logical `value` (0 or 1) from the first instant.
/// `flags`: active-low and one drive flag (bias flags are allowed too). EBUSY: somebody holds the line.
struct hearth_gpio_request *hearth_gpio_request_output(struct hearth_gpio_chip *chip, unsigned int offset,
                                                       const char *consumer, uint32_t flags, int value);
/// Requests `offset` as an input reporting both edges. `flags`: active-low and one bias flag.
struct hearth_gpio_request *hearth_gpio_request_input(struct hearth_gpio_chip *chip, unsigned int offset,
                                                      const char *consumer, uint32_t flags);
/// Gives the line back to the kernel and frees `request`.
void hearth_gpio_release(struct hearth_gpio_request *request);

/// The logical value: 0 or 1.
int hearth_gpio_get_value(struct hearth_gpio_request *request);
/// Drives the logical `value` (0 or 1) on an output.
int hearth_gpio_set_value(struct hearth_gpio_request *request, int value);

/// The descriptor that becomes readable (poll POLLIN) when an input has edge events queued; owned by the request.
int hearth_gpio_event_fd(struct hearth_gpio_request *request);
/// Reads up to `max` queued edge events (blocks if none is queued: poll the descriptor first); returns how many.
int hearth_gpio_read_edge_events(struct hearth_gpio_request *request, struct hearth_gpio_edge_event *events,
                                 unsigned int max);

/// A non-blocking, close-on-exec eventfd, for waking a thread blocked in poll (Swift's Glibc module does not import
/// <sys/eventfd.h>).
int hearth_eventfd_open(void);
/// Adds one to the eventfd counter (EAGAIN once the counter is saturated).
int hearth_eventfd_signal(int fd);

#ifdef __cplusplus
}
#endif

#endif
