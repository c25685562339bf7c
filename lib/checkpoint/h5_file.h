// Read-only access to an HDF5 file's datasets and attributes as tensors and numbers, with
// errors that name the file and the object ("ref.h5: /grads/wte.weight: no such dataset").
// Used for PyTorch-made reference dumps (see scripts/make_reference.py).
#pragma once

#include <string>
#include <vector>

#include "lib/core/tensor.h"

namespace hetu::checkpoint {

class H5File {
 public:
  explicit H5File(const std::string& path);  // UsageError when missing or not HDF5
  ~H5File();
  H5File(const H5File&) = delete;
  H5File& operator=(const H5File&) = delete;

  const std::string& path() const { return path_; }
  bool has(const std::string& object) const;
  // Dataset as a CPU tensor: float -> f32/f64 as stored, integers -> i32/i64; scalars are 0-d.
  Tensor read(const std::string& dataset) const;
  // Names of the members of a group, sorted.
  std::vector<std::string> list(const std::string& group) const;
  // Attributes of an object ("/" for the root).
  bool has_attr(const std::string& object, const std::string& name) const;
  std::string attr_string(const std::string& object, const std::string& name) const;
  std::vector<double> attr_numbers(const std::string& object, const std::string& name) const;
  double attr_number(const std::string& object, const std::string& name) const;

 private:
  std::string path_;
  int64_t file_ = -1;  // hid_t
};

}  // namespace hetu::checkpoint
