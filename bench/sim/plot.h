/* SVG line plots for the simulator: one line per LLC, time on x, runnable tasks on y. */
#ifndef RQB_SIM_PLOT_H
#define RQB_SIM_PLOT_H

#include <stddef.h>

struct plot_series {
	int nlines;          /* one per LLC */
	int npoints;         /* samples, one per policy tick */
	double dt_s;         /* seconds between samples */
	const float *y;      /* npoints x nlines, row-major: y[p * nlines + l] */
	double y_ref;        /* a dashed horizontal reference line (CPUs per LLC); <= 0: none */
};

/*
 * Writes a standalone SVG (no scripts, no external fonts) to path: axes with ticks and
 * labels, title, one polyline per line in distinct colours, a legend ("LLC 0", ...;
 * when there are more than 8 lines, the legend shows the first 8 and "+N more").
 * Deterministic: the same input gives the same bytes. Returns 0 or -errno.
 */
int plot_svg(const char *path, const char *title, const struct plot_series *s);

#endif
