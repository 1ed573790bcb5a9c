// Counts the allocations of a process for `realtime-bench` runs: build with
//   cc -O2 -shared -fPIC -o /tmp/alloc-count.so Tests/Fixtures/bench/alloc-count.c -ldl
// and run `LD_PRELOAD=/tmp/alloc-count.so .build/release/realtime-bench …`. At exit each process prints
// `alloc-count: <pid> <argv[0..2]> mallocs=N` on stderr (malloc, calloc, realloc of a null pointer,
// posix_memalign, aligned_alloc, memalign). Allocations per event come from two runs with different event
// counts: (count₂ − count₁) / (events₂ − events₁), which cancels start-up and per-round costs.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static atomic_ulong count;
static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);
static void *(*real_memalign)(size_t, size_t);

// dlsym may call calloc before real_calloc is known: serve that from a static arena.
static char arena[4096];
static size_t arena_used;

static void resolve(void) {
    if (real_malloc) return;
    real_calloc = dlsym(RTLD_NEXT, "calloc");
    real_malloc = dlsym(RTLD_NEXT, "malloc");
    real_realloc = dlsym(RTLD_NEXT, "realloc");
    real_posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
    real_aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
    real_memalign = dlsym(RTLD_NEXT, "memalign");
}

void *malloc(size_t size) {
    resolve();
    atomic_fetch_add_explicit(&count, 1, memory_order_relaxed);
    return real_malloc(size);
}

void *calloc(size_t n, size_t size) {
    if (!real_calloc) {
        if (real_malloc == NULL && arena_used + n * size <= sizeof arena) {
            void *p = arena + arena_used;
            arena_used += (n * size + 15) & ~(size_t)15;
            return p;
        }
        resolve();
    }
    atomic_fetch_add_explicit(&count, 1, memory_order_relaxed);
    return real_calloc(n, size);
}

void *realloc(void *p, size_t size) {
    resolve();
    if (p == NULL) atomic_fetch_add_explicit(&count, 1, memory_order_relaxed);
    return real_realloc(p, size);
}

int posix_memalign(void **out, size_t alignment, size_t size) {
    resolve();
    atomic_fetch_add_explicit(&count, 1, memory_order_relaxed);
    return real_posix_memalign(out, alignment, size);
}

void *aligned_alloc(size_t alignment, size_t size) {
    resolve();
    atomic_fetch_add_explicit(&count, 1, memory_order_relaxed);
    return real_aligned_alloc(alignment, size);
}

void *memalign(size_t alignment, size_t size) {
    resolve();
    atomic_fetch_add_explicit(&count, 1, memory_order_relaxed);
    return real_memalign(alignment, size);
}

void free(void *p) {
    static void (*real_free)(void *);
    if ((char *)p >= arena && (char *)p < arena + sizeof arena) return;
    if (!real_free) real_free = dlsym(RTLD_NEXT, "free");
    real_free(p);
}

__attribute__((destructor)) static void report(void) {
    char command[256] = "?";
    FILE *file = fopen("/proc/self/cmdline", "r");
    if (file) {
        size_t length = fread(command, 1, sizeof command - 1, file);
        fclose(file);
        command[length] = 0;
        for (size_t i = 0; i + 1 < length; i++) if (command[i] == 0) command[i] = ' ';
    }
    fprintf(stderr, "alloc-count: %d %s mallocs=%lu\n", (int)getpid(), command, atomic_load(&count));
}
