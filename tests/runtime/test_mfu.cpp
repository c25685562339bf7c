// The CPU peak cache rules (Note [Peak cache rules], lib/runtime/mfu.h) with a fake probe that
// counts its calls, and MFU's cap at 100%.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <limits>

#include "lib/runtime/mfu.h"
#include "tests/temp_dir.h"

namespace {

using hetu::runtime::PeakContext;
using hetu::runtime::PeakRecord;

const PeakContext kContext{"Test CPU @ 2GHz", 2, 1000, 8};

PeakRecord good_record() { return {"Test CPU @ 2GHz", 2, 5e10, 2000, false}; }

}  // namespace

TEST_CASE("a cached peak is used only for the same CPU and threads, after the build, not under load", "[mfu]") {
  using hetu::runtime::peak_record_problem;
  CHECK(peak_record_problem(good_record(), kContext).empty());
  PeakRecord r = good_record();
  r.cpu_model = "Other CPU";
  CHECK_THAT(peak_record_problem(r, kContext), Catch::Matchers::Contains("another CPU"));
  r = good_record();
  r.threads = 4;
  CHECK_THAT(peak_record_problem(r, kContext), Catch::Matchers::Contains("4 thread"));
  r = good_record();
  r.probed_at = 999;
  CHECK_THAT(peak_record_problem(r, kContext), Catch::Matchers::Contains("before this build"));
  r = good_record();
  r.loaded = true;
  CHECK_THAT(peak_record_problem(r, kContext), Catch::Matchers::Contains("under load"));
  r = good_record();
  r.flops = 0;
  CHECK_FALSE(peak_record_problem(r, kContext).empty());
}

TEST_CASE("peak records round-trip through their text form, and damaged text is refused", "[mfu]") {
  const PeakRecord r{"Intel(R) Xeon(R) CPU @ 2.20GHz", 3, 1.25e11, 1700000000, true};
  const std::optional<PeakRecord> back = hetu::runtime::parse_peak_record(hetu::runtime::format_peak_record(r));
  REQUIRE(back);
  CHECK(back->cpu_model == r.cpu_model);
  CHECK(back->threads == 3);
  CHECK(back->flops == r.flops);
  CHECK(back->probed_at == r.probed_at);
  CHECK(back->loaded);
  CHECK_FALSE(hetu::runtime::parse_peak_record("Intel\n51e9\n"));  // the old two-line cache
  CHECK_FALSE(hetu::runtime::parse_peak_record("cpu_model x\nthreads two\nflops 1\nprobed_at 1\nloaded 0\n"));
}

TEST_CASE("load: other runnable processes plus the probe's threads beyond the CPUs", "[mfu]") {
  CHECK_FALSE(hetu::runtime::under_load(0, 2, 2));
  CHECK(hetu::runtime::under_load(1, 2, 2));
  CHECK_FALSE(hetu::runtime::under_load(5, 1, 8));
}

TEST_CASE("cpu_peak_flops probes only when the cache is unusable and keeps the best probe", "[mfu]") {
  hetu::test::TempDir dir("mfu_cache");
  const std::string cache = dir.file("peak.txt");
  int calls = 0;
  std::vector<double> results = {3e10, 5e10, 4e10};
  auto probe = [&](double) { return results[static_cast<size_t>(calls++ % 3)]; };
  int64_t others = 0;
  auto runnable = [&] { return others; };
  PeakContext context = kContext;
  context.build_time = 0;  // any probe is newer than the build

  // No cache: three probes, the best kept and written.
  CHECK(hetu::runtime::cpu_peak_flops(cache, context, probe, runnable, 3, 0.0) == 5e10);
  CHECK(calls == 3);
  // A usable cache: no probe.
  CHECK(hetu::runtime::cpu_peak_flops(cache, context, probe, runnable, 3, 0.0) == 5e10);
  CHECK(calls == 3);
  // Another thread count: probed again.
  PeakContext more = context;
  more.threads = 4;
  more.cpus = 8;
  hetu::runtime::cpu_peak_flops(cache, more, probe, runnable, 3, 0.0);
  CHECK(calls == 6);
  // A new build (newer than the record): probed again.
  PeakContext rebuilt = more;
  rebuilt.build_time = std::numeric_limits<int32_t>::max();
  hetu::runtime::cpu_peak_flops(cache, rebuilt, probe, runnable, 3, 0.0);
  CHECK(calls == 9);
  // A probe under load is recorded as such, and the next run probes again; a loaded value
  // of the same CPU, threads and build still bounds a later probe's result from below.
  std::filesystem::remove(cache);
  others = 8;
  results = {1e10, 1e10, 1e10};
  CHECK(hetu::runtime::cpu_peak_flops(cache, context, probe, runnable, 3, 0.0) == 1e10);
  CHECK(calls == 12);
  auto read_record = [&] {
    std::ifstream in(cache);
    return hetu::runtime::parse_peak_record(std::string((std::istreambuf_iterator<char>(in)), {}));
  };
  REQUIRE(read_record());
  CHECK(read_record()->loaded);
  others = 0;
  results = {0.5e10, 0.5e10, 0.5e10};
  CHECK(hetu::runtime::cpu_peak_flops(cache, context, probe, runnable, 3, 0.0) == 1e10);
  CHECK(calls == 15);
  CHECK_FALSE(read_record()->loaded);
  CHECK(hetu::runtime::cpu_peak_flops(cache, context, probe, runnable, 3, 0.0) == 1e10);
  CHECK(calls == 15);
}

TEST_CASE("MFU is shown at most 100%", "[mfu]") {
  CHECK(hetu::runtime::shown_mfu(0.42) == 0.42);
  CHECK(hetu::runtime::shown_mfu(1.073) == 1.0);
  CHECK(hetu::runtime::shown_mfu(3.0) == 1.0);
}
