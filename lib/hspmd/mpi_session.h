// The MPI process context: MpiSession initialises MPI on construction (when the launcher
// did not already) and finalises it on destruction. One per process, owned by main.
// mpi_library_version() works without initialising MPI (used by `hetu env`).
#pragma once

#include <string>
#include <vector>

namespace hetu {

class MpiSession {
 public:
  MpiSession(int* argc, char*** argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  const std::string& host() const { return host_; }
  // The host of every rank, indexed by rank (collective over MPI_COMM_WORLD).
  std::vector<std::string> all_hosts() const;
  // True on every rank when `value` is true on every rank (collective over MPI_COMM_WORLD).
  bool all_agree(bool value) const;
  // The end of a run that went well on every rank: a barrier under the communication deadline
  // (a rank that died ends the job instead of leaving finalize waiting for it), then
  // MPI_Finalize. A launcher whose finalize never returns (seen once in a while with Slurm's
  // PMIx on heterogeneous jobs) gets kFinalizeSeconds; then the process logs it and exits
  // with `exit_code` all the same. Returns exit_code.
  int finalize(int exit_code);
  // Ends every rank with `exit_code` after a fatal error on this one: the other ranks log
  // `message` first (mpi_abort_job in comm_deadline.h). One rank: exits.
  [[noreturn]] void abort(int exit_code, const std::string& message) const;

 private:
  int rank_ = 0;
  int world_size_ = 1;
  std::string host_;
  bool owns_mpi_ = false;
};

std::string mpi_library_version();

}  // namespace hetu
