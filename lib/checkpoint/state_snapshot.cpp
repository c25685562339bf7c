// SnapshotWriter (one rank's boxes into a partial checkpoint file, written then renamed) and
// list_snapshots.
// See Note [State snapshots] (state_snapshot.h).
#include "lib/checkpoint/state_snapshot.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>

#include "lib/checkpoint/checkpoint_file.h"
#include "lib/util/error.h"

namespace hetu::checkpoint {

namespace fs = std::filesystem;

namespace {

constexpr const char* kStepPrefix = "step-";

std::string step_folder_name(int64_t step) { return fmt::format("{}{:07}", kStepPrefix, step); }

// The step of a "step-NNNNNNN" folder name, nullopt for anything else.
std::optional<int64_t> folder_step(const std::string& name) {
  if (name.rfind(kStepPrefix, 0) != 0 || name.size() == std::char_traits<char>::length(kStepPrefix)) {
    return std::nullopt;
  }
  int64_t step = 0;
  for (size_t i = std::char_traits<char>::length(kStepPrefix); i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return std::nullopt;
    step = step * 10 + (name[i] - '0');
  }
  return step;
}

// Sub-folders of `dir` whose name starts with `prefix`, in name order.
std::vector<fs::path> folders(const fs::path& dir, std::string_view prefix) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (e.is_directory(ec) && name.rfind(prefix, 0) == 0) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

SnapshotWriter::SnapshotWriter(std::string rank_dir, std::map<std::string, LocalSlot> slots)
    : rank_dir_(std::move(rank_dir)), slots_(std::move(slots)) {}

std::string SnapshotWriter::save(const runtime::Snapshot& s) const {
  const fs::path dir(rank_dir_);
  fs::create_directories(dir);
  const fs::path work = dir / fmt::format(".tmp-{}-{}", step_folder_name(s.step), ::getpid());
  fs::remove_all(work);
  fs::create_directory(work);
  {
    CheckpointFileWriter w = CheckpointFileWriter::create((work / kCheckpointFileName).string(),
                                                          kPartialFormatVersion, s.step, s.metadata);
    for (const auto& [name, tensor] : s.tensors) {
      auto it = slots_.find(name);
      HT_CHECK(it != slots_.end(), "state snapshot: no placement known for tensor {}", name);
      const LocalSlot& slot = it->second;
      const Tensor flat = tensor.contiguous().reshape({tensor.numel()});
      for (const StoredPiece& p : slot.pieces()) {
        w.write_box(name, slot.shape, tensor.dtype(), p.box, flat.narrow(0, p.offset, p.count).view(p.box.size));
      }
    }
    w.close();
  }
  const fs::path target = dir / step_folder_name(s.step);
  fs::remove_all(target);  // a step written again (a resumed run recomputing it)
  fs::rename(work, target);
  // Keep this step and the one before it; remove older ones and stale work folders.
  for (const fs::path& p : folders(dir, "")) {
    const std::string name = p.filename().string();
    const std::optional<int64_t> step = folder_step(name);
    const bool stale_work = name.rfind(".tmp-", 0) == 0;
    if (stale_work || (step && *step < s.step - 1) || (step && *step > s.step)) fs::remove_all(p);
  }
  return target.string();
}

std::map<int64_t, std::vector<std::string>> list_snapshots(const std::string& root) {
  std::map<int64_t, std::vector<std::string>> out;
  std::vector<fs::path> attempts = folders(root, "");
  auto number = [](const fs::path& p) {  // "attempt-12" -> 12 (attempt-10 is newer than attempt-9)
    const std::string name = p.filename().string();
    const size_t dash = name.find_last_of('-');
    const std::string digits = dash == std::string::npos ? "" : name.substr(dash + 1);
    return !digits.empty() && std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })
               ? std::stoll(digits)
               : int64_t{-1};
  };
  std::stable_sort(attempts.begin(), attempts.end(),
                   [&](const fs::path& a, const fs::path& b) { return number(a) > number(b); });  // newest first
  for (const fs::path& attempt : attempts) {
    for (const fs::path& rank : folders(attempt, "rank-")) {
      for (const fs::path& step_dir : folders(rank, kStepPrefix)) {
        const std::optional<int64_t> step = folder_step(step_dir.filename().string());
        const fs::path file = step_dir / kCheckpointFileName;
        std::error_code ec;
        if (step && fs::is_regular_file(file, ec)) out[*step].push_back(file.string());
      }
    }
  }
  return out;
}

}  // namespace hetu::checkpoint
