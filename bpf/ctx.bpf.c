/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * ctx.bpf.c - where per-task and per-CPU state lives (ctx.bpf.h says
 * what is in it).
 */
#include "ctx.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_ctx);
} task_ctxs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, u32);
	__type(value, struct cpu_ctx);
	__uint(max_entries, 1);
} cpu_ctxs SEC(".maps");

__hidden struct task_ctx *lookup_task_ctx(const struct task_struct *p)
{
	return bpf_task_storage_get(&task_ctxs, (struct task_struct *)p, 0, 0);
}

__hidden struct task_ctx *create_task_ctx(struct task_struct *p)
{
	return bpf_task_storage_get(&task_ctxs, p, 0,
				    BPF_LOCAL_STORAGE_GET_F_CREATE);
}

__hidden struct cpu_ctx *lookup_cpu_ctx(void)
{
	u32 zero = 0;

	return bpf_map_lookup_elem(&cpu_ctxs, &zero);
}
