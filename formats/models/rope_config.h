// The one reader of config.json's rotary (RoPE) keys, for every decoder family:
//   rope_theta                top-level (transformers 4), or rope_parameters.rope_theta (5)
//   rope_scaling              {rope_type | type, factor, ...} (transformers 4)
//   rope_parameters           {rope_type, rope_theta, partial_rotary_factor, factor, ...} (5)
//   partial_rotary_factor     top-level or inside rope_parameters
//   original_max_position_embeddings   top-level (Phi-3) or inside the scaling object
//   rotary_pct, rotary_emb_base        gpt_neox's names for the fraction and theta
// Every key inside rope_scaling / rope_parameters must belong to the rope type (transformers'
// required and optional keys of each type); anything else, an unknown rope type, a null
// where a number is needed and two keys that disagree (rope_theta vs rope_parameters'
// rope_theta) are errors naming the key. core/models/rope.h computes the frequencies.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "core/base/types.h"
#include "core/models/rope.h"

namespace attn::io {

// What the family tells the reader.
struct RopeReadOptions {
  bool gptNeox = false;             // also rotary_pct / rotary_emb_base
  double defaultPartial = 1.0;      // the fraction without any key (gpt_neox: 0.25)
  int maxPositions = 0;             // max_position_embeddings, already read
};

struct RopeConfig {
  double theta = 10000.0;
  model::RopeScaling scaling;       // type Default without scaling
  double partialRotaryFactor = 1.0;  // fraction of head_dim rotated
  std::string partialField;         // the key it came from ("" = the family default)
  std::vector<std::string> keysRead;  // the top-level keys present that this reader consumed
};

// Reads the rope keys of `config` (a config.json object). Errors name `fileName` and the
// key ("rope_scaling.factor", "rope_parameters.rope_type", "rope_theta").
Expected<RopeConfig> readRopeConfig(const nlohmann::json& config, const std::string& fileName,
                                    const RopeReadOptions& options);

// `field` as this config.json names it: "rope_scaling..." becomes "rope_parameters..." when
// the file has rope_parameters and no rope_scaling (validateRope names rope_scaling).
std::string ropeFieldName(const nlohmann::json& config, const std::string& field);

// The top-level keys readRopeConfig may consume (for a family's table of keys read).
const std::vector<std::string>& ropeConfigKeys();

}  // namespace attn::io
