// Prompt lists, score totals and CSV tables of the analyses (analysis_files.h).
#include "formats/analysis/analysis_files.h"

#include <cmath>
#include <limits>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "formats/files.h"

namespace attn::io {
namespace {

using nlohmann::json;

std::string number(double v) {
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "%.17g", v);
  return buffer;
}

Error fileError(const std::string& path, const std::string& field, const std::string& problem) {
  return Error{path, field, problem};
}

}  // namespace

Expected<std::vector<PromptLine>> readPrompts(const std::string& path, bool needText) {
  Expected<std::string> text = readCapped(path, kMaxPromptsBytes);
  if (!text) return withFile(text.error(), path);
  std::vector<PromptLine> out;
  std::istringstream lines(*text);
  int number = 0;
  for (std::string line; std::getline(lines, line);) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = "line " + std::to_string(number);
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      return fileError(path, where, "not a JSON object");
    PromptLine p;
    p.line = number;
    auto field = [&](const char* name, std::string& into) -> Status {
      auto it = j.find(name);
      if (it == j.end()) return fileError(path, where + ": " + name, "missing");
      if (!it->is_string()) return fileError(path, where + ": " + name, "not a string");
      into = it->get<std::string>();
      return Ok{};
    };
    if (needText) {
      if (Status s = field("text", p.text); !s) return s.error();
    } else {
      for (auto [name, into] : {std::pair{"clean", &p.clean}, std::pair{"corrupt", &p.corrupt},
                                std::pair{"answer", &p.answer}, std::pair{"wrong", &p.wrong}}) {
        if (Status s = field(name, *into); !s) return s.error();
      }
    }
    out.push_back(std::move(p));
  }
  if (out.empty()) return fileError(path, "", "no prompts (one JSON object per line)");
  return out;
}

std::string scoreTotalsFields(const model::ScoreTotals& t) {
  auto matrixText = [](const Eigen::MatrixXd& m) {
    std::string s = "[";
    for (Eigen::Index r = 0; r < m.rows(); ++r) {
      s += r ? ", [" : "[";
      for (Eigen::Index c = 0; c < m.cols(); ++c) {
        if (c) s += ", ";
        s += number(m(r, c));
      }
      s += "]";
    }
    return s + "]";
  };
  std::string names, sums, squares;
  for (std::size_t k = 0; k < t.kinds.size(); ++k) {
    std::string name = "\"";
    name += model::toString(t.kinds[k]);
    name += "\": ";
    if (k) {
      names += ", ";
      sums += ",\n    ";
      squares += ",\n    ";
    }
    names += name.substr(0, name.size() - 2);
    sums += name;
    sums += matrixText(t.sum[k]);
    squares += name;
    squares += matrixText(t.sumSq[k]);
  }
  return std::string("  \"layers\": ") + std::to_string(t.layers) + ",\n  \"heads\": " +
         std::to_string(t.heads) + ",\n  \"scores\": [" + names +
         "],\n  \"count\": " + std::to_string(t.count) + ",\n  \"sum\": {\n    " + sums +
         "\n  },\n  \"sum_squares\": {\n    " + squares + "\n  }";
}

Expected<model::ScoreTotals> parseScoreTotals(const nlohmann::json& j, const std::string& path) {
  auto count = [&](const char* name, long long lo, long long hi) -> Expected<long long> {
    if (!j.contains(name) || !j[name].is_number_integer())
      return fileError(path, name, "missing or not an integer");
    const long long v = j[name].get<long long>();
    if (v < lo || v > hi)
      return fileError(path, name, std::to_string(v) + " is outside " + std::to_string(lo) +
                                       ".." + std::to_string(hi));
    return v;
  };
  auto layers = count("layers", 1, model::kMaxLayers);
  if (!layers) return layers.error();
  auto heads = count("heads", 1, model::kMaxHeads);
  if (!heads) return heads.error();
  auto prompts = count("count", 0, std::numeric_limits<long long>::max());
  if (!prompts) return prompts.error();
  if (!j.contains("scores") || !j["scores"].is_array() || j["scores"].empty())
    return fileError(path, "scores", "missing or not a non-empty list of names");
  std::vector<model::HeadScoreKind> kinds;
  for (const json& name : j["scores"]) {
    bool known = false;
    for (model::HeadScoreKind k : model::kEveryHeadScore) {
      if (name.is_string() && name.get<std::string>() == model::toString(k)) {
        kinds.push_back(k);
        known = true;
      }
    }
    if (!known) return fileError(path, "scores", "unknown score " + name.dump());
  }
  model::Config shape;
  shape.nLayer = static_cast<int>(*layers);
  shape.nHead = static_cast<int>(*heads);
  model::ScoreTotals t = model::emptyTotals(shape, kinds);
  t.count = *prompts;
  for (const char* group : {"sum", "sum_squares"}) {
    for (std::size_t k = 0; k < kinds.size(); ++k) {
      const std::string field = std::string(group) + "." + model::toString(kinds[k]);
      const json* m = j.contains(group) && j[group].is_object() && j[group].contains(model::toString(kinds[k]))
                          ? &j[group][model::toString(kinds[k])]
                          : nullptr;
      if (!m) return fileError(path, field, "missing");
      if (!m->is_array() || m->size() != static_cast<std::size_t>(t.layers))
        return fileError(path, field, "not " + std::to_string(t.layers) + " rows");
      Eigen::MatrixXd& into = std::string(group) == "sum" ? t.sum[k] : t.sumSq[k];
      for (int r = 0; r < t.layers; ++r) {
        const json& row = (*m)[static_cast<std::size_t>(r)];
        if (!row.is_array() || row.size() != static_cast<std::size_t>(t.heads))
          return fileError(path, field + "[" + std::to_string(r) + "]",
                           "not a list of " + std::to_string(t.heads) + " numbers");
        for (int c = 0; c < t.heads; ++c) {
          const json& v = row[static_cast<std::size_t>(c)];
          if (!v.is_number() || !std::isfinite(v.get<double>()))
            return fileError(path, field + "[" + std::to_string(r) + "][" + std::to_string(c) + "]",
                             "not a finite number");
          into(r, c) = v.get<double>();
        }
      }
    }
  }
  return t;
}

std::string scoreTotalsCsv(const model::ScoreTotals& t, bool withStd) {
  std::string out = "layer,head";
  for (model::HeadScoreKind k : t.kinds) {
    const std::string name = model::toString(k);
    out += ',';
    out += name;
    if (withStd) {
      out += "_mean,";
      out += name;
      out += "_std";
    }
  }
  if (withStd) out += ",count";
  out += "\n";
  std::vector<Eigen::MatrixXd> means, stds;
  for (std::size_t k = 0; k < t.kinds.size(); ++k) {
    means.push_back(model::meanOf(t, k));
    stds.push_back(model::stdOf(t, k));
  }
  for (int l = 0; l < t.layers; ++l) {
    for (int h = 0; h < t.heads; ++h) {
      out += std::to_string(l) + "," + std::to_string(h);
      for (std::size_t k = 0; k < t.kinds.size(); ++k) {
        out += ',';
        out += number(means[k](l, h));
        if (withStd) {
          out += ',';
          out += number(stds[k](l, h));
        }
      }
      if (withStd) {
        out += ',';
        out += std::to_string(t.count);
      }
      out += "\n";
    }
  }
  return out;
}

std::string matrixCsv(const Matrix& values, const std::string& corner,
                      const std::vector<std::string>& rowLabels,
                      const std::vector<std::string>& columnLabels) {
  auto quoted = [](const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string q = "\"";
    for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return q + "\"";
  };
  std::string out = quoted(corner);
  for (const std::string& c : columnLabels) {
    out += ',';
    out += quoted(c);
  }
  out += "\n";
  for (Eigen::Index r = 0; r < values.rows(); ++r) {
    out += quoted(rowLabels[static_cast<std::size_t>(r)]);
    for (Eigen::Index c = 0; c < values.cols(); ++c) {
      out += ',';
      out += number(values(r, c));
    }
    out += "\n";
  }
  return out;
}

}  // namespace attn::io
