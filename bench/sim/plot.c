/*
 * Simulator output, bench only: draws a run's runnable tasks per LLC as a standalone
 * SVG. It never leaves a half-written file where a reader looks (it writes path.tmp and
 * renames it), and it needs nothing beyond libc: no libm, no locale, no clock.
 */
#include <errno.h>
#include <float.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "plot.h"

/* Canvas and plot area in SVG user units; the right margin is the legend's. */
#define CANVAS_W 800
#define CANVAS_H 400
#define AREA_X0 64
#define AREA_X1 672
#define AREA_Y0 40
#define AREA_Y1 344

#define LEGEND_X 686
#define LEGEND_ROW 18
#define LEGEND_MAX 8

/* A newline every few points keeps a 10,000-point polyline readable in a diff. */
#define POINTS_PER_ROW 8

/* Grey is left out: it belongs to the reference line. */
static const char *const palette[] = {
	"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
	"#8c564b", "#e377c2", "#bcbd22", "#17becf",
};

#define NCOLOURS (sizeof(palette) / sizeof(palette[0]))

struct frame {
	double xspan; /* seconds at the right edge of the plot area */
	double xstep; /* seconds between x ticks */
	double ytop;  /* runnable tasks at the top edge */
	double ystep; /* runnable tasks between y ticks */
	int nx;       /* x tick intervals after 0 */
	int ny;       /* y tick intervals after 0 */
};

/* NaN, infinite or negative counts come only from a broken run: they are drawn as 0. */
static double sample(const struct plot_series *s, int p, int l)
{
	double v = s->y[(size_t)p * (size_t)s->nlines + (size_t)l];

	if (!(v > 0) || v > DBL_MAX)
		return 0;
	return v;
}

static double data_max(const struct plot_series *s)
{
	double max = 0;
	int p, l;

	for (p = 0; p < s->npoints; p++)
		for (l = 0; l < s->nlines; l++)
			if (sample(s, p, l) > max)
				max = sample(s, p, l);
	return max;
}

static bool has_ref(const struct plot_series *s)
{
	return s->y_ref > 0 && s->y_ref <= DBL_MAX;
}

static double time_at(const struct plot_series *s, int p)
{
	/* dt_s is only checked when there are two samples or more. */
	return p > 0 ? p * s->dt_s : 0;
}

/* The smallest step of 1, 2 or 5 x 10^k that cuts range (> 0) in fewer than limit. */
static double nice_step(double range, double limit)
{
	static const double mult[] = { 0.2, 0.5, 1, 2, 5, 10 };
	double mag = 1;
	size_t i;

	/* Loops rather than log10() and pow(): the bench tools do without libm. */
	while (mag > range)
		mag /= 10;
	while (mag * 10 <= range)
		mag *= 10;
	for (i = 0; i < sizeof(mult) / sizeof(mult[0]) - 1; i++)
		if (range / (mag * mult[i]) < limit)
			break;
	return mag * mult[i];
}

/* Enough decimals to tell ticks apart: a step of 0.05 needs two. */
static int decimals(double step)
{
	int d = 0;

	while (step < 0.999 && d < 9) {
		step *= 10;
		d++;
	}
	return d;
}

/*
 * x ends at the last sample and gets 5 to 10 ticks counting 0; y starts at 0 and is
 * rounded up to a whole number of steps, 4 to 9 of them, so every tick is labelled.
 */
static void frame_init(const struct plot_series *s, struct frame *ret)
{
	double ymax = data_max(s), q;

	ret->xspan = time_at(s, s->npoints - 1);
	if (ret->xspan <= 0)
		ret->xspan = s->dt_s > 0 && s->dt_s <= DBL_MAX ? s->dt_s : 1;
	ret->xstep = nice_step(ret->xspan, 10 - 1e-6);
	ret->nx = (int)(ret->xspan / ret->xstep + 1e-6);

	if (has_ref(s) && s->y_ref > ymax)
		ymax = s->y_ref;
	if (ymax <= 0)
		ymax = 1;
	ret->ystep = nice_step(ymax, 9 + 1e-6);
	q = ymax / ret->ystep;
	ret->ny = (int)q;
	if (q - ret->ny > 1e-6 || ret->ny < 1)
		ret->ny++;
	ret->ytop = ret->ny * ret->ystep;
}

static double px_x(const struct frame *f, double t)
{
	return AREA_X0 + t / f->xspan * (AREA_X1 - AREA_X0);
}

static double px_y(const struct frame *f, double v)
{
	return AREA_Y1 - v / f->ytop * (AREA_Y1 - AREA_Y0);
}

/* XML 1.0 cannot carry control characters at all, escaped or not: they become spaces. */
static void put_escaped(FILE *out, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&':
			fputs("&amp;", out);
			break;
		case '<':
			fputs("&lt;", out);
			break;
		case '>':
			fputs("&gt;", out);
			break;
		case '"':
			fputs("&quot;", out);
			break;
		case '\'':
			fputs("&apos;", out);
			break;
		default:
			fputc((unsigned char)*s < 0x20 ? ' ' : *s, out);
		}
	}
}

static void write_head(FILE *out, const char *title)
{
	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", out);
	fprintf(out,
		"<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" "
		"height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" "
		"font-size=\"12\">\n",
		CANVAS_W, CANVAS_H, CANVAS_W, CANVAS_H);
	fputs("<title>", out);
	put_escaped(out, title);
	fputs("</title>\n", out);
	fprintf(out, "<rect width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n", CANVAS_W, CANVAS_H);
	fprintf(out, "<text x=\"%d\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">",
		(AREA_X0 + AREA_X1) / 2);
	put_escaped(out, title);
	fputs("</text>\n", out);
}

/* Grid lines go first so that the data is drawn over them. */
static void write_grid(FILE *out, const struct frame *f)
{
	int i;

	fputs("<g stroke=\"#e4e4e4\" shape-rendering=\"crispEdges\">\n", out);
	for (i = 1; i <= f->nx; i++)
		fprintf(out, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>\n",
			px_x(f, i * f->xstep), AREA_Y0, px_x(f, i * f->xstep), AREA_Y1);
	for (i = 1; i <= f->ny; i++)
		fprintf(out, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>\n", AREA_X0,
			px_y(f, i * f->ystep), AREA_X1, px_y(f, i * f->ystep));
	fputs("</g>\n", out);
}

static void write_xaxis(FILE *out, const struct frame *f)
{
	int d = decimals(f->xstep), i;

	fputs("<g text-anchor=\"middle\">\n", out);
	for (i = 0; i <= f->nx; i++) {
		double x = px_x(f, i * f->xstep);

		fprintf(out,
			"<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#000\"/>\n", x,
			AREA_Y1, x, AREA_Y1 + 5);
		fprintf(out, "<text x=\"%.1f\" y=\"%d\">%.*f</text>\n", x, AREA_Y1 + 19, d,
			i * f->xstep);
	}
	fprintf(out, "<text x=\"%d\" y=\"%d\">time (s)</text>\n</g>\n", (AREA_X0 + AREA_X1) / 2,
		AREA_Y1 + 42);
}

static void write_yaxis(FILE *out, const struct frame *f)
{
	int d = decimals(f->ystep), i;

	fputs("<g text-anchor=\"end\">\n", out);
	for (i = 0; i <= f->ny; i++) {
		double y = px_y(f, i * f->ystep);

		fprintf(out,
			"<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#000\"/>\n",
			AREA_X0 - 5, y, AREA_X0, y);
		fprintf(out, "<text x=\"%d\" y=\"%.1f\">%.*f</text>\n", AREA_X0 - 8, y + 4, d,
			i * f->ystep);
	}
	fputs("</g>\n", out);
	fprintf(out,
		"<text transform=\"translate(18,%d) rotate(-90)\" text-anchor=\"middle\">"
		"runnable tasks per LLC</text>\n",
		(AREA_Y0 + AREA_Y1) / 2);
}

/* The frame is drawn last so that lines at 0 or at the top do not hide it. */
static void write_frame(FILE *out)
{
	fprintf(out,
		"<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
		"stroke=\"#000\" shape-rendering=\"crispEdges\"/>\n",
		AREA_X0, AREA_Y0, AREA_X1 - AREA_X0, AREA_Y1 - AREA_Y0);
}

static void write_line(FILE *out, const struct plot_series *s, const struct frame *f, int l)
{
	const char *colour = palette[(size_t)l % NCOLOURS];
	int p;

	fprintf(out,
		"<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.2\" "
		"stroke-linejoin=\"round\" points=\"",
		colour);
	for (p = 0; p < s->npoints; p++) {
		if (p > 0)
			fputc(p % POINTS_PER_ROW ? ' ' : '\n', out);
		fprintf(out, "%.1f,%.1f", px_x(f, time_at(s, p)), px_y(f, sample(s, p, l)));
	}
	fputs("\"/>\n", out);
	/* A lone sample gives a polyline of no length, which draws nothing: mark it. */
	if (s->npoints == 1)
		fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>\n",
			px_x(f, 0), px_y(f, sample(s, 0, l)), colour);
}

static void write_ref(FILE *out, const struct frame *f, double y_ref)
{
	double y = px_y(f, y_ref);

	fprintf(out,
		"<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#808080\" "
		"stroke-width=\"1.2\" stroke-dasharray=\"6,4\"/>\n",
		AREA_X0, y, AREA_X1, y);
}

static void write_no_data(FILE *out)
{
	fprintf(out,
		"<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"#808080\">"
		"no data</text>\n",
		(AREA_X0 + AREA_X1) / 2, (AREA_Y0 + AREA_Y1) / 2);
}

/* The reference line is labelled here: a label on the line itself hid the data. */
static void write_legend(FILE *out, int nlines, bool ref)
{
	int shown = nlines < LEGEND_MAX ? nlines : LEGEND_MAX, i;
	int y = AREA_Y0;

	for (i = 0; i < shown; i++, y += LEGEND_ROW) {
		fprintf(out, "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"10\" fill=\"%s\"/>\n",
			LEGEND_X, y + 1, palette[(size_t)i % NCOLOURS]);
		fprintf(out, "<text x=\"%d\" y=\"%d\">LLC %d</text>\n", LEGEND_X + 20, y + 10, i);
	}
	if (nlines > shown) {
		fprintf(out, "<text x=\"%d\" y=\"%d\" fill=\"#606060\">+%d more</text>\n", LEGEND_X,
			y + 10, nlines - shown);
		y += LEGEND_ROW;
	}
	if (!ref)
		return;
	fprintf(out,
		"<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#808080\" "
		"stroke-width=\"1.2\" stroke-dasharray=\"4,2\"/>\n",
		LEGEND_X, y + 6, LEGEND_X + 14, y + 6);
	fprintf(out, "<text x=\"%d\" y=\"%d\">CPUs per LLC</text>\n", LEGEND_X + 20, y + 10);
}

static void write_svg(FILE *out, const char *title, const struct plot_series *s)
{
	struct frame f;
	int l;

	frame_init(s, &f);
	write_head(out, title);
	write_grid(out, &f);
	for (l = 0; l < s->nlines && s->npoints > 0; l++)
		write_line(out, s, &f, l);
	if (s->nlines == 0 || s->npoints == 0)
		write_no_data(out);
	if (has_ref(s))
		write_ref(out, &f, s->y_ref);
	write_frame(out);
	write_xaxis(out, &f);
	write_yaxis(out, &f);
	write_legend(out, s->nlines, has_ref(s));
	fputs("</svg>\n", out);
}

static int check_series(const struct plot_series *s)
{
	double span;

	if (s->nlines < 0 || s->npoints < 0)
		return -EINVAL;
	if (s->nlines > 0 && s->npoints > 0 && !s->y)
		return -EINVAL;
	if (s->npoints < 2)
		return 0;
	/* Time must move forward, and the last sample's time must be a number. */
	span = (s->npoints - 1) * s->dt_s;
	if (!(span > 0 && span <= DBL_MAX))
		return -EINVAL;
	return 0;
}

/* stdio keeps a write error in the stream, so one check at the end catches them all. */
static int finish(FILE *out)
{
	int err = 0;

	if (fflush(out) != 0 || ferror(out))
		err = errno > 0 ? -errno : -EIO;
	if (fclose(out) != 0 && !err)
		err = errno > 0 ? -errno : -EIO;
	return err;
}

int plot_svg(const char *path, const char *title, const struct plot_series *s)
{
	char *tmp;
	FILE *out;
	int err;

	if (!path || !s)
		return -EINVAL;
	err = check_series(s);
	if (err)
		return err;
	if (asprintf(&tmp, "%s.tmp", path) < 0)
		return -ENOMEM;
	out = fopen(tmp, "we");
	if (!out) {
		err = -errno;
		free(tmp);
		return err;
	}
	errno = 0;
	write_svg(out, title ? title : "", s);
	err = finish(out);
	if (!err && rename(tmp, path) < 0)
		err = -errno;
	if (err)
		unlink(tmp);
	free(tmp);
	return err;
}
