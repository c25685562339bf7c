// SnapshotWriter (one rank's boxes into a partial checkpoint file, written then renamed),
// list_snapshots and read_snapshot_boxes (each cell of a wanted box from any file holding it).
// See Note [State snapshots] (state_snapshot.h).
#include "lib/io/state_snapshot.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>

#include "lib/io/checkpoint_file.h"
#include "lib/util/error.h"

namespace hetu::io {

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

// One stored piece of a tensor in one file: the whole tensor, or one of its boxes.
struct Piece {
  size_t file = 0;
  const StoredTensor* tensor = nullptr;
  StoredBox box;
};

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

std::vector<std::string> read_snapshot_boxes(const std::vector<std::string>& files, std::vector<TensorBox>& wanted) {
  std::vector<std::unique_ptr<CheckpointFileReader>> readers;
  std::vector<std::map<std::string, StoredTensor>> catalogues;
  for (const std::string& file : files) {
    readers.push_back(std::make_unique<CheckpointFileReader>(file));
    std::map<std::string, StoredTensor>& catalogue = catalogues.emplace_back();
    for (StoredTensor& t : readers.back()->tensors()) catalogue.emplace(t.name, std::move(t));
  }
  std::map<std::tuple<size_t, std::string, std::string>, Tensor> read;  // (file, tensor, box) -> data
  std::vector<std::string> missing;
  for (TensorBox& w : wanted) {
    std::vector<Piece> pieces;  // every stored piece overlapping w, in file order
    for (size_t f = 0; f < files.size(); ++f) {
      auto it = catalogues[f].find(w.name);
      if (it == catalogues[f].end()) continue;
      const StoredTensor& t = it->second;
      if (t.shape != w.shape) {
        HT_USAGE_ERROR("{}: tensor {}: shape {} in the snapshot, wanted {}", files[f], w.name, shape_str(t.shape),
                       shape_str(w.shape));
      }
      std::vector<StoredBox> boxes = t.boxes;
      if (t.crc32c) boxes = {StoredBox{full_box(t.shape), *t.crc32c}};
      for (const StoredBox& b : boxes) {
        if (!intersect(b.box, w.box).empty()) pieces.push_back({f, &t, b});
      }
    }
    if (w.box.empty()) continue;
    if (pieces.empty()) {
      missing.push_back(fmt::format("tensor {} box {}: in no snapshot", w.name, w.box.to_string()));
      continue;
    }
    const DType dtype = pieces.front().tensor->dtype;
    if (!w.values.defined()) {
      w.dtype = dtype;
      w.values = empty(w.box.size, dtype);
    }
    HT_CHECK(w.values.dtype() == dtype && w.values.is_contiguous() && w.values.shape() == w.box.size,
             "state snapshot: tensor {}: box {} needs contiguous values of shape {} {}", w.name, w.box.to_string(),
             shape_str(w.box.size), to_string(dtype));
    std::vector<Box> cut{w.box};
    for (const Piece& p : pieces) cut.push_back(intersect(p.box.box, w.box));
    for (const Box& cell : refine(cut)) {
      if (!w.box.contains(cell)) continue;
      auto holder = std::find_if(pieces.begin(), pieces.end(), [&](const Piece& p) { return p.box.box.contains(cell); });
      if (holder == pieces.end()) {
        missing.push_back(fmt::format("tensor {} box {}: in no snapshot", w.name, cell.to_string()));
        continue;
      }
      Tensor& data = read[{holder->file, w.name, holder->box.box.to_string()}];
      if (!data.defined()) data = readers[holder->file]->read_verified(*holder->tensor, holder->box.box, holder->box.crc32c);
      copy_region(data.raw_data(), holder->box.box, w.values.raw_data(), w.box, cell, dtype_size(dtype));
    }
  }
  return missing;
}

}  // namespace hetu::io
