/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * stats.bpf.c - event counters. One array of LINGER_NR_STATS counters per
 * CPU: each CPU bumps only its own, so counting costs no shared cache line
 * on the hot path. The agent sums the CPUs (src/observe/counters.rs).
 * The map and stat_inc() are in stats.bpf.h, inlined where they count.
 */
#include "stats.bpf.h"
