// The device a rank computes on and the precision it computes in, from the job file. A
// rank driving device `host:i` (rank_map.h) of a GPU node computes on CUDA device i of its
// machine, or on CUDA device 0 when it sees exactly one (Slurm's --gpus-per-task=1 and
// CUDA_VISIBLE_DEVICES give each rank its own); a CPU node's rank computes on the CPU.
// Everything a GPU rank lacks (a CUDA build, a usable device, enough devices) is a
// UsageError naming the device, before any compute.
//
//   Device d = compute_device(loaded, ranks.device_of_rank[rank]);   // cuda:1 for "gpu-a:1"
//   DType act = compute_dtype(c.training.precision);                 // bf16 for "bf16"
#pragma once

#include <string>

#include "lib/config/config.h"
#include "lib/core/device.h"
#include "lib/core/dtype.h"

namespace hetu::config {

// The catalogue entry of `device`'s node (nullptr for a host the cluster does not list).
const DeviceProfile* device_profile(const config::LoadedConfig& loaded, const config::DeviceId& device);
// True when `device`'s node is a GPU node of the catalogue.
bool is_gpu_device(const config::LoadedConfig& loaded, const config::DeviceId& device);

Device compute_device(const config::LoadedConfig& loaded, const config::DeviceId& device);

// A device type's dense peak in `precision`: bf16's, fp16's, or fp32's (for fp32 and fp64).
double peak_tflops(const DeviceProfile& type, config::Precision precision);

// Activation dtype of a precision (fp32 -> f32, bf16 -> bf16, fp16 -> f16, fp64 -> f64); also the dtype of
// the gradient sync for training.grad_reduce_dtype.
DType compute_dtype(config::Precision precision);

// Why `device` cannot run CUDA work here (built without CUDA, no usable driver or device, an
// index past the visible devices), or "" when it can (and for the CPU).
std::string cuda_device_problem(Device device);

}  // namespace hetu::config
