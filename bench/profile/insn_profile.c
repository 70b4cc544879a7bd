// SPDX-License-Identifier: GPL-2.0-only
/*
 * insn_profile.c - a QEMU TCG plugin that counts the guest kernel's
 * instructions per translated block, in windows the guest opens and
 * closes (bench/profile.sh, through `cargo xtask bench --profile`).
 *
 * Under icount every guest instruction is 8 ns of guest time, so an
 * instruction count per kernel function is the profile of guest time:
 * the one profiler that sees the sched_ext core, the BPF programs and
 * the helpers they call alike, where perf has no PMU under TCG and
 * bpf_stats times only the programs (and adds its own clock reads).
 *
 * The guest drives it through files in its results folder, which QEMU
 * shares with the host (dir=<that folder>):
 *   on        exists while a window is open; the plugin answers on.seen
 *             when it has seen it, and removes on.seen when it has seen
 *             it go (the guest's clock does not follow the host's, so it
 *             waits for the answers);
 *   dump      holds a window's name: the plugin writes out.<name>, one
 *             line per block that ran ("vaddr insns count", hex vaddr),
 *             resets the counts and removes dump.
 * Only kernel addresses are counted; user code is the workload's.
 *
 * Debian ships QEMU with plugin support but without qemu-plugin.h, so
 * the few API calls used are declared here (API version 2, which QEMU 8
 * to 10 accept; their signatures have not changed since).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_info_t;
struct qemu_plugin_tb;
typedef void (*tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*tb_exec_cb_t)(unsigned int vcpu_index, void *userdata);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, tb_exec_cb_t cb,
					  int flags, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);

#define EXPORT __attribute__((visibility("default")))
EXPORT int qemu_plugin_version = 2;

/* x86-64 kernel addresses: the upper half. */
#define KERNEL_START 0xffff800000000000ULL
#define POLL_US 5000
#define BUCKETS (1 << 20)

/* One translated block: a block retranslated at the same address and
 * length shares its entry, so its counts add up. */
struct block {
	uint64_t vaddr;
	uint32_t insns;
	uint64_t runs;
	struct block *next;
};

static struct block *blocks[BUCKETS];
static pthread_mutex_t blocks_lock = PTHREAD_MUTEX_INITIALIZER;
/* A window is open. Read by the vCPU thread, written by the poller. */
static volatile int counting;
static char dir[4096];

static struct block *block_for(uint64_t vaddr, uint32_t insns)
{
	uint64_t h = (vaddr * 0x9E3779B97F4A7C15ULL) >> 44;
	struct block *b;

	for (b = blocks[h]; b; b = b->next)
		if (b->vaddr == vaddr && b->insns == insns)
			return b;
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->vaddr = vaddr;
	b->insns = insns;
	b->next = blocks[h];
	blocks[h] = b;
	return b;
}

static void block_ran(unsigned int vcpu_index, void *userdata)
{
	if (counting)
		((struct block *)userdata)->runs++;
}

static void translated(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	uint64_t vaddr = qemu_plugin_tb_vaddr(tb);
	struct block *b;

	if (vaddr < KERNEL_START)
		return;
	pthread_mutex_lock(&blocks_lock);
	b = block_for(vaddr, qemu_plugin_tb_n_insns(tb));
	pthread_mutex_unlock(&blocks_lock);
	if (b)
		qemu_plugin_register_vcpu_tb_exec_cb(tb, block_ran, 0, b);
}

static int exists(const char *name)
{
	char path[sizeof(dir) + 64];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return stat(path, &st) == 0;
}

static void touch(const char *name, int present)
{
	char path[sizeof(dir) + 64];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (!present) {
		unlink(path);
		return;
	}
	f = fopen(path, "w");
	if (f)
		fclose(f);
}

/* Write the window's counts to out.<name> and start afresh. */
static void dump(const char *name)
{
	char path[sizeof(dir) + 192];
	FILE *f;
	size_t i;

	snprintf(path, sizeof(path), "%s/out.%s", dir, name);
	f = fopen(path, "w");
	pthread_mutex_lock(&blocks_lock);
	for (i = 0; i < BUCKETS; i++) {
		struct block *b;

		for (b = blocks[i]; b; b = b->next) {
			if (f && b->runs)
				fprintf(f, "%" PRIx64 " %u %" PRIu64 "\n", b->vaddr,
					b->insns, b->runs);
			b->runs = 0;
		}
	}
	pthread_mutex_unlock(&blocks_lock);
	if (f)
		fclose(f);
}

static void *poller(void *arg)
{
	char path[sizeof(dir) + 64], name[128];

	snprintf(path, sizeof(path), "%s/dump", dir);
	for (;;) {
		int open = exists("on");

		if (open != counting) {
			counting = open;
			touch("on.seen", open);
		}
		if (!counting && exists("dump")) {
			FILE *f = fopen(path, "r");

			/* The guest renames a complete file into place. */
			if (f && fgets(name, sizeof(name), f) && !strchr(name, '/')) {
				name[strcspn(name, "\n")] = 0;
				dump(name);
			}
			if (f)
				fclose(f);
			unlink(path);
		}
		usleep(POLL_US);
	}
	return NULL;
}

EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const struct qemu_info_t *info,
			       int argc, char **argv)
{
	pthread_t t;
	int i;

	for (i = 0; i < argc; i++)
		if (!strncmp(argv[i], "dir=", 4))
			snprintf(dir, sizeof(dir), "%s", argv[i] + 4);
	if (!dir[0]) {
		fprintf(stderr, "insn_profile: give the guest's results folder as dir=PATH\n");
		return -1;
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, translated);
	return pthread_create(&t, NULL, poller, NULL) ? -1 : 0;
}
