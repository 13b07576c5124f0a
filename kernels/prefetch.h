/* SPDX-License-Identifier: MIT */
/* Software prefetch of the strided rows a GDN work item reads next.
 *
 * A chunk of a [B, T, heads, dim] tensor is BT rows of dim elements, one per
 * token, each in its own 4 KiB page at the bench's sizes (heads * dim * 2
 * bytes apart), where the hardware prefetchers, which follow streams within
 * a page, do not reach. gdn_chunk_scaled_kkt, whose products per item are
 * the smallest of the GDN kernels (one key tile feeds one 64 x 64 Gram
 * matrix), requests the next item's key rows while the current one computes
 * (measured faster: docs/performance.md); gdn_recompute_wu's staging
 * requests its token rows two rows ahead, A's among them, which its
 * products then read in place. The other kernels measured no difference
 * within the noise and do without. A hint only: no effect on any result. */
#ifndef UG_PREFETCH_H
#define UG_PREFETCH_H

#include <stddef.h>

/* Into L2: an item's rows exceed L1. */
static inline void ug_prefetch_rows(const void *first, size_t rows, size_t stride_bytes, size_t row_bytes)
{
    const char *row = first;
    for (size_t r = 0; r < rows; r++, row += stride_bytes)
        for (size_t b = 0; b < row_bytes; b += 64) __builtin_prefetch(row + b, 0, 2);
}

#endif
