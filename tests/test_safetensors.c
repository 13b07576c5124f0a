/* SPDX-License-Identifier: MIT */
/* safetensors reader and writer (core/safetensors.c), and export/score
 * (export and score: tests/test_interop.c).
 *
 * Reader: a round trip of every dtype, then each malformed file the format
 * can hold, built byte by byte, must be refused with a message naming the
 * value and the limit. Writer: a failed write leaves the old file and no
 * temporary. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/bf16.h"
#include "../core/safetensors.h"
#include "tests.h"

#define ASSERT_CONTAINS(msg, needle) assert_contains((msg), (needle), __LINE__)
static void assert_contains(const char *msg, const char *needle, unsigned line)
{
    char what[UG_MSG_MAX + 160];
    snprintf(what, sizeof what, "message lacks \"%s\": %s", needle, msg);
    CU_assertImplementation(strstr(msg, needle) != NULL, line, what, __FILE__, "", CU_FALSE);
}

static void temp_dir(char *dir, size_t size)
{
    snprintf(dir, size, "/tmp/ulpgate-st-XXXXXX");
    CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
}

/* ------------------------------------------------------------------------
 * Reader and writer */

static uint64_t read_header_length(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static void test_round_trip(void)
{
    char dir[64], path[128];
    temp_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/t.safetensors", dir);
    ug_bf16 a[3] = {0x7F80, 0x0001, 0x7FC0}; /* 6 bytes: whatever follows it would be misaligned */
    float b[3] = {1.5f, -0.0f, 3e38f};
    double c[2] = {0x1.23456789abcdep-3, -1e300};
    uint32_t d[4] = {0, 1, 0xFFFFFFFFu, 123456789u};
    const ug_st_entry in[] = {
        {"a.bf16", UG_BF16, 2, {1, 3}, a}, {"b", UG_F32, 1, {3}, b},   {"c", UG_F64, 3, {1, 2, 1}, c},
        {"d", UG_U32, 2, {2, 2}, d},       {"empty", UG_F32, 2, {0, 4}, b}, {"scalar", UG_F64, 0, {0}, c},
    };
    const size_t n = sizeof in / sizeof in[0];
    const char *meta[] = {"family", "gdn_chunk_cumsum", "case", "7"};
    CU_ASSERT_FATAL(ug_st_write(path, in, n, meta, 2).code == UG_OK);
    ug_st_file f;
    ug_status st = ug_st_read(path, SIZE_MAX, &f);
    CU_ASSERT_EQUAL_FATAL(st.code, UG_OK);
    CU_ASSERT_EQUAL(f.n, n);
    for (size_t i = 0; i < n; i++) {
        const ug_st_tensor *t = ug_st_find(&f, in[i].name);
        CU_ASSERT_PTR_NOT_NULL_FATAL(t);
        CU_ASSERT_EQUAL(t->dtype, in[i].dtype);
        CU_ASSERT_EQUAL(t->rank, in[i].rank);
        size_t count = 1;
        for (size_t k = 0; k < in[i].rank; k++) {
            CU_ASSERT_EQUAL(t->shape[k], in[i].shape[k]);
            count *= in[i].shape[k];
        }
        CU_ASSERT_EQUAL(t->count, count);
        CU_ASSERT(memcmp(t->data, in[i].data, count * ug_dtype_size(t->dtype)) == 0);
        /* header padded to 8 and data by decreasing element size: aligned */
        CU_ASSERT_EQUAL((size_t)(t->data - f.bytes) % ug_dtype_size(t->dtype), 0);
    }
    CU_ASSERT_PTR_NULL(ug_st_find(&f, "missing"));
    CU_ASSERT_STRING_EQUAL(ug_st_metadata(&f, "family"), "gdn_chunk_cumsum");
    CU_ASSERT_STRING_EQUAL(ug_st_metadata(&f, "case"), "7");
    CU_ASSERT_PTR_NULL(ug_st_metadata(&f, "absent"));
    CU_ASSERT_EQUAL(read_header_length(f.bytes) % 8, 0);
    size_t size = f.size;
    ug_st_free(&f);
    CU_ASSERT_EQUAL(ug_st_read(path, size, &f).code, UG_OK);
    ug_st_free(&f);
    st = ug_st_read(path, size - 1, &f);
    char expect[64];
    snprintf(expect, sizeof expect, "is %zu bytes, over the cap of %zu bytes", size, size - 1);
    ASSERT_CONTAINS(st.msg, expect);
    ug_test_remove_tree(dir);
}

/* A file made of a header length, a header text and n data bytes. */
static ug_status parse_crafted(uint64_t hlen, const char *header, size_t data_bytes, size_t cut, ug_st_file *out,
                               unsigned char *storage, size_t storage_size)
{
    size_t len = strlen(header), size = 8 + len + data_bytes;
    CU_ASSERT_FATAL(size <= storage_size);
    for (int i = 0; i < 8; i++) storage[i] = (unsigned char)(hlen >> (8 * i));
    memcpy(storage + 8, header, len);
    memset(storage + 8 + len, 0x42, data_bytes);
    return ug_st_parse("crafted", storage, size - cut, out);
}

typedef struct {
    const char *what, *header;
    size_t data_bytes;
    const char *expect[2];
} bad_file;

static const bad_file bad_files[] = {
    {"overlapping offsets", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                            "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
     12, {"tensor 'b': data_offsets [4, 12] overlap tensor 'a'", "ends at 8"}},
    {"offsets out of range", "{\"a\":{\"dtype\":\"F32\",\"shape\":[25],\"data_offsets\":[0,100]}}", 8,
     {"tensor 'a': data_offsets [0, 100] out of range", "the data holds 8 bytes"}},
    {"begin after end", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,4]}}", 8,
     {"[8, 4] out of range", "8 bytes"}},
    {"hole between tensors", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                             "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}",
     12, {"tensor 'b' starts at 8", "hole of 4 unindexed bytes at 4"}},
    {"trailing bytes", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 12,
     {"cover 4 of the 12 data bytes", "not indexed"}},
    {"size not matching shape", "{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8,
     {"span 8 bytes", "F32 of 3 elements needs 12"}},
    {"unknown dtype", "{\"a\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4,
     {"dtype 'F16'", "BF16, F32, F64 and U32 only"}},
    {"duplicate names", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                        "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
     8, {"not valid JSON", "duplicate"}},
    {"negative dimension", "{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4,
     {"tensor 'a'", "shape must hold non-negative integers"}},
    {"size overflowing 64 bits",
     "{\"a\":{\"dtype\":\"F64\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,8]}}", 8,
     {"shape dimension 1 (4294967296)", "overflow 64 bits"}},
    {"rank above the cap", "{\"a\":{\"dtype\":\"U32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 4,
     {"rank 9", "more than 8"}},
    {"unknown field", "{\"a\":{\"dtype\":\"U32\",\"shape\":[1],\"data_offsets\":[0,4],\"strides\":[1]}}", 4,
     {"unknown field 'strides'", "dtype, shape, data_offsets"}},
    {"metadata not strings", "{\"__metadata__\":{\"n\":1},\"a\":{\"dtype\":\"U32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
     4, {"__metadata__ 'n'", "not a string"}},
    {"not JSON", "{\"a\":", 0, {"not valid JSON", "header byte"}},
    {"not an object", "[1,2]", 0, {"does not start with '{'", "not a safetensors file"}},
    {"missing data_offsets", "{\"a\":{\"dtype\":\"U32\",\"shape\":[1]}}", 4, {"tensor 'a'", "no data_offsets"}},
};

static void test_bad_files(void)
{
    static unsigned char storage[4096];
    for (size_t i = 0; i < sizeof bad_files / sizeof bad_files[0]; i++) {
        const bad_file *b = &bad_files[i];
        ug_st_file f;
        ug_status st = parse_crafted(strlen(b->header), b->header, b->data_bytes, 0, &f, storage, sizeof storage);
        printf("\n    %s: %s", b->what, st.msg);
        CU_ASSERT_EQUAL(st.code, UG_EPARSE);
        for (int k = 0; k < 2; k++) ASSERT_CONTAINS(st.msg, b->expect[k]);
        CU_ASSERT_EQUAL(f.n, 0);
        CU_ASSERT_PTR_NULL(f.header);
    }
}

/* MLX writes the header unpadded, so tensors start anywhere: read them all
 * the same. */
static void test_unaligned_tensors(void)
{
    static unsigned char storage[256];
    static const char header[] = "{\"b\":{\"dtype\":\"BF16\",\"shape\":[3],\"data_offsets\":[0,6]},"
                                 "\"f\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[6,10]}}";
    ug_st_file f;
    CU_ASSERT_EQUAL_FATAL(parse_crafted(strlen(header), header, 10, 0, &f, storage, sizeof storage).code, UG_OK);
    const ug_st_tensor *t = ug_st_find(&f, "f");
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_EQUAL((size_t)(t->data - storage), 8 + strlen(header) + 6);
    float x;
    ug_st_copy(t, &x);
    CU_ASSERT_EQUAL(ug_f32_bits(x), 0x42424242u); /* the data bytes parse_crafted writes */
    ug_st_free(&f);
}

static const char good_header[] = "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}";

static void test_truncated_and_header_length(void)
{
    static unsigned char storage[256];
    ug_st_file f;
    size_t len = strlen(good_header);
    CU_ASSERT_EQUAL(parse_crafted(len, good_header, 16, 0, &f, storage, sizeof storage).code, UG_OK);
    ug_st_free(&f);
    ug_status st = parse_crafted(len, good_header, 16, 5, &f, storage, sizeof storage);
    ASSERT_CONTAINS(st.msg, "data_offsets [0, 16] out of range: the data holds 11 bytes");
    st = parse_crafted(len, good_header, 16, 8 + len + 16 - 5, &f, storage, sizeof storage);
    ASSERT_CONTAINS(st.msg, "truncated: 5 bytes, shorter than the 8-byte header length");
    st = parse_crafted(len + 17, good_header, 16, 0, &f, storage, sizeof storage);
    ASSERT_CONTAINS(st.msg, "header length 72 bytes runs past the end of the file (71 bytes after the length)");
    st = parse_crafted((uint64_t)1 << 40, good_header, 16, 0, &f, storage, sizeof storage);
    ASSERT_CONTAINS(st.msg, "header length 1099511627776 bytes exceeds the cap of 104857600 bytes");
    st = parse_crafted(UINT64_MAX, good_header, 16, 0, &f, storage, sizeof storage);
    ASSERT_CONTAINS(st.msg, "exceeds the cap");
    st = parse_crafted(0, good_header, 16, 0, &f, storage, sizeof storage);
    ASSERT_CONTAINS(st.msg, "does not start with '{'");
}

static size_t count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    CU_ASSERT_FATAL(d != NULL);
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* A write that fails (here: a repeated tensor name) leaves the file that was
 * there untouched and no temporary beside it. */
static void test_failed_write_leaves_old_file(void)
{
    char dir[64], path[128];
    temp_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/t.safetensors", dir);
    float x[2] = {1, 2};
    const ug_st_entry one[] = {{"x", UG_F32, 1, {2}, x}};
    CU_ASSERT_FATAL(ug_st_write(path, one, 1, NULL, 0).code == UG_OK);
    const ug_st_entry twice[] = {{"y", UG_F32, 1, {1}, x}, {"y", UG_F32, 1, {2}, x}};
    ug_status st = ug_st_write(path, twice, 2, NULL, 0);
    ASSERT_CONTAINS(st.msg, "tensor name 'y' is repeated");
    ug_st_file f;
    CU_ASSERT_EQUAL_FATAL(ug_st_read(path, SIZE_MAX, &f).code, UG_OK);
    CU_ASSERT_PTR_NOT_NULL(ug_st_find(&f, "x"));
    CU_ASSERT_PTR_NULL(ug_st_find(&f, "y"));
    ug_st_free(&f);
    CU_ASSERT_EQUAL(count_entries(dir), 1);
    char missing[160];
    snprintf(missing, sizeof missing, "%s/no/such/dir/t.safetensors", dir);
    st = ug_st_write(missing, one, 1, NULL, 0);
    ASSERT_CONTAINS(st.msg, "cannot create a temporary file");
    ug_test_remove_tree(dir);
}

UG_TEST_SUITE(safetensors_suite, "safetensors", UG_TEST(test_round_trip), UG_TEST(test_bad_files),
              UG_TEST(test_truncated_and_header_length), UG_TEST(test_unaligned_tensors), UG_TEST(test_failed_write_leaves_old_file));
