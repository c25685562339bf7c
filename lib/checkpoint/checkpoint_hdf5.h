// HDF5 plumbing shared by checkpoint_file.cpp (writing) and checkpoint_file_reader.cpp:
// owned identifiers, error-stack silencing, the stored type of each dtype, dataspaces and
// box (hyperslab) selections. Internal to lib/checkpoint; includes <hdf5.h>, which only hetu_checkpoint's
// own sources see.
#pragma once

#include <hdf5.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lib/core/tensor.h"
#include "lib/hspmd/geometry.h"
#include "lib/util/error.h"

namespace hetu::checkpoint::h5 {

inline constexpr const char* kFormat = "hetu-checkpoint";

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
inline Hid hdf5_type(DType dtype) {
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

inline std::optional<DType> parse_dtype(const std::string& name) {
  for (DType d : {DType::f32, DType::f64, DType::bf16, DType::f16, DType::i32, DType::i64, DType::u8}) {
    if (to_string(d) == name) return d;
  }
  return std::nullopt;
}

// A fixed-length string type of exactly `size` bytes (>= 1), kept byte for byte.
inline Hid string_type(size_t size) {
  Hid t(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(t.get(), size);
  H5Tset_strpad(t.get(), H5T_STR_NULLPAD);
  H5Tset_cset(t.get(), H5T_CSET_UTF8);
  return t;
}

inline Hid simple_space(const Shape& shape) {
  if (shape.empty()) return Hid(H5Screate(H5S_SCALAR), H5Sclose);
  const std::vector<hsize_t> dims(shape.begin(), shape.end());
  return Hid(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
}

// The dataset's file dataspace with `box` selected (all of it for a 0-d dataset).
inline Hid box_selection(hid_t dset, const Box& box) {
  Hid space(H5Dget_space(dset), H5Sclose);
  if (space.ok() && box.rank() > 0) {
    const std::vector<hsize_t> start(box.offset.begin(), box.offset.end());
    const std::vector<hsize_t> count(box.size.begin(), box.size.end());
    if (H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr) < 0) {
      return Hid();
    }
  }
  return space;
}

// Every box attribute array is n_boxes x rank (offsets, sizes) or n_boxes (checksums).
inline constexpr const char* kBoxOffsets = "box_offsets";
inline constexpr const char* kBoxSizes = "box_sizes";
inline constexpr const char* kBoxCrc = "box_crc32c";

}  // namespace hetu::checkpoint::h5
