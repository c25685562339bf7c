// The launch supervisor (supervisor.h): runs the launcher, reads its stderr for a dead rank,
// re-plans the job without that rank's device and relaunches, down to min_np ranks.
#include "lib/launch/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lib/launch/launch_failure.h"
#include "lib/launch/launch_job.h"
#include "lib/launch/launch_srun.h"
#include "lib/util/atomic_file.h"
#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace hetu::launch {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// The launcher's pid while it runs, and the signal that asked the supervisor to stop.
volatile sig_atomic_t g_stop_signal = 0;
volatile pid_t g_launcher = -1;

void forward_signal(int sig) {
  g_stop_signal = sig;
  if (g_launcher > 0) ::kill(g_launcher, sig);
}

struct LaunchResult {
  int exit_code = 0;                     // the launcher's (128 + signal when a signal ended it)
  std::optional<LaunchFailure> failure;  // the rank it says died first
  Clock::time_point failed_at;           // when the supervisor read that
  bool ended_after_finish = false;       // the run had finished; the launcher did not exit, so it was ended
};

// Runs argv (with `env` added to its environment) until it exits, passing its stderr through
// line by line to ours while reading it for a dead rank: `end_launcher(false)` runs once, as
// soon as the dead rank is read (srun: ending the step at once). Once `finished` exists (rank
// 0's marker: the run ended well), a launcher that has not exited `grace_s` later is ended
// (`end_launcher(true)`), killed 10 s later if it is still there, and the attempt counts as
// finished: Slurm 22.05's srun was seen to stay up after every task of a heterogeneous step
// had exited.
LaunchResult run_launcher(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                          const std::function<void(bool finished)>& end_launcher, const std::string& finished,
                          double grace_s) {
  int fds[2];
  HT_CHECK(::pipe2(fds, O_CLOEXEC) == 0, "launch: pipe: {}", std::strerror(errno));
  const pid_t pid = ::fork();
  HT_CHECK(pid >= 0, "launch: fork: {}", std::strerror(errno));
  if (pid == 0) {
    ::dup2(fds[1], STDERR_FILENO);
    for (const auto& [key, value] : env) ::setenv(key.c_str(), value.c_str(), 1);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    std::fprintf(stderr, "hetu launch: cannot run %s: %s\n", args[0], std::strerror(errno));
    ::_exit(127);
  }
  g_launcher = pid;
  ::close(fds[1]);
  LaunchResult result;
  LaunchFailureParser parser;
  std::string pending;
  char buffer[4096];
  std::optional<Clock::time_point> finished_at;  // when the marker was first seen
  bool killed = false;
  int status = 0;
  bool reaped = false;  // the launcher exited while a process it left still holds the pipe
  while (true) {
    pollfd p{fds[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, 500);
    if (ready < 0 && errno == EINTR) continue;
    if (!finished_at && fs::exists(finished)) finished_at = Clock::now();
    const double since_finished = finished_at ? std::chrono::duration<double>(Clock::now() - *finished_at).count() : 0;
    if (result.ended_after_finish) {
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        reaped = true;
        break;
      }
      if (!killed && since_finished > grace_s + 10) {
        spdlog::warn("launch: {} ignored being ended; killing it", argv[0]);
        ::kill(pid, SIGKILL);
        killed = true;
      }
    } else if (finished_at && since_finished > grace_s) {
      spdlog::warn("launch: {} has not exited {:.0f} s after the run finished ({}); ending it", argv[0], grace_s,
                   finished);
      result.ended_after_finish = true;
      end_launcher(true);
    }
    if (ready == 0) continue;
    const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    (void)!::write(STDERR_FILENO, buffer, static_cast<size_t>(n));
    pending.append(buffer, static_cast<size_t>(n));
    for (size_t end; (end = pending.find('\n')) != std::string::npos; pending.erase(0, end + 1)) {
      const bool known = parser.failure().has_value();
      parser.feed(pending.substr(0, end));
      if (!known && parser.failure()) {
        result.failed_at = Clock::now();
        end_launcher(false);
      }
    }
  }
  if (!pending.empty()) parser.feed(pending);
  ::close(fds[0]);
  while (!reaped && ::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  g_launcher = -1;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (result.ended_after_finish) result.exit_code = 0;
  result.failure = parser.failure();
  if (result.failure && result.failed_at == Clock::time_point{}) result.failed_at = Clock::now();
  return result;
}

std::vector<std::string> train_argv(const SupervisorOptions& o, const std::string& job, const std::vector<std::string>& sets,
                                    const std::string& state_dir) {
  std::vector<std::string> argv{fs::read_symlink("/proc/self/exe").string(), "--log-level", o.log_level_flag, "train", job};
  for (const std::string& s : sets) argv.insert(argv.end(), {"--set", s});
  argv.insert(argv.end(), {"--state-dir", state_dir});
  if (o.stop_at_step > 0) argv.insert(argv.end(), {"--stop-at-step", std::to_string(o.stop_at_step)});
  return argv;
}

std::string describe(const LaunchFailure& f) {
  if (f.stopped) return fmt::format("rank {} stopped answering (a communication deadline expired)", f.rank);
  return f.signal != 0 ? fmt::format("rank {} died on signal {}", f.rank, f.signal)
                       : fmt::format("rank {} exited with code {}", f.rank, f.exit_code);
}

// A name for this supervision, unique on the node: the run folder's name and our pid.
std::string run_id(const std::string& out_dir) {
  std::string name = fs::path(out_dir).lexically_normal().filename().string();
  if (name.empty() || name == "." || name == "..") name = "run";
  for (char& ch : name) {
    if (std::isalnum(static_cast<unsigned char>(ch)) == 0 && ch != '-' && ch != '_') ch = '_';
  }
  return fmt::format("{}-{}", name, ::getpid());
}

}  // namespace

std::vector<std::string> placement_args(const SupervisorOptions& o, const std::vector<std::string>& hosts,
                                        const std::string& hostfile, std::map<std::string, std::string>& env) {
  if (hosts.empty()) return {};
  if (o.launcher == "srun") {
    write_file_atomic(hostfile, join(hosts, "\n") + "\n");
    env["SLURM_HOSTFILE"] = hostfile;
    return {"--distribution=arbitrary"};
  }
  std::vector<std::string> slots;  // "host:count" for each run of equal hosts
  for (size_t i = 0, j = 0; i < hosts.size(); i = j) {
    while (j < hosts.size() && hosts[j] == hosts[i]) ++j;
    slots.push_back(fmt::format("{}:{}", hosts[i], j - i));
  }
  return {"--host", join(slots, ",")};
}

std::vector<std::string> launcher_argv(const SupervisorOptions& o, int64_t np, const std::vector<std::string>& placement,
                                       const std::vector<HetGroupTasks>& het, const std::vector<std::string>& train) {
  std::vector<std::string> extra;  // --launcher-args
  for (std::string_view word : split(o.launcher_args, ' ')) {
    if (!word.empty()) extra.emplace_back(word);
  }
  auto add = [](std::vector<std::string>& to, const std::vector<std::string>& words) {
    to.insert(to.end(), words.begin(), words.end());
  };
  std::vector<std::string> argv;
  if (o.launcher != "srun") {
    argv = {"mpirun", "-np", std::to_string(np)};
    add(argv, placement);
    add(argv, extra);
    add(argv, train);
    return argv;
  }
  argv = {"srun"};
  if (het.empty()) {
    add(argv, {"-n", std::to_string(np), "--kill-on-bad-exit=0"});
    add(argv, placement);
    add(argv, extra);
    add(argv, train);
    return argv;
  }
  for (const HetGroupTasks& g : het) {
    if (argv.size() > 1) argv.emplace_back(":");
    add(argv, {fmt::format("--het-group={}", g.group), "-n", std::to_string(g.tasks), "--kill-on-bad-exit=0"});
    add(argv, extra);
    add(argv, train);
  }
  return argv;
}

void check_supervisor_options(const SupervisorOptions& o) {
  if (o.launcher != "mpirun" && o.launcher != "srun") {
    HT_USAGE_ERROR("launch: --launcher must be mpirun or srun, got '{}'", o.launcher);
  }
  if (o.np < 1 || o.min_np < 1 || o.min_np > o.np) {
    HT_USAGE_ERROR("launch: need 1 <= --min-np <= --np, got --np {} --min-np {}", o.np, o.min_np);
  }
}

void check_supervisor_job(const SupervisorOptions& o, const config::JobConfig& job) {
  const auto needed = static_cast<int64_t>(job.strategy_devices().size());
  if (needed != o.np) {
    HT_USAGE_ERROR("launch: --np {} but the [parallel] groups of {} name {} device(s)", o.np, job.source, needed);
  }
}

void forward_stop_signals() {
  for (int sig : {SIGINT, SIGTERM, SIGUSR1}) {
    struct sigaction action{};
    action.sa_handler = forward_signal;
    ::sigemptyset(&action.sa_mask);
    ::sigaction(sig, &action, nullptr);
  }
}

int supervise(const SupervisorOptions& o, config::JobConfig job) {
  const std::string out_dir = job.job.out_dir;
  const std::string state_root = "/dev/shm/hetu-" + run_id(out_dir);
  // A heterogeneous Slurm allocation: one srun component per component with ranks.
  const std::vector<HetComponent> components = o.launcher == "srun" ? het_components() : std::vector<HetComponent>{};
  fs::create_directories(out_dir + "/launch");
  std::string job_file = o.config_path;  // the first attempt runs the job as given
  std::vector<std::string> sets = o.overrides;
  int64_t np = o.np;
  spdlog::info("launch: {} ranks under {} (at least {}, at most {} restarts); state snapshots in {}", np, o.launcher,
               o.min_np, o.max_restarts, state_root);
  bool unnamed_retried = false;  // the last attempt failed naming no rank and was run again
  for (int64_t attempt = 1;; ++attempt) {
    const std::string state_dir = fmt::format("{}/attempt-{}", state_root, attempt);
    std::map<std::string, std::string> env;
    std::vector<HetGroupTasks> het;  // a heterogeneous job's tasks per component (block placement in each)
    if (!components.empty()) {
      std::vector<std::string> hosts;
      for (const config::NodeSection& n : job.cluster.nodes) hosts.insert(hosts.end(), static_cast<size_t>(n.count), n.host);
      het = het_group_tasks(components, hosts);
    }
    const std::vector<std::string> placement =  // the first attempt runs where the launcher puts it
        attempt == 1 || !het.empty()
            ? std::vector<std::string>{}
            : placement_args(o, rank_hosts(job), fmt::format("{}/launch/hosts-attempt-{}", out_dir, attempt), env);
    const std::vector<std::string> argv = launcher_argv(o, np, placement, het, train_argv(o, job_file, sets, state_dir));
    spdlog::info("launch: attempt {}: {}{}", attempt, env.empty() ? "" : "SLURM_HOSTFILE=" + env["SLURM_HOSTFILE"] + " ",
                 join(argv, " "));
    const std::string finished = finished_marker(out_dir, state_dir);
    std::error_code stale;
    fs::remove(finished, stale);  // an earlier supervision of this out_dir may have left one
    const LaunchResult r = run_launcher(argv, env, [&](bool run_finished) {
      if (g_launcher <= 0) return;
      if (o.launcher != "srun") {  // mpirun ends the survivors of a failure itself
        if (run_finished) ::kill(g_launcher, SIGTERM);
        return;
      }
      // srun's forced termination: SIGKILL to every task now, not KillWait later (launch_srun.h).
      spdlog::info("launch: ending the srun step at once (two SIGINTs to srun: SIGKILL to every task)");
      ::kill(g_launcher, SIGINT);
      ::usleep(200000);
      ::kill(g_launcher, SIGINT);
    }, finished, o.finish_grace_s);
    auto finish = [&](int code) {
      std::error_code ec;
      fs::remove_all(state_root, ec);
      return code;
    };
    if (r.exit_code == 0) {
      spdlog::info("launch: attempt {} finished ({} ranks){}", attempt, np,
                   r.ended_after_finish ? "; its launcher was ended after the run finished" : "");
      return finish(0);
    }
    if (g_stop_signal != 0) {
      spdlog::info("launch: stopped on signal {}; the launcher exited {}", static_cast<int>(g_stop_signal), r.exit_code);
      return finish(r.exit_code);
    }
    if (!r.failure) {
      // Open MPI was seen to report a rank killed right after its start (before it reached
      // mpirun) only as "1 process returned a non-zero exit code", naming none: no device can
      // be removed, so the same ranks run once more; a second such failure in a row ends it.
      if (unnamed_retried || attempt > o.max_restarts) {
        spdlog::error("launch: {} exited {} without naming a rank that died{}; not relaunching", o.launcher,
                      r.exit_code, unnamed_retried ? ", again after a retry" : "");
        return finish(r.exit_code);
      }
      unnamed_retried = true;
      spdlog::warn("launch: {} exited {} without naming a rank that died; relaunching the same {} ranks once",
                   o.launcher, r.exit_code, np);
      continue;
    }
    unnamed_retried = false;
    LaunchFailure f = *r.failure;
    if (!het.empty()) f.rank = het_rank(components, het, f.line, f.rank);  // srun numbered it in its component
    if (f.signal == 0 && f.exit_code == 2) {
      spdlog::error("launch: {} (a usage or job-file error); not relaunching", describe(f));
      return finish(2);
    }
    if (attempt > o.max_restarts) {
      spdlog::error("launch: {} after {} restarts (--max-restarts {}); giving up", describe(f), attempt - 1,
                    o.max_restarts);
      return finish(1);
    }
    if (np - 1 < o.min_np) {
      spdlog::error("launch: {}; {} rank(s) would be left, below --min-np {}: giving up (the durable checkpoints in "
                    "{}/checkpoints remain)", describe(f), np - 1, o.min_np, out_dir);
      return finish(1);
    }
    // The lost device's snapshot goes with it; the survivors' stay for the relaunch.
    std::error_code ec;
    fs::remove_all(fmt::format("{}/rank-{}", node_state_dir(job, f.rank, state_dir), f.rank), ec);
    const std::string profile = out_dir + "/profile.toml";
    if (const std::string dropped = dropped_layout_note(job); !dropped.empty()) {
      spdlog::warn("launch: {} name devices; the relaunch drops them and trains the re-planned layout for the rest of "
                   "the run (any layout trains the same model)", dropped);
    }
    job = job_without_device(job, f.rank, fs::exists(profile) ? fs::absolute(profile).string() : "");
    job_file = fmt::format("{}/launch/attempt-{}.toml", out_dir, attempt + 1);
    write_file_atomic(job_file, config::to_toml(job));
    sets.clear();  // applied in the derived job
    --np;
    const double noticed_s = std::chrono::duration<double>(Clock::now() - r.failed_at).count();
    spdlog::warn("launch: {} ({}); removed its device, relaunching {} ranks with the layout re-planned ({}), {:.2f} s "
                 "after the launcher reported it", describe(f), f.line, np, job_file, noticed_s);
  }
}

}  // namespace hetu::launch
