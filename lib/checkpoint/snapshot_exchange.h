// Assembling a resumed rank's boxes from the state snapshots of every node (hetu launch's
// recovery; state_snapshot.h writes them): each rank sees only its own node's snapshot
// files, so the ranks agree, in one gather, on which boxes each visible file holds, pick the
// newest step at which every box any rank needs survives in some file, and each box a rank
// cannot read on its own node is read by a rank whose node has it and sent over the
// communicator. See Note [Snapshot exchange].
//
//   std::vector<TensorBox> wanted = ...;   // this rank's boxes, values undefined
//   std::optional<AssembledStep> s = assemble_newest_step(comm, list_snapshots(root), wanted);  // collective
//   // s->step, s->metadata; wanted[i].values filled (dtype from the files)
//
// Note [Snapshot exchange]
// 1. Every rank opens the snapshot files it sees (list_snapshots of its node's root) and
//    describes them: per step, per file, each stored box (tensor, shape, dtype, box, checksum);
//    with its own wanted boxes and the metadata of one file per step. One all_gather gives every
//    rank every description, so each computes the same plan.
// 2. The plan, for the newest step first: each wanted box is cut at the edges of the stored
//    boxes overlapping it (the common refinement), and each cell is taken from a rank whose
//    files hold a box containing it: the wanting rank itself when it can, otherwise the
//    holder with the fewest bytes assigned so far (lowest rank on a tie), newest attempt
//    first within a rank. A cell no file of the step holds sends the search to the step below.
// 3. Every rank reads (checksum-verified) the cells it serves; a failed read anywhere (agreed
//    by an all_reduce) also sends the search below. Then one batch_send_recv moves every
//    cell served for another rank, in plan order on both sides.
// A relaunch therefore loses at most one step whenever every box survives on SOME node.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lib/checkpoint/sharded_checkpoint.h"
#include "lib/hspmd/communicator.h"

namespace hetu::checkpoint {

struct AssembledStep {
  int64_t step = 0;
  std::map<std::string, std::string> metadata;  // of a snapshot file of that step
  int64_t cells_received = 0;                   // cells other ranks read for this one
  int64_t bytes_received = 0;
};

// Collective over comm's world (every rank calls it, with or without files or wanted boxes).
// `files`: the snapshot files this rank sees, by step (list_snapshots). Fills every wanted box
// (values allocated, dtype taken from the files) at the newest step every rank can assemble,
// or returns nullopt (the reason logged) when there is none. A file this rank cannot open is
// left out of its description with a warning.
std::optional<AssembledStep> assemble_newest_step(Communicator& comm,
                                                  const std::map<int64_t, std::vector<std::string>>& files,
                                                  std::vector<TensorBox>& wanted);

}  // namespace hetu::checkpoint
