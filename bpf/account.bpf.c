/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * account.bpf.c - where the CPU time goes, for the operator's view.
 *
 * Two questions an operator of a shared node asks (NCSA's load limiter
 * answered them for its users): do guests really take only the idle
 * cycles, and what does each job use? So the scheduler accounts:
 *
 *  - per class (enum linger_class): CPU time, how often a
 *    task started running, and its run delay (ready to running) as a sum
 *    and a log2 histogram, in a per-CPU map: each CPU adds to its own
 *    copy, so this costs no shared cache line on the hot path;
 *  - per job (the labelled cgroup a task's class comes from, else its
 *    top-level cgroup): CPU time, runs, threads runnable now, and a run
 *    delay histogram, in a per-CPU hash map: the same, a copy per CPU.
 *    A run is added to its job once, as it ends (stopping()), with the
 *    one look-up of the job's entry a run needs: the hash look-up is the
 *    dearest step of the accounting (the profile, bench/README.md).
 *    Which job runs on a CPU now is that CPU's own word in the per-CPU
 *    map; the agent sums the copies, counts a job's threads on CPUs from
 *    those words, and keeps its high-water mark from its samples
 *    (src/observe/sampler.rs).
 *
 * What a run costs is the kernel's own figure: the growth of the task's
 * se.sum_exec_runtime since we last charged it, the very sum cgroup
 * cpu.stat adds up. Our own clock (running() to stopping()) misses what
 * the kernel charges a blocking task after stopping(): stopping() comes
 * at the dequeue, and the kernel charges on until the CPU has picked the
 * next task (dispatch() included), so a job of short sleepers read 36%
 * low by it. Whatever the kernel charges after our last look is picked
 * up at the task's next charge. The same figure charges vtime, gang
 * slots and cpu.max (all are charged from what stopping() and
 * account_checkpoint() return), and it leaves out interrupt time as the
 * kernel does. run_start (our clock) remains for estimates within a run.
 */
#include "ctx.bpf.h"
#include "account.bpf.h"
#include "stats.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, u32);
	__type(value, struct linger_cpu_acct);
	__uint(max_entries, 1);
} cpu_accts SEC(".maps");

/*
 * Not preallocated: an entry is a copy per CPU, and a node runs far fewer
 * jobs at once than the map could hold.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, u64);	/* the job's cgroup id */
	__type(value, struct linger_job_acct);
	__uint(max_entries, LINGER_MAX_JOBS);
} job_accts SEC(".maps");

/* What a new job's entry starts from (too big for the BPF stack). */
static struct linger_job_acct job_acct_zero;

static struct linger_cpu_acct *lookup_cpu_acct(void)
{
	u32 zero = 0;

	return bpf_map_lookup_elem(&cpu_accts, &zero);
}

/* This CPU's copy of the job's entry, created at its first event; NULL if the map is full. */
static struct linger_job_acct *lookup_job_acct(u64 job)
{
	struct linger_job_acct *ja;

	if (!job)
		return NULL;
	ja = bpf_map_lookup_elem(&job_accts, &job);
	if (ja)
		return ja;
	bpf_map_update_elem(&job_accts, &job, &job_acct_zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&job_accts, &job);
}

/* What @tctx's CPU time counts as: its class (gangs apart from their tier). */
static u32 task_acct(const struct task_ctx *tctx)
{
	return tctx ? tctx->cls.class : LINGER_CLASS_PRIMARY;
}

__hidden void account_quiescent(struct task_ctx *tctx)
{
	struct linger_job_acct *ja;
	u64 job;

	if (!tctx || !tctx->acct.runnable_job)
		return;
	job = tctx->acct.runnable_job;
	tctx->acct.runnable_job = 0;
	ja = bpf_map_lookup_elem(&job_accts, &job);
	if (ja)
		ja->nr_runnable--;
}

/*
 * Count the task as runnable in its current job. A task can change jobs
 * while it stays runnable (moved to another cgroup, relabelled) and a
 * spinning one may never pass runnable() again, so running() re-homes
 * the count too.
 */
static void account_count_runnable(struct task_ctx *tctx)
{
	struct linger_job_acct *ja;

	if (tctx->acct.runnable_job == tctx->cls.job)
		return;
	account_quiescent(tctx);
	ja = lookup_job_acct(tctx->cls.job);
	if (ja) {
		ja->nr_runnable++;
		tctx->acct.runnable_job = tctx->cls.job;
	}
}

/* runnable(): the task waits for a CPU from now on. */
__hidden void account_runnable(struct task_ctx *tctx, u64 now)
{
	if (!accounting || !tctx)
		return;
	account_count_runnable(tctx);
}

/*
 * running(): its run delay ends, its run begins. What the job's entry
 * gets of it waits in the task's context until stopping().
 */
__hidden void account_running(struct task_ctx *tctx, u64 now)
{
	struct linger_cpu_acct *ca;
	u32 acct = task_acct(tctx);
	u64 delay = 0;

	if (!tctx)
		return;
	tctx->acct.run_start = now;
	if (!accounting)
		return;
	/* Its wait, on the one clock (guard.bpf.h), before running() ends it. */
	if (tctx->guard.ready_at && !time_before(now, tctx->guard.ready_at))
		delay = now - tctx->guard.ready_at;
	account_count_runnable(tctx);

	tctx->acct.running_job = tctx->cls.job;
	tctx->acct.delay = delay;

	ca = lookup_cpu_acct();
	if (!ca)
		return;
	ca->running_job = tctx->cls.job;
	if (acct < LINGER_NR_CLASSES) {
		ca->runs[acct]++;
		ca->delay_ns[acct] += delay;
		hist_add(ca->delay_hist[acct], delay);
	}
}

/*
 * enable(): @p is ours from now on; what it ran before (under another
 * class, or before an earlier load) is not ours to charge.
 */
__hidden void account_enable(struct task_struct *p, struct task_ctx *tctx)
{
	if (tctx)
		tctx->acct.exec_seen = p->se.sum_exec_runtime;
}

/* What the kernel charged @p since the last call: see the header. */
static u64 kernel_charge(struct task_struct *p, struct task_ctx *tctx)
{
	u64 sum = p->se.sum_exec_runtime, ran = 0;

	if (sum > tctx->acct.exec_seen)
		ran = sum - tctx->acct.exec_seen;
	tctx->acct.exec_seen = sum;
	return ran;
}

__hidden u64 account_ran(const struct task_ctx *tctx, u64 now)
{
	if (!tctx || !tctx->acct.run_start || time_before(now, tctx->acct.run_start))
		return 0;
	return now - tctx->acct.run_start;
}

/* Charge @ran ns to the task's class, in this CPU's copy. */
static void charge_class(const struct task_ctx *tctx, u64 ran)
{
	struct linger_cpu_acct *ca = lookup_cpu_acct();
	u32 acct = task_acct(tctx);

	if (ca && acct < LINGER_NR_CLASSES)
		ca->cpu_ns[acct] += ran;
}

/*
 * Charge what the task ran since run_start to its class and job, and
 * start counting afresh. Called when dispatch() lets it keep its CPU for
 * another slice (no stopping()/running() pair then): a task that holds a
 * CPU for seconds shows up slice by slice, not in one lump when it
 * finally stops. Returns the time charged.
 */
__hidden u64 account_checkpoint(struct task_struct *p, struct task_ctx *tctx,
				u64 now)
{
	struct linger_job_acct *ja;
	u64 ran, job;

	if (!tctx)
		return 0;
	tctx->acct.run_start = now;
	ran = kernel_charge(p, tctx);
	if (!ran)
		return 0;
	if (!accounting)
		return ran;
	charge_class(tctx, ran);
	job = tctx->acct.running_job;
	ja = job ? bpf_map_lookup_elem(&job_accts, &job) : NULL;
	if (ja)
		ja->cpu_ns += ran;
	return ran;
}

/*
 * stopping(): charge the run to the task's class and job, as
 * account_checkpoint() does, and add the run and its delay to the job:
 * one lookup of the job's entry for the whole run (every context switch
 * passes here). The CPU runs none of the job's threads now.
 * @runnable: it is still ready to run (preempted, slice over), so it
 * waits from now. If not, it is going to sleep: quiescent() comes next
 * unless it is only moving to another CPU's run queue (then running()
 * counts it again, account_count_runnable()), so it is uncounted as
 * runnable here, with the same entry, and quiescent() has nothing left
 * to look up. Returns the length of the run's last stretch.
 */
__hidden u64 account_stopping(struct task_struct *p, struct task_ctx *tctx,
			      bool runnable, u64 now)
{
	struct linger_cpu_acct *ca;
	struct linger_job_acct *ja;
	u32 acct = task_acct(tctx);
	u64 ran, job;

	if (!tctx)
		return 0;
	tctx->acct.run_start = 0;
	ran = kernel_charge(p, tctx);
	if (!accounting)
		return ran;
	ca = lookup_cpu_acct();
	if (ca) {
		ca->running_job = 0;
		if (acct < LINGER_NR_CLASSES)
			ca->cpu_ns[acct] += ran;
	}
	job = tctx->acct.running_job;
	tctx->acct.running_job = 0;
	ja = job ? bpf_map_lookup_elem(&job_accts, &job) : NULL;
	if (!ja)
		return ran;
	ja->cpu_ns += ran;
	ja->runs++;
	hist_add(ja->delay_hist, tctx->acct.delay);
	if (!runnable && tctx->acct.runnable_job == job) {
		tctx->acct.runnable_job = 0;
		ja->nr_runnable--;
	}
	return ran;
}

/* CPU time non-members ran during primary gang slots (see gang.bpf.c). */
__hidden void account_backfill(u64 ran)
{
	struct linger_cpu_acct *ca = lookup_cpu_acct();

	if (accounting && ca)
		ca->backfill_ns += ran;
}
