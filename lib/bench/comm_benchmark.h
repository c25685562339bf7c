// The table of `hetu bench comm` (run under mpirun): nccl-tests style of the communicator over all
// ranks, per message size from 1 KiB to 16 MiB (f32): all_reduce, all_gather,
// reduce_scatter, and the generic repartition (plan_repartition + execute of S(0) -> S(1)
// over every rank, an all-to-all of boxes). --device cpu: the MPI communicator on host
// buffers; --device cuda:N: the NCCL communicator on device buffers, one GPU per rank (one
// rank: GPU N; several: GPU <local rank> of the node). Time is the slowest rank's mean over
// `iterations`, the device synchronised before the clock is read; algbw = size / time; busbw =
// algbw x the ring factor of nccl-tests (all_reduce 2(n-1)/n; the others (n-1)/n). size is the
// full tensor: the all_reduce buffer, the all_gather output, the reduce_scatter input, the
// repartitioned global tensor. On the CPU a blocking MPI_Allreduce follows all_reduce: the
// peer of the communicator's non-blocking call polled under the deadline (comm_deadline.h).
//
//   run_comm_benchmark({.iterations = 20, .device = "cpu"});   // rank 0 prints the table
#pragma once

#include <string>

namespace hetu::bench {

struct CommBenchOptions {
  int iterations = 20;
  std::string device = "cpu";  // cpu: MPI over host buffers; cuda:N: NCCL, one GPU per rank
};

// Starts MPI, runs every size and collective, and returns 0; a UsageError (before MPI starts
// where it can) for iterations < 1 or a CUDA device this build or machine cannot use.
int run_comm_benchmark(const CommBenchOptions& options);

}  // namespace hetu::bench
