// `heads` and `merge` (cli_analysis.h): head scores on a text, on a random sequence repeated
// twice, or summed over a prompts file (one shard of it), and the exact merge of shards.
// Every kind is opened with cli::openModelKept (app/cli/model_cache.h) and run through the
// run interface (model::runModel, core/models/model_run.h); a decoder's scores read the
// attention rows of its RunOutput::decoder, the engine's own run.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "app/cli/cli.h"
#include "app/cli/cli_analysis.h"
#include "app/cli/cli_common.h"
#include "app/cli/progress_line.h"
#include "core/base/random.h"
#include "core/models/analysis.h"
#include "core/models/analysis_conventions.h"
#include "core/models/head_classes.h"
#include "core/models/mechanisms.h"
#include "core/models/mechanisms_bidirectional.h"
#include "app/cli/model_cache.h"
#include "app/session/version.h"
#include "core/models/model_run.h"
#include "formats/analysis/analysis_files.h"
#include "formats/analysis/provenance.h"
#include "formats/files.h"

namespace attn::app {
namespace {

using cli::fail;
using cli::optionError;
using json = nlohmann::ordered_json;

constexpr int kMaxShards = 1 << 20;

struct HeadsRequest {
  std::string folder, text, image, promptsPath, outPath;
  std::string circuitsPath;  // --circuits: the QK / OV circuits of every head (from the weights)
  int repeat = 0;
  std::uint64_t seed = 0;
  int shard = 1, shards = 1;
  std::vector<model::HeadScoreKind> kinds{std::begin(model::kAllHeadScores),
                                          std::end(model::kAllHeadScores)};
  bool excludeBos = false, excludeCurrent = false;
  int sinkKeys = 1, localWindow = 64;  // --sink, --local (the long-context classes)
  int bos = -1;  // analysis_cli::bosChoice()
  int threads = 0;  // 0 = every core
};

Status parseScores(const std::string& text, std::vector<model::HeadScoreKind>& kinds) {
  kinds.clear();
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    bool known = false;
    for (model::HeadScoreKind k : model::kEveryHeadScore) {
      if (item == model::toString(k)) {
        if (std::find(kinds.begin(), kinds.end(), k) != kinds.end())
          return Error{"", "", "score " + cli::inQuotes(item) + " is listed twice"};
        kinds.push_back(k);
        known = true;
      }
    }
    if (!known)
      return Error{"", "", "unknown score " + cli::inQuotes(item) +
                               "; use prev, dup, induction, sink, entropy, local, distant, retrieval "
                               "(comma-separated)"};
    start = comma + 1;
  }
  return Ok{};
}

cli::Command headsCommand(HeadsRequest& r) {
  cli::Command command;
  command.name = "heads";
  command.column = 26;
  command.usage = R"(usage: attnscope heads DIR --text TEXT [--scores LIST] --out HEADS.csv
       attnscope heads DIR --repeat-random N [--seed S] [--scores LIST] --out HEADS.csv
       attnscope heads DIR --prompts P.jsonl [--shard K/N] [--scores LIST] --out PART.json
       (each with [--exclude-bos] [--exclude-current-token] [--bos | --no-bos] [--threads T])
       attnscope heads ENCODER_DIR --text TEXT [--scores LIST] --out HEADS.csv
       attnscope heads VIT_DIR --image IMG [--scores LIST] --out HEADS.csv
       attnscope heads DIR|FILE.gguf --circuits OUT.csv  (alone, or with any decoder form above)

Scores every head of the model folder DIR (TransformerLens head_detector definitions, "mul"
measure Σ(A⊙D)/ΣA; docs/analyses.md):
  prev       previous-token template D[i][i-1] = 1
  dup        duplicate-token template D[i][j] = 1 for j < i with the same token
  induction  D[i][j] = 1 for 1 <= j <= i when token j-1 equals token i; with
             --repeat-random, the mean of the diagonal at offset 1-N instead
  sink       mean over queries of the weight on position 0 (on keys 0..K-1 with --sink K)
  entropy    mean over queries of -Σ_j A[i][j] ln A[i][j] (nats)
The long-context classes (decoders; docs/long-context.md; not in the default list):
  local      mean over queries of the weight on keys j with 0 <= i - j < W (--local W)
  distant    mean over queries of the weight on the other keys: j >= K and i - j >= W
  retrieval  the Retrieval Head paper's copy score on a synthetic needle: 16 ids drawn
             from the vocabulary by the seed (--seed, per prompt) inserted at half the
             prompt's length and appended again as the answer (teacher-forced); the
             fraction of the answer's tokens whose query's most attended key is the same
             token inside the needle
When every score asked is one of sink, entropy, local, distant and retrieval and one of
local, distant, retrieval is asked, each prompt runs through the tiled pass of `model
--summary` (no n x n attention: long prompts fit).
HEADS.csv: layer,head then one column per score. PART.json: per score and head the count,
sum and sum of squares over the shard's prompts, for attnscope merge, with what they come
from: the model's and the prompts file's hashes, the shard and its prompt range, every
flag. Progress with an ETA goes to stderr. On an encoder or a vision transformer the
pattern is bidirectional and ΣA runs over every key; an image's patches (in raster order,
after [CLS]) have no ids, so dup and induction are refused there.
--circuits OUT.csv (the weights alone, no text; Elhage et al. 2021, docs/analyses.md):
layer,head,kv_head, qk_sv1..qk_sv8, the largest singular values of W_Q·W_Kᵀ, ov_sv1..ov_sv8,
those of W_V·W_O (the head's rows), and copying = Σλ/Σ|λ| over the eigenvalues of
W_E·W_OV·W_U; raw weights (no LayerNorm folding, no biases, no rotary); one row per layer
and query head, kv_head = head / (H / H_kv) under grouped-query attention. On an encoder
(bert, distilbert, roberta; alone) W_U is the MLM head's decoder (without its transform);
without an MLM head, and on a vision transformer (no vocabulary), copying is nan.
)";
  command.options = {
      cli::textOption("--text", "TEXT", "score on this prompt", r.text),
      cli::textOption("--image", "IMG", "score a vision transformer on this image", r.image),
      cli::intOption("--repeat-random", "N", 1, model::kMaxPositions,
                     "score on N seeded random tokens repeated twice (2N tokens)", r.repeat),
      cli::seedOption("the random tokens' seed (--repeat-random) and the needles' (retrieval)", r.seed),
      cli::textOption("--prompts", "P.jsonl", "sum over a prompts file: one {\"text\": ...} per line",
                      r.promptsPath),
      cli::customOption("--shard", "K/N",
                        "only the K-th of N contiguous parts of the prompts (1 <= K <= N)",
                        [&r](const std::string& v) -> Status {
                          const std::size_t slash = v.find('/');
                          auto n = slash == std::string::npos ? std::nullopt
                                                              : parseIntStrict(v.substr(slash + 1), 1, kMaxShards);
                          auto k = n ? parseIntStrict(v.substr(0, slash), 1, *n) : std::nullopt;
                          if (!k) return Error{"", "", cli::inQuotes(v) + " is not K/N with 1 <= K <= N"};
                          r.shard = *k;
                          r.shards = *n;
                          return Ok{};
                        }),
      cli::customOption("--scores", "LIST",
                        "comma-separated: prev,dup,induction,sink,entropy (the default;\n"
                        "a vision transformer's: prev,sink,entropy), local,distant,retrieval",
                        [&r](const std::string& v) { return parseScores(v, r.kinds); }),
      cli::intOption("--sink", "K", 1, 1 << 20, "the sink keys of sink and distant: keys 0..K-1", r.sinkKeys),
      cli::intOption("--local", "W", 1, 1 << 30, "the local window of local and distant, in keys", r.localWindow),
      cli::flagOption("--exclude-bos", "set A[:, 0] = 0 before the prev/dup/induction scores", r.excludeBos),
      cli::flagOption("--exclude-current-token", "set A[i][i] = 0 before them", r.excludeCurrent),
      cli::intOption("--threads", "T", 0, 256,
                     "threads of each forward pass, 1..256, or 0 = every core\n"
                     "(python3 -m attnscope_sweep gives each of W workers cores/W)",
                     r.threads),
      cli::textOption("--out", "FILE", "HEADS.csv (--text, --repeat-random) or PART.json (--prompts)",
                      r.outPath),
      cli::textOption("--circuits", "OUT.csv",
                      "write every head's QK / OV singular values and copying score\n"
                      "(see below); needs no --text",
                      r.circuitsPath),
  };
  for (cli::Option& o : analysis_cli::bosOptions()) command.options.push_back(std::move(o));
  return command;
}

// CIRCUITS.csv: "layer,head,kv_head,qk_sv1..qk_sv8,ov_sv1..ov_sv8,copying", one row per
// layer and query head (core/models/mechanisms.h), numbers with 9 significant digits.
std::string circuitsCsv(const std::vector<model::HeadCircuit>& circuits) {
  std::string csv = "layer,head,kv_head";
  for (const char* kind : {"qk", "ov"})
    for (int k = 1; k <= model::kCircuitSingularValues; ++k) csv += std::string(",") + kind + "_sv" + std::to_string(k);
  csv += ",copying\n";
  char number[32];
  auto put = [&](double v) {
    std::snprintf(number, sizeof number, ",%.9g", v);
    csv += number;
  };
  for (const model::HeadCircuit& c : circuits) {
    csv += std::to_string(c.layer) + "," + std::to_string(c.head) + "," + std::to_string(c.kvHead);
    for (double v : c.qk) put(v);
    for (double v : c.ov) put(v);
    put(c.copying);
    csv += "\n";
  }
  return csv;
}

// Writes CIRCUITS.csv of `weights` and prints {"circuits": PATH, "layers", "heads", "heads_kv"}.
Status writeCircuitsOf(const model::Weights& weights, const std::string& path, std::ostream& out) {
  const std::vector<model::HeadCircuit> circuits = model::headCircuits(weights);
  if (Status s = cli::writeText(path, circuitsCsv(circuits)); !s) return s;
  const model::Config& c = weights.config;
  out << json{{"circuits", path}, {"layers", c.nLayer}, {"heads", c.nHead}, {"heads_kv", c.nHeadKv}}.dump() << "\n";
  return Ok{};
}

// The circuits of an encoder (copying through its MLM decoder; NaN without an MLM head) or a
// ViT (no vocabulary: copying NaN), written as CIRCUITS.csv, with {"circuits", "layers",
// "heads", "heads_kv", "copying": whether the copying column is defined}.
Status writeBidirectionalCircuits(const std::string& folder, io::ModelKind kind, const std::string& path,
                                  std::ostream& out) {
  std::vector<model::HeadCircuit> circuits;
  int layers = 0, heads = 0;
  bool copying = false;
  Expected<io::LoadedModel> loaded = cli::openModelKept(folder, kind);
  if (!loaded) return loaded.error();
  if (kind == io::ModelKind::Encoder) {
    const model::EncoderWeights& w = *loaded->encoder->weights;
    layers = w.config.nLayer;
    heads = w.config.nHead;
    copying = w.hasMlmHead;
    circuits = model::bidirectionalHeadCircuits(w.layers, heads, &w.wordEmbed, copying ? &w.mlm.decoder : nullptr);
  } else {
    const model::VitWeights& w = *loaded->vision->weights;
    layers = w.config.nLayer;
    heads = w.config.nHead;
    circuits = model::bidirectionalHeadCircuits(w.layers, heads, nullptr, nullptr);
  }
  if (Status s = cli::writeText(path, circuitsCsv(circuits)); !s) return s;
  out << json{{"circuits", path}, {"layers", layers}, {"heads", heads}, {"heads_kv", heads}, {"copying", copying}}.dump()
      << "\n";
  return Ok{};
}

// `heads DIR --circuits CIRCUITS.csv` alone: load, compute, write.
int writeCircuits(const HeadsRequest& r, std::ostream& out, std::ostream& err) {
  if (const auto kind = io::modelKindOf(r.folder); kind != io::ModelKind::Decoder) {
    if (Status s = writeBidirectionalCircuits(r.folder, kind, r.circuitsPath, out); !s) return fail(err, s.error());
    return 0;
  }
  Expected<io::ModelFolder> model = analysis_cli::loadFolder(r.folder);
  if (!model) return fail(err, model.error());
  if (Status s = writeCircuitsOf(*model->weights, r.circuitsPath, out); !s) return fail(err, s.error());
  return 0;
}

// Whether `kind` is asked.
bool asks(const std::vector<model::HeadScoreKind>& kinds, model::HeadScoreKind kind) {
  return std::find(kinds.begin(), kinds.end(), kind) != kinds.end();
}

// One of the long-context classes (local, distant, retrieval) is asked.
bool asksLongContext(const std::vector<model::HeadScoreKind>& kinds) {
  return std::any_of(std::begin(model::kLongContextHeadScores), std::end(model::kLongContextHeadScores),
                     [&](model::HeadScoreKind k) { return asks(kinds, k); });
}

// One plain pass of the decoder over `ids` (model::runModel, from scratch: a prompt's numbers
// never depend on the one before, so shards merge exactly) on `threads` threads: its
// DecoderRun, whose attention rows the scores read. Errors name no file (the caller's).
Expected<std::shared_ptr<model::DecoderRun>> decoderPass(const io::ModelFolder& model, const std::vector<int>& ids,
                                                         int threads) {
  model::RunOptions options;
  options.threads = threads;
  options.attention = false;  // read from the engine's packed rows instead
  Expected<model::RunOutput> run = model::runModel(model::AnyWeights::of(model.weights), {ids, {}}, options);
  if (!run) return run.error();
  return std::move(run->decoder);
}

// Adds one prompt's scores to `totals` when a long-context class is asked: every score from
// the tiled pass (core/models/long_context.h) when all of them can be read there, else from
// the decoder's whole pattern; retrieval from a second run on the prompt's needle task
// (core/models/head_classes.h, needle seed deriveSeed(--seed, "needle", promptIndex)).
Status addPromptScores(model::ScoreTotals& totals, const HeadsRequest& r, const io::ModelFolder& model,
                       const std::vector<int>& ids, std::uint64_t promptIndex, const model::DetectOptions& options) {
  const std::shared_ptr<const model::Weights>& weights = model.weights;
  const model::Config& c = weights->config;
  const bool tiled = std::all_of(totals.kinds.begin(), totals.kinds.end(), model::tiledHeadScore);
  model::SummaryOptions summaryOptions;
  summaryOptions.sink = r.sinkKeys;
  summaryOptions.local = r.localWindow;
  summaryOptions.topK = 1;
  summaryOptions.threads = r.threads;
  std::vector<Matrix> scores(totals.kinds.size());
  const bool pattern = std::any_of(totals.kinds.begin(), totals.kinds.end(),
                                   [](model::HeadScoreKind k) { return k != model::HeadScoreKind::Retrieval; });
  if (pattern && tiled) {
    Expected<model::LongSummary> summary = model::summarizeAttention(weights, ids, summaryOptions);
    if (!summary) return summary.error();
    for (std::size_t k = 0; k < scores.size(); ++k) scores[k] = model::summaryHeadScore(*summary, totals.kinds[k]);
  } else if (pattern) {
    Expected<std::shared_ptr<model::DecoderRun>> decoder = decoderPass(model, ids, r.threads);
    if (!decoder) return decoder.error();
    for (std::size_t k = 0; k < scores.size(); ++k)
      scores[k] = model::headScore(model::attentionStack(**decoder), ids, totals.kinds[k], options);
  }
  if (asks(totals.kinds, model::HeadScoreKind::Retrieval)) {
    if (ids.size() + 2 * model::kNeedleLength > static_cast<std::size_t>(c.nPositions))
      return Error{"", "retrieval", std::to_string(ids.size()) + " tokens and the needle twice (" +
                                        std::to_string(2 * model::kNeedleLength) + ") exceed the context of " +
                                        std::to_string(c.nPositions)};
    const model::NeedleTask task = model::needleTask(ids, c.vocabSize, deriveSeed(r.seed, "needle", promptIndex));
    Matrix retrieval;
    if (tiled) {
      Expected<model::LongSummary> summary = model::summarizeAttention(weights, task.ids, summaryOptions);
      if (!summary) return summary.error();
      retrieval = model::retrievalScores(task, *summary);
    } else {
      Expected<std::shared_ptr<model::DecoderRun>> decoder = decoderPass(model, task.ids, r.threads);
      if (!decoder) return decoder.error();
      retrieval = model::retrievalScores(task, **decoder);
    }
    for (std::size_t k = 0; k < scores.size(); ++k)
      if (totals.kinds[k] == model::HeadScoreKind::Retrieval) scores[k] = retrieval;
  }
  for (std::size_t k = 0; k < scores.size(); ++k) {
    const Eigen::MatrixXd s = scores[k].cast<double>();
    totals.sum[k] += s;
    totals.sumSq[k] += s.cwiseProduct(s);
  }
  ++totals.count;
  return Ok{};
}

}  // namespace

cli::CommandInfo headsInfo() {
  HeadsRequest r;
  return cli::describe(headsCommand(r));
}

int runHeads(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  HeadsRequest r;
  const cli::Command command = headsCommand(r);
  int exitCode = 0;
  std::optional<cli::ParsedArgs> parsed = cli::parseOrAnswer(command, args, out, err, exitCode);
  if (!parsed) return exitCode;
  if (parsed->positional.size() != 1)
    return fail(err, Error{"", "", "'heads' needs one model folder DIR (see attnscope heads --help)"});
  r.folder = parsed->positional[0];
  const int sources = parsed->has("--text") + parsed->has("--repeat-random") + parsed->has("--prompts") +
                      parsed->has("--image");
  const bool circuits = parsed->has("--circuits");
  if (circuits) {
    if (cli::lowerExtension(r.circuitsPath) != ".csv")
      return fail(err, optionError("--circuits", cli::inQuotes(r.circuitsPath) + " must end in .csv (a table)"));
    if (Status s = cli::checkOutputFile("--circuits", r.circuitsPath); !s)
      return fail(err, optionError("--circuits", s.error().problem, r.circuitsPath));
    if (io::modelKindOf(r.folder) != io::ModelKind::Decoder && sources > 0)
      return fail(err, optionError("--circuits", "on an encoder or a vision transformer it reads only the weights: "
                                                 "give it alone, without --text or --image",
                                   r.folder));
  }
  if (circuits && sources == 0) {  // the circuits alone: every option of the scores is refused
    for (const char* option : {"--out", "--seed", "--shard", "--scores", "--exclude-bos", "--exclude-current-token",
                               "--threads", "--bos", "--no-bos"})
      if (parsed->has(option))
        return fail(err, optionError(option, "applies to the head scores (--text, --image, --repeat-random or "
                                             "--prompts); --circuits alone reads only the weights"));
    return writeCircuits(r, out, err);
  }
  if (sources != 1)
    return fail(err, optionError("--text", "give exactly one of --text, --image, --repeat-random and --prompts"));
  const bool longContext = asksLongContext(r.kinds);
  const bool retrieval = asks(r.kinds, model::HeadScoreKind::Retrieval);
  if (parsed->has("--seed") && !parsed->has("--repeat-random") && !retrieval)
    return fail(err, optionError("--seed", "only applies with --repeat-random or --scores ...retrieval"));
  const bool usesSink = asks(r.kinds, model::HeadScoreKind::Sink) || asks(r.kinds, model::HeadScoreKind::Distant);
  const bool usesLocal = asks(r.kinds, model::HeadScoreKind::Local) || asks(r.kinds, model::HeadScoreKind::Distant);
  if (parsed->has("--sink") && !usesSink)
    return fail(err, optionError("--sink", "only applies with --scores ...sink or ...distant"));
  if (parsed->has("--local") && !usesLocal)
    return fail(err, optionError("--local", "only applies with --scores ...local or ...distant"));
  if (parsed->has("--shard") && !parsed->has("--prompts"))
    return fail(err, optionError("--shard", "only applies with --prompts"));
  if (!parsed->has("--out")) return fail(err, optionError("--out", "missing"));
  if (Status s = cli::checkOutputFile("--out", r.outPath); !s) return fail(err, s.error());
  Expected<int> choice = analysis_cli::bosChoice(*parsed);
  if (!choice) return fail(err, choice.error());
  r.bos = *choice;
  const bool dataset = parsed->has("--prompts");
  if (const auto kind = io::modelKindOf(r.folder); kind != io::ModelKind::Decoder) {
    if (longContext || parsed->has("--sink"))
      return fail(err, optionError(longContext ? "--scores" : "--sink",
                                   "local, distant, retrieval and --sink run on decoders only (the tiled pass and "
                                   "the needle task are the decoder engine's)",
                                   r.folder));
    for (const char* option : {"--repeat-random", "--prompts", "--shard", "--threads", "--bos", "--no-bos"})
      if (parsed->has(option))
        return fail(err, optionError(option, "runs on decoders only; an encoder takes --text, a vision "
                                             "transformer --image",
                                     r.folder));
    if (cli::lowerExtension(r.outPath) != ".csv")
      return fail(err, optionError("--out", cli::inQuotes(r.outPath) + " must end in .csv (a table)"));
    // A vision transformer's default scores are the ones it can have (prev, sink, entropy):
    // dup and induction compare token ids, which patches do not have. Asked for by name,
    // they are refused (headsBidirectional).
    if (kind == io::ModelKind::Vision && !parsed->has("--scores"))
      std::erase_if(r.kinds, [](model::HeadScoreKind k) { return model::needsTokenIds(k); });
    return analysis_cli::headsBidirectional({r.folder, r.text, r.image, r.outPath, r.kinds,
                                             {r.excludeBos, r.excludeCurrent}},
                                            kind, out, err);
  }
  if (parsed->has("--image"))
    return fail(err, optionError("--image", "applies to vision transformers; this folder is a decoder", r.folder));
  const std::string wanted = dataset ? ".json" : ".csv";
  if (cli::lowerExtension(r.outPath) != wanted)
    return fail(err, optionError("--out", cli::inQuotes(r.outPath) + " must end in " + wanted +
                                              (dataset ? " with --prompts" : " (a table)")));
  std::vector<io::PromptLine> prompts;
  io::PartProvenance provenance;
  if (dataset) {  // read before the model: a bad file costs nothing
    auto read = io::readPrompts(r.promptsPath, true);
    if (!read) return fail(err, read.error());
    prompts = std::move(read).value();
    auto promptsId = io::identifyPrompts(r.promptsPath);
    if (!promptsId) return fail(err, promptsId.error());
    provenance.prompts = std::move(promptsId).value();
  }
  Expected<io::ModelFolder> model = analysis_cli::loadFolder(r.folder);
  if (!model) return fail(err, model.error());
  if (circuits) {
    if (Status s = writeCircuitsOf(*model->weights, r.circuitsPath, out); !s) return fail(err, s.error());
  }
  Expected<int> bos = analysis_cli::bosToken(*model, r.bos);
  if (!bos) return fail(err, bos.error());
  const model::DetectOptions options{r.excludeBos, r.excludeCurrent, r.sinkKeys, r.localWindow};
  model::ScoreTotals totals = model::emptyTotals(model->weights->config, r.kinds);

  if (!dataset) {
    std::vector<int> ids;
    if (parsed->has("--text")) {
      auto tokens = analysis_cli::tokenize(*model, r.text, "--text", err, r.bos);
      if (!tokens) return fail(err, tokens.error());
      ids = std::move(tokens).value();
    } else {
      const model::Config& c = model->weights->config;
      if (2LL * r.repeat + (*bos >= 0) > c.nPositions)
        return fail(err, optionError("--repeat-random", std::to_string(r.repeat) + " tokens repeated twice" +
                                                            (*bos >= 0 ? " after the BOS" : "") +
                                                            " exceed the context of " +
                                                            std::to_string(c.nPositions)));
      ids = model::repeatedRandomTokens(r.repeat, c.vocabSize, r.seed);
      if (*bos >= 0) ids.insert(ids.begin(), *bos);
    }
    if (longContext) {
      if (Status s = addPromptScores(totals, r, *model, ids, 0, options); !s)
        return fail(err, Error{r.folder, "", s.error().message()});
    } else {
      Expected<std::shared_ptr<model::DecoderRun>> run = decoderPass(*model, ids, r.threads);
      if (!run) return fail(err, Error{r.folder, "", run.error().message()});
      model::accumulate(totals, **run, options);
    }
    if (parsed->has("--repeat-random")) {  // induction: the diagonal at offset 1 - N
      for (std::size_t k = 0; k < r.kinds.size(); ++k) {
        if (r.kinds[k] != model::HeadScoreKind::Induction) continue;
        auto diagonal = model::repeatedInductionScores(model->weights, r.repeat,
                                                       r.seed, *bos, r.threads);
        if (!diagonal) return fail(err, optionError("--repeat-random", diagonal.error().problem));
        totals.sum[k] = diagonal->cast<double>();
        totals.sumSq[k] = totals.sum[k].cwiseProduct(totals.sum[k]);
      }
    }
    if (Status s = cli::writeText(r.outPath, io::scoreTotalsCsv(totals, false)); !s) return fail(err, s.error());
    out << json{{"out", r.outPath}, {"tokens", ids.size()}, {"bos", *bos >= 0}}.dump() << "\n";
    return 0;
  }

  const model::ShardRange range = model::shardRange(prompts.size(), r.shard, r.shards);
  // What the PART.json records besides its sums (formats/analysis/provenance.h): merge
  // refuses parts whose model, prompts, scores or flags differ, and shards that do not tile.
  auto modelId = io::identifyModel(r.folder);
  if (!modelId) return fail(err, modelId.error());
  provenance.writtenBy = "attnscope " + std::string(kVersion);
  provenance.model = std::move(modelId).value();
  provenance.shard = r.shard;
  provenance.shards = r.shards;
  provenance.first = static_cast<std::int64_t>(range.first);
  provenance.last = static_cast<std::int64_t>(range.last);
  provenance.flags = {{"exclude_bos", r.excludeBos}, {"exclude_current_token", r.excludeCurrent},
                      {"bos", *bos >= 0}};
  if (longContext || parsed->has("--sink")) provenance.flags["sink_keys"] = r.sinkKeys;
  if (usesLocal) provenance.flags["local_window"] = r.localWindow;
  if (retrieval) provenance.flags["needle_seed"] = std::to_string(r.seed);
  cli::ProgressLine progress(err, "attnscope heads:", "prompts");
  for (std::size_t i = range.first; i < range.last; ++i) {
    const std::string where = r.promptsPath + " line " + std::to_string(prompts[i].line);
    auto ids = analysis_cli::tokenize(*model, prompts[i].text, "--prompts", err, r.bos);
    if (!ids) return fail(err, Error{r.promptsPath, "line " + std::to_string(prompts[i].line) + ": text",
                                     ids.error().problem});
    // From scratch (decoderPass): reusing the previous prompt's common prefix would make a
    // prompt's float32 numbers depend on its neighbour, and shards would not merge exactly.
    if (longContext) {
      if (Status s = addPromptScores(totals, r, *model, *ids, i, options); !s)
        return fail(err, Error{where, "", s.error().message()});
    } else {
      Expected<std::shared_ptr<model::DecoderRun>> run = decoderPass(*model, *ids, r.threads);
      if (!run) return fail(err, Error{where, "", run.error().message()});
      model::accumulate(totals, **run, options);
    }
    progress.update(static_cast<double>(i + 1 - range.first), static_cast<double>(range.last - range.first));
  }
  if (Status s = io::writeScorePart(r.outPath, {std::move(totals), std::move(provenance)}); !s)
    return fail(err, s.error());
  out << json{{"out", r.outPath},
              {"prompts", range.last - range.first},
              {"shard", std::to_string(r.shard) + "/" + std::to_string(r.shards)},
              {"range", {range.first, range.last}},
              {"bos", *bos >= 0}}
             .dump()
      << "\n";
  return 0;
}

// =======================================================================================
// merge
// =======================================================================================

namespace {

struct MergeRequest {
  std::string outPath;
  bool allowPartial = false;
};

cli::Command mergeCommand(MergeRequest& r) {
  cli::Command command;
  command.name = "merge";
  command.column = 20;
  command.usage = R"(usage: attnscope merge PART.json [PART.json ...] [--allow-partial] --out HEADS.csv

Adds the per-head counts, sums and sums of squares of `attnscope heads --prompts` shards
(exactly: the result equals the unsharded run's) and writes HEADS.csv: lines "# ..." naming
what was merged (model, prompts file, flags, each part's shard and prompt range), then
layer,head, then NAME_mean,NAME_std per score (population standard deviation over prompts),
then count. Refused (exit 2, naming the two parts and the field): parts of another model
(config, tokenizer or weight hashes), prompts file, score list or flag; a part given twice;
overlapping shards; and prompts no part covers (unless --allow-partial).
)";
  command.options = {
      cli::textOption("--out", "HEADS.csv", "the merged table", r.outPath),
      cli::flagOption("--allow-partial", "merge even if some prompts are in no part (the CSV names them)",
                      r.allowPartial),
  };
  return command;
}

}  // namespace

cli::CommandInfo mergeInfo() {
  MergeRequest r;
  return cli::describe(mergeCommand(r));
}

int runMerge(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  MergeRequest r;
  const cli::Command command = mergeCommand(r);
  int exitCode = 0;
  std::optional<cli::ParsedArgs> parsed = cli::parseOrAnswer(command, args, out, err, exitCode);
  if (!parsed) return exitCode;
  if (parsed->positional.empty())
    return fail(err, Error{"", "", "'merge' needs at least one PART.json (see attnscope merge --help)"});
  if (!parsed->has("--out")) return fail(err, optionError("--out", "missing"));
  if (Status s = cli::checkOutputFile("--out", r.outPath); !s) return fail(err, s.error());
  if (cli::lowerExtension(r.outPath) != ".csv")
    return fail(err, optionError("--out", cli::inQuotes(r.outPath) + " must end in .csv"));
  std::vector<io::NamedPart> parts;
  for (const std::string& path : parsed->positional) {
    if (Status s = cli::checkNotAnInput(r.outPath, path); !s) return fail(err, s.error());
    auto part = io::readScorePart(path);
    if (!part) return fail(err, part.error());
    parts.push_back({path, std::move(part).value()});
  }
  auto merged = io::mergeParts(parts, r.allowPartial);
  if (!merged) return fail(err, merged.error());
  const std::string csv = io::mergeComment(parts, *merged) + io::scoreTotalsCsv(merged->totals, true);
  if (Status s = cli::writeText(r.outPath, csv); !s) return fail(err, s.error());
  std::int64_t missing = 0;
  for (const auto& [first, last] : merged->missing) missing += last - first;
  out << json{{"out", r.outPath},
              {"parts", parts.size()},
              {"prompts", merged->totals.count},
              {"missing_prompts", missing}}
             .dump()
      << "\n";
  return 0;
}

}  // namespace attn::app
