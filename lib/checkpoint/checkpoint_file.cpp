// Writing checkpoint.h5 through the HDF5 1.10 C API (CheckpointFileWriter): one CRC-32C per
// dataset written whole, one per box for datasets written in boxes (hyperslab writes by
// several processes in turn); plus the name escaping and box copies readers share. See
// Note [Checkpoint layout] (checkpoint.h) and Note [Sharded checkpoint file]
// (sharded_checkpoint.h). Reading is checkpoint_file_reader.cpp.
#include "lib/checkpoint/checkpoint_file.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <utility>

#include "lib/checkpoint/checkpoint_hdf5.h"
#include "lib/util/crc32c.h"
#include "lib/util/error.h"

namespace hetu::checkpoint {

namespace fs = std::filesystem;
using namespace h5;

static_assert(std::endian::native == std::endian::little,
              "checkpoints store little-endian bytes and checksum them as they are in memory");

namespace {

bool is_plain_name_byte(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

}  // namespace

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

fs::path checkpoint_file(const std::string& step_folder_or_file) {
  const fs::path p(step_folder_or_file);
  return fs::is_directory(p) ? p / kCheckpointFileName : p;
}

void copy_region(const void* src, const Box& src_box, void* dst, const Box& dst_box, const Box& region,
                 size_t element_size) {
  const size_t rank = region.size.size();
  if (region.numel() == 0) return;
  if (rank == 0) {
    std::memcpy(dst, src, element_size);
    return;
  }
  const Shape src_strides = contiguous_strides(src_box.size);
  const Shape dst_strides = contiguous_strides(dst_box.size);
  const size_t row_bytes = static_cast<size_t>(region.size[rank - 1]) * element_size;
  std::vector<int64_t> at(rank, 0);  // position inside region; the last dim is one memcpy
  while (true) {
    int64_t s = 0, d = 0;
    for (size_t k = 0; k < rank; ++k) {
      const int64_t c = region.offset[k] + at[k];
      s += (c - src_box.offset[k]) * src_strides[k];
      d += (c - dst_box.offset[k]) * dst_strides[k];
    }
    std::memcpy(static_cast<char*>(dst) + static_cast<size_t>(d) * element_size,
                static_cast<const char*>(src) + static_cast<size_t>(s) * element_size, row_bytes);
    size_t k = rank - 1;
    while (k > 0 && ++at[k - 1] == region.size[k - 1]) at[--k] = 0;
    if (k == 0) break;
  }
}

std::string join_problems(std::vector<std::string> problems) {
  constexpr size_t kMaxListed = 20;
  const size_t total = problems.size();
  if (total > kMaxListed) {
    problems.resize(kMaxListed);
    problems.push_back(fmt::format("... and {} more", total - kMaxListed));
  }
  std::string message;
  for (const std::string& line : problems) message += (message.empty() ? "" : "\n") + line;
  return message;
}

// ---- writing ----

struct CheckpointFileWriter::Impl {
  QuietHdf5 quiet;
  std::string path;
  Hid file;
  Hid tensors;

  void check(int64_t rc, const std::string& what) const {
    HT_CHECK(rc >= 0, "{}: cannot {} (HDF5 error; disk full?)", path, what);
  }

  // 1.8 file format: checksummed superblock and object headers, readable by HDF5 >= 1.8.
  static Hid file_access() {
    Hid fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
    HT_CHECK(H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V18, H5F_LIBVER_V18) >= 0,
             "checkpoint: cannot set the HDF5 file format");
    return fapl;
  }

  Hid group(const char* name) {
    Hid g(H5Gcreate2(file.get(), name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
    check(g.get(), fmt::format("create group {}", name));
    return g;
  }

  void attr(hid_t obj, const char* name, hid_t type, const void* value) {
    Hid space(H5Screate(H5S_SCALAR), H5Sclose);
    Hid a(H5Acreate2(obj, name, type, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    check(a.ok() ? H5Awrite(a.get(), type, value) : -1, fmt::format("write attribute {}", name));
  }

  void string_attr(hid_t obj, const char* name, std::string value) {
    value.resize(std::max<size_t>(value.size(), 1), '\0');
    attr(obj, name, string_type(value.size()).get(), value.data());
  }

  // An array attribute of `dims` (replacing one of that name).
  void array_attr(hid_t obj, const char* name, hid_t file_type, hid_t mem_type, const std::vector<hsize_t>& dims,
                  const void* data) {
    if (H5Aexists(obj, name) > 0) check(H5Adelete(obj, name), fmt::format("replace attribute {}", name));
    Hid space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
    Hid a(H5Acreate2(obj, name, file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    check(a.ok() ? H5Awrite(a.get(), mem_type, data) : -1, fmt::format("write attribute {}", name));
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

  void text(hid_t group, const std::string& key, const std::string& value) {
    Hid space(H5Screate(value.empty() ? H5S_NULL : H5S_SCALAR), H5Sclose);
    dataset(group, key, string_type(std::max<size_t>(value.size(), 1)).get(), space.get(), value.data(), value.size(),
            fmt::format("write metadata {}", key));
  }

  // The dataset of a tensor written in boxes, created (no fill: every box is written) when
  // missing; an empty tensor gets its (empty) checksum when created.
  Hid box_dataset(const std::string& name, const Shape& shape, DType dtype, const std::string& what) {
    const std::string link = escape_name(name);
    if (H5Lexists(tensors.get(), link.c_str(), H5P_DEFAULT) > 0) {
      Hid dset(H5Dopen2(tensors.get(), link.c_str(), H5P_DEFAULT), H5Dclose);
      check(dset.get(), what);
      return dset;
    }
    Hid dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
    check(H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_NEVER), what);
    Hid type = hdf5_type(dtype);
    Hid space = simple_space(shape);
    Hid dset(H5Dcreate2(tensors.get(), link.c_str(), type.get(), space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT),
             H5Dclose);
    check(dset.get(), what);
    string_attr(dset.get(), "dtype", std::string(to_string(dtype)));
    if (shape_numel(shape) == 0) {
      const uint32_t crc = crc32c(nullptr, 0);
      attr(dset.get(), "crc32c", H5T_STD_U32LE, &crc);
    }
    return dset;
  }

  // Read-modify-write of the box attributes: this box and its checksum appended.
  void append_box(hid_t dset, const Box& box, uint32_t crc, const std::string& what) {
    const size_t rank = box.size.size();
    std::vector<int64_t> offsets, sizes;
    std::vector<uint32_t> crcs;
    if (H5Aexists(dset, kBoxCrc) > 0) {
      auto read = [&](const char* name, hid_t mem_type, auto& out, size_t per_box) {
        Hid a(H5Aopen(dset, name, H5P_DEFAULT), H5Aclose);
        Hid space(a.ok() ? H5Aget_space(a.get()) : H5I_INVALID_HID, H5Sclose);
        const hssize_t n = space.ok() ? H5Sget_simple_extent_npoints(space.get()) : -1;
        check(n, fmt::format("{}: read attribute {}", what, name));
        out.resize(static_cast<size_t>(n));
        check(H5Aread(a.get(), mem_type, out.data()), fmt::format("{}: read attribute {}", what, name));
        out.resize(out.size() / std::max<size_t>(per_box, 1) * per_box);
      };
      read(kBoxOffsets, H5T_NATIVE_INT64, offsets, rank);
      read(kBoxSizes, H5T_NATIVE_INT64, sizes, rank);
      read(kBoxCrc, H5T_NATIVE_UINT32, crcs, 1);
    }
    offsets.insert(offsets.end(), box.offset.begin(), box.offset.end());
    sizes.insert(sizes.end(), box.size.begin(), box.size.end());
    crcs.push_back(crc);
    const std::vector<hsize_t> dims2{crcs.size(), rank};
    array_attr(dset, kBoxOffsets, H5T_STD_I64LE, H5T_NATIVE_INT64, dims2, offsets.data());
    array_attr(dset, kBoxSizes, H5T_STD_I64LE, H5T_NATIVE_INT64, dims2, sizes.data());
    array_attr(dset, kBoxCrc, H5T_STD_U32LE, H5T_NATIVE_UINT32, {crcs.size()}, crcs.data());
  }
};

CheckpointFileWriter::CheckpointFileWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CheckpointFileWriter::CheckpointFileWriter(CheckpointFileWriter&&) noexcept = default;
CheckpointFileWriter& CheckpointFileWriter::operator=(CheckpointFileWriter&&) noexcept = default;
CheckpointFileWriter::~CheckpointFileWriter() = default;

CheckpointFileWriter CheckpointFileWriter::create(const std::string& path, int64_t format_version, int64_t step,
                                                  const std::map<std::string, std::string>& metadata) {
  auto impl = std::make_unique<Impl>();
  Impl& w = *impl;
  w.path = path;
  w.file = Hid(H5Fcreate(path.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, Impl::file_access().get()), H5Fclose);
  w.check(w.file.get(), "create the file");
  w.string_attr(w.file.get(), "format", kFormat);
  w.attr(w.file.get(), "format_version", H5T_STD_I64LE, &format_version);
  w.attr(w.file.get(), "step", H5T_STD_I64LE, &step);
  w.tensors = w.group("tensors");
  Hid group = w.group("metadata");
  for (const auto& [key, value] : metadata) w.text(group.get(), key, value);
  return CheckpointFileWriter(std::move(impl));
}

CheckpointFileWriter CheckpointFileWriter::open(const std::string& path) {
  auto impl = std::make_unique<Impl>();
  Impl& w = *impl;
  w.path = path;
  HT_CHECK(fs::exists(path), "{}: no such file to add boxes to (is the checkpoint folder on a filesystem every rank "
                             "shares?)", path);
  w.file = Hid(H5Fopen(path.c_str(), H5F_ACC_RDWR, Impl::file_access().get()), H5Fclose);
  w.check(w.file.get(), "open the file for writing");
  w.tensors = Hid(H5Gopen2(w.file.get(), "tensors", H5P_DEFAULT), H5Gclose);
  w.check(w.tensors.get(), "open group /tensors");
  return CheckpointFileWriter(std::move(impl));
}

void CheckpointFileWriter::write_tensor(const std::string& name, const Tensor& tensor) {
  Impl& w = *impl_;
  const Tensor data = tensor.contiguous();
  Hid space = simple_space(data.shape());
  const size_t nbytes = static_cast<size_t>(data.numel()) * dtype_size(data.dtype());
  Hid dset = w.dataset(w.tensors.get(), name, hdf5_type(data.dtype()).get(), space.get(),
                       nbytes > 0 ? data.raw_data() : nullptr, nbytes, fmt::format("write tensor {}", name));
  w.string_attr(dset.get(), "dtype", std::string(to_string(data.dtype())));
}

void CheckpointFileWriter::write_box(const std::string& name, const Shape& shape, DType dtype, const Box& box,
                                     const Tensor& values) {
  Impl& w = *impl_;
  const std::string what = fmt::format("write tensor {} box {}", name, box.to_string());
  HT_CHECK(full_box(shape).contains(box) && box.rank() == static_cast<int64_t>(shape.size()),
           "{}: tensor {}: box {} lies outside shape {}", w.path, name, box.to_string(), shape_str(shape));
  Hid dset = w.box_dataset(name, shape, dtype, what);
  if (box.empty()) return;
  const Tensor data = values.contiguous();
  HT_CHECK(data.dtype() == dtype && data.shape() == box.size, "{}: tensor {}: box {} needs {} {} values, got {} {}",
           w.path, name, box.to_string(), shape_str(box.size), to_string(dtype), shape_str(data.shape()),
           to_string(data.dtype()));
  const size_t nbytes = static_cast<size_t>(data.numel()) * dtype_size(dtype);
  const uint32_t crc = crc32c(data.raw_data(), nbytes);
  Hid type = hdf5_type(dtype);
  if (box == full_box(shape)) {  // written whole by this rank: a plain (version 1 style) dataset
    w.check(H5Dwrite(dset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, data.raw_data()), what);
    HT_CHECK(H5Aexists(dset.get(), "crc32c") == 0, "{}: tensor {}: written twice", w.path, name);
    w.attr(dset.get(), "crc32c", H5T_STD_U32LE, &crc);
    return;
  }
  Hid file_space = box_selection(dset.get(), box);
  Hid mem_space = simple_space(box.size);
  w.check(file_space.ok() ? H5Dwrite(dset.get(), type.get(), mem_space.get(), file_space.get(), H5P_DEFAULT,
                                     data.raw_data())
                          : -1,
          what);
  w.append_box(dset.get(), box, crc, what);
}

void CheckpointFileWriter::close() {
  Impl& w = *impl_;
  w.tensors = Hid();
  w.check(H5Fflush(w.file.get(), H5F_SCOPE_LOCAL), "flush");
  w.check(H5Fclose(w.file.release()), "close");
}

}  // namespace hetu::checkpoint
