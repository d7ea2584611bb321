/* Sample stage: what all samplers share. */
#include <time.h>
#include <unistd.h>

#include "rqbalance.h"
#include "sample/sampler.h"

void sampler_stamp_uptime(struct snapshot *s)
{
	long hz = sysconf(_SC_CLK_TCK);
	struct timespec ts;

	if (hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &ts) < 0)
		return;
	s->tick_hz = (uint32_t)hz;
	s->uptime_ticks = (uint64_t)ts.tv_sec * (uint64_t)hz +
			  (uint64_t)ts.tv_nsec / (NSEC_PER_SEC / (uint64_t)hz);
}

bool sampler_pairs(struct sampler *sm, const struct topo *t, bool on)
{
	return sm->ops->pairs && sm->ops->pairs(sm, t, on);
}

bool sampler_walks_unprivileged(struct sampler *sm)
{
	return !sm->ops->walks_unprivileged || sm->ops->walks_unprivileged(sm);
}

void sampler_free(struct sampler *sm)
{
	if (sm)
		sm->ops->free(sm);
}
