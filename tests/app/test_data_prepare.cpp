// `hetu data prepare` as a function: run_data_prepare() on temp files with the byte tokenizer
// (token counts, the val/train split, the summary line), refusal to overwrite shards, and
// the tokenizer name check. The splitting rules themselves are tested in tests/dataset.
#include "app/cmd_data.h"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "lib/dataset/token_shard.h"
#include "lib/util/error.h"
#include "tests/temp_dir.h"

namespace fs = std::filesystem;

namespace {

using hetu::test::TempDir;

// Runs run_data_prepare with stdout sent to a file; returns what it printed.
std::string run_captured(const hetu::app::DataPrepareOptions& options, const std::string& capture_path) {
  std::fflush(stdout);
  const int saved = ::dup(STDOUT_FILENO);
  FILE* capture = std::fopen(capture_path.c_str(), "w");
  REQUIRE(capture != nullptr);
  ::dup2(::fileno(capture), STDOUT_FILENO);
  int rc = -1;
  try {
    rc = hetu::app::run_data_prepare(options);
  } catch (...) {
    std::fflush(stdout);
    ::dup2(saved, STDOUT_FILENO);
    ::close(saved);
    std::fclose(capture);
    throw;
  }
  std::fflush(stdout);
  ::dup2(saved, STDOUT_FILENO);
  ::close(saved);
  std::fclose(capture);
  CHECK(rc == 0);
  std::ifstream in(capture_path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("run_data_prepare writes val and train shards and prints a summary", "[data_prepare]") {
  TempDir dir("run");
  std::ofstream(dir.file("a.txt")) << "hello";
  std::ofstream(dir.file("b.txt")) << " world!";
  hetu::app::DataPrepareOptions options;
  options.tokenizer = "byte";
  options.out_dir = dir.file("out");
  options.val_tokens = 4;
  options.shard_tokens = 5;
  options.inputs = {dir.file("a.txt"), dir.file("b.txt")};

  const std::string printed = run_captured(options, dir.file("stdout.txt"));
  // Each document starts with the byte tokenizer's separator 0: "\0hello\0 world!".
  CHECK_THAT(printed, Catch::StartsWith("data prepare: 14 tokens from 2 documents (byte tokenizer) -> " +
                                        options.out_dir +
                                        ": train 10 tokens in 2 shards, val 4 tokens in 1 shard, "));
  CHECK_THAT(printed, Catch::EndsWith(" s\n"));
  CHECK(std::count(printed.begin(), printed.end(), '\n') == 1);
  CHECK(hetu::dataset::TokenShard(dir.file("out/val_000000.bin")).size() == 4);
  CHECK(hetu::dataset::TokenShard(dir.file("out/train_000000.bin")).size() == 5);
  const hetu::dataset::TokenShard last(dir.file("out/train_000001.bin"));
  REQUIRE(last.size() == 5);
  CHECK(last.token(0) == 'o');
  CHECK(last.token(4) == '!');

  // A second run into the same folder is refused and changes nothing.
  CHECK_THROWS_AS(run_captured(options, dir.file("stdout2.txt")), hetu::UsageError);
  CHECK(std::distance(fs::directory_iterator(options.out_dir), fs::directory_iterator{}) == 3);
}

TEST_CASE("run_data_prepare rejects an unknown tokenizer name", "[data_prepare]") {
  hetu::app::DataPrepareOptions options;
  options.tokenizer = "bpe";
  options.out_dir = "unused";
  options.inputs = {"unused.txt"};
  CHECK_THROWS_WITH(hetu::app::run_data_prepare(options),
                    "data prepare: unknown tokenizer 'bpe' (expected byte, gpt2 or tiktoken)");
  CHECK_FALSE(fs::exists("unused"));
}
