#include "core/train/tasks.h"

#include <algorithm>
#include <string>

namespace attn::train {

std::string_view toString(TaskKind kind) {
  switch (kind) {
    case TaskKind::Copy:
      return "copy";
    case TaskKind::Reverse:
      return "reverse";
    case TaskKind::Sort:
      return "sort";
    case TaskKind::Shift:
      return "shift";
    case TaskKind::Markers:
      return "markers";
  }
  return "reverse";
}

Status validateTask(const TaskConfig& task) {
  if (task.length < TaskLimits::kMinLength || task.length > TaskLimits::kMaxLength) {
    return Error{"", "length",
                 "must be in " + std::to_string(TaskLimits::kMinLength) + ".." +
                     std::to_string(TaskLimits::kMaxLength) + ", got " +
                     std::to_string(task.length)};
  }
  const int minVocab = task.kind == TaskKind::Markers ? 3 : TaskLimits::kMinVocab;
  if (task.vocab < minVocab || task.vocab > TaskLimits::kMaxVocab) {
    return Error{"", "vocab",
                 "must be in " + std::to_string(minVocab) + ".." +
                     std::to_string(TaskLimits::kMaxVocab) + ", got " + std::to_string(task.vocab)};
  }
  if (task.kind == TaskKind::Markers && (task.markers < 1 || task.markers >= task.vocab)) {
    return Error{"", "markers", "must be in 1..vocab-1, got " + std::to_string(task.markers)};
  }
  return Ok{};
}

int targetLength(const TaskConfig& task) {
  return task.kind == TaskKind::Markers ? 1 : task.length;
}

int targetClasses(const TaskConfig& task) {
  return task.kind == TaskKind::Markers ? 2 : task.vocab;
}

std::vector<int> taskTarget(const TaskConfig& task, const std::vector<int>& input) {
  const int n = static_cast<int>(input.size());
  std::vector<int> target;
  switch (task.kind) {
    case TaskKind::Copy:
      target = input;
      break;
    case TaskKind::Reverse:
      target.assign(input.rbegin(), input.rend());
      break;
    case TaskKind::Sort:
      target = input;
      std::sort(target.begin(), target.end());
      break;
    case TaskKind::Shift: {
      target.resize(input.size());
      const int k = n == 0 ? 0 : ((task.shift % n) + n) % n;
      for (int i = 0; i < n; ++i) target[i] = input[(i + k) % n];
      break;
    }
    case TaskKind::Markers: {
      const bool any = std::any_of(input.begin(), input.end(),
                                   [&](int token) { return token >= 0 && token < task.markers; });
      target = {any ? 1 : 0};
      break;
    }
  }
  return target;
}

Example sampleExample(const TaskConfig& task, Rng& rng) {
  Example example;
  example.input.resize(task.length);
  if (task.kind == TaskKind::Markers) {
    // Plain words are markers..vocab-1; a positive example gets 1 or 2 markers.
    const int plain = task.vocab - task.markers;
    for (int& token : example.input) token = task.markers + rng.below(plain);
    if (rng.below(2) == 1) {
      const int count = 1 + rng.below(2);
      for (int m = 0; m < count; ++m) {
        example.input[rng.below(task.length)] = rng.below(task.markers);
      }
    }
  } else {
    for (int& token : example.input) token = rng.below(task.vocab);
  }
  example.target = taskTarget(task, example.input);
  return example;
}

std::vector<Example> makeDataset(const TaskConfig& task, int count, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<Example> examples;
  examples.reserve(count);
  for (int i = 0; i < count; ++i) examples.push_back(sampleExample(task, rng));
  return examples;
}

std::uint64_t heldOutSeed(std::uint64_t trainSeed) {
  // A fixed odd constant: x ^ c != x for every x.
  return trainSeed ^ 0x9E3779B97F4A7C15ULL;
}

}  // namespace attn::train
