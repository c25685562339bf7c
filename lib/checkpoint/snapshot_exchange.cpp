// assemble_newest_step: describe the snapshot files this rank sees, gather every rank's
// description, plan which rank reads each cell of each wanted box, read and send.
// See Note [Snapshot exchange] (snapshot_exchange.h).
#include "lib/checkpoint/snapshot_exchange.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "lib/checkpoint/checkpoint_file.h"
#include "lib/util/error.h"

namespace hetu::checkpoint {

namespace {

using json = nlohmann::json;

// One file this rank sees: its path and catalogue (the StoredTensors keep the dataset links
// reading needs; only what other ranks plan with is gathered).
struct LocalFile {
  std::string path;
  std::vector<StoredTensor> tensors;
};

// A stored box of a file of some rank's description, as the plan sees it.
struct Source {
  int64_t rank = 0;
  size_t file = 0;  // index among that rank's files of the step
  size_t tensor = 0;
  DType dtype = DType::f32;
  StoredBox box;
};

// One cell of a wanted box and who reads it for whom.
struct Transfer {
  int64_t receiver = 0;
  size_t wanted = 0;  // index in the receiver's wanted boxes
  Box cell;
  Source source;
};

json shape_json(const Shape& s) { return json(std::vector<int64_t>(s.begin(), s.end())); }
Shape json_shape(const json& j) { return j.get<std::vector<int64_t>>(); }

// Stored boxes of a catalogue entry: its boxes, or the whole tensor when written whole.
std::vector<StoredBox> stored_boxes(const StoredTensor& t) {
  if (t.crc32c) return {StoredBox{full_box(t.shape), *t.crc32c}};
  return t.boxes;
}

// This rank's files by step, opened; the ones that cannot be opened are left out (logged).
std::map<int64_t, std::vector<LocalFile>> open_files(const std::map<int64_t, std::vector<std::string>>& files,
                                                     std::map<int64_t, std::map<std::string, std::string>>& metadata) {
  std::map<int64_t, std::vector<LocalFile>> out;
  for (const auto& [step, paths] : files) {
    for (const std::string& path : paths) {
      try {
        CheckpointFileReader reader(path);
        if (!metadata.count(step)) metadata[step] = reader.metadata();
        out[step].push_back({path, reader.tensors()});
      } catch (const Error& e) {
        spdlog::warn("resume: snapshot {} cannot be read, left out: {}", path, e.message());
      }
    }
  }
  return out;
}

json describe(const std::map<int64_t, std::vector<LocalFile>>& files,
              const std::map<int64_t, std::map<std::string, std::string>>& metadata,
              const std::vector<TensorBox>& wanted) {
  json out = {{"wanted", json::array()}, {"steps", json::array()}};
  for (const TensorBox& w : wanted) {
    out["wanted"].push_back({{"name", w.name}, {"shape", shape_json(w.shape)}, {"offset", shape_json(w.box.offset)},
                             {"size", shape_json(w.box.size)}});
  }
  for (const auto& [step, list] : files) {
    json step_files = json::array();
    for (const LocalFile& f : list) {
      json tensors = json::array();
      for (const StoredTensor& t : f.tensors) {
        json boxes = json::array();
        for (const StoredBox& b : stored_boxes(t)) {
          boxes.push_back({shape_json(b.box.offset), shape_json(b.box.size), b.crc32c});
        }
        tensors.push_back({{"name", t.name}, {"dtype", static_cast<int>(t.dtype)}, {"shape", shape_json(t.shape)},
                           {"boxes", boxes}});
      }
      step_files.push_back({{"tensors", tensors}});
    }
    out["steps"].push_back({{"step", step}, {"metadata", metadata.at(step)}, {"files", step_files}});
  }
  return out;
}

// Every rank's description (all_gather of the serialised text, packed 8 bytes to an f64).
std::vector<json> gather(Communicator& comm, const json& mine) {
  const std::string text = mine.dump();
  const int64_t n = comm.world_size();
  if (n == 1) return {mine};
  const auto words = static_cast<int64_t>((text.size() + 7) / 8);
  Tensor sizes = empty({n}, DType::f64);
  comm.all_gather(full({1}, static_cast<double>(text.size()), DType::f64), sizes, comm.world());
  std::vector<int64_t> counts;
  for (int64_t r = 0; r < n; ++r) counts.push_back((static_cast<int64_t>(sizes.data<double>()[r]) + 7) / 8);
  Tensor in = zeros({std::max<int64_t>(words, 1)}, DType::f64);
  std::memcpy(in.raw_data(), text.data(), text.size());
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  Tensor all = empty({std::max<int64_t>(total, 1)}, DType::f64);
  comm.all_gather(in.narrow(0, 0, words), all.narrow(0, 0, total), comm.world(), counts);
  std::vector<json> out;
  const char* bytes = static_cast<const char*>(all.raw_data());
  for (int64_t r = 0, at = 0; r < n; at += counts[static_cast<size_t>(r)] * 8, ++r) {
    out.push_back(json::parse(std::string(bytes + at, static_cast<size_t>(sizes.data<double>()[r]))));
  }
  return out;
}

// Every stored box of every rank's files of `step`, by tensor name (then rank, file order).
std::map<std::string, std::vector<std::pair<Shape, Source>>> stored_at(const std::vector<json>& all, int64_t step) {
  std::map<std::string, std::vector<std::pair<Shape, Source>>> out;
  for (size_t q = 0; q < all.size(); ++q) {
    for (const json& s : all[q]["steps"]) {
      if (s["step"].get<int64_t>() != step) continue;
      const json& files = s["files"];
      for (size_t f = 0; f < files.size(); ++f) {
        const json& tensors = files[f]["tensors"];
        for (size_t t = 0; t < tensors.size(); ++t) {
          const Shape shape = json_shape(tensors[t]["shape"]);
          const auto dtype = static_cast<DType>(tensors[t]["dtype"].get<int>());
          for (const json& b : tensors[t]["boxes"]) {
            const StoredBox box{Box{json_shape(b[0]), json_shape(b[1])}, b[2].get<uint32_t>()};
            out[tensors[t]["name"].get<std::string>()].emplace_back(shape,
                                                                    Source{static_cast<int64_t>(q), f, t, dtype, box});
          }
        }
      }
    }
  }
  return out;
}

// Which rank reads each cell of every rank's wanted boxes at `step` (Note [Snapshot exchange],
// 2); nullopt with `reason` set when some cell is in no file of the step.
std::optional<std::vector<Transfer>> plan(const std::vector<json>& all, int64_t step, std::string& reason) {
  const auto n = static_cast<int64_t>(all.size());
  const std::map<std::string, std::vector<std::pair<Shape, Source>>> stored = stored_at(all, step);
  std::vector<int64_t> served(static_cast<size_t>(n), 0);  // bytes assigned to each rank
  std::vector<Transfer> out;
  for (int64_t r = 0; r < n; ++r) {
    const json& wanted = all[static_cast<size_t>(r)]["wanted"];
    for (size_t i = 0; i < wanted.size(); ++i) {
      const std::string name = wanted[i]["name"].get<std::string>();
      const Shape shape = json_shape(wanted[i]["shape"]);
      const Box box{json_shape(wanted[i]["offset"]), json_shape(wanted[i]["size"])};
      if (box.empty()) continue;
      std::vector<Source> sources;  // every stored box overlapping it, by rank, then file order
      if (auto it = stored.find(name); it != stored.end()) {
        for (const auto& [stored_shape, source] : it->second) {
          if (stored_shape == shape && !intersect(source.box.box, box).empty()) sources.push_back(source);
        }
      }
      std::vector<Box> cut{box};
      for (const Source& s : sources) {  // each distinct stored box once (a node's ranks list the same files)
        const Box part = intersect(s.box.box, box);
        if (std::find(cut.begin(), cut.end(), part) == cut.end()) cut.push_back(part);
      }
      for (const Box& cell : refine(cut)) {
        if (!box.contains(cell)) continue;
        const Source* pick = nullptr;
        for (const Source& s : sources) {
          if (!s.box.box.contains(cell)) continue;
          const bool better = pick == nullptr || (s.rank == r && pick->rank != r) ||
                              (pick->rank != r && s.rank != r && served[static_cast<size_t>(s.rank)] <
                                                                     served[static_cast<size_t>(pick->rank)]);
          if (better) pick = &s;
        }
        if (pick == nullptr) {
          reason = fmt::format("tensor {} box {} (rank {}) is in no snapshot of step {}", name, cell.to_string(), r, step);
          return std::nullopt;
        }
        if (pick->rank != r) served[static_cast<size_t>(pick->rank)] += cell.numel() * dtype_size(pick->dtype);
        out.push_back({r, i, cell, *pick});
      }
    }
  }
  return out;
}

// Carries out this rank's part of `transfers` (Note [Snapshot exchange], 3); false when a read
// failed on some rank (then nothing was sent and `wanted` is partly filled).
bool execute(Communicator& comm, const std::vector<Transfer>& transfers, const std::vector<LocalFile>& mine,
             std::vector<TensorBox>& wanted, AssembledStep& result) {
  const DeviceId me = comm.rank();
  std::map<std::string, std::unique_ptr<CheckpointFileReader>> readers;
  std::map<std::pair<size_t, std::string>, Tensor> read;  // (file, box) of a tensor -> its data
  std::vector<Tensor> outgoing(transfers.size()), incoming(transfers.size());
  bool ok = true;
  try {
    for (size_t k = 0; k < transfers.size(); ++k) {
      const Transfer& t = transfers[k];
      const size_t es = dtype_size(t.source.dtype);
      if (t.receiver == me) {
        TensorBox& w = wanted[t.wanted];
        if (!w.values.defined()) {
          w.dtype = t.source.dtype;
          w.values = empty(w.box.size, w.dtype);
        }
        HT_CHECK(w.values.dtype() == t.source.dtype && w.values.is_contiguous() && w.values.shape() == w.box.size,
                 "state snapshot: tensor {}: box {} needs contiguous values of shape {} {}", w.name, w.box.to_string(),
                 shape_str(w.box.size), to_string(t.source.dtype));
        if (t.source.rank != me) incoming[k] = empty(t.cell.size, t.source.dtype);
      }
      if (t.source.rank != me) continue;
      const LocalFile& file = mine.at(t.source.file);
      const StoredTensor& stored = file.tensors.at(t.source.tensor);
      Tensor& data = read[{t.source.file, stored.name + t.source.box.box.to_string()}];
      if (!data.defined()) {
        std::unique_ptr<CheckpointFileReader>& reader = readers[file.path];
        if (!reader) reader = std::make_unique<CheckpointFileReader>(file.path);
        data = reader->read_verified(stored, t.source.box.box, t.source.box.crc32c);
      }
      if (t.receiver == me) {
        TensorBox& w = wanted[t.wanted];
        copy_region(data.raw_data(), t.source.box.box, w.values.raw_data(), w.box, t.cell, es);
      } else {
        outgoing[k] = empty(t.cell.size, t.source.dtype);
        copy_region(data.raw_data(), t.source.box.box, outgoing[k].raw_data(), t.cell, t.cell, es);
      }
    }
  } catch (const Error& e) {
    spdlog::warn("resume: reading a snapshot failed: {}", e.message());
    ok = false;
  }
  if (comm.world_size() > 1) {
    Tensor failures = full({1}, ok ? 0.0 : 1.0, DType::f64);
    comm.all_reduce(failures, comm.world());
    if (failures.item() != 0.0) return false;
  } else if (!ok) {
    return false;
  }
  std::vector<P2POp> ops;
  for (size_t k = 0; k < transfers.size(); ++k) {
    if (outgoing[k].defined()) ops.push_back(P2POp::send(outgoing[k], transfers[k].receiver));
    if (incoming[k].defined()) ops.push_back(P2POp::recv(incoming[k], transfers[k].source.rank));
  }
  if (!ops.empty()) comm.batch_send_recv(ops);
  for (size_t k = 0; k < transfers.size(); ++k) {
    if (!incoming[k].defined()) continue;
    TensorBox& w = wanted[transfers[k].wanted];
    copy_region(incoming[k].raw_data(), transfers[k].cell, w.values.raw_data(), w.box, transfers[k].cell,
                dtype_size(w.dtype));
    result.cells_received += 1;
    result.bytes_received += incoming[k].numel() * static_cast<int64_t>(dtype_size(w.dtype));
  }
  return true;
}

}  // namespace

std::optional<AssembledStep> assemble_newest_step(Communicator& comm,
                                                  const std::map<int64_t, std::vector<std::string>>& files,
                                                  std::vector<TensorBox>& wanted) {
  std::map<int64_t, std::map<std::string, std::string>> metadata;
  const std::map<int64_t, std::vector<LocalFile>> mine = open_files(files, metadata);
  const std::vector<json> all = gather(comm, describe(mine, metadata, wanted));
  std::set<int64_t, std::greater<>> steps;  // every step some rank sees, newest first
  for (const json& d : all) {
    for (const json& s : d["steps"]) steps.insert(s["step"].get<int64_t>());
  }
  for (int64_t step : steps) {
    std::string reason;
    const std::optional<std::vector<Transfer>> transfers = plan(all, step, reason);
    if (!transfers) {
      spdlog::info("resume: step {} cannot be assembled: {}", step, reason);
      continue;
    }
    AssembledStep result;
    result.step = step;
    for (const json& d : all) {  // the metadata of the first rank that sees the step
      for (const json& s : d["steps"]) {
        if (s["step"].get<int64_t>() == step && result.metadata.empty()) {
          result.metadata = s["metadata"].get<std::map<std::string, std::string>>();
        }
      }
    }
    auto it = mine.find(step);
    const std::vector<LocalFile> none;
    for (TensorBox& w : wanted) w.values = Tensor();
    if (execute(comm, *transfers, it == mine.end() ? none : it->second, wanted, result)) return result;
    spdlog::info("resume: step {}: a snapshot read failed on some rank; trying the step below", step);
  }
  return std::nullopt;
}

}  // namespace hetu::checkpoint
