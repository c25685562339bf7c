// H5File: HDF5 C API reads with named errors; HDF5's own error printing is silenced.
#include "lib/checkpoint/h5_file.h"

#include <hdf5.h>

#include <algorithm>

#include "lib/util/error.h"

namespace hetu::checkpoint {
namespace {

// Closes an HDF5 handle with the matching function on scope exit.
struct Handle {
  hid_t id;
  herr_t (*close)(hid_t);
  ~Handle() {
    if (id >= 0) close(id);
  }
};

herr_t collect_name(hid_t, const char* name, const H5L_info_t*, void* out) {
  static_cast<std::vector<std::string>*>(out)->push_back(name);
  return 0;
}

}  // namespace

H5File::H5File(const std::string& path) : path_(path) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  HT_USAGE_CHECK(H5Fis_hdf5(path.c_str()) > 0, "{}: missing or not an HDF5 file", path);
  file_ = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  HT_USAGE_CHECK(file_ >= 0, "{}: cannot open as HDF5", path);
}

H5File::~H5File() {
  if (file_ >= 0) H5Fclose(static_cast<hid_t>(file_));
}

bool H5File::has(const std::string& object) const {
  if (object == "/") return true;
  // Every prefix must exist for H5Lexists to be safe.
  size_t pos = 0;
  while ((pos = object.find('/', pos + 1)) != std::string::npos) {
    if (H5Lexists(static_cast<hid_t>(file_), object.substr(0, pos).c_str(), H5P_DEFAULT) <= 0) return false;
  }
  return H5Lexists(static_cast<hid_t>(file_), object.c_str(), H5P_DEFAULT) > 0;
}

Tensor H5File::read(const std::string& dataset) const {
  HT_USAGE_CHECK(has(dataset), "{}: {}: no such dataset", path_, dataset);
  Handle ds{H5Dopen2(static_cast<hid_t>(file_), dataset.c_str(), H5P_DEFAULT), H5Dclose};
  HT_USAGE_CHECK(ds.id >= 0, "{}: {}: not a dataset", path_, dataset);
  Handle space{H5Dget_space(ds.id), H5Sclose};
  Handle type{H5Dget_type(ds.id), H5Tclose};
  const int rank = H5Sget_simple_extent_ndims(space.id);
  std::vector<hsize_t> dims(static_cast<size_t>(std::max(rank, 0)));
  H5Sget_simple_extent_dims(space.id, dims.data(), nullptr);
  Shape shape(dims.begin(), dims.end());
  DType dtype;
  hid_t mem_type;
  const H5T_class_t cls = H5Tget_class(type.id);
  const size_t size = H5Tget_size(type.id);
  if (cls == H5T_FLOAT) {
    dtype = size == 8 ? DType::f64 : DType::f32;
    mem_type = size == 8 ? H5T_NATIVE_DOUBLE : H5T_NATIVE_FLOAT;
  } else if (cls == H5T_INTEGER) {
    dtype = size == 8 ? DType::i64 : DType::i32;
    mem_type = size == 8 ? H5T_NATIVE_INT64 : H5T_NATIVE_INT32;
  } else {
    HT_USAGE_ERROR("{}: {}: unsupported element type (expected float or integer)", path_, dataset);
  }
  Tensor out = empty(shape, dtype);
  HT_USAGE_CHECK(H5Dread(ds.id, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.raw_data()) >= 0,
                 "{}: {}: read failed (file truncated or corrupted?)", path_, dataset);
  return out;
}

std::vector<std::string> H5File::list(const std::string& group) const {
  HT_USAGE_CHECK(has(group), "{}: {}: no such group", path_, group);
  std::vector<std::string> names;
  H5Literate_by_name(static_cast<hid_t>(file_), group.c_str(), H5_INDEX_NAME, H5_ITER_INC, nullptr, collect_name,
                     &names, H5P_DEFAULT);
  std::sort(names.begin(), names.end());
  return names;
}

bool H5File::has_attr(const std::string& object, const std::string& name) const {
  return has(object) && H5Aexists_by_name(static_cast<hid_t>(file_), object.c_str(), name.c_str(), H5P_DEFAULT) > 0;
}

std::string H5File::attr_string(const std::string& object, const std::string& name) const {
  HT_USAGE_CHECK(has_attr(object, name), "{}: {}: missing attribute '{}'", path_, object, name);
  Handle attr{H5Aopen_by_name(static_cast<hid_t>(file_), object.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose};
  Handle type{H5Aget_type(attr.id), H5Tclose};
  HT_USAGE_CHECK(H5Tget_class(type.id) == H5T_STRING, "{}: {}: attribute '{}' is not a string", path_, object, name);
  if (H5Tis_variable_str(type.id) > 0) {
    Handle mem{H5Tcopy(H5T_C_S1), H5Tclose};
    H5Tset_size(mem.id, H5T_VARIABLE);
    H5Tset_cset(mem.id, H5Tget_cset(type.id));
    char* value = nullptr;
    HT_USAGE_CHECK(H5Aread(attr.id, mem.id, &value) >= 0, "{}: {}: cannot read attribute '{}'", path_, object, name);
    std::string out = value != nullptr ? value : "";
    H5free_memory(value);
    return out;
  }
  std::string out(H5Tget_size(type.id), '\0');
  HT_USAGE_CHECK(H5Aread(attr.id, type.id, out.data()) >= 0, "{}: {}: cannot read attribute '{}'", path_, object, name);
  out.erase(std::find(out.begin(), out.end(), '\0'), out.end());
  return out;
}

std::vector<double> H5File::attr_numbers(const std::string& object, const std::string& name) const {
  HT_USAGE_CHECK(has_attr(object, name), "{}: {}: missing attribute '{}'", path_, object, name);
  Handle attr{H5Aopen_by_name(static_cast<hid_t>(file_), object.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose};
  Handle type{H5Aget_type(attr.id), H5Tclose};
  const H5T_class_t cls = H5Tget_class(type.id);
  HT_USAGE_CHECK(cls == H5T_FLOAT || cls == H5T_INTEGER, "{}: {}: attribute '{}' is not numeric", path_, object, name);
  Handle space{H5Aget_space(attr.id), H5Sclose};
  const hssize_t n = H5Sget_simple_extent_npoints(space.id);
  std::vector<double> out(static_cast<size_t>(std::max<hssize_t>(n, 1)));
  HT_USAGE_CHECK(H5Aread(attr.id, H5T_NATIVE_DOUBLE, out.data()) >= 0, "{}: {}: cannot read attribute '{}'", path_, object,
                 name);
  return out;
}

double H5File::attr_number(const std::string& object, const std::string& name) const {
  std::vector<double> values = attr_numbers(object, name);
  HT_USAGE_CHECK(values.size() == 1, "{}: {}: attribute '{}' holds {} numbers, expected 1", path_, object, name, values.size());
  return values[0];
}

}  // namespace hetu::checkpoint
