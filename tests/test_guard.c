/* SPDX-License-Identifier: MIT */
/* Guarded allocations (core/guard.c) and atomic whole-file writes
 * (core/atomic_file.c). The guards are no-access under valgrind, so a test
 * that writes into one on purpose first marks that byte defined: the test
 * still runs under `make memcheck` and reports no error. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <valgrind/memcheck.h>

#include "../core/atomic_file.h"
#include "../core/guard.h"
#include "tests.h"

static const size_t sizes[] = {0, 1, 63, 64, 65};
enum { N_SIZES = sizeof sizes / sizeof sizes[0] };

static size_t padded(size_t bytes) { return (bytes + UG_GUARD_BYTES - 1) / UG_GUARD_BYTES * UG_GUARD_BYTES; }

/* Flips one byte the test means to corrupt (a guard byte). */
static void poke(unsigned char *p)
{
    VALGRIND_MAKE_MEM_DEFINED(p, 1);
    *p ^= 0xFF;
}

/* Allocates `bytes`, corrupts data[offset], checks the guards report it. */
static void check_poke_detected(size_t bytes, ptrdiff_t offset)
{
    ug_guarded g;
    CU_ASSERT_FATAL(ug_guarded_alloc(&g, bytes).code == UG_OK);
    unsigned char *data = ug_guarded_data(&g);
    poke(data + offset);
    CU_ASSERT_FALSE(ug_guarded_intact(&g));
    ug_status st = ug_guarded_free(&g, "poked_buffer");
    CU_ASSERT_EQUAL(st.code, UG_EGUARD);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "poked_buffer"));
    CU_ASSERT_PTR_NULL(g.block);
}

/* ---- ug_guarded -------------------------------------------------------- */

static void test_alloc_data_is_aligned(void)
{
    for (size_t i = 0; i < N_SIZES; i++) {
        ug_guarded g;
        CU_ASSERT_FATAL(ug_guarded_alloc(&g, sizes[i]).code == UG_OK);
        CU_ASSERT_EQUAL((uintptr_t)ug_guarded_data(&g) % 64, 0);
        CU_ASSERT_EQUAL(ug_guarded_free(&g, "aligned").code, UG_OK);
    }
}

static void test_alloc_data_is_writable(void)
{
    for (size_t i = 0; i < N_SIZES; i++) {
        ug_guarded g;
        CU_ASSERT_FATAL(ug_guarded_alloc(&g, sizes[i]).code == UG_OK);
        unsigned char *data = ug_guarded_data(&g);
        memset(data, 0x5A, sizes[i]);
        for (size_t k = 0; k < sizes[i]; k++) CU_ASSERT_EQUAL(data[k], 0x5A);
        CU_ASSERT_TRUE(ug_guarded_intact(&g));
        CU_ASSERT_EQUAL(ug_guarded_free(&g, "writable").code, UG_OK);
    }
}

static void test_untouched_guards_are_intact(void)
{
    for (size_t i = 0; i < N_SIZES; i++) {
        ug_guarded g;
        CU_ASSERT_FATAL(ug_guarded_alloc(&g, sizes[i]).code == UG_OK);
        CU_ASSERT_TRUE(ug_guarded_intact(&g));
        ug_status st = ug_guarded_free(&g, "untouched");
        CU_ASSERT_EQUAL(st.code, UG_OK);
        CU_ASSERT_STRING_EQUAL(st.msg, "");
        CU_ASSERT_PTR_NULL(g.block);
    }
}

static void test_zero_size_data_pointers_are_distinct(void)
{
    ug_guarded a, b;
    CU_ASSERT_FATAL(ug_guarded_alloc(&a, 0).code == UG_OK);
    CU_ASSERT_FATAL(ug_guarded_alloc(&b, 0).code == UG_OK);
    CU_ASSERT_PTR_NOT_EQUAL(ug_guarded_data(&a), ug_guarded_data(&b));
    CU_ASSERT_EQUAL(ug_guarded_free(&a, "a").code, UG_OK);
    CU_ASSERT_EQUAL(ug_guarded_free(&b, "b").code, UG_OK);
}

static void test_free_of_zeroed_is_ok(void)
{
    ug_guarded g = {NULL, 0};
    CU_ASSERT_TRUE(ug_guarded_intact(&g));
    CU_ASSERT_EQUAL(ug_guarded_free(&g, "zeroed").code, UG_OK);
}

static void test_alloc_too_large_fails(void)
{
    ug_guarded g;
    ug_status st = ug_guarded_alloc(&g, SIZE_MAX);
    CU_ASSERT_EQUAL(st.code, UG_ENOMEM);
    CU_ASSERT_PTR_NULL(g.block);
    CU_ASSERT_EQUAL(ug_guarded_free(&g, "huge").code, UG_OK);
}

static void test_write_before_data_detected(void)
{
    for (size_t i = 0; i < N_SIZES; i++) check_poke_detected(sizes[i], -1);
}

static void test_write_first_head_guard_byte_detected(void)
{
    for (size_t i = 0; i < N_SIZES; i++) check_poke_detected(sizes[i], -UG_GUARD_BYTES);
}

static void test_write_after_data_detected(void)
{
    for (size_t i = 0; i < N_SIZES; i++) check_poke_detected(sizes[i], (ptrdiff_t)sizes[i]);
}

static void test_write_in_alignment_padding_detected(void)
{
    check_poke_detected(65, 65);
    check_poke_detected(65, 127); /* last padding byte */
    check_poke_detected(1, 63);
}

/* The tail guard is the padding plus UG_GUARD_BYTES: its last byte is
 * data[padded(bytes) + UG_GUARD_BYTES - 1], for every size. */
static void test_write_last_tail_guard_byte_detected(void)
{
    for (size_t i = 0; i < N_SIZES; i++)
        check_poke_detected(sizes[i], (ptrdiff_t)(padded(sizes[i]) + UG_GUARD_BYTES - 1));
}

/* ---- ug_atomic_file ---------------------------------------------------- */

typedef struct {
    char dir[64];
    char path[128];
} tmpdir;

static void tmpdir_make(tmpdir *t)
{
    snprintf(t->dir, sizeof t->dir, "/tmp/ug_test_atomic_XXXXXX");
    CU_ASSERT_FATAL(mkdtemp(t->dir) != NULL);
    snprintf(t->path, sizeof t->path, "%s/out.json", t->dir);
}

static size_t dir_entries(const char *dir)
{
    DIR *d = opendir(dir);
    size_t n = 0;
    if (!d) return (size_t)-1;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

static void tmpdir_remove(tmpdir *t)
{
    unlink(t->path);
    DIR *d = opendir(t->dir);
    if (d) {
        char p[512];
        for (struct dirent *e; (e = readdir(d));) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            snprintf(p, sizeof p, "%s/%s", t->dir, e->d_name);
            unlink(p);
        }
        closedir(d);
    }
    rmdir(t->dir);
}

static char *slurp(const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    char *buf = calloc(1, 4096);
    size_t n = buf ? fread(buf, 1, 4095, fp) : 0;
    if (buf) buf[n] = '\0';
    fclose(fp);
    return buf;
}

static void test_atomic_file_absent_before_commit(void)
{
    tmpdir t;
    tmpdir_make(&t);
    ug_atomic_file f;
    CU_ASSERT_FATAL(ug_atomic_open(&f, t.path).code == UG_OK);
    fputs("{\"a\": 1}\n", f.fp);
    fflush(f.fp);
    CU_ASSERT_NOT_EQUAL(access(t.path, F_OK), 0);
    CU_ASSERT_EQUAL(ug_atomic_commit(&f).code, UG_OK);
    tmpdir_remove(&t);
}

static void test_atomic_file_commit_has_full_contents(void)
{
    tmpdir t;
    tmpdir_make(&t);
    ug_atomic_file f;
    CU_ASSERT_FATAL(ug_atomic_open(&f, t.path).code == UG_OK);
    fputs("line one\n", f.fp);
    fprintf(f.fp, "line %s\n", "two");
    CU_ASSERT_EQUAL(ug_atomic_commit(&f).code, UG_OK);
    char *text = slurp(t.path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    CU_ASSERT_STRING_EQUAL(text, "line one\nline two\n");
    free(text);
    CU_ASSERT_EQUAL(dir_entries(t.dir), 1); /* no temporary left beside it */
    tmpdir_remove(&t);
}

static void test_atomic_file_commit_replaces_existing(void)
{
    tmpdir t;
    tmpdir_make(&t);
    FILE *old = fopen(t.path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(old);
    fputs("old contents, longer than the new ones\n", old);
    fclose(old);
    ug_atomic_file f;
    CU_ASSERT_FATAL(ug_atomic_open(&f, t.path).code == UG_OK);
    fputs("new\n", f.fp);
    CU_ASSERT_EQUAL(ug_atomic_commit(&f).code, UG_OK);
    char *text = slurp(t.path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    CU_ASSERT_STRING_EQUAL(text, "new\n");
    free(text);
    tmpdir_remove(&t);
}

static void test_atomic_file_abort_leaves_nothing(void)
{
    tmpdir t;
    tmpdir_make(&t);
    ug_atomic_file f;
    CU_ASSERT_FATAL(ug_atomic_open(&f, t.path).code == UG_OK);
    fputs("partial", f.fp);
    ug_atomic_abort(&f);
    CU_ASSERT_NOT_EQUAL(access(t.path, F_OK), 0);
    CU_ASSERT_EQUAL(dir_entries(t.dir), 0);
    tmpdir_remove(&t);
}

static void test_atomic_file_missing_directory_fails(void)
{
    tmpdir t;
    tmpdir_make(&t);
    char path[192];
    snprintf(path, sizeof path, "%s/no_such_dir/out.json", t.dir);
    ug_atomic_file f;
    ug_status st = ug_atomic_open(&f, path);
    CU_ASSERT_EQUAL(st.code, UG_EIO);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, path));
    CU_ASSERT_PTR_NULL(f.fp);
    CU_ASSERT_EQUAL(dir_entries(t.dir), 0);
    tmpdir_remove(&t);
}

UG_TEST_SUITE(guard_suite, "guard",
              UG_TEST(test_alloc_data_is_aligned),
              UG_TEST(test_alloc_data_is_writable),
              UG_TEST(test_untouched_guards_are_intact),
              UG_TEST(test_zero_size_data_pointers_are_distinct),
              UG_TEST(test_free_of_zeroed_is_ok),
              UG_TEST(test_alloc_too_large_fails),
              UG_TEST(test_write_before_data_detected),
              UG_TEST(test_write_first_head_guard_byte_detected),
              UG_TEST(test_write_after_data_detected),
              UG_TEST(test_write_in_alignment_padding_detected),
              UG_TEST(test_write_last_tail_guard_byte_detected),
              UG_TEST(test_atomic_file_absent_before_commit),
              UG_TEST(test_atomic_file_commit_has_full_contents),
              UG_TEST(test_atomic_file_commit_replaces_existing),
              UG_TEST(test_atomic_file_abort_leaves_nothing),
              UG_TEST(test_atomic_file_missing_directory_fails));
