// realtime-bench's allocation counter: the bench executable defines the allocation functions, so every
// call in the process (Swift runtime, Foundation, Dispatch, libc) comes here first, is counted, and goes
// on to glibc's own allocator. Only the benchmark links this; no library target does.
#include "CBenchAllocationCounter.h"
#include <errno.h>  // a libc header first, which defines __GLIBC__ on glibc
#include <stdatomic.h>
#include <stddef.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define REALTIME_BENCH_SANITIZED 1
#endif
#endif

#if defined(__linux__) && defined(__GLIBC__) && !defined(REALTIME_BENCH_SANITIZED)

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);

static _Atomic long allocations;
static _Atomic int counting;

// Off, a relaxed load of a flag that does not change: timed rounds run with counting off.
static inline void counted(void) {
    if (atomic_load_explicit(&counting, memory_order_relaxed)) {
        atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
    }
}

void *malloc(size_t size) {
    counted();
    return __libc_malloc(size);
}

void *calloc(size_t count, size_t size) {
    counted();
    return __libc_calloc(count, size);
}

void *realloc(void *pointer, size_t size) {
    counted();
    return __libc_realloc(pointer, size);
}

void *memalign(size_t alignment, size_t size) {
    counted();
    return __libc_memalign(alignment, size);
}

void *aligned_alloc(size_t alignment, size_t size) {
    counted();
    return __libc_memalign(alignment, size);
}

int posix_memalign(void **result, size_t alignment, size_t size) {
    if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0) return EINVAL;
    counted();
    void *pointer = __libc_memalign(alignment, size);
    if (pointer == NULL) return ENOMEM;
    *result = pointer;
    return 0;
}

int realtime_bench_count_allocations(int on) {
    atomic_store_explicit(&counting, on != 0, memory_order_relaxed);
    return 1;
}

long realtime_bench_allocations(void) {
    if (!atomic_load_explicit(&counting, memory_order_relaxed)) return -1;
    return atomic_load_explicit(&allocations, memory_order_relaxed);
}
#else
int realtime_bench_count_allocations(int on) {
    (void)on;
    return 0;
}

long realtime_bench_allocations(void) { return -1; }
#endif
