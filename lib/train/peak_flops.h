// MFU's denominator for one rank: its device's peak FLOP/s. The catalogue's peak for GPUs,
// and for CPUs when the job's catalogue file gives the type its own nominal peak; otherwise
// the sgemm probe, cached per machine, thread count and build (lib/runtime/mfu.h).
//
//   double peak = device_peak_flops(loaded, ranks.device_of_rank[rank]);   // 989e12 on an H100 in bf16
#pragma once

#include "lib/config/config.h"

namespace hetu::train {

double device_peak_flops(const config::LoadedConfig& loaded, const config::DeviceId& device);

}  // namespace hetu::train
