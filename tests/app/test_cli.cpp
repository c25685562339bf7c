// The hetu binary as a user meets it: exit codes (0 ok, 2 usage/config, 1 runtime) and
// the one-line messages for a missing file, a TOML syntax error, an unknown --set key.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "tests/app/run_hetu.h"

namespace {

using hetu::test::run_hetu;
using Result = hetu::test::CliResult;

std::string temp_file(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / ("hetu_cli_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(path) << text;
  return path.string();
}

size_t count_lines(const std::string& text) { return static_cast<size_t>(std::count(text.begin(), text.end(), '\n')); }

const std::string kTiny = HETU_SOURCE_DIR "/configs/gpt2-tiny-cpu.toml";

}  // namespace

TEST_CASE("version and help flags", "[cli]") {
  Result version = run_hetu("--version");
  CHECK(version.exit_code == 0);
  CHECK_THAT(version.output, Catch::StartsWith("hetu 0.1.0"));
  Result help = run_hetu("--help");
  CHECK(help.exit_code == 0);
  for (const char* line : {"train", "config", "env", "--log-level"}) CHECK_THAT(help.output, Catch::Contains(line));
}

TEST_CASE("usage errors exit 2", "[cli]") {
  CHECK(run_hetu("").exit_code == 2);
  CHECK(run_hetu("no-such-command").exit_code == 2);
  CHECK(run_hetu("train").exit_code == 2);  // CONFIG is required
  CHECK(run_hetu("config").exit_code == 2);
  Result level = run_hetu("--log-level loud env");
  CHECK(level.exit_code == 2);
  CHECK_THAT(level.output, Catch::Contains("--log-level"));
}

TEST_CASE("a missing job file is a one-line error, exit 2", "[cli]") {
  Result result = run_hetu("config check /nonexistent/job.toml");
  CHECK(result.exit_code == 2);
  CHECK(result.output == "hetu: error: /nonexistent/job.toml: no such file\n");
}

TEST_CASE("a TOML syntax error names the file and line, exit 2", "[cli]") {
  const std::string path = temp_file("syntax.toml", "[job]\nname = \"x\"\n\n[model\narch = \"gpt2\"\n");
  Result result = run_hetu("config check " + path);
  CHECK(result.exit_code == 2);
  CHECK(count_lines(result.output) == 1);
  CHECK_THAT(result.output, Catch::StartsWith("hetu: error: " + path + ":4:"));
  CHECK_THAT(result.output, Catch::Contains("TOML syntax error"));
  std::filesystem::remove(path);
}

TEST_CASE("a broken value in a valid file names key and line, exit 2", "[cli]") {
  std::ifstream in(kTiny);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string from = "\nsteps = ";
  const size_t pos = text.find(from);
  REQUIRE(pos != std::string::npos);
  const size_t line = 2 + static_cast<size_t>(std::count(text.begin(), text.begin() + static_cast<long>(pos), '\n'));
  text.replace(pos, text.find('\n', pos + 1) - pos, "\nsteps = \"many\"");
  const std::string path = temp_file("badvalue.toml", text);
  Result result = run_hetu("config check " + path);
  CHECK(result.exit_code == 2);
  CHECK(result.output == "hetu: error: " + path + ":" + std::to_string(line) + ": training.steps: expected an integer, got string \"many\"\n");
  std::filesystem::remove(path);
}

TEST_CASE("an unknown key given with --set names the flag, exit 2", "[cli]") {
  Result result = run_hetu("config check " + kTiny + " --set training.stepz=5");
  CHECK(result.exit_code == 2);
  CHECK(result.output ==
        "hetu: error: --set training.stepz=5: training.stepz: unknown key 'stepz' in [training] (did you mean 'steps'?)\n");
}

TEST_CASE("config check prints the resolved config with overrides applied", "[cli]") {
  Result result = run_hetu("config check " + kTiny + " --set training.steps=70 --set model.flavor=tiny");
  CHECK(result.exit_code == 0);
  CHECK_THAT(result.output, Catch::Contains("steps = 70\n"));
  CHECK_THAT(result.output, Catch::Contains("[[parallel.replica]]"));
  CHECK_THAT(result.output, Catch::Contains(": OK"));
  Result embedded = run_hetu("config check");
  CHECK(embedded.exit_code == 0);
  CHECK_THAT(embedded.output, Catch::Contains("name = \"gpt2-tiny-cpu\""));
}

TEST_CASE("train --dry-run writes nothing, a run without data fails naming the shards", "[cli]") {
  namespace fs = std::filesystem;
  const fs::path out = fs::temp_directory_path() / ("hetu_cli_run_" + std::to_string(::getpid()));
  const std::string set_out = " --set job.out_dir=\\\"" + out.string() + "\\\"";
  Result dry = run_hetu("train " + kTiny + " --dry-run" + set_out);
  CHECK(dry.exit_code == 0);
  CHECK_THAT(dry.output, Catch::Contains("rank 0 -> localhost:0"));
  CHECK_FALSE(fs::exists(out));

  // Training end to end is tests/e2e/train_resume.sh; here the data is missing.
  Result run = run_hetu("train " + kTiny + set_out + " --set data.train=\\\"/nonexistent/train_*.bin\\\"");
  CHECK(run.exit_code == 2);
  CHECK_THAT(run.output, Catch::Contains("/nonexistent/train_*.bin"));
  fs::remove_all(out);
}

TEST_CASE("a GPU job on a machine without a usable GPU fails before compute, naming the device", "[cli]") {
  std::ifstream in(kTiny);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string cpu_node = "type = \"cpu\"";
  REQUIRE(text.find(cpu_node) != std::string::npos);
  text.replace(text.find(cpu_node), cpu_node.size(), "type = \"H100-80G\"");
  const std::string job = temp_file("gpu.toml", text);
  const bool has_gpu = run_hetu("env").output.find("devices   cuda:") != std::string::npos;
  Result run = run_hetu("train " + job + " --set data.train=\\\"/nonexistent/train_*.bin\\\"");
  CHECK(run.exit_code == 2);
  if (has_gpu) {
    CHECK_THAT(run.output, Catch::Contains("/nonexistent/train_*.bin"));  // got past the device, to the data
  } else {
    CHECK_THAT(run.output, Catch::Contains("device localhost:0 is a GPU, but this"));
    CHECK(run.output.find("parameters on") == std::string::npos);  // no model was built
  }
  std::filesystem::remove(job);
}

TEST_CASE("env reports BLAS, MPI and CUDA", "[cli]") {
  Result result = run_hetu("env");
  CHECK(result.exit_code == 0);
  for (const char* key : {"BLAS", "OpenBLAS", "CPU ISA", "CPU GEMM", "MPI", "Open MPI", "CUDA", "devices"}) {
    CHECK_THAT(result.output, Catch::Contains(key));
  }
}

TEST_CASE("data balance reports a row per balance window, none less even than one batch at a time", "[cli]") {
  Result result = run_hetu("data balance --documents 3000 --seed 5 --balance-window 1,4");
  REQUIRE(result.exit_code == 0);
  auto attention = [&](const std::string& row) {  // the first figure after the row's name
    const size_t at = result.output.find("\n" + row + " ");
    REQUIRE(at != std::string::npos);
    return std::stod(result.output.substr(at + row.size() + 2));
  };
  const double one = attention("balanced"), four = attention("balanced, window 4");
  CHECK(attention("in order") > one);
  CHECK(four <= one);
  Result bad = run_hetu("data balance --balance-window 1,0");
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.output, Catch::Contains("--balance-window '1,0'"));
}
