// Checkpoints: atomic, verified HDF5 snapshots of named tensors plus string metadata.
// CheckpointManager owns one folder (out_dir/checkpoints) of step folders, a `latest` pointer
// and hidden work folders. Invariants: a step-NNNNNNN folder only ever appears complete
// (written and fsynced elsewhere, then renamed in), and `latest` always names one; so a crash
// at any instant leaves the previous checkpoint loadable. See Note [Checkpoint layout].
//
//   CheckpointManager ckpt("runs/x/checkpoints", /*keep=*/3);
//   CheckpointData data{42, {{"transformer.wte.weight", wte}, {"optim.m/transformer.wte.weight", m}},
//                       {{"config", resolved_toml}}};
//   ckpt.save(data);                               // "runs/x/checkpoints/step-0000042"
//   CheckpointData back = ckpt.load(*ckpt.latest());
//   back.step == 42;  back.tensors.at("optim.m/transformer.wte.weight") is bitwise equal to m
//
// Note [Checkpoint layout]
//   DIR/step-0000042/checkpoint.h5   7-digit step (wider past 9999999)
//   DIR/latest                       "step-0000042\n", replaced with write_file_atomic
//   DIR/.tmp-step-0000042-<pid>/     being written, or garbage; every save deletes them
//   DIR/.old-step-0000042-<pid>/     the previous contents of a step being replaced on a
//                                    filesystem without renameat2(RENAME_EXCHANGE); restored
//                                    by the next save if step-0000042 is missing
// checkpoint.h5 (HDF5 >= 1.8 format, so its metadata is checksummed by HDF5 itself):
//   /  attributes format = "hetu-checkpoint", format_version = 1 (2: written by save_sharded,
//      see Note [Sharded checkpoint file] in sharded_checkpoint.h), step (int64)
//   /tensors/<escaped name>    one contiguous dataset per tensor, full logical shape,
//                              row-major, little-endian; attributes dtype ("f32", "bf16", ...)
//                              and crc32c (uint32, CRC-32C of the raw data bytes)
//   /metadata/<escaped key>    one fixed-length string dataset per value (bytes kept exactly;
//                              an empty value is a dataset with a null dataspace), crc32c
// Names are escaped, not mapped to groups: every byte outside [A-Za-z0-9_.-] (and a leading
// '.') becomes %XX, so "optim.m/transformer.wte.weight" is stored as
// "optim.m%2Ftransformer.wte.weight" and "a" and "a/b" can both exist. names(), load() and
// the keys of CheckpointData hold the original strings. f16/bf16 are stored as HDF5 float
// types of 2 bytes (h5py reads f16 as float16). The saving process (for save_sharded, the
// ranks of one job, in turn) is the only writer of DIR, and (serial HDF5) no other thread of
// it uses HDF5 during a save or load.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lib/core/tensor.h"

namespace hetu::checkpoint {

struct CheckpointData {
  int64_t step = 0;
  // CPU tensors of any dtype and layout; the logical row-major contents are saved.
  std::map<std::string, Tensor> tensors;
  // Text (resolved config TOML, RNG and data position, model arch); any bytes round-trip.
  std::map<std::string, std::string> metadata;
};

// What load() must find for one tensor.
struct ExpectedTensor {
  Shape shape;
  DType dtype = DType::f32;
};

class CheckpointManager {
 public:
  // dir is created by the first save; keep >= 1 is how many step folders save() leaves.
  CheckpointManager(std::string dir, int64_t keep);

  // Writes DIR/step-NNNNNNN atomically (replacing an existing one safely), points `latest`
  // at it, removes stale work folders, then prunes to the newest `keep` step folders (never
  // the one `latest` names). Returns the step folder's path.
  std::string save(const CheckpointData& data);

  // The step folder `latest` names. If a crash left that folder mid-replacement, its .old
  // copy; if `latest` is missing or names a folder that is gone, the newest step folder;
  // nullopt when there is none. A `latest` that names no step folder is a UsageError.
  std::optional<std::string> latest() const;

  // Reads a step folder (or its checkpoint.h5, also one written by save_sharded) and verifies
  // every dataset's checksum (every box's, for tensors written in boxes). With
  // `expected`, a missing, extra, mis-shaped or mis-typed tensor is an error naming it and
  // both shapes. Every problem with the file is a hetu::UsageError that names it.
  CheckpointData load(const std::string& path, const std::map<std::string, ExpectedTensor>* expected = nullptr) const;

  // Step folders, oldest step first.
  std::vector<std::string> list() const;

  // The tensor names stored in a step folder (original strings, sorted), without reading data.
  std::vector<std::string> names(const std::string& path) const;

  const std::string& dir() const { return dir_; }

  // save() in two halves, for writers that fill checkpoint.h5 themselves (save_sharded).
  // begin_save() creates DIR, removes stale work folders and returns a fresh, empty work
  // folder for `step`; the caller writes checkpoint.h5 into it. finish_save() fsyncs the file
  // and the folder, renames it to the step folder (replacing one safely), points `latest` at
  // it, prunes, and returns the step folder's path. abandon_save() deletes the work folder.
  std::string begin_save(int64_t step) const;
  std::string finish_save(const std::string& work_folder, int64_t step) const;
  void abandon_save(const std::string& work_folder) const noexcept;

 private:
  void clean_work_folders() const;
  void prune() const;
  std::optional<std::string> read_latest_name() const;

  std::string dir_;
  int64_t keep_;
};

// The per-dataset checksum is hetu::crc32c (lib/util/crc32c.h).

}  // namespace hetu::checkpoint
