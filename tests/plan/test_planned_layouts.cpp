// The layout search (lib/plan/layout_search.h, through lib/plan/planned_layouts.h) against the
// exhaustive listing of the same space on small clusters of 2-3 emulated CPU types with slow
// links and tight memory: the same best step time, a best layout that the listing also finds
// that fast (the same job file: devices keep node order, so interchangeable devices are
// written one way), and the search's own prices equal to estimate_layout's of the job it
// writes. On the same clusters the search by runs (what larger clusters get) never beats the
// exhaustive optimum and prices what it returns the same way. The nodes' declared networks
// (link_gbps, link_latency_us) reach the cost model as the slower side of each pair.
#include <catch2/catch.hpp>

#include <cmath>
#include <set>
#include <string>

#include "lib/config/config.h"
#include "lib/plan/layout_cost.h"
#include "lib/plan/planned_layouts.h"
#include "tests/temp_dir.h"

namespace {

using hetu::plan::PlannedLayout;

constexpr const char* kCatalog = R"(
[[device]]
name = "cpu-slow"
kind = "cpu"
peak_tflops_fp32 = 0.1
memory_gib = 2
memory_bandwidth_gbs = 10
emulate_slowdown = 2.0
[[device]]
name = "cpu-mid"
kind = "cpu"
peak_tflops_fp32 = 0.15
memory_gib = 1
memory_bandwidth_gbs = 15
emulate_slowdown = 1.5
[[device]]
name = "cpu-small"
kind = "cpu"
peak_tflops_fp32 = 0.2
memory_gib = 0.02
memory_bandwidth_gbs = 20
)";

// A tiny GPT-2 (4 layers, 4 heads: tp 1, 2 or 4) on `nodes` ([[cluster.node]] tables).
std::string job(const std::string& nodes, int global_batch, int micro_batch) {
  return R"([job]
name = "search"
[model]
arch = "gpt2"
layers = 4
hidden = 128
heads = 4
vocab = 256
max_seq_len = 128
[data]
train = "unused_*.bin"
tokenizer = "byte"
[training]
steps = 1
global_batch = )" + std::to_string(global_batch) + "\nseq_len = 128\nmicro_batch = " + std::to_string(micro_batch) +
         "\n[cluster]\ndevice_catalog = \"catalog.toml\"\nrehearse = true\n" + nodes;
}

std::string node(const std::string& host, const std::string& type, int count, const std::string& extra = "") {
  return "[[cluster.node]]\nhost = \"" + host + "\"\ndevices = { type = \"" + type + "\", count = " +
         std::to_string(count) + " }\n" + extra;
}

const std::string kSlowLink = "emulate_link_gbps = 1.0\nemulate_link_latency_us = 200\n";
const std::string kSlowerLink = "emulate_link_gbps = 0.2\nemulate_link_latency_us = 500\n";

struct Case {
  std::string name, nodes;
  int global_batch, micro_batch;
  std::string parallel = "";  // groups for the job to load (the search ignores them)
};

std::vector<Case> cases() {
  return {
      {"2 types, 3 devices, slow link", node("a", "cpu", 2) + node("b", "cpu-slow", 1, kSlowLink), 12, 4, ""},
      {"3 types, 4 devices, two slow links",
       node("a", "cpu", 1) + node("b", "cpu-slow", 2, kSlowLink) + node("c", "cpu-mid", 1, kSlowerLink), 16, 4, ""},
      {"3 types, 5 devices, tight memory",
       node("a", "cpu-small", 2) + node("b", "cpu", 1, kSlowLink) + node("c", "cpu-slow", 2, kSlowerLink), 10, 2, ""},
      {"2 types, 8 devices, few micro-batches",
       node("a", "cpu", 4) + node("b", "cpu-mid", 2, kSlowLink) + node("c", "cpu", 2, kSlowerLink), 4, 2,
       "[[parallel.replica]]\n  [[parallel.replica.stage]]\n  devices = \"a:0-3\"\n"
       "[[parallel.replica]]\n  [[parallel.replica.stage]]\n  devices = \"b:0-1; c:0-1\"\n"},
  };
}

hetu::config::LoadedConfig load(hetu::test::TempDir& dir, const Case& c) {
  dir.write("catalog.toml", kCatalog);
  dir.write("job.toml", job(c.nodes, c.global_batch, c.micro_batch) + c.parallel);
  return hetu::config::load_job_config(dir.file("job.toml"), {});
}

// Every listed layout within a relative 1e-12 of the best fitting one's step.
std::set<std::string> best_of_listing(const std::vector<hetu::plan::PlannedLayout>& all, double& best) {
  REQUIRE(!all.empty());
  REQUIRE(all[0].fits);
  best = all[0].estimate.prediction.step_s;
  std::set<std::string> tied;
  for (const hetu::plan::PlannedLayout& l : all)
    if (l.fits && std::fabs(l.estimate.prediction.step_s - best) <= 1e-12 * best) tied.insert(l.summary);
  return tied;
}

}  // namespace

TEST_CASE("layout search: the exhaustive listing's best layout on small clusters", "[layout_search]") {
  for (const Case& c : cases()) {
    INFO(c.name);
    hetu::test::TempDir dir("layout_search");
    const hetu::config::LoadedConfig loaded = load(dir, c);
    const std::vector<hetu::plan::PlannedLayout> all = hetu::plan::enumerate_layouts(loaded);
    double best = 0;
    const std::set<std::string> tied = best_of_listing(all, best);
    const hetu::plan::PlanResult found = hetu::plan::plan_layouts(loaded, {}, 3);
    CHECK(found.exact);
    REQUIRE(!found.ranked.empty());
    const hetu::plan::PlannedLayout& top = found.ranked[0];
    INFO(top.summary << " vs listing's " << all[0].summary);
    CHECK(top.fits);
    CHECK(top.estimate.prediction.step_s == Approx(best).epsilon(1e-12));
    CHECK(tied.count(top.summary) == 1);
    // The ranks below are layouts of the listing too, no better than the best, in order.
    for (size_t i = 1; i < found.ranked.size(); ++i) {
      CHECK(found.ranked[i].estimate.prediction.step_s >= found.ranked[i - 1].estimate.prediction.step_s * (1 - 1e-12));
    }
  }
}

TEST_CASE("layout search: its own prices are estimate_layout's of the job it writes", "[layout_search]") {
  for (const Case& c : cases()) {
    INFO(c.name);
    hetu::test::TempDir dir("layout_search");
    const hetu::config::LoadedConfig loaded = load(dir, c);
    const hetu::plan::SearchCluster cluster = hetu::plan::search_cluster(loaded);
    const hetu::plan::SearchJob job = hetu::plan::search_job(loaded);
    double best = 0;
    best_of_listing(hetu::plan::enumerate_layouts(loaded), best);
    for (int64_t exact_devices : {64, 0}) {  // the whole space, then the search by runs
      INFO("exact_devices " << exact_devices);
      const hetu::plan::SearchResult r = hetu::plan::search_layouts(cluster, job, {.top = 2, .exact_devices = exact_devices});
      CHECK(r.exact == (exact_devices > 0));
      REQUIRE(!r.best.empty());
      // The app writes the same search's layouts as job files (checked by the job-file rules)
      // and prices them with estimate_layout.
      const hetu::plan::PlanResult planned = hetu::plan::plan_layouts(loaded, {}, 2, exact_devices);
      CHECK(r.best[0].prediction.step_s >= best * (1 - 1e-12));  // the runs' space is part of the whole
      if (exact_devices > 0) CHECK(r.best[0].prediction.step_s == Approx(best).epsilon(1e-12));
      for (size_t i = 0; i < r.best.size(); ++i)
        CHECK(planned.ranked[i].estimate.prediction.step_s == Approx(r.best[i].prediction.step_s).epsilon(1e-12));
      // Every returned layout: its replicas cover the devices in order, shares sum to the batch.
      for (const hetu::plan::SearchedLayout& l : r.best) {
        int64_t device = 0, shares = 0;
        for (const hetu::plan::SearchedReplica& replica : l.replicas) {
          shares += replica.micro_batches;
          int64_t layer = 0;
          for (const hetu::plan::SearchedStage& s : replica.stages) {
            CHECK(s.first_device == device);
            CHECK(s.first_layer == layer);
            device += s.devices;
            layer = s.last_layer + 1;
          }
          CHECK(layer == 4);
        }
        CHECK(device == static_cast<int64_t>(loaded.config.cluster.num_devices()));
        CHECK(shares == c.global_batch / c.micro_batch);
      }
    }
  }
}

TEST_CASE("layout search: a node's link_gbps and link_latency_us set the network between nodes", "[layout_search]") {
  hetu::test::TempDir dir("layout_search");
  dir.write("catalog.toml", kCatalog);
  const std::string parallel =
      "[[parallel.replica]]\n  [[parallel.replica.stage]]\n  devices = \"a:0\"\n"
      "[[parallel.replica]]\n  [[parallel.replica.stage]]\n  devices = \"b:0\"\n";
  auto sync_s = [&](const std::string& a_extra, const std::string& b_extra, hetu::plan::Link& between) {
    dir.write("job.toml", job(node("a", "A100-80G", 1, a_extra) + node("b", "A100-80G", 1, b_extra), 8, 4) + parallel);
    const hetu::config::LoadedConfig loaded = hetu::config::load_job_config(dir.file("job.toml"), {});
    between = hetu::plan::search_cluster(loaded).links[0][1];
    return hetu::plan::estimate_layout(loaded).prediction.grad_sync_s;
  };
  hetu::plan::Link assumed, declared;
  const double fast = sync_s("", "", assumed);
  // The slower side of the two: 10 Gb/s from b, 30 us from a.
  const double slow = sync_s("link_gbps = 100\nlink_latency_us = 30\n", "link_gbps = 10\nlink_latency_us = 5\n", declared);
  CHECK(declared.bytes_per_s == Approx(10e9 / 8));
  CHECK(declared.latency_s == Approx(30e-6));
  CHECK(assumed.bytes_per_s > declared.bytes_per_s);
  CHECK(slow > fast);
  // A bad value is a job-file error naming the key.
  dir.write("job.toml", job(node("a", "A100-80G", 1, "link_gbps = -1\n") + node("b", "A100-80G", 1), 8, 4) + parallel);
  CHECK_THROWS_WITH(hetu::config::load_job_config(dir.file("job.toml"), {}),
                    Catch::Matchers::Contains("cluster.node[0].link_gbps: must be a number >= 0"));
}
