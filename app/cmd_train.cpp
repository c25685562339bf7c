// `hetu train CONFIG [--set k=v]... [--dry-run]`: every rank loads the job and runs its part
// of it (lib/train/train_job.h). An error on one rank of several ends them all; a job-file
// error before training is the same on every rank and printed once.
#include <spdlog/spdlog.h>

#include <exception>
#include <string>

#include "app/commands.h"
#include "lib/hspmd/mpi_session.h"
#include "lib/train/train_job.h"
#include "lib/util/error.h"

namespace hetu::app {
namespace {

// An error on one rank of several: the others would wait for it in their next collective,
// so it ends them all, each logging `message` (exit codes in README).
[[noreturn]] void end_job(const MpiSession& mpi, int exit_code, const std::string& message) {
  spdlog::error("hetu: error (rank {}): {}", mpi.rank(), message);
  mpi.abort(exit_code, message);
}

}  // namespace

int run_train(const TrainOptions& options) {
  MpiSession mpi(nullptr, nullptr);
  init_logging({mpi.rank(), options.log_level, "", true});
  bool training = false;
  const train::TrainJobOptions job{.dry_run = options.dry_run, .stop_at_step = options.stop_at_step,
                                   .state_dir = options.state_dir, .log_level = options.log_level};
  if (mpi.world_size() == 1) return train::train_job(load_job(options), job, mpi, training);
  try {
    return mpi.finalize(train::train_job(load_job(options), job, mpi, training));
  } catch (const UsageError& error) {
    if (!training) throw;  // a job-file error: the same on every rank, printed once by main
    end_job(mpi, 2, error.message());
  } catch (const Error& error) {
    end_job(mpi, 1, fmt::format("{} [{}]", error.message(), error.where()));
  } catch (const std::exception& error) {
    end_job(mpi, 1, error.what());
  }
}

}  // namespace hetu::app
