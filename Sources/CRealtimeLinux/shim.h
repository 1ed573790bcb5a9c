#ifndef REALTIME_LINUX_SHIM_H
#define REALTIME_LINUX_SHIM_H
// The POSIX event loop's Linux-only system calls, which the Glibc module does not export: epoll, eventfd
// and thread naming. Kept apart from COpenSSL so that TLS and the event loop each bring only their own C.
#ifdef __linux__
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>

// Names the calling thread (at most 15 bytes are kept); prctl is variadic, so Swift cannot call it.
static inline int realtime_set_current_thread_name(const char *name) {
    return prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0);
}
#endif
#endif
