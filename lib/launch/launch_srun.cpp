// het_components, het_group_tasks and het_rank (launch_srun.h).
#include "lib/launch/launch_srun.h"

#include <cstdio>
#include <cstdlib>
#include <regex>

#include "lib/util/error.h"
#include "lib/util/strings.h"

namespace hetu::launch {
namespace {

// The standard output of a shell command line (empty when it cannot run).
std::string command_output(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  ::pclose(pipe);
  return out;
}

std::vector<std::string> words(const std::string& text) {
  std::vector<std::string> out;
  for (std::string_view w : split(text, '\n')) {
    for (std::string_view part : split(w, ' ')) {
      if (!part.empty()) out.emplace_back(part);
    }
  }
  return out;
}

}  // namespace

std::vector<HetComponent> het_components() {
  const char* size = std::getenv("SLURM_HET_SIZE");
  if (size == nullptr || *size == '\0') return {};
  std::vector<HetComponent> out;
  for (int64_t g = 0; g < std::atoll(size); ++g) {
    const char* nodes = std::getenv(fmt::format("SLURM_JOB_NODELIST_HET_GROUP_{}", g).c_str());
    HT_CHECK(nodes != nullptr, "launch: SLURM_HET_SIZE is {} but SLURM_JOB_NODELIST_HET_GROUP_{} is not set", size, g);
    // Node names are letters, digits, '-', '_', '.', brackets and commas: nothing a shell expands.
    HetComponent c{g, words(command_output(fmt::format("scontrol show hostnames '{}'", nodes)))};
    HT_CHECK(!c.hosts.empty(), "launch: scontrol show hostnames '{}' printed no node (component {})", nodes, g);
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<HetGroupTasks> het_group_tasks(const std::vector<HetComponent>& components,
                                           const std::vector<std::string>& rank_hosts) {
  std::vector<HetGroupTasks> out;
  for (size_t r = 0; r < rank_hosts.size(); ++r) {
    const std::string& host = rank_hosts[r];
    const HetComponent* in = nullptr;
    for (const HetComponent& c : components) {
      for (const std::string& h : c.hosts) {
        if (h == host) in = &c;
      }
    }
    if (in == nullptr) {
      HT_USAGE_ERROR("launch: rank {} runs on \"{}\", a node of no component of this heterogeneous job", r, host);
    }
    if (!out.empty() && in->group < out.back().group) {
      HT_USAGE_ERROR("launch: rank {} on \"{}\" is in component {}, after ranks of component {}; list the job "
                     "file's nodes in component order", r, host, in->group, out.back().group);
    }
    if (out.empty() || out.back().group != in->group) out.push_back({in->group, 0});
    ++out.back().tasks;
  }
  return out;
}

int64_t het_rank(const std::vector<HetComponent>& components, const std::vector<HetGroupTasks>& tasks,
                 const std::string& srun_line, int64_t task) {
  static const std::regex node_of(R"(srun: error: (\S+): tasks? \d)");
  std::smatch m;
  if (!std::regex_search(srun_line, m, node_of)) {
    HT_USAGE_ERROR("launch: srun's line '{}' names no node, so its task is no rank of the heterogeneous job", srun_line);
  }
  const std::string node = m[1];
  int64_t first = 0;  // the rank of the component's first task
  for (const HetGroupTasks& g : tasks) {
    for (const HetComponent& c : components) {
      if (c.group != g.group) continue;
      for (const std::string& h : c.hosts) {
        if (h == node) return first + task;
      }
    }
    first += g.tasks;
  }
  HT_USAGE_ERROR("launch: srun says task {} on \"{}\" died, a node of no component of this step", task, node);
}

}  // namespace hetu::launch
