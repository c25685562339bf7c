// CheckpointManager: the folder protocol (step folders written to a hidden work folder,
// fsynced and renamed in, the `latest` pointer, pruning), described in Note [Checkpoint
// layout] (checkpoint.h) and Note [Crash safety]. The file itself is checkpoint_file.cpp.
#include "lib/checkpoint/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <utility>

#include "lib/checkpoint/checkpoint_file.h"
#include "lib/util/atomic_file.h"
#include "lib/util/error.h"

namespace hetu::checkpoint {

namespace fs = std::filesystem;

// Note [Crash safety]
// save() writes DIR/.tmp-step-N-<pid>/checkpoint.h5, fsyncs the file and the temp folder,
// renames the folder to DIR/step-N, fsyncs DIR, and only then replaces DIR/latest (itself
// atomic). A crash before the rename leaves only a .tmp folder, which nothing reads and the
// next save deletes; a crash after it leaves a complete step folder. Replacing an existing
// step-N swaps the two folders with renameat2(RENAME_EXCHANGE), so step-N is never absent.
// Where the filesystem cannot exchange, step-N is first renamed to .old-step-N-<pid>; a crash
// between the two renames leaves step-N missing, so latest() answers with the .old folder and
// the next save renames it back. Pruned folders are renamed to .tmp-* before deletion, so a
// half-deleted folder never carries a step-N name. save() is begin_save(), the write, and
// finish_save(); save_sharded brackets its ranks' writes with the same two (Note [Sharded save]).

namespace {

// ---- names ----

std::string step_folder_name(int64_t step) { return fmt::format("step-{:07d}", step); }

// "step-0000042" -> 42; nullopt for anything else.
std::optional<int64_t> parse_step_folder_name(const std::string& name) {
  constexpr std::string_view prefix = "step-";
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  if (name.size() - prefix.size() > 18) return std::nullopt;
  int64_t step = 0;
  for (size_t i = prefix.size(); i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return std::nullopt;
    step = step * 10 + (name[i] - '0');
  }
  return step;
}

// ---- files and folders ----

void fsync_path(const fs::path& path, bool directory) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | (directory ? O_DIRECTORY : 0));
  HT_CHECK(fd >= 0, "checkpoint: cannot open {} to fsync: {}", path.string(), std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  HT_CHECK(rc == 0, "checkpoint: fsync {}: {}", path.string(), std::strerror(err));
}

void rename_path(const fs::path& from, const fs::path& to) {
  HT_CHECK(::rename(from.c_str(), to.c_str()) == 0, "checkpoint: cannot rename {} to {}: {}", from.string(),
           to.string(), std::strerror(errno));
}

// Swaps two folders atomically; false when the filesystem (or the platform) cannot.
bool exchange_paths(const fs::path& a, const fs::path& b) {
#ifdef RENAME_EXCHANGE
  if (::renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE) == 0) return true;
  HT_CHECK(errno == EINVAL || errno == ENOSYS || errno == ENOTSUP || errno == EOPNOTSUPP,
           "checkpoint: cannot exchange {} and {}: {}", a.string(), b.string(), std::strerror(errno));
#else
  (void)a;
  (void)b;
#endif
  return false;
}

void remove_path(const fs::path& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
  HT_CHECK(!ec, "checkpoint: cannot remove {}: {}", path.string(), ec.message());
}

// Problems with `expected`, one line each ("FILE: tensor NAME: ...").
std::vector<std::string> expectation_problems(const std::string& file, const std::vector<StoredTensor>& stored,
                                              const std::map<std::string, ExpectedTensor>& expected) {
  std::vector<std::string> problems;
  std::map<std::string, const StoredTensor*> by_name;
  for (const StoredTensor& t : stored) by_name[t.name] = &t;
  for (const auto& [name, want] : expected) {
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      problems.push_back(fmt::format("{}: tensor {}: missing from the checkpoint (expected shape {} {})", file, name,
                                     shape_str(want.shape), to_string(want.dtype)));
      continue;
    }
    const StoredTensor& have = *it->second;
    if (have.shape != want.shape) {
      problems.push_back(fmt::format("{}: tensor {}: shape {} in the checkpoint, expected {}", file, name,
                                     shape_str(have.shape), shape_str(want.shape)));
    }
    if (have.dtype != want.dtype) {
      problems.push_back(fmt::format("{}: tensor {}: dtype {} in the checkpoint, expected {}", file, name,
                                     to_string(have.dtype), to_string(want.dtype)));
    }
  }
  for (const StoredTensor& t : stored) {
    if (!expected.count(t.name)) {
      problems.push_back(fmt::format("{}: tensor {}: in the checkpoint (shape {} {}) but not expected", file, t.name,
                                     shape_str(t.shape), to_string(t.dtype)));
    }
  }
  return problems;
}

}  // namespace


CheckpointManager::CheckpointManager(std::string dir, int64_t keep) : dir_(std::move(dir)), keep_(keep) {
  HT_USAGE_CHECK(keep_ >= 1, "checkpoint: keep must be >= 1, got {}", keep_);
  HT_USAGE_CHECK(!dir_.empty(), "checkpoint: the checkpoint folder must not be empty");
}

std::string CheckpointManager::save(const CheckpointData& data) {
  HT_CHECK(data.step >= 0, "checkpoint: step must be >= 0, got {}", data.step);
  for (const auto& [name, tensor] : data.tensors) {
    HT_CHECK(!name.empty(), "checkpoint: a tensor has an empty name");
    HT_CHECK(tensor.defined(), "checkpoint: tensor {} is undefined", name);
    HT_CHECK(tensor.device().is_cpu(), "checkpoint: tensor {} is on {}, expected a CPU tensor", name,
             tensor.device().str());
  }
  for (const auto& [key, value] : data.metadata) HT_CHECK(!key.empty(), "checkpoint: a metadata key is empty");

  const std::string work = begin_save(data.step);
  try {
    CheckpointFileWriter file = CheckpointFileWriter::create((fs::path(work) / kCheckpointFileName).string(),
                                                             kWholeFormatVersion, data.step, data.metadata);
    for (const auto& [name, tensor] : data.tensors) file.write_tensor(name, tensor);
    file.close();
  } catch (...) {
    abandon_save(work);
    throw;
  }
  return finish_save(work, data.step);
}

std::string CheckpointManager::begin_save(int64_t step) const {
  HT_CHECK(step >= 0, "checkpoint: step must be >= 0, got {}", step);
  const fs::path dir(dir_);
  if (!fs::is_directory(dir)) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    HT_CHECK(!ec, "checkpoint: cannot create {}: {}", dir_, ec.message());
    fsync_path(fs::absolute(dir).parent_path(), true);
  }
  clean_work_folders();
  const fs::path tmp = dir / fmt::format(".tmp-{}-{}", step_folder_name(step), ::getpid());
  remove_path(tmp);
  std::error_code ec;
  fs::create_directory(tmp, ec);
  HT_CHECK(!ec, "checkpoint: cannot create {}: {}", tmp.string(), ec.message());
  return tmp.string();
}

std::string CheckpointManager::finish_save(const std::string& work_folder, int64_t step) const {
  const fs::path dir(dir_);
  const fs::path tmp(work_folder);
  const std::string name = step_folder_name(step);
  HT_CHECK(tmp.parent_path() == dir && tmp.filename().string().rfind(".tmp-" + name + "-", 0) == 0,
           "checkpoint: {} is not a work folder of {} for step {}", work_folder, dir_, step);
  const fs::path final_dir = dir / name;
  try {
    fsync_path(tmp / kCheckpointFileName, false);
    fsync_path(tmp, true);
    if (!fs::exists(final_dir)) {
      rename_path(tmp, final_dir);
    } else if (!exchange_paths(tmp, final_dir)) {  // See Note [Crash safety]
      const fs::path old = dir / fmt::format(".old-{}-{}", name, ::getpid());
      rename_path(final_dir, old);
      rename_path(tmp, final_dir);
      fsync_path(dir, true);
      remove_path(old);
    }
    fsync_path(dir, true);
  } catch (...) {
    abandon_save(work_folder);
    throw;
  }
  remove_path(tmp);  // the old contents after an exchange; nothing otherwise
  write_file_atomic((dir / "latest").string(), name + "\n");
  prune();
  return final_dir.string();
}

void CheckpointManager::abandon_save(const std::string& work_folder) const noexcept {
  std::error_code ignored;
  fs::remove_all(work_folder, ignored);
}

void CheckpointManager::clean_work_folders() const {
  const fs::path dir(dir_);
  for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(".tmp-", 0) == 0 || name.rfind("latest.tmp.", 0) == 0) {
      remove_path(entry.path());
    } else if (name.rfind(".old-", 0) == 0) {
      // ".old-step-0000042-<pid>": restore it when a crash left step-0000042 missing.
      const std::string target = name.substr(5, name.rfind('-') - 5);
      if (parse_step_folder_name(target) && !fs::exists(dir / target)) {
        rename_path(entry.path(), dir / target);
      } else {
        remove_path(entry.path());
      }
    }
  }
  fsync_path(dir, true);
}

void CheckpointManager::prune() const {
  const fs::path dir(dir_);
  const std::optional<std::string> pointed = read_latest_name();
  const std::vector<std::string> steps = list();
  const size_t excess = steps.size() > static_cast<size_t>(keep_) ? steps.size() - static_cast<size_t>(keep_) : 0;
  for (size_t i = 0; i < excess; ++i) {
    const fs::path path(steps[i]);
    const std::string name = path.filename().string();
    if (pointed && *pointed == name) continue;
    const fs::path doomed = dir / fmt::format(".tmp-{}-{}", name, ::getpid());
    rename_path(path, doomed);
    remove_path(doomed);
  }
  fsync_path(dir, true);
}

std::optional<std::string> CheckpointManager::read_latest_name() const {
  const fs::path pointer = fs::path(dir_) / "latest";
  if (!fs::exists(pointer)) return std::nullopt;
  std::ifstream in(pointer);
  std::string name;
  std::getline(in, name);
  if (!parse_step_folder_name(name)) {
    HT_USAGE_ERROR("{}: expected a step folder name like step-0000042, got '{}'", pointer.string(), name);
  }
  return name;
}

std::optional<std::string> CheckpointManager::latest() const {
  const fs::path dir(dir_);
  if (!fs::is_directory(dir)) return std::nullopt;
  if (std::optional<std::string> name = read_latest_name()) {
    if (fs::exists(dir / *name / kCheckpointFileName)) return (dir / *name).string();
    // A crash while replacing this step on a filesystem without RENAME_EXCHANGE.
    for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
      const std::string entry_name = entry.path().filename().string();
      if (entry_name.rfind(".old-" + *name + "-", 0) == 0 && fs::exists(entry.path() / kCheckpointFileName)) {
        return entry.path().string();
      }
    }
  }
  const std::vector<std::string> steps = list();
  if (steps.empty()) return std::nullopt;
  return steps.back();
}

std::vector<std::string> CheckpointManager::list() const {
  const fs::path dir(dir_);
  std::vector<std::pair<int64_t, std::string>> steps;
  if (fs::is_directory(dir)) {
    for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
      const std::string name = entry.path().filename().string();
      if (std::optional<int64_t> step = parse_step_folder_name(name); step && entry.is_directory()) {
        steps.emplace_back(*step, entry.path().string());
      }
    }
  }
  std::sort(steps.begin(), steps.end());
  std::vector<std::string> out;
  for (auto& [step, path] : steps) out.push_back(std::move(path));
  return out;
}

std::vector<std::string> CheckpointManager::names(const std::string& path) const {
  std::vector<std::string> out = CheckpointFileReader(checkpoint_file(path).string()).tensor_names();
  std::sort(out.begin(), out.end());
  return out;
}

CheckpointData CheckpointManager::load(const std::string& path,
                                       const std::map<std::string, ExpectedTensor>* expected) const {
  CheckpointFileReader reader(checkpoint_file(path).string());
  CheckpointData data;
  data.step = reader.step();
  const std::vector<StoredTensor> stored = reader.tensors();
  if (expected) {  // before reading any data: a wrong model fails fast
    const std::vector<std::string> problems = expectation_problems(reader.path(), stored, *expected);
    if (!problems.empty()) HT_USAGE_ERROR("{}", join_problems(problems));
  }
  for (const StoredTensor& t : stored) data.tensors[t.name] = reader.read_tensor(t);
  data.metadata = reader.metadata();
  return data;
}

}  // namespace hetu::checkpoint
