/*
 * The model: the types that the stages share and no one stage owns. The sampler fills
 * them, the config holds some, the policy reads them; this header includes nothing of
 * the daemon's, so that every folder can include it and no folder needs another's
 * header for a type alone.
 */
#ifndef RQB_MODEL_H
#define RQB_MODEL_H

#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* A task's comm as the kernel keeps it (TASK_COMM_LEN), its NUL included. */
#define SNAP_COMM_LEN 16

/* ---- latency-nice values ---- */
#define LAT_MIN (-20)
#define LAT_MAX 19
#define LAT_NONE 127 /* "not managed": no value set */
/* The longest cgroup path a target, a rule or the journal holds, its NUL included. */
#define LAT_PATH_MAX 256

/*
 * What the kernel asks of a caller without CAP_SYS_NICE who changes a knob of its own
 * task (user_check_sched_setscheduler(), can_nice()): each row of the knob table
 * (actuate/latknob.c) names one, and the ctl permission rule judges each (ctl_perm.c).
 */
enum lat_perm {
	LAT_PERM_OWNER = 0,     /* nothing more: owning the task is enough */
	LAT_PERM_NICE_DOWN,     /* lowering it: RLIMIT_NICE (can_nice()) */
	LAT_PERM_LEAVE_IDLE,    /* leaving SCHED_IDLE: an RLIMIT_NICE that covers its nice */
	LAT_PERM_CLEAR,         /* clearing it once set (sched_reset_on_fork) */
};

#define LAT_PERM_KNOBS 8
/*
 * A thread's knobs that a rule other than LAT_PERM_OWNER covers, now and after a
 * request, as the rule measures them (LAT_PERM_NICE_DOWN: the nice; LAT_PERM_LEAVE_IDLE:
 * 1 for SCHED_IDLE; LAT_PERM_CLEAR: 1 for set), in the knob table's order.
 */
struct lat_perm_thread {
	unsigned n;
	struct lat_perm_knob {
		const char *name;       /* the knob's, for the refusal */
		unsigned row;           /* its row in the knob table */
		enum lat_perm rule;
		int64_t now, after;
	} k[LAT_PERM_KNOBS];
};

/*
 * A thread as a request's judge read it, once (ctl_req): its facts travel with the
 * request to the manager and the actuator, so that the task acted on is the one judged
 * and none of its /proc files is read twice for one request.
 */
struct lat_thread {
	pid_t tid;
	uint64_t start_time;    /* clock ticks after boot, read with its uids */
	bool kthread;
	int pidfd;              /* opened before start_time was read, so that task's: the
				   actuator opens the task from it (act_ops.adopt); the
				   judge's, closed with the request. -1: none, the actuator
				   opens the task as for any request */
	bool has_cgroup;        /* cgroup was read, with the rest, for the actuator */
	char cgroup[LAT_PATH_MAX]; /* as latact_read_task_cgroup reads it */
};

/*
 * A request for a latency-nice value: whom, as of when, what, and as whose. The
 * manager takes one from ctl, D-Bus and the rules; the policy turns it into plan
 * actions (latpol); the actuator carries out one task's (latact_task). A function
 * says which of tid and tgid it reads.
 */
struct lat_req {
	pid_t tid;              /* the task; for a whole process, its first thread (= tgid) */
	pid_t tgid;             /* its process; 0 where the caller has not read it */
	uint64_t start_time;    /* the target's start time the request was decided on, clock
				   ticks after boot (/proc/TID/stat); 0: whatever it is now */
	int value;              /* LAT_MIN…LAT_MAX */
	const char *source;     /* who asks: "ctl uid N", "rule NAME", "foreground uid N" */
	bool trusted;           /* the caller may give any task any value (root, ctl_group,
				   CAP_SYS_NICE): it may weigh a unit another user shares */
	pid_t from_tid;         /* the task whose settings it inherited; 0: none */
	bool async_move;        /* its class move may end after the call (latact_moves_start):
				   an exec's rule, so that the next exec does not wait on it */
	bool at_exec;           /* a process (tid = tgid) that has just exec'd, as start_time
				   says: its one thread is the whole of it (latmgr_set_threads) */
	bool no_inherit;        /* the value is not handed down to the processes the task
				   makes (a rule's inherit = no): SCHED_FLAG_RESET_ON_FORK */
	const struct lat_thread *threads; /* a process's threads as judged, with what was
				   read of them (lat_target.threads); NULL: read /proc/TGID/task */
	size_t nthreads;
};

/* ---- the machine (sample/topo.c loads it) ---- */
struct topo_cpu {
	bool present;   /* in the topology and online */
	bool placed;    /* online when the topology was loaded: core, llc and the rest hold */
	int core;       /* index into the core numbering, SMT siblings share it */
	int llc;        /* index into topo.llcs */
	int numa;       /* NUMA node logical index, 0 where none */
	int package;    /* package logical index */
	int kind;       /* index into topo.kinds; -1 where the topology names no kinds */
};

/*
 * A kind of core (hwloc's CPU kinds): a hybrid part's P-cores and E-cores, or cores
 * that differ in their highest frequency. hwloc lists them from the most efficient
 * (least power, slowest) to the least; a machine with one kind may list one or none.
 */
#define TOPO_KINDS_MAX 8
struct topo_kind {
	cpu_set_t cpus;  /* online CPUs of this kind */
	int ncpus;
	int efficiency;  /* hwloc's rank, higher is faster; -1 where it does not know */
	char type[32];   /* hwloc's CoreType ("IntelCore", "IntelAtom") or LinuxCPUType; "" */
	unsigned max_mhz; /* FrequencyMaxMHz; 0 where not said */
};

struct topo_llc {
	cpu_set_t cpus; /* online CPUs sharing this last-level cache */
	int ncpus;
	int ncores;     /* cores with an online CPU in it (SMT siblings count once) */
	uint64_t size_kb; /* the cache's size, KiB; 0 where the topology does not say */
	int numa;       /* NUMA node of its first CPU */
	int package;
};

/*
 * An AMD part with a 3D V-Cache CCD: which CCD the firmware's core ranking prefers, as
 * the kernel's amd_x3d_vcache driver (6.13+) sets it in
 * /sys/bus/platform/drivers/amd_x3d_vcache/NAME/amd_x3d_mode.
 */
enum topo_x3d {
	TOPO_X3D_NONE,      /* no such driver or file: not an X3D part, or an older kernel */
	TOPO_X3D_FREQUENCY, /* "frequency": the faster CCD first (the driver's default) */
	TOPO_X3D_CACHE,     /* "cache": the CCD with the larger L3 first */
};

struct topo {
	int nr_cpu_ids;          /* highest OS CPU number + 1 */
	int ncpus;               /* online CPUs in the topology */
	int ncores;
	int nnuma;
	int nllcs;
	int noffline;            /* CPUs the topology names that are not online now */
	cpu_set_t online;        /* the CPUs rqbalance may place work on */
	struct topo_cpu *cpus;   /* indexed by OS CPU number, nr_cpu_ids entries */
	struct topo_llc *llcs;   /* nllcs entries */
	int nkinds;              /* kinds of core; below 2, all cores count as one kind */
	struct topo_kind kinds[TOPO_KINDS_MAX];
	enum topo_x3d x3d_mode;  /* read at load from root/sys (topo_opts.root) */
	char source[256];        /* "this system", the XML file, or the synthetic string */
};

static inline int topo_llc_of(const struct topo *t, int cpu)
{
	return (cpu >= 0 && cpu < t->nr_cpu_ids && t->cpus[cpu].present) ? t->cpus[cpu].llc : -1;
}

/* ---- latency rules (conf.c parses them, policy/rules.c matches, taskev/ident.c reads) ---- */
/* Rules a config may hold: a bound on memory (~150 bytes each) and load time, not a table size. */
#define RULES_MAX 100000
#define RULE_NAME_MAX 64
#define RULE_STR_MAX 256
/* No one's uid ((uid_t)-1 means "unchanged" to setresuid(2)): a rule without uid. */
#define RULE_UID_ANY ((uid_t)-1)

/* A rule's strings are never NULL: "" where it leaves the key out. */
struct rule {
	const char *name;              /* [rule NAME] */
	int latency_nice;              /* -20…19; LAT_NONE (latency.h) until set */
	const char *comm;              /* fnmatch(3) pattern on comm; "" = any */
	const char *exe;               /* fnmatch(3) pattern (FNM_PATHNAME) on the exe path */
	const char *cmdline;           /* fnmatch(3) pattern on argv joined by spaces */
	const char *cgroup;            /* cgroup path prefix, at a '/' boundary */
	uid_t uid;                     /* real uid; RULE_UID_ANY if the rule names none */
	bool spoofable;                /* a negative value without exe or uid is allowed */
	/*
	 * What the matched process starts inherits its value (the kernel's way); false:
	 * the value stays with the process and its threads (a launcher's), and a child
	 * runs with what it had before, or its own rule's from its exec.
	 */
	bool inherit;
	const char *file;              /* where it was defined, for messages */
	unsigned line;                 /* its line in file */
};

/* A block of the strings of a rule set; they never move once written. */
struct rule_strblock {
	struct rule_strblock *next;    /* the block filled before this one */
	size_t size;                   /* bytes of data */
	size_t used;                   /* bytes of data taken */
	char data[];                   /* the strings, each NUL-terminated */
};

struct rules_index;

/*
 * The rules, on the heap: conf.c owns them (conf_rules_free); copying the struct shares
 * them, so a set has one owner, and struct rqb_conf moves (conf_move), never copies.
 */
struct rule_set {
	unsigned n;                    /* rules in r */
	unsigned cap;                  /* rules r has room for */
	struct rule *r;                /* in the order they were read */
	struct rule_strblock *strs;    /* the rules' strings, newest block first */
	unsigned *by_name;             /* hash of names: index + 1, 0 = free; nby_name slots */
	unsigned nby_name;             /* a power of two, over twice n; 0 = none yet */
	struct rules_index *ix;        /* built once the set is whole (policy/rules_index.h);
					* NULL: match by scanning, as after any change */
};

/* What a rule can match a process on; strings may be "" where unreadable, never NULL. */
struct proc_ident {
	pid_t pid;
	uid_t uid;            /* real uid */
	const char *comm;
	const char *exe;      /* readlink /proc/PID/exe; "" for kernel threads, when gone, or
			       * when the path does not lead here to the file it runs */
	const char *cmdline;  /* argv joined by single spaces */
	const char *cgroup;   /* the cgroup path, as parse_cgroup picks it (proc/parse.h) */
};

#endif
