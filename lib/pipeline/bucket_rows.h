// The rows a bucket of documents packs into (a layout per batch, [[parallel.bucket]]): as long
// as its longest piece needs, seq_len halved while the halves still hold it and divide
// seq_len, so a round keeps the global batch's token budget in row_factor x as many rows and
// a micro-batch of micro_batch rows needs row_factor x less activation memory. What the
// bucket batcher (lib/dataset/bucket_batcher.h), the bucketed engine's lanes and the bucket
// planner's memory check (lib/plan/document_cost.h) all go by.
//
//   bucket_row_length(2048, 300) == 512;  bucket_row_factor(2048, 300) == 4
#pragma once

#include <cstdint>

namespace hetu::pipeline {

// The row length for pieces of at most `longest` tokens (1 <= longest <= seq_len).
inline int64_t bucket_row_length(int64_t seq_len, int64_t longest) {
  int64_t length = seq_len;
  while (length % 2 == 0 && length / 2 >= longest) length /= 2;
  return length;
}

// seq_len / bucket_row_length: rows of a bucket's round per row of seq_len.
inline int64_t bucket_row_factor(int64_t seq_len, int64_t longest) { return seq_len / bucket_row_length(seq_len, longest); }

}  // namespace hetu::pipeline
