/*
 * Fuzz target: the config parser, conf_load_string, with its [rule NAME] sections.
 * Beyond not crashing: a config it accepts dumps (as --dump-config does) to a file
 * it accepts again, and that dumps the same.
 */
#include "conf/conf.h"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_quiet();
	return 0;
}

/* The dump as a string; the caller frees it. */
static char *dump(const struct rqb_conf *c)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		abort();
	conf_dump(c, f);
	if (fclose(f) != 0)
		abort();
	return text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* Tens of KB each: too big for the stack of a fuzzer's thread. */
	static struct rqb_conf c, again;
	char *text = fuzz_strdup(data, size);

	if (conf_load_string("fuzz.conf", text, fuzz_devnull(), &c) == 0) {
		char *first = dump(&c), *second;
		int r = conf_load_string("dump", first, stderr, &again);

		if (r < 0)
			fprintf(stderr, "the dump it refused:\n%s", first);
		FUZZ_CHECK(r == 0);
		second = dump(&again);
		FUZZ_CHECK(strcmp(first, second) == 0);
		free(first);
		free(second);
		conf_free(&again);
		conf_free(&c);
	}
	free(text);
	return 0;
}
