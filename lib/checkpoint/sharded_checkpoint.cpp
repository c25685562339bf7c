// save_sharded (every rank's boxes checked for agreement, disjointness and coverage, then
// written into one checkpoint.h5 in turn), read_boxes (reshard on load from the stored
// boxes that overlap) and read_info. See Note [Sharded checkpoint file] (sharded_checkpoint.h)
// and Note [Sharded save].
#include "lib/checkpoint/sharded_checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "lib/checkpoint/checkpoint_file.h"
#include "lib/util/error.h"

namespace hetu::checkpoint {

namespace fs = std::filesystem;

// Note [Sharded save]
// 1. Every rank describes its boxes (and any problem with them, e.g. values of the wrong
//    shape) to every rank with all_gather; each rank then computes the same verdict (shapes
//    and dtypes agree, boxes lie inside, are disjoint and cover each tensor) and, if there is
//    a problem, all throw the same error. Nothing has been created yet.
// 2. Rank 0 runs CheckpointManager::begin_save (a fresh .tmp work folder) and broadcasts its
//    path. 3. A token goes around the ring 0 -> 1 -> ... -> n-1 -> 0 (send/recv): rank 0
//    creates checkpoint.h5 (root attributes, metadata), each rank opens it, writes its boxes
//    (creating a tensor's dataset when missing), closes and fsyncs it, and passes the token
//    on; a rank that fails passes the failure along instead and the others skip writing.
// 4. Only when the token is back with no failure does rank 0 run finish_save (fsync, rename
//    to step-N, `latest`, prune); otherwise it deletes the work folder. The outcome (the step
//    folder, or the failing rank and its message) is broadcast so every rank returns or
//    throws the same. A crash at any moment before the rename leaves only the .tmp folder,
//    so the previous checkpoint stays `latest` and loadable (Note [Crash safety]).

namespace {

// ---- messages between ranks: integers (exact below 2^53) and strings in f64 tensors ----

class Packer {
 public:
  void num(int64_t v) { out_.push_back(static_cast<double>(v)); }
  void str(const std::string& s) {  // the length, then 6 bytes per double
    num(static_cast<int64_t>(s.size()));
    for (size_t i = 0; i < s.size(); i += 6) {
      int64_t word = 0;
      for (size_t k = i; k < std::min(s.size(), i + 6); ++k)
        word = word * 256 + static_cast<unsigned char>(s[k]);
      num(word);
    }
  }
  Tensor tensor() const { return tensor_from(out_, {static_cast<int64_t>(out_.size())}); }

 private:
  std::vector<double> out_;
};

class Unpacker {
 public:
  Unpacker(const double* data, size_t size) : data_(data), size_(size) {}
  int64_t num() {
    HT_CHECK(at_ < size_, "save_sharded: a message from another rank ended early");
    return static_cast<int64_t>(data_[at_++]);
  }
  std::string str() {
    const auto n = static_cast<size_t>(num());
    std::string s(n, '\0');
    for (size_t i = 0; i < n; i += 6) {
      int64_t word = num();
      for (size_t k = std::min(n, i + 6); k > i; --k) {
        s[k - 1] = static_cast<char>(word % 256);
        word /= 256;
      }
    }
    return s;
  }

 private:
  const double* data_;
  size_t size_;
  size_t at_ = 0;
};

void broadcast_string(Communicator& comm, DeviceId root, std::string& s) {
  Tensor size = full({1}, static_cast<double>(s.size()), DType::f64);
  comm.broadcast(size, root, comm.world());
  Packer p;
  p.str(comm.rank() == root ? s : std::string(static_cast<size_t>(size.item()), '\0'));
  Tensor words = p.tensor();
  comm.broadcast(words, root, comm.world());
  s = Unpacker(words.data<double>(), static_cast<size_t>(words.numel())).str();
}

int64_t broadcast_number(Communicator& comm, DeviceId root, int64_t value) {
  Tensor t = full({1}, static_cast<double>(value), DType::f64);
  comm.broadcast(t, root, comm.world());
  return static_cast<int64_t>(t.item());
}

// ---- what every rank saves ----

struct BoxRecord {
  int64_t rank = 0;
  std::string name;
  Shape shape;
  DType dtype = DType::f32;
  Box box;
};

struct RankReport {
  int64_t step = 0;
  std::vector<std::string> problems;  // with this rank's own boxes
  std::vector<BoxRecord> boxes;
};

void pack_shape(Packer& p, const Shape& s) {
  for (int64_t v : s) p.num(v);
}

Shape unpack_shape(Unpacker& u, size_t rank) {
  Shape s(rank);
  for (int64_t& v : s) v = u.num();
  return s;
}

// This rank's boxes and what is wrong with them on their own.
RankReport local_report(int64_t rank, int64_t step, const std::vector<TensorBox>& mine,
                        const std::map<std::string, std::string>& metadata) {
  RankReport r;
  r.step = step;
  auto problem = [&](const std::string& name, const std::string& text) {
    r.problems.push_back(fmt::format("rank {}: tensor {}: {}", rank, name, text));
  };
  if (step < 0) r.problems.push_back(fmt::format("rank {}: step must be >= 0, got {}", rank, step));
  for (const auto& [key, value] : metadata)
    if (key.empty()) r.problems.push_back(fmt::format("rank {}: a metadata key is empty", rank));
  for (const TensorBox& b : mine) {
    r.boxes.push_back({rank, b.name, b.shape, b.dtype, b.box});
    if (b.name.empty()) problem(b.name, "the name is empty");
    const bool dims_ok = std::all_of(b.shape.begin(), b.shape.end(), [](int64_t d) { return d >= 0; });
    if (!dims_ok) problem(b.name, fmt::format("shape {} has a negative dim", shape_str(b.shape)));
    bool inside = dims_ok && b.box.offset.size() == b.shape.size() && b.box.size.size() == b.shape.size();
    for (size_t d = 0; inside && d < b.shape.size(); ++d) {
      inside = b.box.offset[d] >= 0 && b.box.size[d] >= 0 && b.box.offset[d] + b.box.size[d] <= b.shape[d];
    }
    if (!inside) {
      problem(b.name, fmt::format("box {} lies outside shape {}", b.box.to_string(), shape_str(b.shape)));
      continue;
    }
    if (b.box.empty() && !b.values.defined()) continue;
    if (!b.values.defined() || !b.values.device().is_cpu() || b.values.dtype() != b.dtype ||
        b.values.shape() != b.box.size) {
      problem(b.name, fmt::format("box {} needs CPU values of shape {} {}, got {}", b.box.to_string(),
                                  shape_str(b.box.size), to_string(b.dtype),
                                  b.values.defined() ? fmt::format("{} {} on {}", shape_str(b.values.shape()),
                                                                   to_string(b.values.dtype()),
                                                                   b.values.device().str())
                                                     : std::string("undefined values")));
    }
  }
  return r;
}

// Every rank's report, in rank order (a collective).
std::vector<RankReport> all_gather_reports(Communicator& comm, const RankReport& mine) {
  Packer p;
  p.num(mine.step);
  p.num(static_cast<int64_t>(mine.problems.size()));
  for (const std::string& s : mine.problems) p.str(s);
  p.num(static_cast<int64_t>(mine.boxes.size()));
  for (const BoxRecord& b : mine.boxes) {
    p.str(b.name);
    p.num(static_cast<int64_t>(b.dtype));
    p.num(static_cast<int64_t>(b.shape.size()));
    pack_shape(p, b.shape);
    p.num(b.box.rank());
    pack_shape(p, b.box.offset);
    pack_shape(p, b.box.size);
  }
  const Tensor in = p.tensor();
  const int64_t n = comm.world_size();
  Tensor counts = empty({n}, DType::f64);
  comm.all_gather(full({1}, static_cast<double>(in.numel()), DType::f64), counts, comm.world());
  std::vector<int64_t> sizes(static_cast<size_t>(n));
  int64_t total = 0;
  for (int64_t i = 0; i < n; ++i) {
    sizes[static_cast<size_t>(i)] = static_cast<int64_t>(counts.data<double>()[i]);
    total += sizes[static_cast<size_t>(i)];
  }
  Tensor all = empty({total}, DType::f64);
  comm.all_gather(in, all, comm.world(), sizes);

  std::vector<RankReport> reports(static_cast<size_t>(n));
  const double* at = all.data<double>();
  for (int64_t i = 0; i < n; ++i) {
    Unpacker u(at, static_cast<size_t>(sizes[static_cast<size_t>(i)]));
    at += sizes[static_cast<size_t>(i)];
    RankReport& r = reports[static_cast<size_t>(i)];
    r.step = u.num();
    r.problems.resize(static_cast<size_t>(u.num()));
    for (std::string& s : r.problems) s = u.str();
    r.boxes.resize(static_cast<size_t>(u.num()));
    for (BoxRecord& b : r.boxes) {
      b.rank = i;
      b.name = u.str();
      b.dtype = static_cast<DType>(u.num());
      b.shape = unpack_shape(u, static_cast<size_t>(u.num()));
      const auto rank = static_cast<size_t>(u.num());
      b.box.offset = unpack_shape(u, rank);
      b.box.size = unpack_shape(u, rank);
    }
  }
  return reports;
}

// What is wrong with one tensor's boxes taken together (all lie inside its shape).
std::optional<std::string> coverage_problem(const std::vector<const BoxRecord*>& records) {
  const BoxRecord& first = *records.front();
  for (const BoxRecord* b : records) {
    if (b->shape != first.shape || b->dtype != first.dtype) {
      return fmt::format("rank {} saves it as {} {}, rank {} as {} {}", first.rank, shape_str(first.shape),
                         to_string(first.dtype), b->rank, shape_str(b->shape), to_string(b->dtype));
    }
  }
  std::vector<const BoxRecord*> pieces;
  for (const BoxRecord* b : records)
    if (!b->box.empty()) pieces.push_back(b);
  // Sorted by the first dim's offset, a box can only overlap later boxes that start before it ends.
  std::stable_sort(pieces.begin(), pieces.end(), [](const BoxRecord* a, const BoxRecord* b) {
    return a->box.rank() > 0 && a->box.offset[0] < b->box.offset[0];
  });
  int64_t covered = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const Box& a = pieces[i]->box;
    covered += a.numel();
    for (size_t j = i + 1; j < pieces.size(); ++j) {
      const Box& b = pieces[j]->box;
      if (a.rank() > 0 && b.offset[0] >= a.offset[0] + a.size[0]) break;
      if (overlaps(a, b)) {
        return fmt::format("box {} of rank {} overlaps box {} of rank {}", a.to_string(), pieces[i]->rank,
                           b.to_string(), pieces[j]->rank);
      }
    }
  }
  const int64_t total = shape_numel(first.shape);
  if (covered == total) return std::nullopt;
  if (pieces.size() > 64) return fmt::format("the boxes cover {} of its {} elements", covered, total);
  std::vector<Box> boxes{full_box(first.shape)};  // name a hole: a cell of the refinement no box holds
  for (const BoxRecord* b : pieces) boxes.push_back(b->box);
  for (const Box& cell : refine(boxes)) {
    auto holds = [&](const BoxRecord* b) { return b->box.contains(cell); };
    if (std::none_of(pieces.begin(), pieces.end(), holds)) {
      return fmt::format("the boxes cover {} of its {} elements; no rank writes {}", covered, total, cell.to_string());
    }
  }
  return fmt::format("the boxes cover {} of its {} elements", covered, total);
}

// Every problem with the save as a whole, the same on every rank.
std::vector<std::string> save_problems(const std::vector<RankReport>& reports) {
  std::vector<std::string> problems;
  for (const RankReport& r : reports) problems.insert(problems.end(), r.problems.begin(), r.problems.end());
  if (!problems.empty()) return problems;  // coverage needs every box to lie inside its shape
  for (size_t i = 1; i < reports.size(); ++i) {
    if (reports[i].step != reports[0].step) {
      problems.push_back(fmt::format("rank {} saves step {}, rank 0 step {}", i, reports[i].step, reports[0].step));
    }
  }
  std::map<std::string, std::vector<const BoxRecord*>> by_name;
  for (const RankReport& r : reports)
    for (const BoxRecord& b : r.boxes) by_name[b.name].push_back(&b);
  for (const auto& [name, records] : by_name) {
    if (std::optional<std::string> problem = coverage_problem(records)) {
      problems.push_back(fmt::format("tensor {}: {}", name, *problem));
    }
  }
  return problems;
}

void fsync_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  HT_CHECK(fd >= 0, "{}: cannot open to fsync: {}", path, std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  HT_CHECK(rc == 0, "{}: fsync: {}", path, std::strerror(err));
}

// This rank's turn with the file: rank 0 creates it.
void write_my_boxes(const std::string& file, bool create, int64_t step, const std::vector<TensorBox>& mine,
                    const std::map<std::string, std::string>& metadata) {
  CheckpointFileWriter w = create ? CheckpointFileWriter::create(file, kShardedFormatVersion, step, metadata)
                                  : CheckpointFileWriter::open(file);
  for (const TensorBox& b : mine) w.write_box(b.name, b.shape, b.dtype, b.box, b.values);
  w.close();
  fsync_file(file);
}

std::string what_of(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    return e.message();
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown error";
  }
}

}  // namespace

std::string save_sharded(const CheckpointManager& manager, int64_t step, const std::vector<TensorBox>& mine,
                         const std::map<std::string, std::string>& metadata, Communicator& comm) {
  const auto rank = static_cast<DeviceId>(comm.rank());
  const int64_t n = comm.world_size();

  // 1. The verdict on every rank's boxes. See Note [Sharded save].
  const std::vector<std::string> problems =
      save_problems(all_gather_reports(comm, local_report(rank, step, mine, metadata)));
  if (!problems.empty()) {
    HT_THROW("save_sharded step {}: nothing was written:\n{}", step, join_problems(problems));
  }

  // 2. Rank 0 makes the work folder.
  std::string work;
  int64_t ok = 1;
  if (rank == 0) {
    try {
      work = manager.begin_save(step);
    } catch (...) {
      work = what_of(std::current_exception());
      ok = 0;
    }
  }
  ok = broadcast_number(comm, 0, ok);
  broadcast_string(comm, 0, work);
  if (!ok) HT_THROW("save_sharded step {}: rank 0: {}", step, work);

  // 3. The write token around the ring; it holds 1 + the failed rank, or 0.
  const std::string file = (fs::path(work) / kCheckpointFileName).string();
  Tensor token = zeros({1}, DType::f64);
  if (rank > 0) comm.recv(token, rank - 1);
  std::string message;
  if (token.item() == 0) {
    try {
      write_my_boxes(file, rank == 0, step, mine, metadata);
    } catch (...) {
      message = what_of(std::current_exception());
      token = full({1}, static_cast<double>(rank + 1), DType::f64);
    }
  }
  if (n > 1) {
    comm.send(token, static_cast<DeviceId>((rank + 1) % n));
    if (rank == 0) comm.recv(token, static_cast<DeviceId>(n - 1));
  }

  // 4. Rank 0 renames it into place, or deletes it; everyone learns the outcome.
  int64_t failed = static_cast<int64_t>(token.item()) - 1;
  if (rank == 0) {
    if (failed < 0) {
      try {
        message = manager.finish_save(work, step);
      } catch (...) {
        message = what_of(std::current_exception());
        failed = 0;
      }
    } else {
      manager.abandon_save(work);
    }
  }
  failed = broadcast_number(comm, 0, failed);
  broadcast_string(comm, static_cast<DeviceId>(std::max<int64_t>(failed, 0)), message);
  if (failed >= 0) {
    HT_THROW("save_sharded step {}: rank {}: {} (the previous checkpoint stays latest)", step, failed, message);
  }
  return message;
}

void read_boxes(const std::string& step_folder_or_file, std::vector<TensorBox>& wanted) {
  CheckpointFileReader reader(checkpoint_file(step_folder_or_file).string());
  const std::string& path = reader.path();
  if (reader.format_version() == kPartialFormatVersion) {
    HT_USAGE_ERROR("{}: a state snapshot (one rank's boxes) is read box by box by a relaunch (snapshot_exchange.h), not as a checkpoint",
                   path);
  }
  std::map<std::string, StoredTensor> catalogue;
  for (StoredTensor& t : reader.tensors()) catalogue.emplace(t.name, std::move(t));

  std::vector<std::string> problems;
  std::map<std::string, std::vector<TensorBox*>> by_name;
  for (TensorBox& w : wanted) {
    auto problem = [&](const std::string& text) {
      problems.push_back(fmt::format("{}: tensor {}: {}", path, w.name, text));
    };
    auto it = catalogue.find(w.name);
    if (it == catalogue.end()) {
      problem("missing from the checkpoint");
      continue;
    }
    const StoredTensor& t = it->second;
    if (t.shape != w.shape) {
      problem(fmt::format("shape {} in the checkpoint, wanted {}", shape_str(t.shape), shape_str(w.shape)));
    }
    if (t.dtype != w.dtype) {
      problem(fmt::format("dtype {} in the checkpoint, wanted {}", to_string(t.dtype), to_string(w.dtype)));
    }
    if (t.shape != w.shape || t.dtype != w.dtype) continue;
    if (w.box.rank() != static_cast<int64_t>(t.shape.size()) || w.box.offset.size() != t.shape.size() ||
        !full_box(t.shape).contains(w.box) ||
        std::any_of(w.box.size.begin(), w.box.size.end(), [](int64_t s) { return s < 0; })) {
      problem(fmt::format("box {} lies outside shape {}", w.box.to_string(), shape_str(t.shape)));
      continue;
    }
    if (w.values.defined() && (!w.values.device().is_cpu() || !w.values.is_contiguous() ||
                               w.values.dtype() != t.dtype || w.values.shape() != w.box.size)) {
      problem(fmt::format("box {} needs contiguous CPU values of shape {} {}, got {} {} on {}", w.box.to_string(),
                          shape_str(w.box.size), to_string(t.dtype), shape_str(w.values.shape()),
                          to_string(w.values.dtype()), w.values.device().str()));
      continue;
    }
    by_name[w.name].push_back(&w);
  }
  if (!problems.empty()) HT_USAGE_ERROR("{}", join_problems(problems));

  for (const auto& [name, boxes] : by_name) {
    const StoredTensor& t = catalogue.at(name);
    for (TensorBox* w : boxes)
      if (!w->values.defined()) w->values = empty(w->box.size, t.dtype);
    std::vector<StoredBox> pieces = t.boxes;
    if (t.crc32c) pieces = {StoredBox{full_box(t.shape), *t.crc32c}};
    for (const StoredBox& piece : pieces) {
      Tensor data;  // read when a wanted box first needs it
      for (TensorBox* w : boxes) {
        const Box region = intersect(piece.box, w->box);
        if (region.empty() || w->box.empty()) continue;
        if (!data.defined()) data = reader.read_verified(t, piece.box, piece.crc32c);
        copy_region(data.raw_data(), piece.box, w->values.raw_data(), w->box, region, dtype_size(t.dtype));
      }
    }
  }
}

CheckpointInfo read_info(const std::string& step_folder_or_file) {
  CheckpointFileReader reader(checkpoint_file(step_folder_or_file).string());
  CheckpointInfo info;
  info.step = reader.step();
  info.metadata = reader.metadata();
  for (const StoredTensor& t : reader.tensors()) info.tensors[t.name] = ExpectedTensor{t.shape, t.dtype};
  info.sharded = reader.format_version() == kShardedFormatVersion;
  return info;
}

}  // namespace hetu::checkpoint
