// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * libdatcp: loader and map access for the DATCP data path (see datcp.h).
 *
 * Loading is one pass with one unwind: open skeletons, set read-only
 * configuration, pin maps, register the struct_ops, attach and pin the
 * sockops link. Whatever fails, the partial state is removed by the same
 * code as datcp_unload(), so a failed load leaves nothing pinned.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <dirent.h>
#include <limits.h>
#include <net/if.h>
#include <arpa/inet.h>
#include <sched.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/pkt_sched.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "datcp.h"
#include "datcp_core.h"
#include "datcp_cc.skel.h"
#include "datcp_switch.skel.h"
#include "pfdct_core.h"
#include "pfdct_cc.skel.h"

#define BPF_FS_MAGIC_NUM 0xcafe4a11
#define PIN(name) DATCP_PIN_DIR "/" name
#define PIN_CC_OPS PIN("cc_ops")
#define PIN_FLOWS PIN("flows")
#define PIN_STATS PIN("stats")
#define PIN_EVENTS PIN("events")
#define PIN_PORTS PIN("ports")
#define PIN_SWITCH PIN("switch_ports")
#define PIN_SOCKOPS PIN("sockops_link")
#define PIN_SOCKOPS_PROG PIN("sockops_prog")
#define PIN_PARAMS PIN("params")
#define PIN_LINE_RATES PIN("line_rates")
#define PIN_MARKS PIN("marks")
#define PIN_QUENCH_TIMERS PIN("quench_timers")
#define PIN_NETNS_EVENTS PIN("netns_events")
#define PIN_HOLDERS PIN("holders")
#define HOLD_PIN_PREFIX "hold_" /* pinned holds' tokens: PIN("hold_<id>") */
#define HOLD_TOKEN_NAME "datcp_hold"

extern char **environ;

static const char *const all_pins[] = { PIN_SOCKOPS,	 PIN_SOCKOPS_PROG, PIN_CC_OPS, PIN_FLOWS,
					PIN_STATS,	 PIN_EVENTS,	   PIN_PORTS,  PIN_SWITCH,
					PIN_PARAMS,	 PIN_LINE_RATES,   PIN_MARKS,  PIN_QUENCH_TIMERS,
					PIN_NETNS_EVENTS, PIN_HOLDERS };

static __thread char errbuf[512];

static int fail(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(errbuf, sizeof(errbuf), fmt, ap);
	va_end(ap);
	return err < 0 ? err : -err;
}

const char *datcp_last_error(void)
{
	return errbuf;
}

__u64 datcp_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + (__u64)ts.tv_nsec;
}

/* Root, bpffs and kernel BTF: say which one is missing. */
static int check_environment(void)
{
	struct statfs fs;

	if (geteuid() != 0)
		return fail(-EPERM, "datcp needs root (CAP_BPF, CAP_NET_ADMIN, CAP_SYS_ADMIN)");
	if (statfs("/sys/fs/bpf", &fs) || fs.f_type != BPF_FS_MAGIC_NUM)
		return fail(-ENODEV, "no bpffs at /sys/fs/bpf: mount it with 'mount -t bpf bpf /sys/fs/bpf'");
	if (access("/sys/kernel/btf/vmlinux", R_OK))
		return fail(-ENOTSUP, "kernel BTF (/sys/kernel/btf/vmlinux) missing: "
				      "datcp needs a kernel built with CONFIG_DEBUG_INFO_BTF");
	return 0;
}

static int cc_registered(void)
{
	char buf[1024] = "", *tok, *save = NULL;
	FILE *f = fopen("/proc/sys/net/ipv4/tcp_available_congestion_control", "r");

	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	for (tok = strtok_r(buf, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save))
		if (!strcmp(tok, "datcp"))
			return 1;
	return 0;
}

static int open_pinned(const char *path)
{
	int fd = bpf_obj_get(path);

	if (fd < 0)
		return fail(-errno, "%s is not pinned: is datcp loaded? (datcpctl load)", path);
	return fd;
}

/* ---- cached descriptors of the flow maps ----
 *
 * Opening a pin (a path walk in bpffs, an fd to install and close) cost
 * most of a flow registration, so the flow and statistics maps stay open
 * per process. Users hold pin_lock for reading while they use the fds; a
 * refresh takes it for writing. A cached fd can outlive its pin (another
 * process unloads and loads again): the pin's map id is compared again
 * PIN_RECHECK_NS after the last check, on any ENOENT, and this process's
 * own load and unload drop the cache at once. */
enum { CACHED_FLOWS, CACHED_STATS, CACHED_N };
#define PIN_RECHECK_NS (50ULL * 1000 * 1000)

struct cached_pin {
	const char *path;
	int fd;
	__u32 id;
	__u64 checked_ns;
};

static pthread_rwlock_t pin_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct cached_pin cached[CACHED_N] = {
	[CACHED_FLOWS] = { PIN_FLOWS, -1, 0, 0 },
	[CACHED_STATS] = { PIN_STATS, -1, 0, 0 },
};

static __u64 coarse_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static __u32 map_id(int fd)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	return bpf_obj_get_info_by_fd(fd, &info, &len) ? 0 : info.id;
}

/* Re-open c's pin; keep the cached fd when the pin still names its map.
 * Caller holds pin_lock for writing. */
static int pin_refresh(struct cached_pin *c, __u64 now)
{
	int fd = bpf_obj_get(c->path);
	__u32 id;

	if (fd < 0) {
		int err = -errno;

		if (c->fd >= 0)
			close(c->fd);
		c->fd = -1;
		return fail(err, "%s is not pinned: is datcp loaded? (datcpctl load)", c->path);
	}
	id = map_id(fd);
	if (c->fd >= 0 && id && id == c->id) {
		close(fd);
	} else {
		if (c->fd >= 0)
			close(c->fd);
		c->fd = fd;
		c->id = id;
	}
	c->checked_ns = now;
	return 0;
}

/* Descriptors of the flow maps (flows and/or stats may be NULL). On success
 * pin_lock is held for reading: release it with pins_put(). force: check
 * the pins now (after an ENOENT that may come from a replaced map). */
static int pins_get(int *flows, int *stats, int force)
{
	int want[CACHED_N] = { flows != NULL, stats != NULL };
	__u64 now = coarse_now_ns();
	int i, stale = 0, err = 0;

	pthread_rwlock_rdlock(&pin_lock);
	for (i = 0; i < CACHED_N; i++)
		if (want[i] && (force || cached[i].fd < 0 || now - cached[i].checked_ns > PIN_RECHECK_NS))
			stale = 1;
	if (stale) {
		pthread_rwlock_unlock(&pin_lock);
		pthread_rwlock_wrlock(&pin_lock);
		for (i = 0; i < CACHED_N && !err; i++)
			if (want[i] && (force || cached[i].fd < 0 ||
					now - cached[i].checked_ns > PIN_RECHECK_NS))
				err = pin_refresh(&cached[i], now);
		pthread_rwlock_unlock(&pin_lock);
		if (err)
			return err;
		pthread_rwlock_rdlock(&pin_lock);
		for (i = 0; i < CACHED_N; i++)
			if (want[i] && cached[i].fd < 0) { /* dropped meanwhile by a load/unload */
				pthread_rwlock_unlock(&pin_lock);
				return fail(-ENOENT, "%s is not pinned: is datcp loaded? (datcpctl load)",
					    cached[i].path);
			}
	}
	if (flows)
		*flows = cached[CACHED_FLOWS].fd;
	if (stats)
		*stats = cached[CACHED_STATS].fd;
	return 0;
}

static void pins_put(void)
{
	pthread_rwlock_unlock(&pin_lock);
}

/* Whether the cached flow map is no longer the pinned one (then retry). */
static int pins_replaced(void)
{
	__u32 old;
	int fd, changed;

	pthread_rwlock_rdlock(&pin_lock);
	old = cached[CACHED_FLOWS].id;
	pthread_rwlock_unlock(&pin_lock);
	if (pins_get(&fd, NULL, 1))
		return 0;
	changed = cached[CACHED_FLOWS].id != old;
	pins_put();
	return changed;
}

/* This process loads or unloads: the pins change. */
static void pins_drop(void)
{
	int i;

	pthread_rwlock_wrlock(&pin_lock);
	for (i = 0; i < CACHED_N; i++) {
		if (cached[i].fd >= 0)
			close(cached[i].fd);
		cached[i].fd = -1;
		cached[i].id = 0;
	}
	pthread_rwlock_unlock(&pin_lock);
}

/* ---- network namespaces ---- */

struct netns_ctx {
	int orig_fd; /* caller's netns, -1 if unchanged */
	__u64 ino;   /* the target netns */
};

static int netns_enter(const char *netns, struct netns_ctx *ctx)
{
	char path[PATH_MAX];
	struct stat st;
	int fd;

	ctx->orig_fd = -1;
	if (!netns || !*netns) {
		if (stat("/proc/thread-self/ns/net", &st))
			return fail(-errno, "cannot stat own network namespace: %s", strerror(errno));
		ctx->ino = st.st_ino;
		return 0;
	}
	if (strchr(netns, '/'))
		snprintf(path, sizeof(path), "%s", netns);
	else
		snprintf(path, sizeof(path), "/var/run/netns/%s", netns);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fail(-errno, "network namespace '%s' (%s): %s", netns, path, strerror(errno));
	if (fstat(fd, &st)) {
		close(fd);
		return fail(-errno, "%s: %s", path, strerror(errno));
	}
	ctx->ino = st.st_ino;
	ctx->orig_fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (ctx->orig_fd < 0 || setns(fd, CLONE_NEWNET)) {
		int err = -errno;

		close(fd);
		if (ctx->orig_fd >= 0)
			close(ctx->orig_fd);
		ctx->orig_fd = -1;
		return fail(err, "cannot enter network namespace '%s': %s", netns, strerror(-err));
	}
	close(fd);
	return 0;
}

static void netns_leave(struct netns_ctx *ctx)
{
	if (ctx->orig_fd >= 0) {
		if (setns(ctx->orig_fd, CLONE_NEWNET))
			fprintf(stderr, "datcp: cannot return to the original network namespace: %s\n",
				strerror(errno));
		close(ctx->orig_fd);
		ctx->orig_fd = -1;
	}
}

/* Path of the network namespace with inode ino (own, or a named one). */
static int netns_find(__u64 ino, char *out, size_t len)
{
	struct dirent *de;
	struct stat st;
	DIR *d;

	if (!stat("/proc/thread-self/ns/net", &st) && st.st_ino == ino) {
		out[0] = 0;
		return 0;
	}
	d = opendir("/var/run/netns");
	if (!d)
		return -ENOENT;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(out, len, "/var/run/netns/%s", de->d_name);
		if (!stat(out, &st) && st.st_ino == ino) {
			closedir(d);
			return 0;
		}
	}
	closedir(d);
	return -ENOENT;
}

/* Run tc with the given arguments in the current network namespace. */
static int run_tc(int quiet, const char *const *args)
{
	const char *argv[32] = { "tc" };
	posix_spawn_file_actions_t fa;
	char cmd[512] = "tc";
	int i, status, err;
	pid_t pid;

	for (i = 0; args[i] && i < 30; i++) {
		argv[i + 1] = args[i];
		strncat(cmd, " ", sizeof(cmd) - strlen(cmd) - 1);
		strncat(cmd, args[i], sizeof(cmd) - strlen(cmd) - 1);
	}
	argv[i + 1] = NULL;
	posix_spawn_file_actions_init(&fa);
	if (quiet)
		posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	err = posix_spawnp(&pid, "tc", &fa, NULL, (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (err)
		return fail(-err, "cannot run tc (iproute2): %s", strerror(err));
	if (waitpid(pid, &status, 0) < 0)
		return fail(-errno, "waiting for '%s': %s", cmd, strerror(errno));
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		return fail(-EIO, "'%s' failed", cmd);
	return 0;
}

/* ---- load / unload ---- */

static void unpin_all(void)
{
	struct dirent *de;
	size_t i;
	DIR *d;

	pins_drop();
	for (i = 0; i < sizeof(all_pins) / sizeof(all_pins[0]); i++)
		unlink(all_pins[i]);
	d = opendir(DATCP_PIN_DIR);
	if (d) {
		while ((de = readdir(d)))
			if (!strncmp(de->d_name, HOLD_PIN_PREFIX, strlen(HOLD_PIN_PREFIX)))
				unlinkat(dirfd(d), de->d_name, 0);
		closedir(d);
	}
	rmdir(DATCP_PIN_DIR);
}

/* Unregister every struct_ops map named "datcp" (ours or left by a loader
 * that died before pinning). */
static void unregister_cc(void)
{
	__u32 id = 0, key = 0;

	while (!bpf_map_get_next_id(id, &id)) {
		struct bpf_map_info info = {};
		__u32 len = sizeof(info);
		int fd = bpf_map_get_fd_by_id(id);

		if (fd < 0)
			continue;
		if (!bpf_obj_get_info_by_fd(fd, &info, &len) && info.type == BPF_MAP_TYPE_STRUCT_OPS &&
		    !strcmp(info.name, "datcp"))
			bpf_map_delete_elem(fd, &key);
		close(fd);
	}
}

static void remove_switch_ports(void)
{
	struct datcp_port_key key, next;
	int fd = bpf_obj_get(PIN_SWITCH), more;

	if (fd < 0)
		return;
	more = !bpf_map_get_next_key(fd, NULL, &next);
	while (more) {
		char path[PATH_MAX], ifname[IF_NAMESIZE];
		struct netns_ctx ns;

		key = next;
		more = !bpf_map_get_next_key(fd, &key, &next);
		if (!netns_find(key.netns_ino, path, sizeof(path)) && !netns_enter(path, &ns)) {
			if (if_indextoname(key.ifindex, ifname)) {
				const char *args[] = { "qdisc", "del", "dev", ifname, "root", NULL };

				run_tc(1, args);
			}
			netns_leave(&ns);
		}
		bpf_map_delete_elem(fd, &key);
	}
	close(fd);
}

static __u32 count_keys(const char *pin, size_t key_size)
{
	char key[64], next[64];
	int fd = bpf_obj_get(pin);
	__u32 n = 0;
	void *prev = NULL;

	if (fd < 0 || key_size > sizeof(key))
		return 0;
	while (!bpf_map_get_next_key(fd, prev, next)) {
		memcpy(key, next, key_size);
		prev = key;
		n++;
	}
	close(fd);
	return n;
}

/* ---- holders (datcp.h) ---- */

/* This process's tokens of its datcp_load_held holds: closing one ends its hold. */
static pthread_mutex_t tokens_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	__u32 id;
	int fd;
} tokens[DATCP_MAX_HOLDERS];
static size_t n_tokens;

static int token_keep(__u32 id, int fd)
{
	int err = 0;

	pthread_mutex_lock(&tokens_lock);
	if (n_tokens == DATCP_MAX_HOLDERS)
		err = fail(-E2BIG, "this process holds datcp %d times already", DATCP_MAX_HOLDERS);
	else
		tokens[n_tokens++] = (typeof(tokens[0])){ id, fd };
	pthread_mutex_unlock(&tokens_lock);
	return err;
}

static int token_own(__u32 id)
{
	size_t i;
	int own = 0;

	pthread_mutex_lock(&tokens_lock);
	for (i = 0; i < n_tokens; i++)
		own |= tokens[i].id == id;
	pthread_mutex_unlock(&tokens_lock);
	return own;
}

static void token_close(__u32 id)
{
	size_t i;

	pthread_mutex_lock(&tokens_lock);
	for (i = 0; i < n_tokens; i++)
		if (tokens[i].id == id) {
			close(tokens[i].fd);
			tokens[i] = tokens[--n_tokens];
			break;
		}
	pthread_mutex_unlock(&tokens_lock);
}

/* A hold is alive while its token map exists: map ids are not reused (allocated
 * cyclically), and the name guards against a foreign map after a wrap. A token that
 * cannot be looked at (no CAP_SYS_ADMIN) counts as alive: never release a live hold. */
static int hold_live(__u32 id)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	int fd = bpf_map_get_fd_by_id(id), live;

	if (fd < 0)
		return errno != ENOENT;
	live = !bpf_obj_get_info_by_fd(fd, &info, &len) && !strcmp(info.name, HOLD_TOKEN_NAME);
	close(fd);
	return live;
}

/* The recorded holds of holders map fd, up to max into out (live filled in);
 * returns how many there are. */
static size_t holders_read(int fd, struct datcp_holder *out, size_t max)
{
	__u32 key, next, *prev = NULL;
	size_t n = 0;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (n >= max) {
			n++;
			continue;
		}
		if (!bpf_map_lookup_elem(fd, &key, &out[n])) {
			out[n].live = hold_live(key);
			n++;
		}
	}
	return n;
}

static int holder_has_port(const struct datcp_holder *h, __u16 port)
{
	int i;

	for (i = 0; i < h->n_ports; i++)
		if (h->ports[i] == port)
			return 1;
	return 0;
}

/* Live holds of other processes (not pinned ones, not the caller's: a process that
 * unloads decides for itself): *first gets one of them. */
static size_t live_process_holds(struct datcp_holder *first)
{
	struct datcp_holder all[DATCP_MAX_HOLDERS];
	int fd = bpf_obj_get(PIN_HOLDERS);
	size_t n, i, live = 0;

	if (fd < 0)
		return 0;
	n = holders_read(fd, all, DATCP_MAX_HOLDERS);
	close(fd);
	for (i = 0; i < n && i < DATCP_MAX_HOLDERS; i++)
		if (all[i].live && !all[i].pinned && !token_own(all[i].id) && !live++)
			*first = all[i];
	return live;
}

static int unload_locked(int force)
{
	int err = check_environment();

	if (err)
		return err;
	if (!force) {
		__u32 flows = count_keys(PIN_FLOWS, sizeof(struct datcp_flow_key));
		__u32 ports = count_keys(PIN_SWITCH, sizeof(struct datcp_port_key));
		struct datcp_holder h;
		size_t holds;

		if (flows || ports)
			return fail(-EBUSY, "%u registered flow(s) and %u switch port(s) are in use; "
					    "unload with --force to remove them anyway", flows, ports);
		holds = live_process_holds(&h);
		if (holds)
			return fail(-EBUSY, "%zu other running loader(s) hold datcp (%s, pid %u%s): stop them "
					    "(they release it) or unload with --force", holds, h.name, h.pid,
				    holds > 1 ? ", ..." : "");
	}
	remove_switch_ports();
	unlink(PIN_SOCKOPS); /* the last reference: detaches sockops */
	unregister_cc();
	unpin_all();
	if (cc_registered())
		return fail(-EBUSY, "datcp is still registered after unload");
	return 0;
}

static int find_cgroup2(char *out, size_t len)
{
	char dev[256], dir[PATH_MAX], type[64];
	FILE *f = fopen("/proc/mounts", "r");
	int found = 0;

	if (!f)
		return -errno;
	while (fscanf(f, "%255s %4095s %63s %*[^\n]", dev, dir, type) == 3)
		if (!strcmp(type, "cgroup2")) {
			snprintf(out, len, "%s", dir);
			found = 1;
			break;
		}
	fclose(f);
	return found ? 0 : -ENOENT;
}

/* Attaches the sockops program (a descriptor of the loaded or the pinned one) at
 * the cgroup; the pinned link keeps it attached after the loader exits. */
static int attach_sockops(int prog_fd, const char *cgroup_path)
{
	char path[PATH_MAX];
	int cg, link, err;

	if (cgroup_path)
		snprintf(path, sizeof(path), "%s", cgroup_path);
	else if (find_cgroup2(path, sizeof(path)))
		return fail(-ENOENT, "no cgroup v2 mount found for the sockops program: "
				     "mount one, pass --cgroup DIR, or load with --no-sockops");
	cg = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cg < 0)
		return fail(-errno, "cgroup '%s': %s", path, strerror(errno));
	link = bpf_link_create(prog_fd, cg, BPF_CGROUP_SOCK_OPS, NULL);
	err = link < 0 ? -errno : 0;
	close(cg);
	if (err)
		return fail(err, "attaching sockops to cgroup '%s': %s", path, strerror(-err));
	err = bpf_obj_pin(link, PIN_SOCKOPS) ? -errno : 0;
	close(link);
	if (err == -EEXIST) /* another loader attached it meanwhile: ours detaches */
		return 0;
	if (err)
		return fail(err, "pinning the sockops link: %s", strerror(-err));
	return 0;
}

/* A loader that wants sockops where an earlier one loaded without it (the
 * Docker ToR loads --no-sockops before the hosts' agents) attaches the pinned
 * program. */
static int attach_pinned_sockops(const char *cgroup_path)
{
	int prog = bpf_obj_get(PIN_SOCKOPS_PROG), err;

	if (prog < 0)
		return fail(-errno, "datcp is loaded without sockops and %s is missing: "
				    "unload it (datcpctl unload) and load again", PIN_SOCKOPS_PROG);
	err = attach_sockops(prog, cgroup_path);
	close(prog);
	return err;
}

static int create_switch_map(void)
{
	struct datcp_switch *sw = datcp_switch__open();
	int err;

	if (!sw)
		return fail(-errno, "opening the switch program: %s", strerror(errno));
	bpf_map__set_pin_path(sw->maps.datcp_switch_ports, PIN_SWITCH);
	err = datcp_switch__load(sw);
	datcp_switch__destroy(sw);
	if (err)
		return fail(err, "loading the switch program failed (%s); see the verifier log above",
			    strerror(-err));
	return 0;
}

/* Speed of the device of the IPv4 default route in the caller's network
 * namespace, bits/s; 0 when there is none or its driver does not say. */
static __u64 default_route_speed(void)
{
	char line[256], ifname[IF_NAMESIZE + 1];
	unsigned long dst;
	__u64 rate = 0;
	FILE *f = fopen("/proc/net/route", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%16s %lx", ifname, &dst) == 2 && dst == 0) {
			if (datcp_link_speed(NULL, ifname, &rate))
				rate = 0;
			break;
		}
	fclose(f);
	errbuf[0] = 0;
	return rate;
}

static int load_fresh(const struct datcp_load_opts *opts)
{
	struct datcp_params prm = DATCP_PARAMS_DEFAULT;
	struct datcp_cc *skel;
	struct bpf_link *link;
	int err;

	if (opts && opts->params)
		prm = *opts->params;
	if (opts && opts->line_rate_bps)
		prm.line_rate_Bps = opts->line_rate_bps / 8;
	else if (!prm.line_rate_Bps)
		prm.line_rate_Bps = default_route_speed() / 8;
	if (mkdir(DATCP_PIN_DIR, 0700) && errno != EEXIST)
		return fail(-errno, "cannot create %s: %s", DATCP_PIN_DIR, strerror(errno));
	skel = datcp_cc__open();
	if (!skel)
		return fail(-errno, "opening the datcp programs: %s", strerror(errno));
	skel->rodata->datcp_params = prm;
	bpf_map__set_pin_path(skel->maps.rodata, PIN_PARAMS);
	bpf_map__set_pin_path(skel->maps.datcp_line_rates, PIN_LINE_RATES);
	bpf_map__set_pin_path(skel->maps.datcp_marks, PIN_MARKS);
	bpf_map__set_pin_path(skel->maps.datcp_quench_timers, PIN_QUENCH_TIMERS);
	bpf_map__set_pin_path(skel->maps.datcp_flows, PIN_FLOWS);
	bpf_map__set_pin_path(skel->maps.datcp_stats, PIN_STATS);
	bpf_map__set_pin_path(skel->maps.datcp_events, PIN_EVENTS);
	bpf_map__set_pin_path(skel->maps.datcp_netns_events, PIN_NETNS_EVENTS);
	bpf_map__set_pin_path(skel->maps.datcp_ports, PIN_PORTS);
	err = datcp_cc__load(skel);
	if (err) {
		err = fail(err, "loading the datcp programs failed (%s); see the verifier log above",
			   strerror(-err));
		goto out;
	}
	link = bpf_map__attach_struct_ops(skel->maps.datcp);
	if (!link) {
		err = fail(-errno, "registering the datcp congestion control: %s", strerror(errno));
		goto out;
	}
	/* keep it registered after we exit; unload deletes the map element */
	bpf_link__disconnect(link);
	bpf_link__destroy(link);
	err = bpf_map__pin(skel->maps.datcp, PIN_CC_OPS);
	if (err) {
		err = fail(err, "pinning the struct_ops map: %s", strerror(-err));
		goto out;
	}
	err = bpf_program__pin(skel->progs.datcp_sockops, PIN_SOCKOPS_PROG);
	if (err) {
		err = fail(err, "pinning the sockops program: %s", strerror(-err));
		goto out;
	}
	if (!(opts && opts->no_sockops)) {
		err = attach_sockops(bpf_program__fd(skel->progs.datcp_sockops),
				     opts ? opts->cgroup_path : NULL);
		if (err)
			goto out;
	}
	err = create_switch_map();
out:
	datcp_cc__destroy(skel);
	return err;
}

/* The pinned programs' read-only data, if it is of this library's version. */
static int read_loaded(struct datcp_cc__rodata *ro)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), key = 0;
	int fd = bpf_obj_get(PIN_PARAMS), ok;
	char buf[4096]; /* the section: the skeleton's struct, then static data */

	if (fd < 0)
		return 0;
	ok = !bpf_obj_get_info_by_fd(fd, &info, &len) && info.value_size >= sizeof(*ro) &&
	     info.value_size <= sizeof(buf) && !bpf_map_lookup_elem(fd, &key, buf);
	close(fd);
	if (ok)
		memcpy(ro, buf, sizeof(*ro));
	return ok && ro->datcp_abi_version == DATCP_ABI_VERSION;
}

/* Same parameters, where the request leaves the line rate to the loader. */
static int params_match(const struct datcp_params *loaded, const struct datcp_load_opts *opts)
{
	struct datcp_params want = *opts->params;

	if (opts->line_rate_bps)
		want.line_rate_Bps = opts->line_rate_bps / 8;
	else if (!want.line_rate_Bps)
		want.line_rate_Bps = loaded->line_rate_Bps;
	return !memcmp(&want, loaded, sizeof(want));
}

static int load_locked(const struct datcp_load_opts *opts, int *reused)
{
	struct datcp_cc__rodata ro;
	int err = check_environment();
	size_t i;

	if (err)
		return err;
	pins_drop();
	if (reused)
		*reused = 0;
	if (cc_registered() && !access(PIN_CC_OPS, F_OK) && !access(PIN_FLOWS, F_OK) &&
	    !access(PIN_SWITCH, F_OK)) {
		const char *why = NULL;

		if (!read_loaded(&ro))
			why = "was loaded by another version of libdatcp";
		else if (opts && opts->params && !params_match(&ro.datcp_params, opts))
			why = "runs with other parameters than requested";
		if (why) {
			__u32 flows = count_keys(PIN_FLOWS, sizeof(struct datcp_flow_key));
			__u32 ports = count_keys(PIN_SWITCH, sizeof(struct datcp_port_key));

			if (flows || ports)
				return fail(-EBUSY, "the datcp pinned under %s %s, and %u registered "
						    "flow(s) and %u switch port(s) use it: unload it "
						    "(datcpctl unload --force) when they are done",
					    DATCP_PIN_DIR, why, flows, ports);
		} else if (reused) {
			*reused = 1;
		}
		if (!why)
			goto ports;
	}
	{
		char saved[sizeof(errbuf)];

		/* leftovers of a half-done load, a crashed loader, or unused pins
		 * of another version or other parameters */
		if (!access(DATCP_PIN_DIR, F_OK) || cc_registered())
			unload_locked(1);
		err = load_fresh(opts);
		if (err) {
			memcpy(saved, errbuf, sizeof(saved));
			unload_locked(1);
			memcpy(errbuf, saved, sizeof(saved));
			return err;
		}
	}
ports:
	if (!(opts && opts->no_sockops) && access(PIN_SOCKOPS, F_OK)) {
		err = attach_pinned_sockops(opts ? opts->cgroup_path : NULL);
		if (err)
			return err;
	}
	for (i = 0; opts && i < opts->n_ports; i++) {
		err = datcp_port_add(opts->ports[i]);
		if (err)
			return err;
	}
	return 0;
}

/* Loads and unloads of every process on this kernel (agents in containers
 * start together) take turns: one loader's clean-up of what looks half done
 * must not tear down another's load in progress. The lock is on the bpffs
 * root, which every container that shares the pins mounts. */
static int pins_lock(void)
{
	int fd = open("/sys/fs/bpf", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd >= 0 && flock(fd, LOCK_EX)) {
		close(fd);
		return -1;
	}
	return fd;
}

static void pins_unlock(int fd)
{
	if (fd >= 0)
		close(fd); /* releases the flock */
}

/* The holders map, created and pinned when create and it is missing. */
static int holders_open(int create)
{
	int fd = bpf_obj_get(PIN_HOLDERS), err;

	if (fd >= 0 || !create)
		return fd < 0 ? -errno : fd;
	fd = bpf_map_create(BPF_MAP_TYPE_HASH, "datcp_holders", sizeof(__u32),
			    sizeof(struct datcp_holder), DATCP_MAX_HOLDERS, NULL);
	if (fd < 0)
		return fail(-errno, "creating the holders map: %s", strerror(errno));
	if (bpf_obj_pin(fd, PIN_HOLDERS)) {
		err = -errno;
		close(fd);
		return fail(err, "pinning %s: %s", PIN_HOLDERS, strerror(-err));
	}
	return fd;
}

/* Records what this load asked for. A pinned hold merges into a live pinned hold of
 * the same name (datcpctl load run again). */
static int hold_record(const struct datcp_load_opts *opts, int pinned, __u32 *hold)
{
	struct datcp_holder h, all[DATCP_MAX_HOLDERS];
	int fd = holders_open(1), token, err = 0;
	char path[PATH_MAX];
	size_t n, i, j;

	if (fd < 0)
		return fd;
	memset(&h, 0, sizeof(h));
	h.pid = getpid();
	snprintf(h.name, sizeof(h.name), "%s", opts && opts->holder ? opts->holder : "unnamed");
	h.pinned = pinned;
	h.sockops = !(opts && opts->no_sockops);
	for (i = 0; opts && i < opts->n_ports; i++)
		if (!holder_has_port(&h, opts->ports[i]))
			h.ports[h.n_ports++] = opts->ports[i];
	n = pinned ? holders_read(fd, all, DATCP_MAX_HOLDERS) : 0;
	for (i = 0; i < n && i < DATCP_MAX_HOLDERS; i++) {
		struct datcp_holder *m = &all[i];

		if (!m->pinned || !m->live || strcmp(m->name, h.name))
			continue;
		m->sockops |= h.sockops;
		for (j = 0; j < h.n_ports; j++)
			if (!holder_has_port(m, h.ports[j]) && m->n_ports < DATCP_MAX_PORTS)
				m->ports[m->n_ports++] = h.ports[j];
		m->live = 0;
		if (bpf_map_update_elem(fd, &m->id, m, BPF_EXIST))
			err = fail(-errno, "updating the hold of %s: %s", m->name, strerror(errno));
		*hold = m->id;
		close(fd);
		return err;
	}
	token = bpf_map_create(BPF_MAP_TYPE_ARRAY, HOLD_TOKEN_NAME, sizeof(__u32), 1, 1, NULL);
	h.id = token < 0 ? 0 : map_id(token);
	if (!h.id) {
		err = fail(-errno, "creating a hold token: %s", strerror(errno));
		goto out;
	}
	snprintf(path, sizeof(path), "%s/" HOLD_PIN_PREFIX "%u", DATCP_PIN_DIR, h.id);
	if (pinned && bpf_obj_pin(token, path)) {
		err = fail(-errno, "pinning %s: %s", path, strerror(errno));
		goto out;
	}
	if (bpf_map_update_elem(fd, &h.id, &h, BPF_NOEXIST)) {
		err = fail(-errno, "recording the hold of %s: %s%s", h.name, strerror(errno),
			   errno == E2BIG ? " (too many loaders hold datcp)" : "");
		if (pinned)
			unlink(path);
		goto out;
	}
	if (!pinned) {
		err = token_keep(h.id, token);
		if (err)
			bpf_map_delete_elem(fd, &h.id);
		else
			token = -1;
	}
	*hold = h.id;
out:
	if (token >= 0)
		close(token);
	close(fd);
	return err;
}

/* Drops hold (0: none) and the holds of loaders that are gone; removes what only
 * they held (datcp.h, datcp_release). */
static int release_locked(__u32 hold)
{
	struct datcp_holder all[DATCP_MAX_HOLDERS];
	int fd, ports, kept_sockops = 0, dropped_sockops = 0, err;
	size_t n, i, j, k;

	err = check_environment();
	if (err)
		return err;
	fd = bpf_obj_get(PIN_HOLDERS);
	if (fd < 0)
		return 0; /* nothing recorded: nothing of ours to remove */
	n = holders_read(fd, all, DATCP_MAX_HOLDERS);
	if (n > DATCP_MAX_HOLDERS)
		n = DATCP_MAX_HOLDERS;
	for (i = 0; i < n; i++) {
		all[i].live = all[i].live && all[i].id != hold;
		if (all[i].live) {
			kept_sockops |= all[i].sockops;
		} else {
			bpf_map_delete_elem(fd, &all[i].id);
			dropped_sockops |= all[i].sockops;
		}
	}
	close(fd);
	ports = bpf_obj_get(PIN_PORTS);
	for (i = 0; i < n && ports >= 0; i++)
		for (j = 0; !all[i].live && j < all[i].n_ports; j++) {
			for (k = 0; k < n; k++)
				if (all[k].live && holder_has_port(&all[k], all[i].ports[j]))
					break;
			if (k == n)
				bpf_map_delete_elem(ports, &all[i].ports[j]);
		}
	if (ports >= 0)
		close(ports);
	if (dropped_sockops && !kept_sockops)
		unlink(PIN_SOCKOPS); /* the last reference: detaches sockops */
	return 0;
}

static int load_holding(const struct datcp_load_opts *opts, int *reused, int pinned, __u32 *hold)
{
	int lk, err;
	__u32 id = 0;

	if (opts && opts->n_ports > DATCP_MAX_PORTS)
		return fail(-EINVAL, "at most %d ports per load", DATCP_MAX_PORTS);
	lk = pins_lock();
	err = load_locked(opts, reused);
	if (!err)
		err = hold_record(opts, pinned, &id);
	if (!err) {
		char saved[sizeof(errbuf)];

		memcpy(saved, errbuf, sizeof(saved));
		release_locked(0); /* the holds of loaders that are gone */
		memcpy(errbuf, saved, sizeof(saved));
	}
	pins_unlock(lk);
	if (hold)
		*hold = id;
	return err;
}

int datcp_load(const struct datcp_load_opts *opts, int *reused)
{
	return load_holding(opts, reused, 1, NULL);
}

int datcp_load_held(const struct datcp_load_opts *opts, int *reused, __u32 *hold)
{
	return load_holding(opts, reused, 0, hold);
}

int datcp_release(__u32 hold)
{
	int lk, err;

	if (hold)
		token_close(hold);
	lk = pins_lock();
	err = release_locked(hold);
	pins_unlock(lk);
	return err;
}

int datcp_holders(struct datcp_holder *out, size_t max, size_t *n)
{
	int fd, err = check_environment();

	*n = 0;
	if (err)
		return err;
	fd = bpf_obj_get(PIN_HOLDERS);
	if (fd < 0)
		return 0;
	*n = holders_read(fd, out, max);
	close(fd);
	return 0;
}

int datcp_unload(int force)
{
	int lk = pins_lock(), err = unload_locked(force);

	pins_unlock(lk);
	return err;
}

int datcp_params_get(struct datcp_params *out)
{
	struct datcp_cc__rodata ro;
	int err = check_environment();

	if (err)
		return err;
	if (access(PIN_PARAMS, F_OK))
		return fail(-ENOENT, "%s is not pinned: is datcp loaded? (datcpctl load)", PIN_PARAMS);
	if (!read_loaded(&ro))
		return fail(-EPROTO, "the loaded datcp is of another version than this libdatcp");
	*out = ro.datcp_params;
	return 0;
}

int datcp_get_status(struct datcp_status *st)
{
	__u16 port, next, *prev = NULL;
	int err = check_environment(), fd;

	if (err)
		return err;
	memset(st, 0, sizeof(*st));
	st->cc_registered = cc_registered();
	st->pinned = !access(PIN_FLOWS, F_OK);
	st->sockops_attached = !access(PIN_SOCKOPS, F_OK);
	st->flows = count_keys(PIN_FLOWS, sizeof(struct datcp_flow_key));
	st->switch_ports = count_keys(PIN_SWITCH, sizeof(struct datcp_port_key));
	st->netns_event_rings = count_keys(PIN_NETNS_EVENTS, sizeof(__u64));
	fd = bpf_obj_get(PIN_PORTS);
	if (fd >= 0) {
		while (!bpf_map_get_next_key(fd, prev, &next) && st->n_ports < DATCP_MAX_PORTS) {
			st->ports[st->n_ports++] = next;
			port = next;
			prev = &port;
		}
		close(fd);
	}
	return 0;
}

static int ports_update(__u16 port, int add)
{
	int fd, err;
	__u8 one = 1;

	if (port == 0)
		return fail(-EINVAL, "port 0 is not a valid port");
	fd = open_pinned(PIN_PORTS);
	if (fd < 0)
		return fd;
	err = add ? bpf_map_update_elem(fd, &port, &one, BPF_ANY) : bpf_map_delete_elem(fd, &port);
	err = err ? -errno : 0;
	close(fd);
	if (err == -ENOENT)
		return fail(err, "port %u is not configured", port);
	if (err)
		return fail(err, "updating port %u: %s", port, strerror(-err));
	return 0;
}

int datcp_port_add(__u16 port)
{
	return ports_update(port, 1);
}

int datcp_port_del(__u16 port)
{
	return ports_update(port, 0);
}

/* ---- flows ---- */

static int parse_endpoint(const char *s, __u8 addr[16], __u16 *port, const char *what)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon, *h = s;
	size_t hlen;
	char *end;
	long p;

	if (!s)
		return fail(-EINVAL, "%s endpoint missing (want IP:PORT)", what);
	colon = strrchr(s, ':');
	if (!colon)
		return fail(-EINVAL, "%s '%s': want IP:PORT or [IPv6]:PORT", what, s);
	hlen = colon - s;
	if (s[0] == '[' && hlen >= 2 && s[hlen - 1] == ']') {
		h = s + 1;
		hlen -= 2;
	}
	if (hlen >= sizeof(host))
		return fail(-EINVAL, "%s '%s': address too long", what, s);
	memcpy(host, h, hlen);
	host[hlen] = 0;
	errno = 0;
	p = strtol(colon + 1, &end, 10);
	if (errno || *end || end == colon + 1 || p < 1 || p > 65535)
		return fail(-EINVAL, "%s '%s': port must be 1..65535", what, s);
	*port = (__u16)p;
	memset(addr, 0, 16);
	if (inet_pton(AF_INET, host, addr + 12) == 1) {
		addr[10] = addr[11] = 0xff;
		return 0;
	}
	if (inet_pton(AF_INET6, host, addr) == 1)
		return 0;
	return fail(-EINVAL, "%s '%s': '%s' is not an IPv4 or IPv6 address", what, s, host);
}

/* The caller's network namespace, read once per process: flow keys carry
 * it (datcp_abi.h), and a getsockopt per registration would cost more than
 * the map update. */
static pthread_once_t own_netns_once = PTHREAD_ONCE_INIT;
static __u64 own_netns;
static int own_netns_err;

static void own_netns_read(void)
{
	socklen_t len = sizeof(own_netns);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0) {
		own_netns_err = -errno;
		return;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &own_netns, &len))
		own_netns_err = -errno;
	close(fd);
}

int datcp_netns_cookie(__u64 *cookie)
{
	pthread_once(&own_netns_once, own_netns_read);
	if (own_netns_err)
		return fail(own_netns_err, "reading this process's network namespace cookie "
					   "(SO_NETNS_COOKIE, Linux >= 5.14): %s", strerror(-own_netns_err));
	*cookie = own_netns;
	return 0;
}

/* key in the caller's network namespace: 0 there means it, another one is
 * refused (a process speaks only for its own namespace's sockets). */
static int own_key(const struct datcp_flow_key *key, struct datcp_flow_key *out)
{
	__u64 own;
	int err = datcp_netns_cookie(&own);

	if (err)
		return err;
	if (key->netns_cookie && key->netns_cookie != own)
		return fail(-EPERM, "flow key of network namespace %llu: this process is in %llu "
				    "and may only use its own namespace's flows",
			    (unsigned long long)key->netns_cookie, (unsigned long long)own);
	*out = *key;
	out->pad = 0;
	out->netns_cookie = own;
	return 0;
}

int datcp_flow_key_parse(struct datcp_flow_key *key, const char *src, const char *dst)
{
	int err;

	memset(key, 0, sizeof(*key));
	err = parse_endpoint(src, key->saddr, &key->sport, "source");
	if (!err)
		err = parse_endpoint(dst, key->daddr, &key->dport, "destination");
	if (!err)
		err = datcp_netns_cookie(&key->netns_cookie);
	return err;
}

void datcp_flow_key_format(const struct datcp_flow_key *key, int dst, char *buf, size_t len)
{
	static const __u8 v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	const __u8 *a = dst ? key->daddr : key->saddr;
	char host[INET6_ADDRSTRLEN];

	if (!memcmp(a, v4mapped, 12)) {
		inet_ntop(AF_INET, a + 12, host, sizeof(host));
		snprintf(buf, len, "%s:%u", host, dst ? key->dport : key->sport);
	} else {
		inet_ntop(AF_INET6, a, host, sizeof(host));
		snprintf(buf, len, "[%s]:%u", host, dst ? key->dport : key->sport);
	}
}

static int validate_meta(const struct datcp_flow_key *key, const struct datcp_flow_meta *m,
			 __u64 now)
{
	__u64 start = m->start_ns ? m->start_ns : now;

	if (!key->sport || !key->dport)
		return fail(-EINVAL, "flow key: ports must be 1..65535 (source %u, destination %u)",
			    key->sport, key->dport);
	if (m->mode >= DATCP_MODE_MAX)
		return fail(-EINVAL, "mode %u unknown (datcp, dctcp, d2tcp, pd2tcp, reno)", m->mode);
	if (m->quench > DATCP_QUENCH_KILL)
		return fail(-EINVAL, "quench %u unknown (off, suspend, kill)", m->quench);
	if (m->flags & ~DATCP_F_SIZE_KNOWN)
		return fail(-EINVAL, "flags 0x%x: unknown bits (only DATCP_F_SIZE_KNOWN = 0x1)", m->flags);
	if (m->phi_q > DATCP_Q)
		return fail(-EINVAL, "phi %.3f must be within [0, 1] (phi_q <= %u)",
			    (double)m->phi_q / DATCP_Q, DATCP_Q);
	if (m->importance_q > DATCP_PRECEDENCE_MAX_Q)
		return fail(-EINVAL, "importance %.3f must be within [0, %u] (importance_q <= %u)",
			    (double)m->importance_q / DATCP_Q, DATCP_PRECEDENCE_MAX_Q / DATCP_Q,
			    DATCP_PRECEDENCE_MAX_Q);
	if ((m->flags & DATCP_F_SIZE_KNOWN) && m->size_bytes > DATCP_SIZE_MAX)
		return fail(-EINVAL, "size %llu bytes is above the limit of %llu (1 PiB)",
			    (unsigned long long)m->size_bytes, (unsigned long long)DATCP_SIZE_MAX);
	if (m->start_ns > now + DATCP_DEADLINE_MAX_NS)
		return fail(-EINVAL, "start_ns %llu is more than a year after now (%llu, CLOCK_MONOTONIC)",
			    (unsigned long long)m->start_ns, (unsigned long long)now);
	if (!m->deadline_ns)
		return 0;
	if (!(m->flags & DATCP_F_SIZE_KNOWN))
		return fail(-EINVAL, "a deadline needs the flow's size");
	if (m->deadline_ns <= now)
		return fail(-EINVAL, "deadline_ns %llu is %.3f ms in the past (CLOCK_MONOTONIC now is %llu; "
				     "see datcp_now_ns)", (unsigned long long)m->deadline_ns,
			    (double)(now - m->deadline_ns) / 1e6, (unsigned long long)now);
	if (m->deadline_ns <= start)
		return fail(-EINVAL, "deadline_ns %llu is not after the flow's start %llu",
			    (unsigned long long)m->deadline_ns, (unsigned long long)start);
	if (m->deadline_ns - now > DATCP_DEADLINE_MAX_NS)
		return fail(-EINVAL, "deadline_ns %llu is %.0f s ahead: more than a year (is it an "
				     "absolute CLOCK_MONOTONIC time? see datcp_now_ns)",
			    (unsigned long long)m->deadline_ns, (double)(m->deadline_ns - now) / 1e9);
	return 0;
}

int datcp_flow_set(const struct datcp_flow_key *key, const struct datcp_flow_meta *meta)
{
	struct datcp_flow_meta m = *meta;
	struct datcp_flow_key k;
	__u64 now = datcp_now_ns();
	int fd, err = own_key(key, &k);

	if (!err)
		err = validate_meta(&k, meta, now);
	if (err)
		return err;
	if (!m.start_ns)
		m.start_ns = now;
	err = pins_get(&fd, NULL, 0);
	if (err)
		return err;
	err = bpf_map_update_elem(fd, &k, &m, BPF_ANY) ? -errno : 0;
	pins_put();
	if (err == -E2BIG)
		return fail(err, "registering the flow: the flow map is full (%u entries)",
			    count_keys(PIN_FLOWS, sizeof(struct datcp_flow_key)));
	if (err)
		return fail(err, "registering the flow: %s", strerror(-err));
	return 0;
}

static int flow_resume(const struct datcp_flow_key *key, int force)
{
	struct datcp_flow_meta m;
	int fd, err = pins_get(&fd, NULL, force);

	if (err)
		return err;
	err = bpf_map_lookup_elem(fd, key, &m) ? -errno : 0;
	if (!err) {
		m.resume++;
		err = bpf_map_update_elem(fd, key, &m, BPF_EXIST) ? -errno : 0;
	}
	pins_put();
	return err;
}

int datcp_flow_resume(const struct datcp_flow_key *key)
{
	struct datcp_flow_key k;
	int err = own_key(key, &k);

	if (err)
		return err;
	err = flow_resume(&k, 0);
	if (err == -ENOENT && pins_replaced())
		err = flow_resume(&k, 0);
	if (err == -ENOENT)
		return fail(err, "no such flow");
	if (err)
		return fail(err, "resuming the flow: %s", strerror(-err));
	return 0;
}

static void flow_get(const struct datcp_flow_key *key, struct datcp_flow_meta *m, int *hm,
		     struct datcp_flow_stats *s, int *hs, int fd, int sfd)
{
	*hm = !bpf_map_lookup_elem(fd, key, m);
	*hs = !bpf_map_lookup_elem(sfd, key, s);
}

int datcp_flow_get(const struct datcp_flow_key *key, struct datcp_flow_meta *meta, int *has_meta,
		   struct datcp_flow_stats *stats, int *has_stats)
{
	struct datcp_flow_meta m;
	struct datcp_flow_stats s;
	struct datcp_flow_key k;
	int fd, sfd, hm = 0, hs = 0, err = own_key(key, &k);

	if (!err)
		err = pins_get(&fd, &sfd, 0);
	if (err)
		return err;
	flow_get(&k, &m, &hm, &s, &hs, fd, sfd);
	pins_put();
	if (!hm && !hs && pins_replaced()) {
		err = pins_get(&fd, &sfd, 0);
		if (err)
			return err;
		flow_get(&k, &m, &hm, &s, &hs, fd, sfd);
		pins_put();
	}
	if (has_meta)
		*has_meta = hm;
	if (has_stats)
		*has_stats = hs;
	if (meta && hm)
		*meta = m;
	if (stats && hs)
		*stats = s;
	if (!hm && !hs)
		return fail(-ENOENT, "no such flow");
	return 0;
}

static int flow_delete(const struct datcp_flow_key *key)
{
	int fd, sfd, found, err = pins_get(&fd, &sfd, 0);

	if (err)
		return err;
	found = !bpf_map_delete_elem(fd, key);
	found |= !bpf_map_delete_elem(sfd, key);
	pins_put();
	return found ? 0 : -ENOENT;
}

int datcp_flow_delete(const struct datcp_flow_key *key)
{
	struct datcp_flow_key k;
	int err = own_key(key, &k);

	if (err)
		return err;
	err = flow_delete(&k);
	if (err == -ENOENT && pins_replaced())
		err = flow_delete(&k);
	if (err == -ENOENT)
		return fail(err, "no such flow");
	return err;
}

int datcp_flow_foreach(datcp_flow_fn fn, void *ctx)
{
	struct datcp_flow_key key, next, *prev = NULL;
	struct datcp_flow_meta m;
	struct datcp_flow_stats s;
	int ffd, sfd, ret = 0;

	ffd = open_pinned(PIN_FLOWS);
	if (ffd < 0)
		return ffd;
	sfd = open_pinned(PIN_STATS);
	if (sfd < 0) {
		close(ffd);
		return sfd;
	}
	while (!ret && !bpf_map_get_next_key(ffd, prev, &next)) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(ffd, &key, &m))
			continue; /* deleted meanwhile */
		ret = fn(&key, &m, bpf_map_lookup_elem(sfd, &key, &s) ? NULL : &s, ctx);
	}
	prev = NULL;
	while (!ret && !bpf_map_get_next_key(sfd, prev, &next)) {
		key = next;
		prev = &key;
		if (!bpf_map_lookup_elem(ffd, &key, &m) || bpf_map_lookup_elem(sfd, &key, &s))
			continue; /* visited above, or evicted meanwhile */
		ret = fn(&key, NULL, &s, ctx);
	}
	close(ffd);
	close(sfd);
	return ret;
}

/* ---- line rates ---- */

int datcp_link_speed(const char *netns, const char *ifname, __u64 *rate_bps)
{
	struct ethtool_cmd cmd = { .cmd = ETHTOOL_GSET };
	struct netns_ctx ns;
	struct ifreq ifr;
	__u32 mbit;
	int fd, err = netns_enter(netns, &ns);

	if (err)
		return err;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ifr.ifr_data = (char *)&cmd;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	err = fd < 0 || ioctl(fd, SIOCETHTOOL, &ifr) ? -errno : 0;
	if (fd >= 0)
		close(fd);
	netns_leave(&ns);
	if (err)
		return fail(err, "speed of '%s': %s", ifname, strerror(-err));
	mbit = ethtool_cmd_speed(&cmd);
	if (mbit == 0 || mbit == (__u32)SPEED_UNKNOWN)
		return fail(-ENODATA, "the driver of '%s' does not report a speed", ifname);
	*rate_bps = (__u64)mbit * 1000000ULL;
	return 0;
}

int datcp_line_rate_set(const char *netns, __u64 rate_bps)
{
	struct netns_ctx ns;
	__u64 rate = rate_bps / 8;
	int fd, err = check_environment();

	if (err)
		return err;
	err = netns_enter(netns, &ns);
	if (err)
		return err;
	netns_leave(&ns);
	fd = open_pinned(PIN_LINE_RATES);
	if (fd < 0)
		return fd;
	if (rate)
		err = bpf_map_update_elem(fd, &ns.ino, &rate, BPF_ANY) ? -errno : 0;
	else
		err = bpf_map_delete_elem(fd, &ns.ino) && errno != ENOENT ? -errno : 0;
	close(fd);
	if (err)
		return fail(err, "setting the line rate: %s", strerror(-err));
	return 0;
}

/* ---- parameters ---- */

enum param_kind { P_Q10, P_U32, P_U8, P_EWMA, P_MBIT };

static const struct param_desc {
	const char *name;
	enum param_kind kind;
	size_t off;
	double max;
} param_descs[] = {
	{ "g", P_Q10, offsetof(struct datcp_params, g_max_q), 1 },
	{ "alpha", P_Q10, offsetof(struct datcp_params, alpha_q), 1 },
	{ "u_max", P_Q10, offsetof(struct datcp_params, u_max_q), DATCP_PRECEDENCE_MAX_Q / DATCP_Q },
	{ "theta", P_U32, offsetof(struct datcp_params, theta_max), 1000 },
	{ "quench_p_max", P_Q10, offsetof(struct datcp_params, quench_p_max_q), 1000 },
	{ "quench_draws", P_U32, offsetof(struct datcp_params, quench_draws), 1024 },
	{ "resume_quiet_ms", P_U32, offsetof(struct datcp_params, resume_quiet_ms), 86400000 },
	{ "quench_timeout_ms", P_U32, offsetof(struct datcp_params, quench_timeout_ms), 86400000 },
	{ "ewma", P_EWMA, offsetof(struct datcp_params, ewma_new_weight), 1 },
	{ "guard_shift", P_U8, offsetof(struct datcp_params, guard_shift), 16 },
	{ "slow_start_raise_only", P_U8, offsetof(struct datcp_params, slow_start_raise_only), 1 },
	{ "hopeful_below_u_max", P_U8, offsetof(struct datcp_params, hopeful_below_u_max), 1 },
	{ "overdue_give_up", P_U8, offsetof(struct datcp_params, overdue_give_up), 1 },
	{ "line_rate_mbit", P_MBIT, offsetof(struct datcp_params, line_rate_Bps), 10000000 },
	{ "agnostic_u_min", P_U8, offsetof(struct datcp_params, agnostic_u_min), 1 },
	{ "dctcp_g", P_Q10, offsetof(struct datcp_params, dctcp_g_q), 1 },
};

int datcp_params_profile(const char *name, struct datcp_params *out)
{
	static const struct datcp_params tuned = DATCP_PARAMS_TUNED, paper = DATCP_PARAMS_PAPER,
					 yield = DATCP_PARAMS_YIELD;

	if (!name)
		name = DATCP_PROFILE_DEFAULT;
	if (!strcmp(name, "tuned"))
		*out = tuned;
	else if (!strcmp(name, "paper"))
		*out = paper;
	else if (!strcmp(name, "yield"))
		*out = yield;
	else
		return fail(-EINVAL, "profile '%s' unknown (tuned, paper, yield)", name);
	return 0;
}

int datcp_param_set(struct datcp_params *p, const char *name, const char *value)
{
	const struct param_desc *d = NULL;
	char *base = (char *)p, *end;
	double v;
	size_t i;

	for (i = 0; i < sizeof(param_descs) / sizeof(param_descs[0]); i++)
		if (name && !strcmp(param_descs[i].name, name))
			d = &param_descs[i];
	if (!d) {
		char names[512] = "";

		for (i = 0; i < sizeof(param_descs) / sizeof(param_descs[0]); i++)
			snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
				 i ? ", " : "", param_descs[i].name);
		return fail(-EINVAL, "parameter '%s' unknown (%s)", name ? name : "", names);
	}
	if (d->kind == P_EWMA) {
		if (value && !strcmp(value, "new"))
			base[d->off] = 1;
		else if (value && !strcmp(value, "paper"))
			base[d->off] = 0;
		else
			return fail(-EINVAL, "parameter ewma: '%s' is not 'new' (the new sample weighs "
					     "alpha) or 'paper' (weighs 1 - alpha)", value ? value : "");
		return 0;
	}
	errno = 0;
	v = value ? strtod(value, &end) : 0;
	if (!value || errno || end == value || *end || !(v >= 0 && v <= d->max) ||
	    (d->kind != P_Q10 && v != (double)(__u64)v))
		return fail(-EINVAL, "parameter %s: '%s' is not %s in [0, %g]", d->name,
			    value ? value : "", d->kind == P_Q10 ? "a number" : "an integer", d->max);
	switch (d->kind) {
	case P_Q10:
		*(__u32 *)(base + d->off) = (__u32)(v * DATCP_Q + 0.5);
		break;
	case P_U32:
		*(__u32 *)(base + d->off) = (__u32)v;
		break;
	case P_U8:
		base[d->off] = (char)v;
		break;
	default:
		*(__u64 *)(base + d->off) = (__u64)v * 1000000ULL / 8;
		break;
	}
	if (p->u_max_q < DATCP_Q || p->quench_draws < 1 || p->theta_max < 1)
		return fail(-EINVAL, "parameters: u_max must be >= 1, quench_draws and theta >= 1");
	if (d->off == offsetof(struct datcp_params, dctcp_g_q) && p->dctcp_g_q < 1)
		return fail(-EINVAL, "parameter dctcp_g: '%s' rounds to 0; accepted: (0, 1], in steps "
				     "of 1/1024", value);
	return 0;
}

void datcp_params_format(const struct datcp_params *p, char *buf, size_t len)
{
	const char *base = (const char *)p;
	size_t i, n = 0;

	buf[0] = 0;
	for (i = 0; i < sizeof(param_descs) / sizeof(param_descs[0]) && n < len; i++) {
		const struct param_desc *d = &param_descs[i];
		const char *sep = i ? " " : "";

		switch (d->kind) {
		case P_Q10:
			/* Q10 to the nearest thousandth: 102 prints as 0.1 */
			n += snprintf(buf + n, len - n, "%s%s=%g", sep, d->name,
				      (double)(((__u64)*(const __u32 *)(base + d->off) * 1000 +
						DATCP_Q / 2) / DATCP_Q) / 1000);
			break;
		case P_U32:
			n += snprintf(buf + n, len - n, "%s%s=%u", sep, d->name,
				      *(const __u32 *)(base + d->off));
			break;
		case P_U8:
			n += snprintf(buf + n, len - n, "%s%s=%u", sep, d->name,
				      (unsigned)(__u8)base[d->off]);
			break;
		case P_EWMA:
			n += snprintf(buf + n, len - n, "%s%s=%s", sep, d->name,
				      base[d->off] ? "new" : "paper");
			break;
		default:
			n += snprintf(buf + n, len - n, "%s%s=%g", sep, d->name,
				      (double)*(const __u64 *)(base + d->off) * 8 / 1e6);
			break;
		}
	}
}

/* ---- emulated switch ports ---- */

/* Check the environment, enter the port's network namespace and find the
 * port's key. On success the caller is in that namespace and must call
 * netns_leave(ns). */
static int port_enter(const char *netns, const char *ifname, struct netns_ctx *ns,
		      struct datcp_port_key *key)
{
	int err = check_environment();

	if (err)
		return err;
	err = netns_enter(netns, ns);
	if (err)
		return err;
	memset(key, 0, sizeof(*key));
	key->netns_ino = ns->ino;
	key->ifindex = if_nametoindex(ifname);
	if (!key->ifindex) {
		netns_leave(ns);
		return fail(-ENODEV, "no interface '%s' in that network namespace", ifname);
	}
	return 0;
}

static int validate_port_config(const struct datcp_port_config *c)
{
	int i;

	if (c->rate_bps < 8000)
		return fail(-EINVAL, "rate must be at least 8 kbit/s");
	if (c->buffer_bytes < 1600)
		return fail(-EINVAL, "buffer must hold at least one full-size packet (1600 bytes)");
	if (c->mark_mode > DATCP_MARK_PFDCT)
		return fail(-EINVAL, "marking mode %u unknown (none, red, step, pfdct)", c->mark_mode);
	if (c->mark_mode == DATCP_MARK_RED &&
	    (c->red_min_bytes >= c->red_max_bytes || c->red_maxp_q == 0 || c->red_maxp_q > DATCP_Q))
		return fail(-EINVAL, "RED needs min < max and max_p in (0, 1]");
	if ((c->mark_mode == DATCP_MARK_STEP || c->mark_mode == DATCP_MARK_PFDCT) && !c->k_bytes)
		return fail(-EINVAL, "step and pfdct marking need a threshold K > 0");
	for (i = 0; i < 64; i++)
		if (c->dscp_band[i] >= DATCP_BANDS)
			return fail(-EINVAL, "DSCP %d maps to band %u; bands are 0..%d", i,
				    c->dscp_band[i], DATCP_BANDS - 1);
	return 0;
}

/* HTB root at the link rate; one class per band (strict-ish priority by
 * HTB prio, each guaranteed 1% and allowed the whole link), each with a
 * bfifo of the port's buffer. */
static int setup_htb(const char *ifname, const struct datcp_port_config *c)
{
	char rate[32], min_rate[32], limit[32], classid[16], handle[16];
	int b, err;

	snprintf(rate, sizeof(rate), "%llubit", (unsigned long long)c->rate_bps);
	snprintf(min_rate, sizeof(min_rate), "%llubit", (unsigned long long)(c->rate_bps / 100));
	snprintf(limit, sizeof(limit), "%u", c->buffer_bytes);
	{
		const char *root[] = { "qdisc", "replace", "dev", ifname, "root", "handle", "1:",
				       "htb",   "default", "11",  NULL };
		const char *cls[] = { "class", "replace", "dev", ifname, "parent", "1:", "classid",
				      "1:1",   "htb",     "rate", rate,  "ceil",   rate, NULL };

		err = run_tc(0, root);
		if (!err)
			err = run_tc(0, cls);
		if (err)
			return err;
	}
	for (b = 0; b < DATCP_BANDS && !err; b++) {
		char prio[4];

		snprintf(classid, sizeof(classid), "1:%x", 0x10 + b);
		snprintf(handle, sizeof(handle), "%x:", 0x10 + b);
		snprintf(prio, sizeof(prio), "%d", b);
		{
			const char *cls[] = { "class", "replace", "dev",  ifname,   "parent", "1:1",
					      "classid", classid, "htb",  "rate",   min_rate, "ceil",
					      rate,      "prio",  prio,   NULL };
			const char *q[] = { "qdisc", "replace", "dev", ifname, "parent", classid,
					    "handle", handle,  "bfifo", "limit", limit,  NULL };

			err = run_tc(0, cls);
			if (!err)
				err = run_tc(0, q);
		}
	}
	return err;
}

static int attach_aqm(const struct datcp_port_key *key, const struct datcp_port_config *cfg)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = key->ifindex,
			    .attach_point = BPF_TC_CUSTOM, .parent = TC_H_MAKE(1 << 16, 0));
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = 1, .priority = 1,
			    .flags = BPF_TC_F_REPLACE);
	struct datcp_port_slot slot;
	struct datcp_switch *sw;
	int err;

	sw = datcp_switch__open();
	if (!sw)
		return fail(-errno, "opening the switch program: %s", strerror(errno));
	sw->rodata->datcp_port_netns = key->netns_ino;
	sw->rodata->datcp_port_ifindex = key->ifindex;
	bpf_map__set_pin_path(sw->maps.datcp_switch_ports, PIN_SWITCH);
	err = datcp_switch__load(sw);
	if (err) {
		err = fail(err, "loading the switch program: %s", strerror(-err));
		goto out;
	}
	memset(&slot, 0, sizeof(slot));
	slot.cfg = *cfg;
	slot.st.last_ns = datcp_now_ns();
	slot.st.pfdct_k_t = cfg->k_bytes;
	if (bpf_map_update_elem(bpf_map__fd(sw->maps.datcp_switch_ports), key, &slot, BPF_ANY)) {
		err = fail(-errno, "storing the port configuration: %s", strerror(errno));
		goto out;
	}
	opts.prog_fd = bpf_program__fd(sw->progs.datcp_switch_port);
	err = bpf_tc_attach(&hook, &opts);
	if (err)
		err = fail(err, "attaching the AQM to the HTB root: %s", strerror(-err));
out:
	datcp_switch__destroy(sw);
	return err;
}

int datcp_switch_configure(const char *netns, const char *ifname, const struct datcp_port_config *cfg)
{
	struct datcp_port_key key;
	struct netns_ctx ns;
	int err = validate_port_config(cfg);

	if (!err)
		err = port_enter(netns, ifname, &ns, &key);
	if (err)
		return err;
	if (access(PIN_SWITCH, F_OK))
		err = fail(-ENOENT, "datcp is not loaded (datcpctl load)");
	if (!err)
		err = setup_htb(ifname, cfg);
	if (!err)
		err = attach_aqm(&key, cfg);
	netns_leave(&ns);
	return err;
}

int datcp_switch_read(const char *netns, const char *ifname, struct datcp_port_config *cfg,
		      struct datcp_port_state *st)
{
	struct datcp_port_slot slot;
	struct datcp_port_key key;
	struct netns_ctx ns;
	int fd, err = port_enter(netns, ifname, &ns, &key);

	if (err)
		return err;
	netns_leave(&ns);
	fd = open_pinned(PIN_SWITCH);
	if (fd < 0)
		return fd;
	err = bpf_map_lookup_elem_flags(fd, &key, &slot, BPF_F_LOCK) ? -errno : 0;
	close(fd);
	if (err == -ENOENT)
		return fail(err, "switch port '%s' is not configured", ifname);
	if (err)
		return fail(err, "reading switch port '%s': %s", ifname, strerror(-err));
	if (cfg)
		*cfg = slot.cfg;
	if (st)
		*st = slot.st;
	return 0;
}

int datcp_switch_reset(const char *netns, const char *ifname)
{
	const char *args[] = { "qdisc", "del", "dev", ifname, "root", NULL };
	struct datcp_port_key key;
	struct netns_ctx ns;
	int fd, err = port_enter(netns, ifname, &ns, &key);

	if (err)
		return err;
	run_tc(1, args); /* idempotent: no qdisc is fine */
	netns_leave(&ns);
	fd = bpf_obj_get(PIN_SWITCH);
	if (fd >= 0) {
		bpf_map_delete_elem(fd, &key);
		close(fd);
	}
	return 0;
}

/* ---- events ---- */

struct datcp_events {
	struct ring_buffer *rb;
	datcp_event_fn fn;
	void *ctx;
	__u64 netns_ino; /* own ring: registered for this namespace */
	__u32 ring_id;   /* own ring: its map id; 0 = the global ring */
};

static int on_ringbuf(void *ctx, void *data, size_t size)
{
	struct datcp_events *evs = ctx;

	if (size < sizeof(struct datcp_event))
		return 0;
	return evs->fn((const struct datcp_event *)data, evs->ctx);
}

/* A reader of ring buffer map fd; the caller may close fd afterwards (the
 * reader keeps its own mapping). */
static struct datcp_events *events_new(int fd, datcp_event_fn fn, void *ctx)
{
	struct datcp_events *evs = calloc(1, sizeof(*evs));

	if (!evs) {
		fail(-ENOMEM, "out of memory");
		return NULL;
	}
	evs->fn = fn;
	evs->ctx = ctx;
	evs->rb = ring_buffer__new(fd, on_ringbuf, evs, NULL);
	if (!evs->rb) {
		fail(-errno, "opening the event ring buffer: %s", strerror(errno));
		free(evs);
		return NULL;
	}
	return evs;
}

struct datcp_events *datcp_events_open(datcp_event_fn fn, void *ctx)
{
	struct datcp_events *evs;
	int fd = open_pinned(PIN_EVENTS);

	if (fd < 0)
		return NULL;
	evs = events_new(fd, fn, ctx);
	close(fd);
	return evs;
}

struct datcp_events *datcp_events_open_netns(datcp_event_fn fn, void *ctx)
{
	struct datcp_events *evs;
	struct stat ns;
	int outer, ring, err;

	if (stat("/proc/self/ns/net", &ns)) {
		fail(-errno, "cannot read this process's network namespace (/proc/self/ns/net): %s",
		     strerror(errno));
		return NULL;
	}
	outer = bpf_obj_get(PIN_NETNS_EVENTS);
	if (outer < 0) {
		fail(-errno, "%s is not pinned: is datcp of this version loaded? (datcpctl load)",
		     PIN_NETNS_EVENTS);
		return NULL;
	}
	ring = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "datcp_ns_events", 0, 0, DATCP_EVENTS_RING_BYTES,
			      NULL);
	if (ring < 0) {
		fail(-errno, "creating an event ring buffer: %s", strerror(errno));
		close(outer);
		return NULL;
	}
	evs = events_new(ring, fn, ctx);
	err = 0;
	if (evs) {
		evs->ring_id = map_id(ring);
		evs->netns_ino = (__u64)ns.st_ino;
		/* registered once its reader is ready; replaces the ring of an
		 * earlier reader (an agent that crashed) */
		if (!evs->ring_id)
			err = -ENOENT;
		else if (bpf_map_update_elem(outer, &evs->netns_ino, &ring, BPF_ANY))
			err = -errno;
	}
	close(ring);
	close(outer);
	if (err) {
		evs->ring_id = 0;
		datcp_events_close(evs);
		fail(err, "registering the event ring of network namespace %llu: %s",
		     (unsigned long long)ns.st_ino, strerror(-err));
		return NULL;
	}
	return evs;
}

int datcp_events_poll(struct datcp_events *evs, int timeout_ms)
{
	int n = ring_buffer__poll(evs->rb, timeout_ms);

	if (n < 0 && n != -EINTR)
		return fail(n, "polling events: %s", strerror(-n));
	return n;
}

/* An own ring is unregistered only while the namespace's entry still names
 * it: a newer reader (a restarted agent) may have replaced it. Between the
 * lookup and the delete a replacement could slip in (microseconds); its
 * events would then go to the global ring until it registers again. */
void datcp_events_close(struct datcp_events *evs)
{
	__u32 id;
	int outer;

	if (!evs)
		return;
	if (evs->ring_id) {
		outer = bpf_obj_get(PIN_NETNS_EVENTS);
		if (outer >= 0) {
			if (!bpf_map_lookup_elem(outer, &evs->netns_ino, &id) && id == evs->ring_id)
				bpf_map_delete_elem(outer, &evs->netns_ino);
			close(outer);
		}
	}
	ring_buffer__free(evs->rb);
	free(evs);
}

/* ---- names ---- */

static const char *const mode_names[] = { "reno", "datcp", "dctcp", "d2tcp", "pd2tcp" };
static const char *const quench_names[] = { "off", "suspend", "kill" };
static const char *const mark_names[] = { "none", "red", "step", "pfdct" };

static int lookup_name(const char *const *names, int n, const char *name)
{
	int i;

	for (i = 0; name && i < n; i++)
		if (!strcmp(names[i], name))
			return i;
	return -1;
}

const char *datcp_mode_name(int mode)
{
	return mode >= 0 && mode < DATCP_MODE_MAX ? mode_names[mode] : "?";
}

int datcp_mode_parse(const char *name)
{
	return lookup_name(mode_names, DATCP_MODE_MAX, name);
}

const char *datcp_quench_name(int q)
{
	return q >= 0 && q <= DATCP_QUENCH_KILL ? quench_names[q] : "?";
}

int datcp_quench_parse(const char *name)
{
	return lookup_name(quench_names, 3, name);
}

const char *datcp_mark_name(int m)
{
	return m >= 0 && m <= DATCP_MARK_PFDCT ? mark_names[m] : "?";
}

int datcp_mark_parse(const char *name)
{
	return lookup_name(mark_names, 4, name);
}

/* ---- PFDCT ---- */

#define PFDCT_PIN(name) PFDCT_PIN_DIR "/" name
#define PFDCT_PIN_CC_OPS PFDCT_PIN("cc_ops")
#define PFDCT_PIN_TX PFDCT_PIN("tx_prog")
#define PFDCT_PIN_STATS PFDCT_PIN("stats")
#define PFDCT_PIN_TX_COUNTS PFDCT_PIN("tx_counts")
#define PFDCT_PIN_RODATA PFDCT_PIN("rodata")
/* the egress filter's place on the clsact hook */
#define PFDCT_TC_HANDLE 0xfdc
#define PFDCT_TC_PRIO 1

static const char *const pfdct_pins[] = { PFDCT_PIN_CC_OPS, PFDCT_PIN_TX, PFDCT_PIN_STATS,
					  PFDCT_PIN_TX_COUNTS, PFDCT_PIN_RODATA };

static void pfdct_opts_fill(struct pfdct_load_opts *o, const struct pfdct_load_opts *in)
{
	memset(o, 0, sizeof(*o));
	o->long_bytes = in && in->long_bytes ? in->long_bytes : PFDCT_LONG_BYTES_DEFAULT;
	o->long_cwnd = in && in->long_cwnd ? in->long_cwnd : PFDCT_LONG_CWND_DEFAULT;
}

int pfdct_loaded_opts(struct pfdct_load_opts *opts)
{
	struct pfdct_cc__rodata ro;
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), key = 0;
	char buf[4096] = { 0 };
	int fd = bpf_obj_get(PFDCT_PIN_RODATA), ok;

	if (fd < 0)
		return -ENOENT;
	/* the section holds the fields without the struct's tail padding */
	ok = !bpf_obj_get_info_by_fd(fd, &info, &len) &&
	     info.value_size >= offsetof(struct pfdct_cc__rodata, pfdct_long_cwnd) + sizeof(ro.pfdct_long_cwnd) &&
	     info.value_size <= sizeof(buf) && !bpf_map_lookup_elem(fd, &key, buf);
	close(fd);
	if (!ok)
		return fail(-EIO, "cannot read the loaded PFDCT options (%s)", PFDCT_PIN_RODATA);
	memcpy(&ro, buf, sizeof(ro));
	memset(opts, 0, sizeof(*opts));
	opts->long_bytes = ro.pfdct_long_bytes;
	opts->long_cwnd = ro.pfdct_long_cwnd;
	return 0;
}

static void pfdct_unregister(void)
{
	__u32 key = 0;
	int fd = bpf_obj_get(PFDCT_PIN_CC_OPS);

	if (fd >= 0) {
		bpf_map_delete_elem(fd, &key);
		close(fd);
	}
}

int pfdct_unload(void)
{
	size_t i;
	int err = check_environment();

	if (err)
		return err;
	pfdct_unregister();
	for (i = 0; i < sizeof(pfdct_pins) / sizeof(pfdct_pins[0]); i++)
		unlink(pfdct_pins[i]);
	if (rmdir(PFDCT_PIN_DIR) && errno != ENOENT)
		return fail(-errno, "cannot remove %s: %s", PFDCT_PIN_DIR, strerror(errno));
	return 0;
}

int pfdct_load(const struct pfdct_load_opts *in, int *reused)
{
	struct pfdct_load_opts want, have;
	struct pfdct_cc *skel;
	struct bpf_link *link;
	int err = check_environment();

	if (reused)
		*reused = 0;
	if (err)
		return err;
	pfdct_opts_fill(&want, in);
	err = pfdct_loaded_opts(&have);
	if (err && err != -ENOENT)
		return err;
	if (!err) {
		if (have.long_bytes != want.long_bytes || have.long_cwnd != want.long_cwnd)
			return fail(-EBUSY, "pfdct is loaded with --long-bytes %llu --long-cwnd %u; "
				    "unload it first (datcpctl pfdct unload)",
				    (unsigned long long)have.long_bytes, have.long_cwnd);
		if (reused)
			*reused = 1;
		return 0;
	}
	if (mkdir(PFDCT_PIN_DIR, 0700) && errno != EEXIST)
		return fail(-errno, "cannot create %s: %s", PFDCT_PIN_DIR, strerror(errno));
	skel = pfdct_cc__open();
	if (!skel)
		return fail(-errno, "opening the pfdct programs: %s", strerror(errno));
	skel->rodata->pfdct_long_bytes = want.long_bytes;
	skel->rodata->pfdct_long_cwnd = want.long_cwnd;
	bpf_map__set_pin_path(skel->maps.pfdct_stats, PFDCT_PIN_STATS);
	bpf_map__set_pin_path(skel->maps.pfdct_tx_counts, PFDCT_PIN_TX_COUNTS);
	bpf_map__set_pin_path(skel->maps.rodata, PFDCT_PIN_RODATA);
	err = pfdct_cc__load(skel);
	if (err) {
		err = fail(err, "loading the pfdct programs failed (%s); see the verifier log above",
			   strerror(-err));
		goto out;
	}
	link = bpf_map__attach_struct_ops(skel->maps.pfdct);
	if (!link) {
		err = fail(-errno, "registering the pfdct congestion control: %s", strerror(errno));
		goto out;
	}
	/* keep it registered after we exit; unload deletes the map element */
	bpf_link__disconnect(link);
	bpf_link__destroy(link);
	err = bpf_map__pin(skel->maps.pfdct, PFDCT_PIN_CC_OPS);
	if (!err)
		err = bpf_program__pin(skel->progs.pfdct_tx, PFDCT_PIN_TX);
	if (err)
		err = fail(err, "pinning pfdct under %s: %s", PFDCT_PIN_DIR, strerror(-err));
out:
	pfdct_cc__destroy(skel);
	if (err)
		pfdct_unload();
	return err;
}

static int pfdct_tx_hook(const char *netns, const char *ifname, int attach)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .attach_point = BPF_TC_EGRESS);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = PFDCT_TC_HANDLE, .priority = PFDCT_TC_PRIO);
	struct netns_ctx ns;
	int err = check_environment(), fd = -1;

	if (err)
		return err;
	if (attach) {
		fd = bpf_obj_get(PFDCT_PIN_TX);
		if (fd < 0)
			return fail(-ENOENT, "pfdct is not loaded (datcpctl pfdct load)");
	}
	err = netns_enter(netns, &ns);
	if (err)
		goto out;
	hook.ifindex = if_nametoindex(ifname);
	if (!hook.ifindex) {
		err = fail(-ENODEV, "no interface '%s' in that network namespace", ifname);
	} else if (attach) {
		err = bpf_tc_hook_create(&hook);
		if (err && err != -EEXIST) {
			err = fail(err, "creating the clsact hook on %s: %s", ifname, strerror(-err));
		} else {
			opts.prog_fd = fd;
			opts.flags = BPF_TC_F_REPLACE;
			err = bpf_tc_attach(&hook, &opts);
			if (err)
				err = fail(err, "attaching the pfdct egress program to %s: %s", ifname,
					   strerror(-err));
		}
	} else {
		err = bpf_tc_detach(&hook, &opts);
		if (err && err != -ENOENT)
			err = fail(err, "detaching the pfdct egress program from %s: %s", ifname,
				   strerror(-err));
		else
			err = 0;
	}
	netns_leave(&ns);
out:
	if (fd >= 0)
		close(fd);
	return err;
}

int pfdct_attach_tx(const char *netns, const char *ifname)
{
	return pfdct_tx_hook(netns, ifname, 1);
}

int pfdct_detach_tx(const char *netns, const char *ifname)
{
	return pfdct_tx_hook(netns, ifname, 0);
}

int pfdct_flows(pfdct_flow_fn fn, void *ctx)
{
	struct pfdct_flow_key key, next;
	struct pfdct_flow_stats st;
	int fd = bpf_obj_get(PFDCT_PIN_STATS), more;

	if (fd < 0)
		return fail(-ENOENT, "pfdct is not loaded (datcpctl pfdct load)");
	more = !bpf_map_get_next_key(fd, NULL, &next);
	while (more) {
		key = next;
		more = !bpf_map_get_next_key(fd, &key, &next);
		if (!bpf_map_lookup_elem(fd, &key, &st))
			fn(&key, &st, ctx);
	}
	close(fd);
	return 0;
}

int pfdct_tx_counts(struct pfdct_tx_counters out[3])
{
	__u32 i;
	int fd = bpf_obj_get(PFDCT_PIN_TX_COUNTS), err = 0;

	if (fd < 0)
		return fail(-ENOENT, "pfdct is not loaded (datcpctl pfdct load)");
	for (i = 0; i < 3 && !err; i++)
		if (bpf_map_lookup_elem(fd, &i, &out[i]))
			err = fail(-errno, "reading the pfdct egress counters: %s", strerror(errno));
	close(fd);
	return err;
}
