/* Sample stage: what all samplers share. */
#include "sampler.h"

void sampler_free(struct sampler *sm)
{
	if (sm)
		sm->ops->free(sm);
}
