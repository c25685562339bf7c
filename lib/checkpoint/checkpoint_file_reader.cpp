// CheckpointFileReader: the catalogue of checkpoint.h5 (dtype, shape, whole or per-box
// checksums; stored boxes must tile their tensor), whole tensors and stored boxes read with
// HDF5 hyperslabs, and checksum verification. See Note [Checkpoint layout] (checkpoint.h)
// and Note [Sharded checkpoint file] (sharded_checkpoint.h).
#include <algorithm>
#include <filesystem>

#include "lib/checkpoint/checkpoint_file.h"
#include "lib/checkpoint/checkpoint_hdf5.h"
#include "lib/util/crc32c.h"
#include "lib/util/error.h"

namespace hetu::checkpoint {

namespace fs = std::filesystem;
using namespace h5;

struct CheckpointFileReader::Impl {
  QuietHdf5 quiet;
  std::string path;
  Hid file;
  int64_t version = 0;

  void open(const std::string& file_path) {
    path = file_path;
    if (!fs::exists(path)) HT_USAGE_ERROR("{}: no such checkpoint file", path);
    file = Hid(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
    if (!file.ok()) HT_USAGE_ERROR("{}: cannot open as HDF5 (truncated, corrupted, or not a checkpoint?)", path);
    if (H5Aexists(file.get(), "format") <= 0 || string_attr(file.get(), "format", "") != kFormat) {
      HT_USAGE_ERROR("{}: not a hetu checkpoint (no format = \"{}\" attribute)", path, kFormat);
    }
    version = number_attr<int64_t>(file.get(), "format_version", H5T_NATIVE_INT64, "");
    if (version != kWholeFormatVersion && version != kShardedFormatVersion && version != kPartialFormatVersion) {
      HT_USAGE_ERROR("{}: checkpoint format_version {} is not supported (this build reads {}, {} and {})", path,
                     version, kWholeFormatVersion, kShardedFormatVersion, kPartialFormatVersion);
    }
  }

  // Escaped dataset names under a group, in name order.
  std::vector<std::string> links(const char* group_name) const {
    Hid group(H5Gopen2(file.get(), group_name, H5P_DEFAULT), H5Gclose);
    if (!group.ok()) HT_USAGE_ERROR("{}: cannot open group /{} (file corrupted?)", path, group_name);
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
      HT_USAGE_ERROR("{}: cannot list /{} (file corrupted?)", path, group_name);
    }
    return out;
  }

  std::string original_name(const std::string& stored, const char* what) const {
    std::optional<std::string> name = unescape_name(stored);
    if (!name) HT_USAGE_ERROR("{}: {} name '{}' is not validly escaped (file corrupted?)", path, what, stored);
    return *name;
  }

  StoredTensor describe(const std::string& stored) const {
    StoredTensor t;
    t.name = original_name(stored, "tensor");
    t.link = stored;
    const std::string what = fmt::format("tensor {}", t.name);
    Hid dset = open_dataset("tensors", stored, what);
    const std::string dtype_name = string_attr(dset.get(), "dtype", what);
    std::optional<DType> dtype = parse_dtype(dtype_name);
    if (!dtype) HT_USAGE_ERROR("{}: {}: unknown dtype '{}'", path, what, dtype_name);
    t.dtype = *dtype;
    Hid type(H5Dget_type(dset.get()), H5Tclose);
    Hid expected_type = hdf5_type(t.dtype);
    if (!type.ok() || H5Tequal(type.get(), expected_type.get()) <= 0) {
      HT_USAGE_ERROR("{}: {}: stored HDF5 type does not match its dtype attribute {}", path, what, dtype_name);
    }
    Hid space(H5Dget_space(dset.get()), H5Sclose);
    const int rank = space.ok() ? H5Sget_simple_extent_ndims(space.get()) : -1;
    if (rank < 0) HT_USAGE_ERROR("{}: {}: cannot read its shape (file corrupted?)", path, what);
    std::vector<hsize_t> dims(static_cast<size_t>(rank));
    H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
    t.shape.assign(dims.begin(), dims.end());
    if (version == kWholeFormatVersion || H5Aexists(dset.get(), kBoxCrc) <= 0) {
      t.crc32c = number_attr<uint32_t>(dset.get(), "crc32c", H5T_NATIVE_UINT32, what);
    } else {
      if (H5Aexists(dset.get(), "crc32c") > 0) {
        HT_USAGE_ERROR("{}: {}: has both a whole checksum and box checksums (file corrupted?)", path, what);
      }
      t.boxes = stored_boxes(dset.get(), t.shape, what);
    }
    return t;
  }

  // The box attributes of a dataset written in boxes; they must tile its shape.
  std::vector<StoredBox> stored_boxes(hid_t dset, const Shape& shape, const std::string& what) const {
    const size_t rank = shape.size();
    const std::vector<uint32_t> crcs = array_attr<uint32_t>(dset, kBoxCrc, H5T_NATIVE_UINT32, what);
    const size_t n = crcs.size();
    const std::vector<int64_t> offsets = array_attr<int64_t>(dset, kBoxOffsets, H5T_NATIVE_INT64, what);
    const std::vector<int64_t> sizes = array_attr<int64_t>(dset, kBoxSizes, H5T_NATIVE_INT64, what);
    if (rank == 0 || offsets.size() != n * rank || sizes.size() != n * rank) {
      HT_USAGE_ERROR("{}: {}: box attributes disagree in size (file corrupted?)", path, what);
    }
    std::vector<StoredBox> boxes(n);
    std::vector<Box> pieces(n);
    for (size_t i = 0; i < n; ++i) {
      Box& b = boxes[i].box;
      b.offset.assign(offsets.begin() + static_cast<std::ptrdiff_t>(i * rank),
                      offsets.begin() + static_cast<std::ptrdiff_t>((i + 1) * rank));
      b.size.assign(sizes.begin() + static_cast<std::ptrdiff_t>(i * rank),
                    sizes.begin() + static_cast<std::ptrdiff_t>((i + 1) * rank));
      for (size_t d = 0; d < rank; ++d) {
        if (b.offset[d] < 0 || b.size[d] < 1 || b.offset[d] + b.size[d] > shape[d]) {
          HT_USAGE_ERROR("{}: {}: stored box {} lies outside shape {} (file corrupted?)", path, what, b.to_string(),
                         shape_str(shape));
        }
      }
      boxes[i].crc32c = crcs[i];
      pieces[i] = b;
    }
    if (version != kPartialFormatVersion && !tiles(pieces, full_box(shape))) {
      HT_USAGE_ERROR("{}: {}: its {} stored boxes do not cover shape {} exactly (file corrupted or save incomplete?)",
                     path, what, n, shape_str(shape));
    }
    return boxes;
  }

  Tensor read_region(const StoredTensor& t, const Box& box) const {
    const std::string what = fmt::format("tensor {}", t.name);
    Tensor out = empty(box.size, t.dtype);
    if (out.numel() == 0) return out;
    Hid dset = open_dataset("tensors", t.link, what);
    Hid type = hdf5_type(t.dtype);
    Hid file_space = box_selection(dset.get(), box);
    Hid mem_space = simple_space(box.size);
    if (!file_space.ok() ||
        H5Dread(dset.get(), type.get(), mem_space.get(), file_space.get(), H5P_DEFAULT, out.raw_data()) < 0) {
      HT_USAGE_ERROR("{}: {}: cannot read box {} (truncated or corrupted?)", path, what, box.to_string());
    }
    return out;
  }

  Tensor read_verified(const StoredTensor& t, const Box& box, uint32_t crc) const {
    Tensor out = read_region(t, box);
    const size_t nbytes = static_cast<size_t>(out.numel()) * dtype_size(t.dtype);
    if (crc32c(nbytes > 0 ? out.raw_data() : nullptr, nbytes) != crc) {
      if (box == full_box(t.shape)) HT_USAGE_ERROR("{}: tensor {}: checksum mismatch (file corrupted?)", path, t.name);
      HT_USAGE_ERROR("{}: tensor {}: checksum mismatch in box {} (file corrupted?)", path, t.name, box.to_string());
    }
    return out;
  }

  Tensor read_tensor(const StoredTensor& t) const {
    if (t.crc32c) return read_verified(t, full_box(t.shape), *t.crc32c);
    if (version == kPartialFormatVersion) {
      HT_USAGE_ERROR("{}: tensor {}: a state snapshot holds only this rank's boxes of it; it cannot be read whole",
                     path, t.name);
    }
    Tensor out = empty(t.shape, t.dtype);
    const Box all = full_box(t.shape);
    for (const StoredBox& b : t.boxes) {
      const Tensor piece = read_verified(t, b.box, b.crc32c);
      copy_region(piece.raw_data(), b.box, out.raw_data(), all, b.box, dtype_size(t.dtype));
    }
    return out;
  }

  std::string read_text(const std::string& stored, const std::string& key) const {
    const std::string what = fmt::format("metadata {}", key);
    Hid dset = open_dataset("metadata", stored, what);
    Hid space(H5Dget_space(dset.get()), H5Sclose);
    Hid type(H5Dget_type(dset.get()), H5Tclose);
    if (!space.ok() || !type.ok() || H5Tget_class(type.get()) != H5T_STRING) {
      HT_USAGE_ERROR("{}: {}: not a string dataset (file corrupted?)", path, what);
    }
    std::string value;
    if (H5Sget_simple_extent_type(space.get()) != H5S_NULL) {
      value.resize(H5Tget_size(type.get()));
      if (H5Dread(dset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, value.data()) < 0) {
        HT_USAGE_ERROR("{}: {}: cannot read it (truncated or corrupted?)", path, what);
      }
    }
    if (crc32c(value.data(), value.size()) != number_attr<uint32_t>(dset.get(), "crc32c", H5T_NATIVE_UINT32, what)) {
      HT_USAGE_ERROR("{}: {}: checksum mismatch (file corrupted?)", path, what);
    }
    return value;
  }

  Hid open_dataset(const char* group, const std::string& stored, const std::string& what) const {
    const std::string link = fmt::format("/{}/{}", group, stored);
    Hid dset(H5Dopen2(file.get(), link.c_str(), H5P_DEFAULT), H5Dclose);
    if (!dset.ok()) HT_USAGE_ERROR("{}: {}: cannot open its dataset (file corrupted?)", path, what);
    return dset;
  }

  Hid open_attr(hid_t obj, const char* name, const std::string& what) const {
    Hid attr(H5Aexists(obj, name) > 0 ? H5Aopen(obj, name, H5P_DEFAULT) : H5I_INVALID_HID, H5Aclose);
    if (!attr.ok()) HT_USAGE_ERROR("{}: {}attribute {} missing (file corrupted?)", path, prefix(what), name);
    return attr;
  }

  std::string string_attr(hid_t obj, const char* name, const std::string& what) const {
    Hid attr = open_attr(obj, name, what);
    Hid type(H5Aget_type(attr.get()), H5Tclose);
    if (!type.ok() || H5Tget_class(type.get()) != H5T_STRING || H5Tis_variable_str(type.get()) != 0) {
      HT_USAGE_ERROR("{}: {}attribute {} is not a fixed-length string", path, prefix(what), name);
    }
    std::string value(H5Tget_size(type.get()), '\0');
    if (H5Aread(attr.get(), type.get(), value.data()) < 0) {
      HT_USAGE_ERROR("{}: {}cannot read attribute {}", path, prefix(what), name);
    }
    value.erase(std::find(value.begin(), value.end(), '\0'), value.end());
    return value;
  }

  template <typename T> T number_attr(hid_t obj, const char* name, hid_t mem_type, const std::string& what) const {
    Hid attr = open_attr(obj, name, what);
    Hid space(H5Aget_space(attr.get()), H5Sclose);
    T value{};
    if (!space.ok() || H5Sget_simple_extent_npoints(space.get()) != 1 || H5Aread(attr.get(), mem_type, &value) < 0) {
      HT_USAGE_ERROR("{}: {}cannot read attribute {}", path, prefix(what), name);
    }
    return value;
  }

  template <typename T>
  std::vector<T> array_attr(hid_t obj, const char* name, hid_t mem_type, const std::string& what) const {
    Hid attr = open_attr(obj, name, what);
    Hid space(H5Aget_space(attr.get()), H5Sclose);
    const hssize_t n = space.ok() ? H5Sget_simple_extent_npoints(space.get()) : -1;
    std::vector<T> values(static_cast<size_t>(std::max<hssize_t>(n, 0)));
    if (n < 0 || H5Aread(attr.get(), mem_type, values.data()) < 0) {
      HT_USAGE_ERROR("{}: {}cannot read attribute {}", path, prefix(what), name);
    }
    return values;
  }

  static std::string prefix(const std::string& what) { return what.empty() ? "" : what + ": "; }
};

CheckpointFileReader::CheckpointFileReader(const std::string& path) : impl_(std::make_unique<Impl>()) {
  impl_->open(path);
}
CheckpointFileReader::~CheckpointFileReader() = default;

const std::string& CheckpointFileReader::path() const { return impl_->path; }
int64_t CheckpointFileReader::format_version() const { return impl_->version; }

int64_t CheckpointFileReader::step() const {
  return impl_->number_attr<int64_t>(impl_->file.get(), "step", H5T_NATIVE_INT64, "");
}

std::vector<std::string> CheckpointFileReader::tensor_names() const {
  std::vector<std::string> out;
  for (const std::string& stored : impl_->links("tensors")) out.push_back(impl_->original_name(stored, "tensor"));
  return out;
}

std::vector<StoredTensor> CheckpointFileReader::tensors() const {
  std::vector<StoredTensor> out;
  for (const std::string& stored : impl_->links("tensors")) out.push_back(impl_->describe(stored));
  return out;
}

std::map<std::string, std::string> CheckpointFileReader::metadata() const {
  std::map<std::string, std::string> out;
  for (const std::string& link : impl_->links("metadata")) {
    const std::string key = impl_->original_name(link, "metadata");
    out[key] = impl_->read_text(link, key);
  }
  return out;
}

Tensor CheckpointFileReader::read_tensor(const StoredTensor& tensor) const { return impl_->read_tensor(tensor); }

Tensor CheckpointFileReader::read_region(const StoredTensor& tensor, const Box& box) const {
  return impl_->read_region(tensor, box);
}

Tensor CheckpointFileReader::read_verified(const StoredTensor& tensor, const Box& box, uint32_t crc) const {
  return impl_->read_verified(tensor, box, crc);
}

}  // namespace hetu::checkpoint
