/* Software prefetch of the strided rows a GDN work item reads next.
 *
 * A chunk of a [B, T, heads, dim] tensor is BT rows of dim elements, one per
 * token, each in its own 4 KiB page at the bench's sizes (heads * dim * 2
 * bytes apart): the hardware prefetchers follow streams within a page, so
 * without this every row of a chunk costs a full memory latency, serially
 * (measured: the first load of each row took three quarters of the staging
 * time in gdn_recompute_wu). Prefetching the next item's rows while the
 * current one computes overlaps those misses with the products. A hint only:
 * no effect on any result. */
#ifndef UG_PREFETCH_H
#define UG_PREFETCH_H

#include <stddef.h>

static inline void ug_prefetch_rows(const void *first, size_t rows, size_t stride_bytes, size_t row_bytes)
{
    const char *row = first;
    for (size_t r = 0; r < rows; r++, row += stride_bytes)
        for (size_t b = 0; b < row_bytes; b += 64) __builtin_prefetch(row + b, 0, 2); /* into L2: an item's rows exceed L1 */
}

#endif
