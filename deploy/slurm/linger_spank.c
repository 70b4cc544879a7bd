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
 * plugstack.conf:  optional /usr/lib/scx_linger/linger_spank.so
 */
#include <string.h>
#include <slurm/spank.h>

SPANK_PLUGIN(linger, 1);

/* Longest request passed on: a class name, ':' and a slot length. */
#define REQUEST_MAX 64

static char request[REQUEST_MAX];

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
	(void)ac;
	(void)av;
	return spank_option_register(sp, &linger_option) == ESPANK_SUCCESS ? 0 : -1;
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
