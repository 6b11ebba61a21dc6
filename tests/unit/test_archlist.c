/*
 * test_archlist.c: the depth-1 reader of a directory's archive
 * (src/guestfs/archlist.h): the entries' types and stats, names only names, the
 * stream cut past each bound and saying how, malformed archives refused,
 * and the same answer whatever the pieces the stream comes in.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "archlist.h"
#include "tarplane.h"

/* A tar as the engine sends a directory's: the root "d/", then what is given. */
static struct mafsbx_tar *tar_begin(void)
{
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	struct mafsbx_tar *t = mafsbx_tar_new(&e);
	assert_non_null(t);
	assert_int_equal(mafsbx_tar_add_dir(t, "d", 0755, 0, 0, 100, &e), 0);
	return t;
}

/* Feed `len` bytes in pieces of `piece`; the sink's last answer. */
static int feed(struct mafsbx_archlist *l, const void *data, size_t len, size_t piece)
{
	const char *p = data;
	int r = 0;
	while (len && r == 0) {
		size_t n = len < piece ? len : piece;
		r = mafsbx_archlist_sink(p, n, l);
		p += n;
		len -= n;
	}
	return r;
}

static int list(struct mafsbx_tar *t, size_t piece, uint64_t max_bytes, size_t max_entries, struct mafsbx_archlist *l,
		int *sink_rc)
{
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	const void *data;
	size_t len;
	assert_int_equal(mafsbx_tar_finish(t, &data, &len, &e), 0);
	assert_int_equal(mafsbx_archlist_init(l, "d", max_bytes, max_entries, &e), 0);
	*sink_rc = feed(l, data, len, piece);
	return mafsbx_archlist_finish(l, &e);
}

static void test_types_and_stats(void **state)
{
	(void)state;
	size_t pieces[] = { 1, 7, 512, 100000 };
	for (size_t k = 0; k < sizeof(pieces) / sizeof(pieces[0]); k++) {
		struct mafsbx_error e;
		mafsbx_error_clear(&e);
		struct mafsbx_tar *t = tar_begin();
		assert_int_equal(mafsbx_tar_add_file(t, "d/b.txt", "hello", 5, 0640, 1000, 1001, 12345, &e), 0);
		assert_int_equal(mafsbx_tar_add_dir(t, "d/sub", 0700, 5, 6, 200, &e), 0);
		assert_int_equal(mafsbx_tar_add_file(t, "d/sub/deep.txt", "xx", 2, 0644, 0, 0, 1, &e), 0);
		assert_int_equal(mafsbx_tar_add_symlink(t, "d/link", "/etc/passwd", 0, 0, 300, &e), 0);
		assert_int_equal(mafsbx_tar_add_hardlink(t, "d/hard", "d/b.txt", 0640, 1000, 1001, 12345, &e), 0);
		/* a long name goes through a pax header */
		char longname[300];
		memset(longname, 'n', sizeof(longname));
		memcpy(longname, "d/", 2);
		longname[2 + 200] = '\0';
		assert_int_equal(mafsbx_tar_add_file(t, longname, "", 0, 0600, 0, 0, 1, &e), 0);
		struct mafsbx_archlist l;
		int sr;
		assert_int_equal(list(t, pieces[k], 0, 0, &l, &sr), 0);
		assert_true(sr == 0 || sr == -ECANCELED);
		assert_true(l.ended);
		assert_int_equal(l.n, 5);
		assert_int_equal(l.deep, 1);
		const struct mafsbx_archlist_entry *b = mafsbx_archlist_find(&l, "b.txt");
		assert_non_null(b);
		assert_int_equal(b->mode, S_IFREG | 0640);
		assert_int_equal(b->size, 5);
		assert_int_equal(b->uid, 1000);
		assert_int_equal(b->gid, 1001);
		assert_int_equal(b->mtime.tv_sec, 12345);
		const struct mafsbx_archlist_entry *s = mafsbx_archlist_find(&l, "sub");
		assert_non_null(s);
		assert_int_equal(s->mode, S_IFDIR | 0700);
		const struct mafsbx_archlist_entry *ln = mafsbx_archlist_find(&l, "link");
		assert_non_null(ln);
		assert_int_equal(ln->mode & S_IFMT, S_IFLNK);
		assert_int_equal(ln->typeflag, '2');
		const struct mafsbx_archlist_entry *h = mafsbx_archlist_find(&l, "hard");
		assert_non_null(h);
		assert_int_equal(h->typeflag, '1');
		assert_int_equal(h->mode & S_IFMT, S_IFREG);
		assert_non_null(mafsbx_archlist_find(&l, longname + 2));
		assert_null(mafsbx_archlist_find(&l, "deep.txt"));
		mafsbx_archlist_free(&l);
		mafsbx_tar_free(t);
	}
}

static void test_cut_bytes(void **state)
{
	(void)state;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	struct mafsbx_tar *t = tar_begin();
	assert_int_equal(mafsbx_tar_add_file(t, "d/a", "a", 1, 0644, 0, 0, 1, &e), 0);
	static char big[256 * 1024];
	assert_int_equal(mafsbx_tar_add_file(t, "d/big", big, sizeof(big), 0644, 0, 0, 1, &e), 0);
	assert_int_equal(mafsbx_tar_add_file(t, "d/z", "z", 1, 0644, 0, 0, 1, &e), 0);
	struct mafsbx_archlist l;
	int sr;
	assert_int_equal(list(t, 4096, 64 * 1024, 0, &l, &sr), 1);
	assert_int_equal(sr, -ECANCELED);
	assert_int_equal(l.cut, MAFSBX_AL_CUT_BYTES);
	assert_true(l.bytes <= 64 * 1024 + 4096);
	assert_non_null(mafsbx_archlist_find(&l, "a"));
	assert_null(mafsbx_archlist_find(&l, "z"));
	mafsbx_archlist_free(&l);
	mafsbx_tar_free(t);
}

/* A subtree of big files: cut once their bytes dominate, long before the byte bound. */
static void test_cut_waste(void **state)
{
	(void)state;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	struct mafsbx_tar *t = tar_begin();
	char n[64];
	for (int i = 0; i < 20; i++) {
		snprintf(n, sizeof(n), "d/a%02d", i);
		assert_int_equal(mafsbx_tar_add_file(t, n, "x", 1, 0644, 0, 0, 1, &e), 0);
	}
	assert_int_equal(mafsbx_tar_add_dir(t, "d/sub", 0755, 0, 0, 1, &e), 0);
	static char mib[1 << 20];
	for (int i = 0; i < 3; i++) {
		snprintf(n, sizeof(n), "d/sub/m%d", i);
		assert_int_equal(mafsbx_tar_add_file(t, n, mib, sizeof(mib), 0644, 0, 0, 1, &e), 0);
	}
	struct mafsbx_archlist l;
	int sr;
	assert_int_equal(list(t, 65536, 0, 0, &l, &sr), 1);
	assert_int_equal(sr, -ECANCELED);
	assert_int_equal(l.cut, MAFSBX_AL_CUT_WASTE);
	assert_true(l.bytes < MAFSBX_ARCHLIST_WASTE_MIN + 128 * 1024);
	assert_int_equal(l.n, 21);
	mafsbx_archlist_free(&l);
	mafsbx_tar_free(t);
}

static void test_cut_deep_and_entries(void **state)
{
	(void)state;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	struct mafsbx_tar *t = tar_begin();
	assert_int_equal(mafsbx_tar_add_dir(t, "d/sub", 0755, 0, 0, 1, &e), 0);
	char n[64];
	for (int i = 0; i < 3000; i++) {
		snprintf(n, sizeof(n), "d/sub/f%d", i);
		assert_int_equal(mafsbx_tar_add_file(t, n, "", 0, 0644, 0, 0, 1, &e), 0);
	}
	assert_int_equal(mafsbx_tar_add_file(t, "d/z", "", 0, 0644, 0, 0, 1, &e), 0);
	struct mafsbx_archlist l;
	int sr;
	assert_int_equal(list(t, 512, 0, 0, &l, &sr), 1);
	/* the builder gives every entry a pax header: those bytes may dominate first */
	assert_true(l.cut == MAFSBX_AL_CUT_DEEP || l.cut == MAFSBX_AL_CUT_WASTE);
	assert_true(l.deep <= MAFSBX_ARCHLIST_DEEP_MIN + 1);
	assert_non_null(strstr(mafsbx_archlist_cut_name(l.cut), "dominate"));
	mafsbx_archlist_free(&l);
	mafsbx_tar_free(t);

	t = tar_begin();
	for (int i = 0; i < 50; i++) {
		snprintf(n, sizeof(n), "d/f%d", i);
		assert_int_equal(mafsbx_tar_add_file(t, n, "", 0, 0644, 0, 0, 1, &e), 0);
	}
	assert_int_equal(list(t, 100000, 0, 10, &l, &sr), 1);
	assert_int_equal(l.cut, MAFSBX_AL_CUT_ENTRIES);
	assert_int_equal(l.n, 10);
	mafsbx_archlist_free(&l);
	mafsbx_tar_free(t);
}

static void test_names_only_names(void **state)
{
	(void)state;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	struct mafsbx_tar *t = tar_begin();
	assert_int_equal(mafsbx_tar_add_file(t, "d/ok", "", 0, 0644, 0, 0, 1, &e), 0);
	assert_int_equal(mafsbx_tar_add_file(t, "d/ok", "", 0, 0600, 0, 0, 1, &e), 0); /* repeated */
	assert_int_equal(mafsbx_tar_add_file(t, "d/..", "", 0, 0644, 0, 0, 1, &e), 0);
	struct mafsbx_archlist l;
	int sr;
	assert_int_equal(list(t, 100000, 0, 0, &l, &sr), 0);
	assert_int_equal(l.n, 1);
	assert_int_equal(l.refused, 2);
	mafsbx_archlist_free(&l);
	mafsbx_tar_free(t);

	/* an entry outside the directory asked for refuses the archive */
	t = tar_begin();
	assert_int_equal(mafsbx_tar_add_file(t, "other/x", "", 0, 0644, 0, 0, 1, &e), 0);
	assert_int_equal(list(t, 100000, 0, 0, &l, &sr), -EPROTO);
	assert_true(l.failed);
	mafsbx_archlist_free(&l);
	mafsbx_tar_free(t);

	/* a first entry that is not the directory */
	mafsbx_error_clear(&e);
	t = mafsbx_tar_new(&e);
	assert_int_equal(mafsbx_tar_add_file(t, "d", "", 0, 0644, 0, 0, 1, &e), 0);
	assert_int_equal(list(t, 100000, 0, 0, &l, &sr), -EPROTO);
	mafsbx_archlist_free(&l);
	mafsbx_tar_free(t);
}

static void test_malformed(void **state)
{
	(void)state;
	struct mafsbx_error e;
	mafsbx_error_clear(&e);
	struct mafsbx_tar *t = tar_begin();
	assert_int_equal(mafsbx_tar_add_file(t, "d/a", "a", 1, 0644, 0, 0, 1, &e), 0);
	const void *data;
	size_t len;
	assert_int_equal(mafsbx_tar_finish(t, &data, &len, &e), 0);
	unsigned char *c = malloc(len);
	memcpy(c, data, len);
	c[1024 + 3] ^= 1; /* the directory's header (after the builder's pax one): its checksum no longer holds */
	struct mafsbx_archlist l;
	assert_int_equal(mafsbx_archlist_init(&l, "d", 0, 0, &e), 0);
	assert_int_equal(feed(&l, c, len, 512), -EPROTO);
	assert_true(mafsbx_archlist_finish(&l, &e) < 0);
	assert_non_null(strstr(e.message, "bad checksum"));
	mafsbx_archlist_free(&l);

	/* a stream that stops early is not whole */
	assert_int_equal(mafsbx_archlist_init(&l, "d", 0, 0, &e), 0);
	assert_int_equal(feed(&l, data, 2048, 512), 0);
	assert_int_equal(mafsbx_archlist_finish(&l, &e), 1);
	assert_int_equal(l.cut, MAFSBX_AL_SHORT);
	mafsbx_archlist_free(&l);
	free(c);
	mafsbx_tar_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_types_and_stats),
		cmocka_unit_test(test_cut_bytes),
		cmocka_unit_test(test_cut_waste),
		cmocka_unit_test(test_cut_deep_and_entries),
		cmocka_unit_test(test_names_only_names),
		cmocka_unit_test(test_malformed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
