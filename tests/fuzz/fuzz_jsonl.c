/*
 * Fuzz target: rqctl import-ananicy's JSON-line reader, jsonl_parse, one line at a time.
 * Beyond not crashing: an object it reads, written back as JSON, reads again as the
 * same keys, kinds and values.
 */
#include "fuzz.h"
#include "jsonl.h"

/* o written back as one line of JSON; the caller frees it. */
static char *write_back(const struct jsonl_obj *o)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		abort();
	fputc('{', f);
	for (unsigned i = 0; i < o->n; i++) {
		fputs(i ? ", " : " ", f);
		jsonl_put_string(f, o->v[i].key);
		fputs(": ", f);
		jsonl_put_value(f, &o->v[i]);
	}
	fputs(" }", f);
	fclose(f);
	return text;
}

static void check_same(const struct jsonl_obj *a, const struct jsonl_obj *b)
{
	FUZZ_CHECK(a->n == b->n);
	for (unsigned i = 0; i < a->n; i++) {
		FUZZ_CHECK(strcmp(a->v[i].key, b->v[i].key) == 0);
		FUZZ_CHECK(a->v[i].kind == b->v[i].kind);
		FUZZ_CHECK(strcmp(a->v[i].text, b->v[i].text) == 0);
		FUZZ_CHECK(a->v[i].is_int == b->v[i].is_int && a->v[i].num == b->v[i].num);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct jsonl_obj a, b;
	char *line = fuzz_strdup(data, size), *nl = strchr(line, '\n'), *again;
	const char *reason = NULL;
	int r;

	if (nl)
		*nl = '\0'; /* rqctl hands it one line */
	r = jsonl_parse(line, &a, &reason);
	FUZZ_CHECK(r == 0 || r == 1 || (r < 0 && reason != NULL));
	if (r == 0) {
		FUZZ_CHECK(a.n <= JSONL_MAX_KEYS);
		again = write_back(&a);
		FUZZ_CHECK(jsonl_parse(again, &b, &reason) == 0);
		check_same(&a, &b);
		free(again);
	}
	free(line);
	return 0;
}
