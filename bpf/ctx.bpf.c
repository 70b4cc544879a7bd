/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * ctx.bpf.c - where per-task and per-CPU state lives (ctx.bpf.h says
 * what is in it).
 */
#include "ctx.bpf.h"

__hidden struct task_ctx *create_task_ctx(struct task_struct *p)
{
	return bpf_task_storage_get(&task_ctxs, p, 0,
				    BPF_LOCAL_STORAGE_GET_F_CREATE);
}
