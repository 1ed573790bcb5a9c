#ifndef REALTIME_LINUX_SHIM_H
#define REALTIME_LINUX_SHIM_H
// The POSIX event loop's Linux-only system calls, which the Glibc module does not export: epoll, eventfd,
// ppoll, timerfd and thread naming. Kept apart from COpenSSL so that TLS and the event loop each bring only their own C.
#ifdef __linux__
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

// Waits up to `nanoseconds` for `fd` to become readable (poll(2) counts only milliseconds). Returns 1
// when readable, 0 on timeout, -1 on error (EINTR included). Calls ppoll through syscall(2) with the
// kernel's own layouts, because glibc declares ppoll only for _GNU_SOURCE and <poll.h> here would make
// `pollfd` this module's type for every importer.
static inline int realtime_wait_readable(int fd, long long nanoseconds) {
    struct { int fd; short events; short revents; } entry = { fd, 0x001 /* POLLIN */, 0 };
    struct { long seconds; long nanoseconds; } timeout = { (long)(nanoseconds / 1000000000LL),
                                                           (long)(nanoseconds % 1000000000LL) };
    return (int)syscall(SYS_ppoll, &entry, 1UL, &timeout, (void *)0, (size_t)0);
}

// A CLOCK_MONOTONIC timerfd, non-blocking and close-on-exec; -1 on failure. Through syscall(2) with the
// kernel's own layouts, as ppoll above: <sys/timerfd.h> would make `timespec` this module's type.
static inline int realtime_timer_create(void) {
    return (int)syscall(SYS_timerfd_create, 1 /* CLOCK_MONOTONIC */, 04000 /* TFD_NONBLOCK */ | 02000000 /* TFD_CLOEXEC */);
}

// Arms `fd` to expire once at the absolute CLOCK_MONOTONIC time `deadline` (nanoseconds); 0 disarms it.
static inline int realtime_timer_set(int fd, unsigned long long deadline) {
    struct { long seconds; long nanoseconds; } spec[2] = { { 0, 0 }, { (long)(deadline / 1000000000ULL),
                                                                      (long)(deadline % 1000000000ULL) } };
    return (int)syscall(SYS_timerfd_settime, fd, deadline == 0 ? 0 : 1 /* TFD_TIMER_ABSTIME */, spec, (void *)0);
}

// Names the calling thread (at most 15 bytes are kept); prctl is variadic, so Swift cannot call it.
static inline int realtime_set_current_thread_name(const char *name) {
    return prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0);
}
#endif
#endif
