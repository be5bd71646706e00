// The launch plan (app/session/launch.h: what `attnscope FILE`, `--model DIR` and
// `screenshot` ask for), applied when the window opens. Each feature applies its own part:
// the files are checked first (a bad file fails a screenshot before any window), then the
// document, the Image view, the Training panel, the Attention panel, the Model panel and
// the view (theme, presentation, stage).
#include "app/ui/shell/gui_impl.h"

namespace attn::app {

namespace fs = std::filesystem;

// Steps, in order: 0-1 the files, 2 the window, 3 the document, 4 each feature's part.
int GuiWindow::open(const GuiLaunch& launch, const Options& options) {
  Impl& s = *impl_;
  s.launch = launch;
  s.launch.frames = std::max(1, launch.frames);
  s.options = options;
  if (classifyPath(s.launch.scenarioPath) == PathKind::Image) {  // `attnscope IMAGE`: the image view
    s.launch.imagePath = s.launch.scenarioPath;
    s.launch.scenarioPath.clear();
  }
  // 0-1 the image, the attention file and the scenario, before a window opens: a bad file
  //   must fail the same way with or without a display
  // screenshot --workspace: a name of the toolbar's (app/ui/shell/workspaces.h)
  if (!s.launch.workspace.empty() && findWorkspace(s.launch.workspace) == nullptr) {
    std::fprintf(stderr, "attnscope: --workspace: unknown workspace '%s'; use one of %s\n",
                 s.launch.workspace.c_str(), workspaceIds().c_str());
    return 2;
  }
  Impl::LaunchFiles files;
  if (int code = s.checkLaunchFiles(files); code != 0) return code;
  s.waitWhenIdle = options.waitWhenIdle && !s.screenshotMode();
  // 2 window, GL context, ImGui
  if (int code = s.openWindow(); code != 0) {
    close();
    return code;
  }
  s.startServices();
  // 3 the document: the given file, else the autosave, else the default preset
  s.openLaunchDocument(files);
  // 4 each feature's part of the plan
  s.launchImage(files.imageError);
  if (s.launch.trainingSteps >= 0) prepareTrainingScreenshot(s.state, *s.ui, s.launch.trainingSteps);
  s.launchAttention(files.attentionPath);
  if (!s.launchModel()) {
    close();
    return 2;
  }
  s.launchView();
  s.finishLaunch();
  return 0;
}

int GuiWindow::Impl::checkLaunchFiles(LaunchFiles& files) {
  // The image (the window checks it as the CLI's `image` does).
  if (!launch.imagePath.empty()) {
    Expected<io::Image> image = io::loadImage(launch.imagePath);
    if (!image) {
      if (screenshotMode()) {
        std::fprintf(stderr, "attnscope: %s\n", image.error().message().c_str());
        return 2;
      }
      files.imageError = "cannot open " + image.error().message();
    }
  }
  // An attention file (.npy / .npz) opens beside the usual document (autosave or preset).
  if (classifyPath(launch.scenarioPath) == PathKind::AttentionFile) {
    files.attentionPath = launch.scenarioPath;
    launch.scenarioPath.clear();
  }
  if (!files.attentionPath.empty() && screenshotMode()) {
    if (Expected<io::AttentionFile> probe =
            io::AttentionFile::open(files.attentionPath, launch.attention.open);
        !probe) {
      std::fprintf(stderr, "attnscope: %s\n", probe.error().message().c_str());
      return 2;
    }
  }
  if (!launch.scenarioPath.empty()) {
    Expected<Scenario> loaded = io::loadScenario(launch.scenarioPath);
    if (loaded) {
      files.initial = std::move(loaded).value();
      files.haveInitial = true;
    } else {
      Error error = loaded.error();
      if (error.file.empty()) error.file = launch.scenarioPath;
      if (screenshotMode()) {
        std::fprintf(stderr, "attnscope: %s\n", error.message().c_str());
        return 2;
      }
      files.startupError = "cannot open " + error.message();
    }
  }
  return 0;
}

void GuiWindow::Impl::startServices() {
  ui = std::make_unique<UiState>(std::make_unique<GlHeatmapTextures>());
  HeatmapCache* heatmaps = &ui->heatmaps;
  // Spread big re-uploads over frames (about two 2048 x 2048 matrices per frame), except for
  // screenshots, which must show every texture of the finished result.
  if (!screenshotMode()) heatmaps->impl().uploadBudgetBytes = std::size_t{32} << 20;
  heatmaps->impl().recordLabels = !launch.layoutOutPath.empty();
  compute = std::make_unique<ComputeService>();
  attention = std::make_unique<AttentionService>();
  model = std::make_unique<ModelService>();
  mechanism = std::make_unique<MechanismService>();
}

void GuiWindow::Impl::openLaunchDocument(LaunchFiles& launchFiles) {
  files.assetDir = dataDir();
  // The desktop's file dialog (zenity / kdialog) in an interactive window, never in a
  // screenshot run.
  files.nativeDialogs = !screenshotMode();
  files.presets = listPresets(files.assetDir);
  loadRecent();
  if (!launch.noAutosave && !screenshotMode()) files.autosaveFile = autosavePath();
  if (launchFiles.haveInitial) {
    const std::string view = launchFiles.initial.viewJson;
    loadDocument(state, std::move(launchFiles.initial), launch.scenarioPath);
    applyViewJson(state.view, view, false);
    // Unsaved edits in the autosave are offered (modal), never overwritten unasked.
    startWithAutosave(files, state, /*restoreSession=*/false, now());
    std::error_code ec;  // temporaries a killed save left next to the document
    io::cleanStaleTemporaries(fs::absolute(launch.scenarioPath, ec).parent_path().string());
  } else {
    // An explicit file that failed starts on the default preset, not on the autosave
    // (loadInitialDocument skips the autosave when launch.scenarioPath is set).
    loadInitialDocument(launchFiles.startupError);
  }
}

// The image view (computed off the UI thread, except for deterministic screenshots).
void GuiWindow::Impl::launchImage(const std::string& imageError) {
  state.image.async = !screenshotMode();
  if (!imageError.empty()) notify(state, Notice::Kind::Error, imageError, now());
  if (launch.imagePath.empty() || !imageError.empty()) return;
  ImageViewState& image = state.image;
  if (launch.imagePatch > 0) image.patch.patch = launch.imagePatch;
  if (launch.imageTemperature > 0) image.temperature = launch.imageTemperature;
  if (auto kind = parsePatchPositional(launch.imagePositional)) image.patch.positional = *kind;
  if (openImageView(state, launch.imagePath, now())) {
    if (launch.imageQueryRow >= 0) image.queryRow = launch.imageQueryRow;
    if (launch.imageQueryCol >= 0) image.queryCol = launch.imageQueryCol;
  }
}

void GuiWindow::Impl::launchAttention(const std::string& attentionPath) {
  if (!attentionPath.empty() && openAttentionFile(state, attentionPath, now(), launch.attention.open))
    applyAttentionStart(state, launch.attention, now());
}

bool GuiWindow::Impl::launchModel() {
  if (launch.modelFolder.empty()) return true;
  state.model.text = launch.modelText;
  ++state.model.textRevision;
  state.model.loadRequest = launch.modelFolder;  // on the worker (the window is up)
  return !screenshotMode() || openModelScreenshot();
}

bool GuiWindow::Impl::openModelScreenshot() {
  const std::size_t notices = state.notices.size();
  updateModel(state, now());
  if (!state.image.model.loadRequest.empty()) {  // a ViT folder: the Image panel's model source
    ImageModelState& image = state.image.model;
    Expected<bool> loaded = updateImageModel(image, state.image.image, state.image.imageId, false);
    if (!loaded) {
      std::fprintf(stderr, "attnscope: cannot open model %s\n", loaded.error().message().c_str());
      return false;
    }
    // the Heads tab's --ablate / --head-score (a ViT's patches have no ids: no dup,
    // induction; no unembedding: no copying), then the run they ask for
    if (image.vit) {
      const int score = launch.modelAnalysis.headScore;
      if (score == kCopyingScore || (score >= 0 && score < kCopyingScore &&
                                     model::needsTokenIds(model::kAllHeadScores[score]))) {
        std::fprintf(stderr, "attnscope: option '--head-score': %s compares token ids or reads W_U; a vision "
                             "transformer has neither (use prev, sink, entropy)\n",
                     scoreChoiceTitle(score));
        return false;
      }
      const model::VitConfig& c = image.vit->weights->config;
      if (Status s = applyHeadsStart(image.analysis, launch.modelAnalysis, c.nLayer, c.nHead); !s) {
        std::fprintf(stderr, "attnscope: %s\n", s.error().message().c_str());
        return false;
      }
      if (Expected<bool> rerun = updateImageModel(image, state.image.image, state.image.imageId, false); !rerun) {
        std::fprintf(stderr, "attnscope: %s\n", rerun.error().message().c_str());
        return false;
      }
    }
    return true;
  }
  if (!state.model.model && !state.model.encoder) {  // the error notice was printed to stderr by notify()
    if (state.notices.size() == notices) std::fprintf(stderr, "attnscope: cannot open the model\n");
    return false;
  }
  // Issue 21's analyses (--ablate, --head-score, --patch-*), then the runs they ask for.
  if (Status analysis = applyAnalysisStart(state, launch.modelAnalysis); !analysis) {
    std::fprintf(stderr, "attnscope: %s\n", analysis.error().message().c_str());
    return false;
  }
  updateModel(state, now());
  // A patching screenshot shows the Patching panel in the Attention panel's place (the
  // Model workspace's lower row).
  if (launch.modelAnalysis.patch) {
    const std::string_view patching[] = {"patching"};
    switchWorkspace(state.view, *findWorkspace("model"), patching);
    *panelFlag(state.view, "attention") = false;
  }
  const std::shared_ptr<const ModelRun> run = state.model.run;
  if (run && run->longInput) {  // the summary view (issue 29): its pass at once; --select L,H its head
    // No [L, H, n, n] to show: the Model panel takes the Model workspace alone.
    const std::string_view alone[] = {"model"};
    switchWorkspace(state.view, *findWorkspace("model"), alone);
    *panelFlag(state.view, "attention") = false;
    updateLongContext(state, now(), false);
    LongContextState* lc = state.model.longContext.get();
    if (lc && lc->result && launch.attention.layer >= 0) {
      const model::LongSummary& s = lc->result->summary;
      if (launch.attention.layer >= s.layers || launch.attention.head < 0 || launch.attention.head >= s.heads) {
        std::fprintf(stderr, "attnscope: --select %d,%d: the model has %d layers x %d heads\n", launch.attention.layer,
                     launch.attention.head, s.layers, s.heads);
        return false;
      }
      lc->layer = launch.attention.layer;
      lc->head = launch.attention.head;
      updateLongContext(state, now(), false);
    }
    return true;
  }
  if (!run || !run->attention) return true;
  // --select names a head of this model: refused (not clamped) when the model has none such,
  // as `screenshot FILE.npz --select` is (the file's shape is known before the window opens,
  // a model's only once it is loaded).
  const io::AttentionFile& attention = *run->attention;
  if (launch.attention.layer >= attention.layers() || launch.attention.head >= attention.heads()) {
    std::fprintf(stderr, "attnscope: option '--select': %d,%d is out of range: the model has %d layers x %d heads\n",
                 launch.attention.layer, launch.attention.head, attention.layers(), attention.heads());
    return false;
  }
  // The run's attention is the Attention panel's file now: --select, --view, --focus ...
  // apply to it as to a .npy / .npz.
  applyAttentionStart(state, launch.attention, now());
  // --show (issue 30): a mechanism of the run in the Attention panel, computed at once.
  setNormalizeFlow(state, launch.modelAnalysis.normalizeFlow);
  setMechanism(state, static_cast<Mechanism>(launch.modelAnalysis.show));
  updateMechanism(state);
  if (launch.modelPipeline && run->decoder) {
    const io::AttentionSelection& selection = state.attention.selection;
    Expected<Scenario> scenario =
        headScenario(*run, selection.layer, selection.head,
                     fs::path(run->attention->path()).filename().string());
    if (scenario) {
      loadDocument(state, std::move(scenario).value(), "");
      // the pipeline in front: the Teach workspace, where the Pipeline panel is tiled (a
      // --workspace given too is switched to later, and wins)
      switchWorkspace(state.view, *findWorkspace("teach"));
    }
  }
  return true;
}

void GuiWindow::Impl::launchView() {
  if (launch.lightTheme) state.view.lightTheme = *launch.lightTheme;
  if (launch.classroomText) state.view.classroomText = *launch.classroomText;
  state.view.presentation = launch.presentation;
  // --presentation presents what the launch shows in front: the Training panel (--training),
  // the Image view (an image), else the Pipeline.
  presentedPanel = launch.trainingSteps >= 0 ? "training"
                   : !launch.imagePath.empty() ? "image"
                                               : "pipeline";
  wasPresenting = launch.presentation;
  // A screenshot shows the page as the class sees it once the pointer has rested: no
  // toolbar (app/ui/panels/panel_pipeline.cpp, kChromeSeconds).
  if (screenshotMode()) ui->scratch.pointerMovedAt = -1e9;
  if (launch.stage >= 0) {
    state.view.pipelineStage = launch.stage;
    state.view.stageFullScreen = launch.presentation;
  }
  if (lessonMode()) startLessonCapture(launch.lessonGifPath, launch.lessonDelayCs);
  // --workspace: switched to last, so that it wins over the workspace the files led to.
  if (const WorkspaceInfo* ws = findWorkspace(launch.workspace)) switchWorkspace(state.view, *ws);
  if (launch.dialog == "open") showOpenDialog(files, state);
  if (launch.dialog == "save-as" || launch.dialog == "replace") showSaveAsDialog(files, state);
  // Save pressed over the document's own file (it exists): the "Replace?" question.
  if (launch.dialog == "replace") confirmDialog(files);
}

void GuiWindow::Impl::finishLaunch() {
  files.autosavedRevision = state.revision;
  files.autosavedView = viewToJson(state.view, state.doc.viewJson, true) +
                        (state.dirty() ? "d" : "c") + state.docPath;
  rebuildFontIfNeeded();
  if (std::string error = ui->heatmaps.initGpu(); !error.empty()) {
    notify(state, Notice::Kind::Error, "heatmaps cannot be drawn: " + error, now());
    if (screenshotMode()) {
      std::fprintf(stderr, "attnscope: heatmaps cannot be drawn: %s\n", error.c_str());
    }
  }
}

}  // namespace attn::app
