// hearth_gpio.h over libgpiod 1.x (Debian bookworm's 1.6.3): line objects belong to the chip object, requests are
// made on them with a flag word, and edge events are read from the line's event descriptor.
#include "gpiod_api.h"

#if HEARTH_GPIOD_API == 1

#include <stdlib.h>

_Static_assert((int)HEARTH_GPIO_FLAG_OPEN_DRAIN == (int)GPIOD_LINE_REQUEST_FLAG_OPEN_DRAIN, "v1 flag value");
_Static_assert((int)HEARTH_GPIO_FLAG_OPEN_SOURCE == (int)GPIOD_LINE_REQUEST_FLAG_OPEN_SOURCE, "v1 flag value");
_Static_assert((int)HEARTH_GPIO_FLAG_ACTIVE_LOW == (int)GPIOD_LINE_REQUEST_FLAG_ACTIVE_LOW, "v1 flag value");
_Static_assert((int)HEARTH_GPIO_FLAG_BIAS_DISABLE == (int)GPIOD_LINE_REQUEST_FLAG_BIAS_DISABLE, "v1 flag value");
_Static_assert((int)HEARTH_GPIO_FLAG_BIAS_PULL_DOWN == (int)GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_DOWN, "v1 flag value");
_Static_assert((int)HEARTH_GPIO_FLAG_BIAS_PULL_UP == (int)GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_UP, "v1 flag value");
_Static_assert((int)HEARTH_GPIO_EDGE_RISING == (int)GPIOD_LINE_EVENT_RISING_EDGE, "v1 event type");
_Static_assert((int)HEARTH_GPIO_EDGE_FALLING == (int)GPIOD_LINE_EVENT_FALLING_EDGE, "v1 event type");

struct hearth_gpio_chip {
    struct gpiod_chip *chip;
    char name[HEARTH_GPIO_NAME_SIZE];
    char label[HEARTH_GPIO_NAME_SIZE];
    unsigned int num_lines;
};

struct hearth_gpio_request {
    /// Owned by the chip object (freed by gpiod_chip_close); released, never freed, here.
    struct gpiod_line *line;
    /// The line's event descriptor for inputs (owned by libgpiod), -1 for outputs.
    int event_fd;
};

/// The most events one read takes; more stay queued for the next.
enum { EVENT_BATCH = 16 };

int hearth_gpio_api_version(void) {
    return 1;
}

struct hearth_gpio_chip *hearth_gpio_chip_open(const char *path) {
    struct hearth_gpio_chip *chip = calloc(1, sizeof *chip);
    if (!chip) return NULL;
    errno = 0;
    chip->chip = gpiod_chip_open(path);
    if (!chip->chip) {
        int error = hearth_gpio_errno_or(ENODEV);
        free(chip);
        errno = error;
        return NULL;
    }
    hearth_gpio_copy_name(chip->name, gpiod_chip_name(chip->chip));
    hearth_gpio_copy_name(chip->label, gpiod_chip_label(chip->chip));
    chip->num_lines = gpiod_chip_num_lines(chip->chip);
    return chip;
}

void hearth_gpio_chip_close(struct hearth_gpio_chip *chip) {
    if (!chip) return;
    gpiod_chip_close(chip->chip);
    free(chip);
}

const char *hearth_gpio_chip_name(const struct hearth_gpio_chip *chip) {
    return chip->name;
}

const char *hearth_gpio_chip_label(const struct hearth_gpio_chip *chip) {
    return chip->label;
}

unsigned int hearth_gpio_chip_num_lines(const struct hearth_gpio_chip *chip) {
    return chip->num_lines;
}

int hearth_gpio_chip_find_line(struct hearth_gpio_chip *chip, const char *name) {
    errno = 0;
    struct gpiod_line *line = gpiod_chip_find_line(chip->chip, name);
    if (!line) {
        errno = hearth_gpio_errno_or(ENOENT);
        return -1;
    }
    return (int)gpiod_line_offset(line);
}

int hearth_gpio_chip_line_info(struct hearth_gpio_chip *chip, unsigned int offset,
                               struct hearth_gpio_line_info *info) {
    errno = 0;
    struct gpiod_line *line = gpiod_chip_get_line(chip->chip, offset);
    if (!line) {
        errno = hearth_gpio_errno_or(EINVAL);
        return -1;
    }
    if (gpiod_line_update(line) < 0) return -1;
    memset(info, 0, sizeof *info);
    hearth_gpio_copy_name(info->name, gpiod_line_name(line));
    hearth_gpio_copy_name(info->consumer, gpiod_line_consumer(line));
    if (gpiod_line_active_state(line) == GPIOD_LINE_ACTIVE_STATE_LOW) info->flags |= HEARTH_GPIO_FLAG_ACTIVE_LOW;
    if (gpiod_line_is_open_drain(line)) info->flags |= HEARTH_GPIO_FLAG_OPEN_DRAIN;
    if (gpiod_line_is_open_source(line)) info->flags |= HEARTH_GPIO_FLAG_OPEN_SOURCE;
    switch (gpiod_line_bias(line)) {
    case GPIOD_LINE_BIAS_DISABLE: info->flags |= HEARTH_GPIO_FLAG_BIAS_DISABLE; break;
    case GPIOD_LINE_BIAS_PULL_UP: info->flags |= HEARTH_GPIO_FLAG_BIAS_PULL_UP; break;
    case GPIOD_LINE_BIAS_PULL_DOWN: info->flags |= HEARTH_GPIO_FLAG_BIAS_PULL_DOWN; break;
    default: break;
    }
    info->used = gpiod_line_is_used(line);
    info->output = gpiod_line_direction(line) == GPIOD_LINE_DIRECTION_OUTPUT;
    return 0;
}

/// The chip's line at `offset` in a new request wrapper, not yet requested.
static struct hearth_gpio_request *new_request(struct hearth_gpio_chip *chip, unsigned int offset) {
    errno = 0;
    struct gpiod_line *line = gpiod_chip_get_line(chip->chip, offset);
    if (!line) {
        errno = hearth_gpio_errno_or(EINVAL);
        return NULL;
    }
    struct hearth_gpio_request *request = calloc(1, sizeof *request);
    if (!request) return NULL;
    request->line = line;
    request->event_fd = -1;
    return request;
}

/// Frees a wrapper whose request failed, keeping the failure's errno.
static void *discard(struct hearth_gpio_request *request) {
    int error = hearth_gpio_errno_or(EIO);
    free(request);
    errno = error;
    return NULL;
}

struct hearth_gpio_request *hearth_gpio_request_output(struct hearth_gpio_chip *chip, unsigned int offset,
                                                       const char *consumer, uint32_t flags, int value) {
    if (!hearth_gpio_flags_valid(flags, true)) {
        errno = EINVAL;
        return NULL;
    }
    struct hearth_gpio_request *request = new_request(chip, offset);
    if (!request) return NULL;
    errno = 0;
    if (gpiod_line_request_output_flags(request->line, consumer, (int)flags, value ? 1 : 0) < 0)
        return discard(request);
    return request;
}

struct hearth_gpio_request *hearth_gpio_request_input(struct hearth_gpio_chip *chip, unsigned int offset,
                                                      const char *consumer, uint32_t flags) {
    if (!hearth_gpio_flags_valid(flags, false)) {
        errno = EINVAL;
        return NULL;
    }
    struct hearth_gpio_request *request = new_request(chip, offset);
    if (!request) return NULL;
    errno = 0;
    if (gpiod_line_request_both_edges_events_flags(request->line, consumer, (int)flags) < 0)
        return discard(request);
    request->event_fd = gpiod_line_event_get_fd(request->line);
    if (request->event_fd < 0) {
        int error = hearth_gpio_errno_or(EIO);
        gpiod_line_release(request->line);
        errno = error;
        return discard(request);
    }
    return request;
}

void hearth_gpio_release(struct hearth_gpio_request *request) {
    if (!request) return;
    gpiod_line_release(request->line);
    free(request);
}

int hearth_gpio_get_value(struct hearth_gpio_request *request) {
    return gpiod_line_get_value(request->line);
}

int hearth_gpio_set_value(struct hearth_gpio_request *request, int value) {
    return gpiod_line_set_value(request->line, value ? 1 : 0);
}

int hearth_gpio_event_fd(struct hearth_gpio_request *request) {
    if (request->event_fd < 0) {
        errno = EPERM;  // what libgpiod v1 says for a line requested without events
        return -1;
    }
    return request->event_fd;
}

int hearth_gpio_read_edge_events(struct hearth_gpio_request *request, struct hearth_gpio_edge_event *events,
                                 unsigned int max) {
    if (request->event_fd < 0) {
        errno = EPERM;
        return -1;
    }
    struct gpiod_line_event batch[EVENT_BATCH];
    unsigned int wanted = max < EVENT_BATCH ? max : EVENT_BATCH;
    if (wanted == 0) return 0;
    int count = gpiod_line_event_read_fd_multiple(request->event_fd, batch, wanted);
    if (count < 0) return -1;
    for (int i = 0; i < count; i++) {
        const struct timespec *ts = &batch[i].ts;
        uint64_t seconds = ts->tv_sec > 0 ? (uint64_t)ts->tv_sec : 0;
        uint64_t nanoseconds = ts->tv_nsec > 0 ? (uint64_t)ts->tv_nsec : 0;
        events[i].timestamp_ns = seconds * 1000000000u + nanoseconds;
        events[i].edge = batch[i].event_type;
    }
    return count;
}

#endif
