// Toy sequence tasks for watching attention being learned, generated from a seed.
//
// Tokens are integers 0..vocab-1. Every example has an input sequence of `length` tokens
// and a target sequence: `length` tokens for the sequence tasks, one class token (0 or 1)
// for the marker classification. There are no start or end tokens.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string_view>
#include <vector>

#include "core/base/types.h"

namespace attn::train {

// copy:    y_i = x_i
// reverse: y_i = x_{L-1-i}
// sort:    y = the input sorted ascending
// shift:   y_i = x_{(i + k) mod L} (the sequence rotated left by k positions)
// markers: one class token: 1 when any marker token (0 .. markers-1) occurs in x, else 0
//          (a sentiment-like task; the markers play the "good"/"bad" words).
enum class TaskKind { Copy, Reverse, Sort, Shift, Markers };
// Every task, in the order above (the CLI's --task lists them).
inline constexpr TaskKind kAllTaskKinds[] = {TaskKind::Copy, TaskKind::Reverse, TaskKind::Sort,
                                             TaskKind::Shift, TaskKind::Markers};

std::string_view toString(TaskKind kind);

struct TaskConfig {
  TaskKind kind = TaskKind::Reverse;
  int length = 8;   // L, 2..64
  int vocab = 10;   // tokens 0..vocab-1, 2..256 (markers: 3..256)
  int shift = 1;    // k of the shift task (any integer; taken mod L)
  int markers = 1;  // markers task: tokens 0..markers-1 are the marker words (1..vocab-1)
};

// Limits the task generator accepts (validateTask enforces them).
struct TaskLimits {
  static constexpr int kMinLength = 2, kMaxLength = 64;
  static constexpr int kMinVocab = 2, kMaxVocab = 256;
};

// field "length", "vocab", "markers" names the bad setting.
Status validateTask(const TaskConfig& task);

// Number of target tokens per example (L, or 1 for markers) and number of target classes
// (vocab, or 2 for markers).
int targetLength(const TaskConfig& task);
int targetClasses(const TaskConfig& task);

struct Example {
  std::vector<int> input;   // L tokens
  std::vector<int> target;  // targetLength() tokens
};

// The target of `input` under the task (used by the generator and by tests).
std::vector<int> taskTarget(const TaskConfig& task, const std::vector<int>& input);

// The one seeded generator of core/train: std::mt19937_64 (its output is fixed by the
// standard) with our own integer mapping, so a seed gives the same data everywhere.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : engine_(seed) {}
  // Uniform integer in [0, n), n >= 1.
  int below(int n) { return static_cast<int>(engine_() % static_cast<std::uint64_t>(n)); }
  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

 private:
  std::mt19937_64 engine_;
};

// One random example. Sequence tasks: tokens uniform over the vocabulary. Markers: half of
// the examples (at random) hold 1..2 marker tokens at random positions, the rest hold none,
// so the classes are balanced.
Example sampleExample(const TaskConfig& task, Rng& rng);

// `count` examples from a fresh generator seeded with `seed`.
std::vector<Example> makeDataset(const TaskConfig& task, int count, std::uint64_t seed);

// The held-out seed for a training seed: always different from it.
std::uint64_t heldOutSeed(std::uint64_t trainSeed);

}  // namespace attn::train
