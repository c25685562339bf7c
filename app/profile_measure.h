// What `hetu profile` measures on one rank: one micro-batch of a model part that holds the
// embedding, every layer and the LM head (at tp > 1, this rank's shard of them), piece by
// piece, forward and backward of each piece timed on its own (the pieces are cut apart by
// detaching the hidden state between them, so each backward runs alone), the bytes each
// layer keeps for its backward, and one AdamW step over the part's parameters.
//
// `settle` runs at the end of every timed piece, inside its timing: on an emulated slow device
// it sleeps the slowdown owed for that piece (EmulatedCommunicator::settle_compute), so the
// sleep counts as the piece's compute and not as the next message's wait.
//
//   PieceTimes t = time_pieces(model, device, 4, 128, settle, 3);   // t.layer_forward_s, ...
#pragma once

#include <functional>

#include "lib/core/device.h"
#include "models/language_model.h"

namespace hetu::app {

struct PieceTimes {
  double embed_forward_s = 0, embed_backward_s = 0;
  double layer_forward_s = 0, layer_backward_s = 0;  // per layer, averaged over the layers
  double head_forward_s = 0, head_backward_s = 0;
  double layer_activation_bytes = 0;                 // per layer, per micro-batch; 0 where not countable
};

// The mean over `repeats` runs after one warm-up run.
PieceTimes time_pieces(const LanguageModel& model, Device device, int64_t micro_batch, int64_t seq_len,
                       const std::function<void()>& settle, int repeats);

// The median of `repeats` AdamW steps over the model's parameters (gradients set to ones).
double time_optimizer_step(const LanguageModel& model, const std::function<void()>& settle, int repeats);

}  // namespace hetu::app
