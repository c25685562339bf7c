// hetu launch under srun: ending a failed step at once, and one step over the components of
// a heterogeneous job.
//
// Ending a step at once: when a task dies, srun --kill-on-bad-exit ends the step the way Slurm
// ends any job, SIGTERM and then SIGKILL only KillWait seconds later (slurm.conf, 30 s by
// default; a scancel --signal=KILL meanwhile waits for it too), and the survivors, blocked in
// a collective with the dead rank, wait it out (hetu train takes SIGTERM as "checkpoint and
// stop" and cannot finish its step). So hetu launch runs srun with --kill-on-bad-exit=0 and,
// once srun reports a dead task, sends srun two SIGINTs within a second (cmd_launch.cpp):
// srun's forced termination, SIGKILL to every task of every component at once, as mpirun
// ends the survivors itself. (Finding the step with squeue and scancel --signal=KILL was
// tried first: squeue sometimes no longer lists a step, or a component of a heterogeneous
// step, whose tasks are dying.) The survivors' snapshots of the last step are whole (each is
// renamed into place), so nothing of the recovery state is lost.
//
// A heterogeneous job (hetu launch inside a heterogeneous allocation, SLURM_HET_SIZE set):
// one srun step over every component that still has ranks, `--het-group=0 -n 8 hetu train
// ... : --het-group=1 -n 3 hetu train ...`, each component given as many ranks as the job
// has devices on its nodes. Slurm numbers the tasks component by component (and block over
// a component's nodes), so the job file lists its nodes in that order; srun's report of a
// dead task numbers it within its component (het_rank gives its rank).
//
//   for (const HetGroupTasks& g : het_group_tasks(het_components(), hosts)) ...
//   rank = het_rank(components, tasks, failure.line, failure.rank);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hetu::launch {

// A component of the heterogeneous allocation this process runs in: its index and its nodes.
struct HetComponent {
  int64_t group = 0;
  std::vector<std::string> hosts;
};

// The components, from SLURM_HET_SIZE and SLURM_JOB_NODELIST_HET_GROUP_k (expanded by
// scontrol show hostnames); empty outside a heterogeneous allocation.
std::vector<HetComponent> het_components();

struct HetGroupTasks {
  int64_t group = 0;
  int64_t tasks = 0;
  bool operator==(const HetGroupTasks&) const = default;
};

// The tasks of each component for ranks on `rank_hosts` (the host of each rank, in rank
// order), components without ranks left out. UsageError naming the host when a rank's host
// is in no component, or when the ranks are not in component order.
std::vector<HetGroupTasks> het_group_tasks(const std::vector<HetComponent>& components,
                                           const std::vector<std::string>& rank_hosts);

// In a heterogeneous step srun numbers the tasks of each component from 0, and says so in its
// report of a dead one ("srun: error: NODE: task 0: Killed"): the job-wide rank of that task,
// from the node's component and the tasks of the components before it in the step (`tasks`,
// as het_group_tasks gave them). UsageError when the line names no node of a component the
// step ran.
int64_t het_rank(const std::vector<HetComponent>& components, const std::vector<HetGroupTasks>& tasks,
                 const std::string& srun_line, int64_t task);

}  // namespace hetu::launch
