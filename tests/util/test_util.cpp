// lib/util: HT_CHECK errors carry message and file:line; string helpers; atomic writes.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "lib/util/atomic_file.h"
#include "lib/util/error.h"
#include "lib/util/logging.h"
#include "lib/util/strings.h"

using namespace hetu;

TEST_CASE("HT_CHECK throws hetu::Error with the message and the throwing file:line", "[util]") {
  const int line = __LINE__ + 2;
  try {
    HT_CHECK(1 + 1 == 3, "arithmetic is broken: {} != {}", 2, 3);
    FAIL("HT_CHECK did not throw");
  } catch (const UsageError&) {
    FAIL("HT_CHECK must throw a plain Error, not a UsageError");
  } catch (const Error& error) {
    CHECK(error.message() == "arithmetic is broken: 2 != 3");
    CHECK(std::string(error.what()) == "arithmetic is broken: 2 != 3");
    CHECK(error.where() == "tests/util/test_util.cpp:" + std::to_string(line));
  }
  CHECK_NOTHROW([] { HT_CHECK(true, "never"); }());
}

TEST_CASE("HT_USAGE_CHECK throws UsageError, a kind of Error", "[util]") {
  CHECK_THROWS_AS([] { HT_USAGE_CHECK(false, "bad flag {}", "--x"); }(), UsageError);
  CHECK_THROWS_WITH([] { HT_USAGE_CHECK(false, "bad flag {}", "--x"); }(), "bad flag --x");
}

TEST_CASE("string helpers", "[util]") {
  CHECK(trim("  a b \t\n") == "a b");
  CHECK(trim("   ").empty());
  CHECK(split("a,,b", ',') == std::vector<std::string_view>{"a", "", "b"});
  CHECK(split("", ',') == std::vector<std::string_view>{""});
  CHECK(parse_int64("42") == 42);
  CHECK(parse_int64("-7") == -7);
  CHECK_FALSE(parse_int64("4x").has_value());
  CHECK_FALSE(parse_int64("").has_value());
  CHECK_FALSE(parse_int64("99999999999999999999").has_value());
  CHECK(join({"a", "b", "c"}, ", ") == "a, b, c");
}

TEST_CASE("parse_log_level accepts the documented names only", "[util]") {
  CHECK(parse_log_level("debug") == LogLevel::debug);
  CHECK(to_string(LogLevel::warn) == "warn");
  CHECK_THROWS_WITH(parse_log_level("loud"), Catch::Contains("unknown level 'loud'"));
}

TEST_CASE("write_file_atomic replaces the whole file and leaves no temp file", "[util]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("hetu_atomic_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "out.txt").string();
  write_file_atomic(path, "first version, long");
  write_file_atomic(path, "second");
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  CHECK(text.str() == "second");
  CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator{}) == 1);
  // A failed write (missing folder) throws and creates nothing.
  CHECK_THROWS_AS(write_file_atomic((dir / "missing" / "x.txt").string(), "data"), Error);
  fs::remove_all(dir);
}
