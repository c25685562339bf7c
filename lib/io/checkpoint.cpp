// CheckpointManager: step folders written to a hidden temp folder, fsynced and renamed in;
// checkpoint.h5 through the HDF5 1.10 C API with one CRC-32C per dataset. The folder
// protocol is described in Note [Checkpoint layout] (checkpoint.h) and Note [Crash safety].
#include "lib/io/checkpoint.h"

#include <fcntl.h>
#include <hdf5.h>
#include <unistd.h>

#if defined(__x86_64__)
#endif

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <utility>

#include "lib/util/atomic_file.h"
#include "lib/util/crc32c.h"
#include "lib/util/error.h"

namespace hetu::io {

namespace fs = std::filesystem;

static_assert(std::endian::native == std::endian::little,
              "checkpoints store little-endian bytes and checksum them as they are in memory");

// Note [Crash safety]
// save() writes DIR/.tmp-step-N-<pid>/checkpoint.h5, fsyncs the file and the temp folder,
// renames the folder to DIR/step-N, fsyncs DIR, and only then replaces DIR/latest (itself
// atomic). A crash before the rename leaves only a .tmp folder, which nothing reads and the
// next save deletes; a crash after it leaves a complete step folder. Replacing an existing
// step-N swaps the two folders with renameat2(RENAME_EXCHANGE), so step-N is never absent.
// Where the filesystem cannot exchange, step-N is first renamed to .old-step-N-<pid>; a crash
// between the two renames leaves step-N missing, so latest() answers with the .old folder and
// the next save renames it back. Pruned folders are renamed to .tmp-* before deletion, so a
// half-deleted folder never carries a step-N name.

namespace {

constexpr const char* kFileName = "checkpoint.h5";
constexpr const char* kFormat = "hetu-checkpoint";
constexpr int64_t kFormatVersion = 1;
constexpr size_t kMaxListedProblems = 20;

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

bool is_plain_name_byte(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

// See Note [Checkpoint layout]: %XX for every byte outside [A-Za-z0-9_.-] and a leading '.'.
std::string escape_name(const std::string& name) {
  std::string out;
  out.reserve(name.size());
  for (size_t i = 0; i < name.size(); ++i) {
    const auto c = static_cast<unsigned char>(name[i]);
    if (is_plain_name_byte(c) && !(i == 0 && c == '.')) {
      out.push_back(static_cast<char>(c));
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

std::optional<std::string> unescape_name(const std::string& stored) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  for (size_t i = 0; i < stored.size(); ++i) {
    if (stored[i] != '%') {
      out.push_back(stored[i]);
      continue;
    }
    if (i + 2 >= stored.size()) return std::nullopt;
    const int hi = hex(stored[i + 1]);
    const int lo = hex(stored[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  if (escape_name(out) != stored) return std::nullopt;  // one spelling per name
  return out;
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

// The folder a file-or-folder argument names, and its checkpoint file.
fs::path checkpoint_file(const std::string& path) {
  const fs::path p(path);
  return fs::is_directory(p) ? p / kFileName : p;
}

// ---- HDF5 plumbing ----

// One HDF5 identifier, closed with the function that matches its kind.
class Hid {
 public:
  Hid() = default;
  Hid(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  Hid(Hid&& other) noexcept : id_(std::exchange(other.id_, H5I_INVALID_HID)), close_(other.close_) {}
  Hid& operator=(Hid&& other) noexcept {
    std::swap(id_, other.id_);
    std::swap(close_, other.close_);
    return *this;
  }
  Hid(const Hid&) = delete;
  Hid& operator=(const Hid&) = delete;
  ~Hid() {
    if (id_ >= 0) close_(id_);
  }
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }
  // Gives up ownership (the caller closes it).
  hid_t release() { return std::exchange(id_, H5I_INVALID_HID); }

 private:
  hid_t id_ = H5I_INVALID_HID;
  herr_t (*close_)(hid_t) = nullptr;
};

// HDF5 prints its error stack on every failed call by default; our errors say it better.
class QuietHdf5 {
 public:
  QuietHdf5() {
    H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~QuietHdf5() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }
  QuietHdf5(const QuietHdf5&) = delete;
  QuietHdf5& operator=(const QuietHdf5&) = delete;

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

// The HDF5 type stored for a dtype (little-endian; f16/bf16 as 2-byte IEEE-style floats).
Hid hdf5_type(DType dtype) {
  auto copy = [](hid_t base) { return Hid(H5Tcopy(base), H5Tclose); };
  auto half = [&](size_t exponent_bits, size_t mantissa_bits, size_t bias) {
    Hid t = copy(H5T_IEEE_F32LE);
    H5Tset_fields(t.get(), 15, mantissa_bits, exponent_bits, 0, mantissa_bits);
    H5Tset_size(t.get(), 2);
    H5Tset_ebias(t.get(), bias);
    return t;
  };
  switch (dtype) {
    case DType::f32: return copy(H5T_IEEE_F32LE);
    case DType::f64: return copy(H5T_IEEE_F64LE);
    case DType::bf16: return half(8, 7, 127);
    case DType::f16: return half(5, 10, 15);
    case DType::i32: return copy(H5T_STD_I32LE);
    case DType::i64: return copy(H5T_STD_I64LE);
    case DType::u8: return copy(H5T_STD_U8LE);
  }
  HT_THROW("checkpoint: unhandled dtype");
}

std::optional<DType> parse_dtype(const std::string& name) {
  for (DType d : {DType::f32, DType::f64, DType::bf16, DType::f16, DType::i32, DType::i64, DType::u8}) {
    if (to_string(d) == name) return d;
  }
  return std::nullopt;
}

// A fixed-length string type of exactly `size` bytes (>= 1), kept byte for byte.
Hid string_type(size_t size) {
  Hid t(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(t.get(), size);
  H5Tset_strpad(t.get(), H5T_STR_NULLPAD);
  H5Tset_cset(t.get(), H5T_CSET_UTF8);
  return t;
}

// ---- writing ----

class Writer {
 public:
  explicit Writer(const fs::path& path) : path_(path.string()) {
    Hid fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
    // 1.8 file format: checksummed superblock and object headers, readable by HDF5 >= 1.8.
    check(H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V18, H5F_LIBVER_V18), "set the file format");
    file_ = Hid(H5Fcreate(path_.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, fapl.get()), H5Fclose);
    check(file_.get(), "create the file");
  }

  void close() {
    check(H5Fflush(file_.get(), H5F_SCOPE_LOCAL), "flush");
    check(H5Fclose(file_.release()), "close");
  }

  hid_t root() const { return file_.get(); }

  Hid group(const char* name) {
    Hid g(H5Gcreate2(file_.get(), name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
    check(g.get(), fmt::format("create group {}", name));
    return g;
  }

  void attr(hid_t obj, const char* name, hid_t type, const void* value) {
    Hid space(H5Screate(H5S_SCALAR), H5Sclose);
    Hid attr(H5Acreate2(obj, name, type, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    check(attr.ok() ? H5Awrite(attr.get(), type, value) : -1, fmt::format("write attribute {}", name));
  }

  void string_attr(hid_t obj, const char* name, std::string value) {
    value.resize(std::max<size_t>(value.size(), 1), '\0');
    attr(obj, name, string_type(value.size()).get(), value.data());
  }

  // One dataset of `nbytes` raw bytes (none: no write) and its crc32c attribute.
  Hid dataset(hid_t group, const std::string& name, hid_t type, hid_t space, const void* data, size_t nbytes,
              const std::string& what) {
    Hid dset(H5Dcreate2(group, escape_name(name).c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
             H5Dclose);
    check(dset.get(), what);
    if (nbytes > 0) check(H5Dwrite(dset.get(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), what);
    const uint32_t crc = crc32c(data, nbytes);
    attr(dset.get(), "crc32c", H5T_STD_U32LE, &crc);
    return dset;
  }

  void tensor(hid_t group, const std::string& name, const Tensor& tensor) {
    const Tensor data = tensor.contiguous();
    const std::vector<hsize_t> dims(data.shape().begin(), data.shape().end());
    Hid space = dims.empty() ? Hid(H5Screate(H5S_SCALAR), H5Sclose)
                             : Hid(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
    const size_t nbytes = static_cast<size_t>(data.numel()) * dtype_size(data.dtype());
    Hid dset = dataset(group, name, hdf5_type(data.dtype()).get(), space.get(), nbytes > 0 ? data.raw_data() : nullptr,
                       nbytes, fmt::format("write tensor {}", name));
    string_attr(dset.get(), "dtype", std::string(to_string(data.dtype())));
  }

  void text(hid_t group, const std::string& key, const std::string& value) {
    Hid space(H5Screate(value.empty() ? H5S_NULL : H5S_SCALAR), H5Sclose);
    dataset(group, key, string_type(std::max<size_t>(value.size(), 1)).get(), space.get(), value.data(), value.size(),
            fmt::format("write metadata {}", key));
  }

 private:
  void check(int64_t rc, const std::string& what) const {
    HT_CHECK(rc >= 0, "{}: cannot {} (HDF5 error; disk full?)", path_, what);
  }

  std::string path_;
  Hid file_;
};

void write_checkpoint_file(const fs::path& path, const CheckpointData& data) {
  Writer w(path);
  w.string_attr(w.root(), "format", kFormat);
  w.attr(w.root(), "format_version", H5T_STD_I64LE, &kFormatVersion);
  w.attr(w.root(), "step", H5T_STD_I64LE, &data.step);
  {
    Hid tensors = w.group("tensors");
    for (const auto& [name, tensor] : data.tensors) w.tensor(tensors.get(), name, tensor);
    Hid metadata = w.group("metadata");
    for (const auto& [key, value] : data.metadata) w.text(metadata.get(), key, value);
  }
  w.close();
}

// ---- reading ----

struct StoredTensor {
  std::string name;  // original, unescaped
  DType dtype = DType::f32;
  Shape shape;
  uint32_t crc = 0;
};

class Reader {
 public:
  explicit Reader(const fs::path& path) : path_(path.string()) {
    if (!fs::exists(path)) HT_USAGE_ERROR("{}: no such checkpoint file", path_);
    file_ = Hid(H5Fopen(path_.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
    if (!file_.ok()) HT_USAGE_ERROR("{}: cannot open as HDF5 (truncated, corrupted, or not a checkpoint?)", path_);
    if (H5Aexists(file_.get(), "format") <= 0 || string_attr(file_.get(), "format", "") != kFormat) {
      HT_USAGE_ERROR("{}: not a hetu checkpoint (no format = \"{}\" attribute)", path_, kFormat);
    }
    const int64_t version = number_attr<int64_t>(file_.get(), "format_version", H5T_NATIVE_INT64, "");
    if (version != kFormatVersion) {
      HT_USAGE_ERROR("{}: checkpoint format_version {} is not supported (this build reads {})", path_, version,
                     kFormatVersion);
    }
  }

  int64_t step() const { return number_attr<int64_t>(file_.get(), "step", H5T_NATIVE_INT64, ""); }

  // Escaped dataset names under a group, in name order.
  std::vector<std::string> links(const char* group_name) const {
    Hid group(H5Gopen2(file_.get(), group_name, H5P_DEFAULT), H5Gclose);
    if (!group.ok()) HT_USAGE_ERROR("{}: cannot open group /{} (file corrupted?)", path_, group_name);
    std::vector<std::string> out;
    hsize_t index = 0;
    auto collect = [](hid_t, const char* name, const H5L_info_t*, void* op) -> herr_t {
      try {
        static_cast<std::vector<std::string>*>(op)->emplace_back(name);
        return 0;
      } catch (...) {
        return -1;
      }
    };
    if (H5Literate(group.get(), H5_INDEX_NAME, H5_ITER_INC, &index, collect, &out) < 0) {
      HT_USAGE_ERROR("{}: cannot list /{} (file corrupted?)", path_, group_name);
    }
    return out;
  }

  std::string original_name(const std::string& stored, const char* what) const {
    std::optional<std::string> name = unescape_name(stored);
    if (!name) HT_USAGE_ERROR("{}: {} name '{}' is not validly escaped (file corrupted?)", path_, what, stored);
    return *name;
  }

  StoredTensor describe(const std::string& stored) const {
    StoredTensor t;
    t.name = original_name(stored, "tensor");
    const std::string what = fmt::format("tensor {}", t.name);
    Hid dset = open_dataset("tensors", stored, what);
    const std::string dtype_name = string_attr(dset.get(), "dtype", what);
    std::optional<DType> dtype = parse_dtype(dtype_name);
    if (!dtype) HT_USAGE_ERROR("{}: {}: unknown dtype '{}'", path_, what, dtype_name);
    t.dtype = *dtype;
    Hid type(H5Dget_type(dset.get()), H5Tclose);
    Hid expected_type = hdf5_type(t.dtype);
    if (!type.ok() || H5Tequal(type.get(), expected_type.get()) <= 0) {
      HT_USAGE_ERROR("{}: {}: stored HDF5 type does not match its dtype attribute {}", path_, what, dtype_name);
    }
    Hid space(H5Dget_space(dset.get()), H5Sclose);
    const int rank = space.ok() ? H5Sget_simple_extent_ndims(space.get()) : -1;
    if (rank < 0) HT_USAGE_ERROR("{}: {}: cannot read its shape (file corrupted?)", path_, what);
    std::vector<hsize_t> dims(static_cast<size_t>(rank));
    H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
    t.shape.assign(dims.begin(), dims.end());
    t.crc = crc_attr(dset.get(), what);
    return t;
  }

  Tensor read_tensor(const std::string& stored, const StoredTensor& info) const {
    const std::string what = fmt::format("tensor {}", info.name);
    Tensor out = empty(info.shape, info.dtype);
    const size_t nbytes = static_cast<size_t>(out.numel()) * dtype_size(info.dtype);
    if (nbytes > 0) {
      Hid dset = open_dataset("tensors", stored, what);
      Hid type = hdf5_type(info.dtype);
      if (H5Dread(dset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, out.raw_data()) < 0) {
        HT_USAGE_ERROR("{}: {}: cannot read its data (truncated or corrupted?)", path_, what);
      }
    }
    if (crc32c(nbytes > 0 ? out.raw_data() : nullptr, nbytes) != info.crc) {
      HT_USAGE_ERROR("{}: {}: checksum mismatch (file corrupted?)", path_, what);
    }
    return out;
  }

  std::string read_text(const std::string& stored, const std::string& key) const {
    const std::string what = fmt::format("metadata {}", key);
    Hid dset = open_dataset("metadata", stored, what);
    Hid space(H5Dget_space(dset.get()), H5Sclose);
    Hid type(H5Dget_type(dset.get()), H5Tclose);
    if (!space.ok() || !type.ok() || H5Tget_class(type.get()) != H5T_STRING) {
      HT_USAGE_ERROR("{}: {}: not a string dataset (file corrupted?)", path_, what);
    }
    std::string value;
    if (H5Sget_simple_extent_type(space.get()) != H5S_NULL) {
      value.resize(H5Tget_size(type.get()));
      if (H5Dread(dset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, value.data()) < 0) {
        HT_USAGE_ERROR("{}: {}: cannot read it (truncated or corrupted?)", path_, what);
      }
    }
    if (crc32c(value.data(), value.size()) != crc_attr(dset.get(), what)) {
      HT_USAGE_ERROR("{}: {}: checksum mismatch (file corrupted?)", path_, what);
    }
    return value;
  }

  const std::string& path() const { return path_; }

 private:
  Hid open_dataset(const char* group, const std::string& stored, const std::string& what) const {
    const std::string link = fmt::format("/{}/{}", group, stored);
    Hid dset(H5Dopen2(file_.get(), link.c_str(), H5P_DEFAULT), H5Dclose);
    if (!dset.ok()) HT_USAGE_ERROR("{}: {}: cannot open its dataset (file corrupted?)", path_, what);
    return dset;
  }

  Hid open_attr(hid_t obj, const char* name, const std::string& what) const {
    Hid attr(H5Aexists(obj, name) > 0 ? H5Aopen(obj, name, H5P_DEFAULT) : H5I_INVALID_HID, H5Aclose);
    if (!attr.ok()) HT_USAGE_ERROR("{}: {}attribute {} missing (file corrupted?)", path_, prefix(what), name);
    return attr;
  }

  std::string string_attr(hid_t obj, const char* name, const std::string& what) const {
    Hid attr = open_attr(obj, name, what);
    Hid type(H5Aget_type(attr.get()), H5Tclose);
    if (!type.ok() || H5Tget_class(type.get()) != H5T_STRING || H5Tis_variable_str(type.get()) != 0) {
      HT_USAGE_ERROR("{}: {}attribute {} is not a fixed-length string", path_, prefix(what), name);
    }
    std::string value(H5Tget_size(type.get()), '\0');
    if (H5Aread(attr.get(), type.get(), value.data()) < 0) {
      HT_USAGE_ERROR("{}: {}cannot read attribute {}", path_, prefix(what), name);
    }
    value.erase(std::find(value.begin(), value.end(), '\0'), value.end());
    return value;
  }

  template <typename T> T number_attr(hid_t obj, const char* name, hid_t mem_type, const std::string& what) const {
    Hid attr = open_attr(obj, name, what);
    T value{};
    if (H5Aread(attr.get(), mem_type, &value) < 0) {
      HT_USAGE_ERROR("{}: {}cannot read attribute {}", path_, prefix(what), name);
    }
    return value;
  }
  uint32_t crc_attr(hid_t obj, const std::string& what) const {
    return number_attr<uint32_t>(obj, "crc32c", H5T_NATIVE_UINT32, what);
  }

  static std::string prefix(const std::string& what) { return what.empty() ? "" : what + ": "; }

  std::string path_;
  Hid file_;
};

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

  const fs::path dir(dir_);
  if (!fs::is_directory(dir)) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    HT_CHECK(!ec, "checkpoint: cannot create {}: {}", dir_, ec.message());
    fsync_path(fs::absolute(dir).parent_path(), true);
  }
  clean_work_folders();

  const std::string name = step_folder_name(data.step);
  const fs::path tmp = dir / fmt::format(".tmp-{}-{}", name, ::getpid());
  const fs::path final_dir = dir / name;
  remove_path(tmp);
  std::error_code ec;
  fs::create_directory(tmp, ec);
  HT_CHECK(!ec, "checkpoint: cannot create {}: {}", tmp.string(), ec.message());
  try {
    QuietHdf5 quiet;
    write_checkpoint_file(tmp / kFileName, data);
    fsync_path(tmp / kFileName, false);
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
    std::error_code ignored;
    fs::remove_all(tmp, ignored);
    throw;
  }
  remove_path(tmp);  // the old contents after an exchange; nothing otherwise
  write_file_atomic((dir / "latest").string(), name + "\n");
  prune();
  return final_dir.string();
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
    if (fs::exists(dir / *name / kFileName)) return (dir / *name).string();
    // A crash while replacing this step on a filesystem without RENAME_EXCHANGE.
    for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
      const std::string entry_name = entry.path().filename().string();
      if (entry_name.rfind(".old-" + *name + "-", 0) == 0 && fs::exists(entry.path() / kFileName)) {
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
  QuietHdf5 quiet;
  Reader reader(checkpoint_file(path));
  std::vector<std::string> out;
  for (const std::string& stored : reader.links("tensors")) out.push_back(reader.original_name(stored, "tensor"));
  std::sort(out.begin(), out.end());
  return out;
}

CheckpointData CheckpointManager::load(const std::string& path,
                                       const std::map<std::string, ExpectedTensor>* expected) const {
  QuietHdf5 quiet;
  Reader reader(checkpoint_file(path));
  CheckpointData data;
  data.step = reader.step();

  const std::vector<std::string> links = reader.links("tensors");
  std::vector<StoredTensor> stored;
  stored.reserve(links.size());
  for (const std::string& link : links) stored.push_back(reader.describe(link));
  if (expected) {  // before reading any data: a wrong model fails fast
    std::vector<std::string> problems = expectation_problems(reader.path(), stored, *expected);
    if (!problems.empty()) {
      const size_t total = problems.size();
      if (total > kMaxListedProblems) {
        problems.resize(kMaxListedProblems);
        problems.push_back(fmt::format("... and {} more", total - kMaxListedProblems));
      }
      std::string message;
      for (const std::string& line : problems) message += (message.empty() ? "" : "\n") + line;
      HT_USAGE_ERROR("{}", message);
    }
  }
  for (size_t i = 0; i < links.size(); ++i) data.tensors[stored[i].name] = reader.read_tensor(links[i], stored[i]);
  for (const std::string& link : reader.links("metadata")) {
    const std::string key = reader.original_name(link, "metadata");
    data.metadata[key] = reader.read_text(link, key);
  }
  return data;
}

}  // namespace hetu::io
