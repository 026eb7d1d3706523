#include "hearth_gpio.h"

#include <sys/eventfd.h>

int hearth_eventfd_open(void) {
    return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

int hearth_eventfd_signal(int fd) {
    return eventfd_write(fd, (eventfd_t)1);
}
