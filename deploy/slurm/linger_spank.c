// SPDX-License-Identifier: GPL-2.0-only
/*
 * SPANK plugin: `sbatch|srun|salloc --linger=CLASS[:SLOT_MS]`.
 *
 * It passes the user's request on, nothing more: in the submitting
 * command (local and allocator contexts) it sets SPANK_LINGER in the
 * job's control environment, which Slurm hands to the Prolog, where
 * `scx_linger slurm prolog` records it for the agent. The agent decides:
 * a request counts only as a demotion (guest, guest-gang), as a user's
 * own label does, and the site's [[slurm_rule]]s grant more. So the
 * vocabulary lives in one place (the agent), and nothing here runs as
 * root on the user's behalf.
 *
 * In each task, before it execs (remote context, still root), it runs
 * `scx_linger slurm wait`, which returns once the agent has applied the
 * job's class (at once when scx_linger has no record of the job or is not
 * running, and after at most 2 s): the agent reads a new job cgroup from
 * its inotify event, which would otherwise race the task's first
 * instructions. The waiting rule is the agent's; only its path is here.
 *
 * plugstack.conf:  optional /usr/local/lib/scx_linger/linger_spank.so [agent=PATH]
 * (PATH: the scx_linger binary, /usr/sbin/scx_linger by default).
 * Built against the site's own Slurm by the Makefile beside this file:
 * Slurm loads a plugin only into the release it was built for.
 */
#include <fcntl.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <slurm/spank.h>


SPANK_PLUGIN(linger, 1);

/* Longest request passed on: a class name, ':' and a slot length. */
#define REQUEST_MAX 64

static char request[REQUEST_MAX];

/* The agent's binary, as installed by the package (agent= overrides). */
static const char *agent = "/usr/sbin/scx_linger";

static int linger_opt(int val, const char *optarg, int remote)
{
	(void)val;
	(void)remote;
	if (!optarg || !optarg[0] || strlen(optarg) >= REQUEST_MAX) {
		slurm_error("--linger: give a class, e.g. --linger=guest or --linger=guest-gang:200");
		return -1;
	}
	strcpy(request, optarg);
	return 0;
}

static struct spank_option linger_option = {
	"linger", "CLASS[:SLOT_MS]",
	"Run the job under scx_linger as guest (only idle CPU time) or "
	"guest-gang (co-scheduled, in idle time); SLOT_MS: a gang's slot",
	1, 0, linger_opt
};

/*
 * Registered here rather than as a spank_options table: sbatch and salloc
 * (the allocator context) see only options registered this way.
 */
int slurm_spank_init(spank_t sp, int ac, char **av)
{
	for (int i = 0; i < ac; i++) {
		if (!strncmp(av[i], "agent=", 6))
			agent = av[i] + 6;
		else
			slurm_error("linger_spank: unknown argument %s (only agent=PATH)", av[i]);
	}
	return spank_option_register(sp, &linger_option) == ESPANK_SUCCESS ? 0 : -1;
}

/*
 * Each task, after it is in the job's cgroup and before it execs: wait for
 * the agent. Never fails the task: the agent's own line says what it saw.
 */
int slurm_spank_task_init_privileged(spank_t sp, int ac, char **av)
{
	char job[32], env_job[48];
	char *argv[] = { (char *)agent, "slurm", "wait", NULL };
	char *envp[] = { env_job, "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL };
	uint32_t job_id;
	pid_t pid;
	int status;

	(void)ac;
	(void)av;
	if (spank_get_item(sp, S_JOB_ID, &job_id) != ESPANK_SUCCESS)
		return 0;
	snprintf(job, sizeof(job), "%u", job_id);
	snprintf(env_job, sizeof(env_job), "SLURM_JOB_ID=%s", job);
	/* Its words would land in the job's output: keep them out. */
	posix_spawn_file_actions_t quiet;
	posix_spawn_file_actions_init(&quiet);
	posix_spawn_file_actions_addopen(&quiet, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&quiet, 2, "/dev/null", O_WRONLY, 0);
	int err = posix_spawn(&pid, agent, &quiet, NULL, argv, envp);
	posix_spawn_file_actions_destroy(&quiet);
	if (err) {
		slurm_info("linger_spank: cannot run %s: job %s does not wait for scx_linger", agent, job);
		return 0;
	}
	/* Exit 1: it gave up waiting (the agent is running but stuck). */
	if (waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 1)
		slurm_info("linger_spank: job %s started before scx_linger applied its class", job);
	return 0;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	spank_context_t ctx = spank_context();

	(void)ac;
	(void)av;
	if (!request[0] || (ctx != S_CTX_LOCAL && ctx != S_CTX_ALLOCATOR))
		return 0;
	if (spank_job_control_setenv(sp, "LINGER", request, 1) != ESPANK_SUCCESS) {
		slurm_error("--linger: could not pass the request to the job's Prolog");
		return -1;
	}
	return 0;
}
