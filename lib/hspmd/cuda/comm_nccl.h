// The NCCL Communicator for CUDA tensors (comm_nccl.cpp; CUDA builds only). Device id = rank
// of MPI_COMM_WORLD, each rank driving one GPU. Creating it is collective over every rank
// (it builds the world communicator, used by send/recv/batch_send_recv); the communicator of
// any other group is created on first use, collectively over the group's members only, with
// the ncclUniqueId sent by the group's first member over MPI, and cached.
// Every collective is enqueued on the current stream of this rank's GPU (see Note [One stream
// per device] in lib/core/cuda/context.cpp): it returns before the data has moved, and later
// kernels and copies on that stream see the result.
//   auto comm = make_nccl_communicator();      // GPU = local rank % visible GPUs
//   comm->all_reduce(grad, comm->world());
#pragma once

#include <memory>

#include "lib/hspmd/communicator.h"

// make_nccl_communicator is declared in communicator.h (a stub throws in CPU-only builds).
