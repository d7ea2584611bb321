/*
 * rqbalanced: options, then the init/fini block. Everything that acts is in the
 * stages; main only decides which of them to start.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "conf/conf.h"
#include "core/daemon.h"
#include "diag/features.h"
#include "diag/peers.h"
#include "policy/latency.h"
#include "policy/latweigh.h"
#include "policy/spread.h"
#include "rqbalance.h"
#include "sample/topo.h"
#include "util/cpumask.h"
#include "util/log.h"

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: rqbalanced [OPTION]...\n"
		"Spread runnable tasks across last-level caches by soft-pinning them with\n"
		"sched_setaffinity, and turn latency-nice values (set with rqctl(1) or by\n"
		"[rule] sections) into slices, policies and cgroup weights. Every change is\n"
		"journalled and given back on stop.\n"
		"\n"
		"  -c, --config FILE        config file (default " RQB_DEFAULT_CONFIG ";\n"
		"                           if that is missing, built-in defaults)\n"
		"  -f, --foreground         stay in the foreground, log to stderr\n"
		"  -n, --dry-run            log what would be done each tick, change nothing\n"
		"      --check-config [FILE]\n"
		"                           check FILE (default: the config) and exit 0 or 1;\n"
		"                           errors print as file:line: [section] key: reason\n"
		"      --dump-config        print the effective configuration and exit\n"
		"      --show-topology      print the CPUs, LLC groups and kinds of core found,\n"
		"                           and the CPUs fast_cores would keep, and exit\n"
		"      --features           print which kernel features were found, which are\n"
		"                           used, and why the missing ones cannot be, the\n"
		"                           kernel's default slice and each value's, and exit\n"
		"      --topology FILE.xml  use an hwloc XML topology whose CPU numbers are\n"
		"                           this machine's (also HWLOC_XMLFILE)\n"
		"      --replay FILE        take snapshots from FILE instead of /proc\n"
		"      --record FILE        write every snapshot taken to FILE (replay format)\n"
		"  -l, --log-level LEVEL    err, warning, notice, info or debug\n"
		"  -h, --help               show this help and exit\n"
		"  -V, --version            show the version and exit\n"
		"\n"
		"Signals: SIGTERM or SIGINT restore every task and stop; SIGHUP reloads the\n"
		"config (a bad one is refused and the running one kept).\n"
		"See rqbalanced(8) and rqbalance.conf(5).\n");
}

enum { OPT_CHECK = 256, OPT_DUMP, OPT_SHOW_TOPO, OPT_FEATURES, OPT_TOPOLOGY, OPT_REPLAY,
       OPT_RECORD };

static const struct option long_opts[] = {
	{ "config", required_argument, NULL, 'c' },
	{ "foreground", no_argument, NULL, 'f' },
	{ "dry-run", no_argument, NULL, 'n' },
	{ "check-config", optional_argument, NULL, OPT_CHECK },
	{ "dump-config", no_argument, NULL, OPT_DUMP },
	{ "show-topology", no_argument, NULL, OPT_SHOW_TOPO },
	{ "features", no_argument, NULL, OPT_FEATURES },
	{ "topology", required_argument, NULL, OPT_TOPOLOGY },
	{ "replay", required_argument, NULL, OPT_REPLAY },
	{ "record", required_argument, NULL, OPT_RECORD },
	{ "log-level", required_argument, NULL, 'l' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

enum action { RUN, CHECK, DUMP, SHOW_TOPO, FEATURES };

struct cli {
	struct daemon_opts o;
	enum action action;
	bool foreground;
};

static int parse_args(int argc, char **argv, struct cli *cli)
{
	int ch;

	cli->o.config_path = RQB_DEFAULT_CONFIG;
	cli->o.log_level = -1;
	while ((ch = getopt_long(argc, argv, "c:fnl:hV", long_opts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			cli->o.config_path = optarg;
			cli->o.config_explicit = true;
			break;
		case 'f':
			cli->foreground = true;
			break;
		case 'n':
			cli->o.dry_run = true;
			break;
		case OPT_CHECK:
			cli->action = CHECK;
			/* Accept "--check-config FILE" as well as "--check-config=FILE". */
			if (!optarg && optind < argc && argv[optind][0] != '-')
				optarg = argv[optind++];
			if (optarg) {
				cli->o.config_path = optarg;
				cli->o.config_explicit = true;
			}
			break;
		case OPT_DUMP:
			cli->action = DUMP;
			break;
		case OPT_SHOW_TOPO:
			cli->action = SHOW_TOPO;
			break;
		case OPT_FEATURES:
			cli->action = FEATURES;
			break;
		case OPT_TOPOLOGY:
			cli->o.topology = optarg;
			break;
		case OPT_REPLAY:
			cli->o.replay = optarg;
			break;
		case OPT_RECORD:
			cli->o.record = optarg;
			break;
		case 'l':
			cli->o.log_level = log_level_from_name(optarg);
			if (cli->o.log_level < 0) {
				fprintf(stderr, "rqbalanced: --log-level: unknown level '%s'\n", optarg);
				return -EINVAL;
			}
			break;
		case 'h':
			usage(stdout);
			exit(EXIT_SUCCESS);
		case 'V':
			printf("rqbalanced %s\n", RQB_VERSION);
			exit(EXIT_SUCCESS);
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "rqbalanced: unexpected argument '%s'\n", argv[optind]);
		return -EINVAL;
	}
	if (!cli->o.topology && getenv("HWLOC_XMLFILE") && *getenv("HWLOC_XMLFILE"))
		cli->o.topology = getenv("HWLOC_XMLFILE");
	return 0;
}

/*
 * Without --foreground: fork, and let the parent wait until the child has started
 * (exit 0) or failed (exit 1), so that a failed start is never reported as success
 * and its errors still reach the terminal. Returns the pipe the child reports on.
 */
static int detach_begin(void)
{
	int fds[2];
	char ok = 0;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0) {
		close(fds[1]);
		if (read(fds[0], &ok, 1) != 1)
			ok = 0;
		_exit(ok == '1' ? EXIT_SUCCESS : EXIT_FAILURE);
	}
	close(fds[0]);
	setsid();
	return fds[1];
}

/* The child has started: leave the terminal and the working directory, tell the parent. */
static void detach_end(int fd)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (chdir("/") < 0)
		log_warn("chdir /: %s", strerror(errno));
	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
		dup2(null, STDERR_FILENO);
		close(null);
	}
	log_init("rqbalanced", 1);
	if (write(fd, "1", 1) != 1)
		log_warn("cannot tell the parent process that the start succeeded");
	close(fd);
}

/* A reload after chdir("/") must still find a relative config path. */
static int absolute_config(struct cli *cli)
{
	static char path[4096];
	char cwd[2048];

	if (cli->o.config_path[0] == '/')
		return 0;
	if (!getcwd(cwd, sizeof(cwd)))
		return -errno;
	snprintf(path, sizeof(path), "%s/%s", cwd, cli->o.config_path);
	cli->o.config_path = path;
	return 0;
}

/* The bpf sampler, loaded without its info lines: --features prints a report, not a log. */
static int sampler_bpf_quiet_new(const struct bpf_sampler_opts *o, struct sampler **ret)
{
	int level = log_get_level(), r;

	log_set_level(LOG_WARNING);
	r = bpf_sampler_new(o, ret);
	log_set_level(level);
	return r;
}

/* wake-pairs for --features: the bpf sampler, loaded as the daemon would, then closed. */
static void probe_pairs(const struct rqb_conf *c, struct features *f)
{
	char why[256] = "";
	struct bpf_sampler_opts bo = {
		.self_tgid = getpid(),
		.interval_ns = c->interval_ms * NSEC_PER_MSEC,
		.walk_gap_ns = NSEC_PER_SEC,
		.forget_ns = c->proc_rescan_ms * NSEC_PER_MSEC,
		.root = "",
		.why = why,
		.why_len = sizeof(why),
	};
	struct sampler *sm = NULL;

	char why_not[300] = "the proc sampler cannot see who wakes whom";
	const char *seen_by = NULL;

	if (c->keep_pairs && c->sampler == CONF_SAMPLER_REPLAY)
		seen_by = FEAT_PAIRS_REPLAY;
	else if (c->keep_pairs && c->sampler != CONF_SAMPLER_PROC) {
		if (sampler_bpf_quiet_new(&bo, &sm) == 0)
			seen_by = FEAT_PAIRS_BPF;
		else
			snprintf(why_not, sizeof(why_not), "the bpf sampler does not load here (%s)",
				 why);
	}
	features_set_pairs(f, c->keep_pairs, seen_by, why_not);
	sampler_free(sm);
}

/*
 * placement, as the daemon would find it: the rules on, and whether they stand down
 * because the kernel or a sched_ext scheduler places by cache (then spread also
 * keeps processes whole, or stands down too: said on a line of its own).
 */
static enum kernel_places probe_placement(const struct rqb_conf *c, const struct topo *t,
					  struct features *f, char *why, size_t len)
{
	enum kernel_places k;
	char src[160] = "", on[64];
	struct utsname u;

	if (uname(&u) == 0 && !features_sched_cache_built("", u.release, src, sizeof(src)))
		src[0] = '\0';
	k = features_kernel_places("", src, t ? t->nllcs : 1, why, len);
	conf_placement_rules(c, on, sizeof(on));
	features_set_placement(f, on, k != KERNEL_PLACES_NOT ? why : NULL);
	return k;
}

/* The line --features ends its table with: who places tasks by cache, and why. */
/*
 * The slice each value gets from the kernel's default (latency_slice_ns), ten values a
 * line; 0 and a value the bound leaves on the default show the default.
 */
static void print_slices(const struct features *f)
{
	bool on = f->f[FEAT_EEVDF_SLICE].state != FEAT_MISSING;

	printf("slices: the kernel's default %.2f ms x 2^(value/5), within 0.1-100 ms%s\n",
	       (double)f->default_slice_ns / 1e6, on ? "" : " (this kernel takes no slice)");
	for (int v = LAT_MIN; v <= LAT_MAX; v++) {
		uint64_t ns = latency_slice_ns(f->default_slice_ns, v);

		if ((v - LAT_MIN) % 10 == 0)
			printf("slices %d..%d ms:", v, v + 9);
		printf(" %.2f", (double)(ns ? ns : f->default_slice_ns) / 1e6);
		if ((v - LAT_MIN) % 10 == 9)
			printf("\n");
	}
}

/* Whether class weights are scaled by the busy CPUs a class runs on here (latweigh.h). */
static void print_class_weights(const struct features *f)
{
	unsigned major = 0, minor = 0;
	char why[512];

	sscanf(f->kernel, "Linux %u.%u", &major, &minor);
	latweigh_describe(f->cgroup_mode, major, minor, why, sizeof(why));
	printf("class weights: %s\n", why);
}

static void print_placed_by(enum kernel_places k, const char *why)
{
	if (k == KERNEL_PLACES_SCHED_EXT)
		printf("placed by: a sched_ext scheduler (%s): spread and placement stand down\n",
		       why);
	else if (k == KERNEL_PLACES_CACHE)
		printf("placed by: the kernel's cache-aware scheduling and rqbalance (%s): spread "
		       "moves no task away from its process, placement stands down\n", why);
	else
		printf("placed by: rqbalance: nothing else places tasks by cache\n");
}

/*
 * What else shapes scheduling, for --features: class cgroups as the daemon would
 * decide them (on where asked for, or by default off a systemd host) on a cpu
 * controller.
 */
static void print_peers(const struct rqb_conf *c, const struct features *f)
{
	struct peers_ctx ctx = {
		.cpu_controller = f->f[FEAT_CGROUP_V1_CPU].state != FEAT_MISSING ||
				  f->f[FEAT_CGROUP_V2_CPU].state != FEAT_MISSING,
	};
	struct peers p;

	ctx.class_cgroups = ctx.cpu_controller && !c->dry_run &&
			    (c->lat_class == CONF_CLASS_YES ||
			     (c->lat_class == CONF_CLASS_AUTO && sd_booted() <= 0));
	peers_scan("", &ctx, &p);
	peers_print(&p, stdout);
}

/*
 * The kinds of core, where there are two or more: most efficient first, as hwloc ranks
 * them, in status's words (topo_kind_describe).
 */
static void print_kinds(const struct topo *t)
{
	char desc[CPUMASK_STRLEN + 128];

	if (t->nkinds < 2) {
		printf("kinds: one kind of core\n");
		return;
	}
	for (int k = 0; k < t->nkinds; k++) {
		topo_kind_describe(t, k, desc, sizeof(desc));
		printf("kind %d: %s%s\n", k, desc, k == t->nkinds - 1 ? " (the fastest)" : "");
	}
}

/* Which CCD an X3D part's firmware ranks first, where the kernel's driver says. */
static void print_x3d(const struct topo *t)
{
	if (t->x3d_mode == TOPO_X3D_NONE)
		return;
	printf("x3d mode: %s (%s)\n", topo_x3d_name(t->x3d_mode),
	       t->x3d_mode == TOPO_X3D_CACHE ? "the CCD with the larger L3 first"
					     : "the CCD with the higher clock first");
}

/* The CPUs fast_cores keeps latency work on, and why those. */
static void print_fast(const struct topo *t)
{
	char cpus[4096];
	cpu_set_t fast;
	const char *why = place_fast_cpus(t, &fast);

	if (why)
		printf("fast: cpus %s: %s\n", cpumask_format(&fast, cpus, sizeof(cpus)), why);
	else
		printf("fast: none: fast_cores pins nothing here\n");
}

static int show_topology(const struct rqb_conf *c, bool features)
{
	struct topo_opts to = { .xml = c->topology[0] ? c->topology : NULL,
				.filter_online = true, .root = "" };
	struct features f;
	struct topo *t;
	char buf[512];
	int r = topo_load(&to, &t);

	if (r < 0) {
		fprintf(stderr, "rqbalanced: topology: %s\n", strerror(-r));
		return EXIT_FAILURE;
	}
	if (features) {
		char detail[sizeof(f.f[0].detail)];
		enum kernel_places k;
		char why[320];
		bool on;

		features_probe("", t, c->min_llc_cores, &f);
		on = latmgr_probe_events(c, detail, sizeof(detail));
		features_set(&f, FEAT_TASK_EVENTS, on ? FEAT_USED : FEAT_MISSING, "%s", detail);
		probe_pairs(c, &f);
		k = probe_placement(c, t, &f, why, sizeof(why));
		features_print(&f, stdout);
		print_slices(&f);
		print_class_weights(&f);
		print_placed_by(k, why);
		print_peers(c, &f);
		topo_free(t);
		return EXIT_SUCCESS;
	}
	topo_describe(t, buf, sizeof(buf));
	printf("%s\n", buf);
	for (int l = 0; l < t->nllcs; l++) {
		char cpus[4096];

		char size[32] = "unknown";

		if (t->llcs[l].size_kb)
			snprintf(size, sizeof(size), "%" PRIu64 "K", t->llcs[l].size_kb);
		printf("llc %d: cpus %s numa %d package %d cache %s\n", l,
		       cpumask_format(&t->llcs[l].cpus, cpus, sizeof(cpus)), t->llcs[l].numa,
		       t->llcs[l].package, size);
	}
	print_kinds(t);
	print_x3d(t);
	print_fast(t);
	topo_free(t);
	return EXIT_SUCCESS;
}

int main(int argc, char **argv)
{
	struct daemon d;
	struct rqb_conf conf;
	struct cli cli = { 0 };
	int r, detach_fd = -1;

	/*
	 * Blocks from 128 KiB up come from mmap and go back at free(). By default glibc
	 * raises that threshold to the largest block freed: after libbpf's first parse of
	 * the kernel's BTF (two 5 MiB copies for each BPF object) the next ones came from
	 * the heap and stayed there, 2 MiB more at the peak (bench/overhead's RSS row).
	 */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	mallopt(M_TRIM_THRESHOLD, 128 * 1024);
	if (parse_args(argc, argv, &cli) < 0)
		return 2;
	r = daemon_load_config(&cli.o, stderr, &conf);
	if (cli.action == CHECK) {
		if (r == 0)
			conf_free(&conf);
		if (r == 0 && !cli.o.config_explicit && access(cli.o.config_path, F_OK) < 0)
			printf("%s: no such file: the built-in defaults are used, and valid\n",
			       cli.o.config_path);
		else if (r == 0)
			printf("%s: ok\n", cli.o.config_path);
		return r == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
	}
	if (r < 0)
		return EXIT_FAILURE;
	if (cli.action == DUMP) {
		conf_dump(&conf, stdout);
		conf_free(&conf);
		return EXIT_SUCCESS;
	}
	if (cli.action == SHOW_TOPO || cli.action == FEATURES) {
		r = show_topology(&conf, cli.action == FEATURES);
		conf_free(&conf);
		return r;
	}

	if (!cli.foreground) {
		if (absolute_config(&cli) < 0 || (detach_fd = detach_begin()) < 0) {
			fprintf(stderr, "rqbalanced: cannot go to the background: %s\n",
				strerror(errno));
			return EXIT_FAILURE;
		}
	}
	log_init("rqbalanced", 0);
	log_set_level(conf.log_level);
	if (!cli.o.config_explicit && access(cli.o.config_path, F_OK) < 0)
		log_notice("no config file at %s: running on built-in defaults", cli.o.config_path);

	r = daemon_init(&d, &cli.o, &conf);
	if (r == 0 && detach_fd >= 0)
		detach_end(detach_fd);
	if (r == 0)
		r = daemon_run(&d);
	daemon_fini(&d);
	conf_free(&conf);
	log_fini();
	return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
