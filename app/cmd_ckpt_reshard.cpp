// `hetu ckpt consolidate IN OUT` (a sharded checkpoint -> one whole-tensor file) and
// `hetu ckpt reshard IN OUT --config JOB` (rewrite a checkpoint with the stored boxes the
// given job's ranks will read): lib/weights/checkpoint_reshard.h.
#include <spdlog/spdlog.h>

#include "app/commands.h"
#include "lib/hspmd/communicator.h"
#include "lib/hspmd/mpi_session.h"
#include "lib/util/error.h"
#include "lib/weights/checkpoint_reshard.h"

namespace hetu::app {

int run_ckpt_consolidate(const CkptReshardOptions& options) {
  const weights::RewrittenCheckpoint r = weights::consolidate_checkpoint(options.input, options.output);
  spdlog::info("consolidated {} ({} tensors, step {}{}) -> {}", r.input_step, r.tensors, r.step,
               r.sharded ? ", sharded" : "", r.written);
  return 0;
}

int run_ckpt_reshard(const CkptReshardOptions& options) {
  MpiSession mpi(nullptr, nullptr);
  HT_CHECK(mpi.world_size() == 1, "hetu ckpt reshard runs as one process (not under mpirun)");
  const config::LoadedConfig loaded = load_job({options.config, options.overrides, LogLevel::info});
  const config::JobConfig& c = loaded.config;
  std::unique_ptr<Communicator> comm = make_mpi_communicator();
  const weights::RewrittenCheckpoint r = weights::reshard_checkpoint(options.input, options.output, c, mpi.host(), *comm);
  spdlog::info("resharded {} (step {}) for {} ({} devices): {} boxes -> {}", r.input_step, r.step, c.source, r.devices,
               r.boxes, r.written);
  return 0;
}

}  // namespace hetu::app
