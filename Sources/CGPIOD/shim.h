#include <gpiod.h>
#include <stdint.h>
#include <sys/eventfd.h>

// Swift's Glibc module does not import <sys/eventfd.h>; these wrappers are the only part of it HearthLinux uses.

/// A non-blocking, close-on-exec eventfd that wakes a waiting GPIO input line for shutdown.
static inline int hearth_eventfd_open(void) {
    return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

/// Adds one to the eventfd counter; returns -1 with errno set on failure (EAGAIN once the counter is saturated).
static inline int hearth_eventfd_signal(int fd) {
    return eventfd_write(fd, (eventfd_t)1);
}
