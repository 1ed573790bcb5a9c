#ifndef C_BENCH_ALLOCATION_COUNTER_H
#define C_BENCH_ALLOCATION_COUNTER_H

/// Starts (1) or stops (0) counting; returns 0 where nothing can be counted: off Linux/glibc, and under a
/// sanitizer, whose runtime owns `malloc`. Counting is off until started.
int realtime_bench_count_allocations(int on);

/// Heap allocations (malloc, calloc, realloc, aligned allocations) made by the whole process while counting
/// was on, or -1 while counting is off or where nothing is counted.
long realtime_bench_allocations(void);

#endif
