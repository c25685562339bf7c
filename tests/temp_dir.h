// A fresh temporary folder for one test, removed (with everything in it) when it goes out of
// scope: $TMPDIR/hetu_test_<name>_<pid>.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

namespace hetu::test {

struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& name)
      : path(std::filesystem::temp_directory_path() / ("hetu_test_" + name + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  // The path of `name` inside the folder (the folder itself for "").
  std::string file(const std::string& name = "") const { return (name.empty() ? path : path / name).string(); }
  std::string str(const std::string& name = "") const { return file(name); }
  // Writes `text` (bytes as given) to `name` inside the folder.
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name, std::ios::binary) << text;
  }
};

}  // namespace hetu::test
