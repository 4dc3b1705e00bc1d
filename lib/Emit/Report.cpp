//===- Report.cpp - The human report, as text and as HTML -----------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "EmitInternal.h"
#include "dp/Emit/Emit.h"
#include "dp/IR/Annotations.h"
#include "dp/IR/Types.h"
#include "dp/Support/Format.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cmath>

using namespace llvm;

namespace dp {

void writeReport(raw_ostream &OS, const PlacedStep &S) {
  printSimulationReport(OS, *S.G, *S.C, S.Result, S.Bounds, &S.Baseline);
  if (S.Plans)
    printPlanSearch(OS, *S.Plans);
  if (S.Warnings.empty())
    return;
  OS << "  warnings:\n";
  for (const std::string &W : S.Warnings)
    OS << "    " << W << '\n';
}

//===----------------------------------------------------------------------===//
// HTML
//===----------------------------------------------------------------------===//

namespace {
/// An interval drawn on a lane of the timeline: one op or transfer, or a
/// run of several too short to tell apart.
struct Bar {
  double Start, End;
  /// The first item drawn in the bar, and how many it holds.
  uint32_t First;
  uint32_t Count;
};

/// Writes HTML with the escaping it needs.
class HTMLWriter {
public:
  explicit HTMLWriter(raw_ostream &OS) : OS(OS) {}
  HTMLWriter &operator<<(StringRef S) {
    OS << S;
    return *this;
  }
  HTMLWriter &text(StringRef S) {
    writeEscapedXML(OS, S);
    return *this;
  }
  raw_ostream &raw() { return OS; }

private:
  raw_ostream &OS;
};
} // namespace

/// Puts intervals sorted by start into bars, merging neighbours closer than
/// \p MinGap seconds (half a pixel) so that long steps stay drawable.
static std::vector<Bar> makeBars(ArrayRef<std::pair<double, double>> Items,
                                 ArrayRef<uint32_t> Order, double MinGap) {
  std::vector<Bar> Bars;
  for (uint32_t I : Order) {
    auto [Start, End] = Items[I];
    if (!Bars.empty() && Start - Bars.back().End < MinGap &&
        End - Bars.back().Start < 64 * MinGap) {
      Bars.back().End = std::max(Bars.back().End, End);
      ++Bars.back().Count;
      continue;
    }
    Bars.push_back({Start, End, I, 1});
  }
  return Bars;
}

/// A round tick interval: 1, 2 or 5 times a power of ten, giving about
/// \p Ticks ticks over \p Span.
static double getTickStep(double Span, unsigned Ticks) {
  double Raw = Span / Ticks;
  double Pow = std::pow(10.0, std::floor(std::log10(Raw)));
  for (double M : {1.0, 2.0, 5.0})
    if (M * Pow >= Raw)
      return M * Pow;
  return 10 * Pow;
}

/// The charts' layout: a label column, then the step across the plot.
static constexpr double LabelWidth = 230, PlotWidth = 900;

/// Opens a chart's <svg> of class \p Class, \p Height high, with room
/// \p RightMargin right of the plot, and its \p Title.
static void openChart(HTMLWriter &H, StringRef Class, double Height,
                      double RightMargin, StringRef Title) {
  H.raw() << formatv("<svg xmlns=\"http://www.w3.org/2000/svg\" "
                     "class=\"{0}\" width=\"{1}\" height=\"{2}\" "
                     "viewBox=\"0 0 {1} {2}\" role=\"img\">\n",
                     Class, LabelWidth + PlotWidth + RightMargin, Height);
  H << "<title>";
  H.text(Title) << "</title>\n";
}

namespace {
/// The timeline's lanes, one a device or a link direction, as they are
/// drawn: a label left of the plot, bars in it.
struct TimelineLanes {
  static constexpr double LaneHeight = 22, Top = 24;
  HTMLWriter &H;
  /// Pixels per second, and the gap below which bars merge.
  double Scale, MinGap;

  void label(unsigned Lane, StringRef Label) {
    H.raw() << formatv("<text x=\"4\" y=\"{0}\" class=\"lane\">",
                       Top + Lane * LaneHeight + LaneHeight * 0.68);
    H.text(Label) << "</text>\n";
  }
  /// Draws the spans \p Items of \p Spans in \p Lane, merged into bars.
  void bars(unsigned Lane, ArrayRef<std::pair<double, double>> Spans,
            ArrayRef<uint32_t> Items, StringRef Fill, StringRef Class,
            function_ref<std::string(const Bar &)> Title) {
    for (const Bar &B : makeBars(Spans, Items, MinGap)) {
      double X = LabelWidth + B.Start * Scale;
      double W = std::max((B.End - B.Start) * Scale, 0.5);
      H.raw() << formatv("<rect x=\"{0:F2}\" y=\"{1}\" width=\"{2:F2}\" "
                         "height=\"{3}\" fill=\"{4}\" class=\"{5}\"><title>",
                         X, Top + Lane * LaneHeight + 3, W, LaneHeight - 6,
                         Fill, Class);
      H.text(Title(B)) << "</title></rect>\n";
    }
  }
};
} // namespace

/// The devices' lanes: their op instances by start time (without a
/// pipeline plan an instance is an op).
static void writeDeviceLanes(TimelineLanes &L, const PlacedStep &S) {
  const Graph &G = *S.G;
  const Cluster &C = *S.C;
  const SimResult &R = S.Result;
  unsigned D = C.getNumDevices();
  uint32_t NumInstances = R.Ops.size();
  std::vector<std::pair<double, double>> OpSpans(NumInstances);
  std::vector<std::vector<uint32_t>> ByDevice(D);
  for (uint32_t I = 0; I != NumInstances; ++I) {
    OpSpans[I] = {R.Ops[I].Start, R.Ops[I].End};
    ByDevice[S.Placement[R.getOp(I)]].push_back(I);
  }
  unsigned MicroBatches = S.Plan ? S.Plan->MicroBatches : 1;
  auto MicroBatchOf = [&](uint32_t I) {
    return R.InstanceMicroBatch.empty() ? 0u : R.InstanceMicroBatch[I];
  };
  for (unsigned Dev = 0; Dev != D; ++Dev) {
    L.label(Dev,
            C.getDevices()[Dev].Name + " (" + C.getDeviceType(Dev).Name + ")");
    std::vector<uint32_t> &Ops = ByDevice[Dev];
    llvm::stable_sort(Ops, [&](uint32_t A, uint32_t B) {
      return OpSpans[A].first < OpSpans[B].first;
    });
    // A training step's backward and update ops are drawn apart from its
    // forward ops, lighter (class "bwd"), each set merged on its own; under
    // a pipeline plan, each micro-batch's in its own colour.
    std::vector<std::vector<uint32_t>> Sets(2 * MicroBatches);
    for (uint32_t I : Ops) {
      StringRef Phase =
          ann::get(G.getOp(R.getOp(I)), ann::Phase).getValueOr("");
      bool Bwd = Phase == "backward" || Phase == "update";
      Sets[2 * MicroBatchOf(I) + Bwd].push_back(I);
    }
    for (unsigned K = 0; K != Sets.size(); ++K) {
      bool Bwd = K % 2;
      unsigned MB = K / 2;
      L.bars(Dev, OpSpans, Sets[K], getDeviceColor(S.Plan ? MB : Dev),
             Bwd ? "bar bwd" : "bar", [&](const Bar &B) {
               OpId O = R.getOp(B.First);
               const Op &Node = G.getOp(O);
               StringRef Name =
                   Node.SourceName.empty() ? Node.Name : Node.SourceName;
               std::string Where =
                   S.Plan ? (", micro-batch " + Twine(MB)).str() : "";
               if (B.Count == 1)
                 return (Name + " (" + G.getQualifiedType(O) + Where +
                         "): " + formatSeconds(B.End - B.Start) + " from " +
                         formatSeconds(B.Start))
                     .str();
               return (Twine(B.Count) + " ops from " + Name + Where + ", " +
                       formatSeconds(B.Start) + " to " + formatSeconds(B.End))
                   .str();
             });
    }
  }
}

/// The lanes of \p Channels, after the devices': the transfers on each.
static void writeLinkLanes(TimelineLanes &L, const PlacedStep &S,
                           ArrayRef<unsigned> Channels) {
  const Graph &G = *S.G;
  const Cluster &C = *S.C;
  const SimResult &R = S.Result;
  unsigned D = C.getNumDevices();
  std::vector<std::pair<double, double>> XferSpans;
  std::vector<std::vector<uint32_t>> ByChannel(C.getNumChannels());
  for (uint32_t I = 0, E = R.Transfers.size(); I != E; ++I) {
    const TransferRecord &T = R.Transfers[I];
    XferSpans.push_back({T.Start, T.End});
    for (unsigned Ch : C.getRoute(T.Src, T.Dst))
      ByChannel[Ch].push_back(I);
  }
  for (unsigned Lane = 0, E = Channels.size(); Lane != E; ++Lane) {
    unsigned Ch = Channels[Lane];
    L.label(D + Lane, getChannelName(C, Ch));
    std::vector<uint32_t> &Xfers = ByChannel[Ch];
    llvm::stable_sort(Xfers, [&](uint32_t A, uint32_t B) {
      return XferSpans[A].first < XferSpans[B].first;
    });
    L.bars(D + Lane, XferSpans, Xfers, "#9e9e9e", "bar", [&](const Bar &B) {
      const TransferRecord &T = R.Transfers[B.First];
      const Tensor &Tn = G.getTensor(R.getTensor(T.Tensor));
      if (B.Count == 1)
        return (Tn.Name + ": " +
                formatBytes(Tn.Type.getSizeInBytes().getValueOr(0)) + " " +
                C.getDevices()[T.Src].Name + " -> " +
                C.getDevices()[T.Dst].Name + ", " +
                formatSeconds(B.End - B.Start))
            .str();
      return (Twine(B.Count) + " transfers from " + Tn.Name + ", " +
              formatSeconds(B.Start) + " to " + formatSeconds(B.End))
          .str();
    });
  }
}

static void writeTimeline(HTMLWriter &H, const PlacedStep &S) {
  const Cluster &C = *S.C;
  const SimResult &R = S.Result;
  constexpr double LaneHeight = TimelineLanes::LaneHeight,
                   Top = TimelineLanes::Top;
  // Room for the last tick's label ("1.250 ms"), which starts at its tick.
  constexpr double RightMargin = 64;
  double Step = R.StepTime > 0 ? R.StepTime : 1;
  double Scale = PlotWidth / Step;

  // Lanes: every device, then every link direction that carried data.
  std::vector<unsigned> Channels;
  for (unsigned Ch = 0, E = C.getNumChannels(); Ch != E; ++Ch)
    if (R.ChannelBytes[Ch])
      Channels.push_back(Ch);
  unsigned Lanes = C.getNumDevices() + Channels.size();
  double Height = Top + Lanes * LaneHeight + 8;
  openChart(H, "timeline", Height, RightMargin, "simulated step timeline");
  // Axis with round ticks.
  double Tick = getTickStep(Step, 8);
  for (double T = 0; T <= Step * (1 + 1e-9); T += Tick) {
    double X = LabelWidth + T * Scale;
    H.raw() << formatv("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" "
                       "class=\"grid\"/>\n",
                       X, Top - 4, Height - 8);
    H.raw() << formatv("<text x=\"{0}\" y=\"{1}\" class=\"tick\">", X, Top - 8);
    H.text(T == 0 ? "0" : formatSeconds(T)) << "</text>\n";
  }
  TimelineLanes L{H, Scale, 0.5 / Scale};
  writeDeviceLanes(L, S);
  writeLinkLanes(L, S, Channels);
  H << "</svg>\n";
}

/// A horizontal bar of \p Percent per cent, for table cells.
static void writeMeter(HTMLWriter &H, double Percent, StringRef Color) {
  double W = std::min(std::max(Percent, 0.0), 100.0);
  H.raw() << formatv("<div class=\"meter\"><div style=\"width:{0:F1}%;"
                     "background:{1}\"></div></div>",
                     W, Color);
}

static const char *const HTMLStyle = R"(
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif;
       margin: 24px; color: #222; }
h1 { font-size: 1.4em; }
h2 { font-size: 1.15em; margin-top: 1.6em; }
table { border-collapse: collapse; }
th, td { padding: 3px 10px; border-bottom: 1px solid #ddd; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums;
         white-space: nowrap; }
td.dev { white-space: nowrap; }
th.group { text-align: center; border-bottom: 1px solid #bbb; }
table.devices th { vertical-align: bottom; }
table.devices th, table.devices td { padding: 3px 7px; }
p.note { max-width: 60em; color: #444; }
#node-counts { list-style: none; padding: 0; display: flex; flex-wrap: wrap;
               gap: 4px 18px; }
#node-filter { font-size: 1em; padding: 3px 6px; }
.meter { width: 80px; height: 10px; background: #eee; display: inline-block; }
.meter div { height: 10px; }
.swatch { display: inline-block; width: 12px; height: 12px;
          margin-right: 6px; vertical-align: middle; border: 1px solid #888; }
svg.timeline text, svg.memory text { font-size: 11px; fill: #333; }
svg.timeline text.tick { fill: #777; }
svg.timeline line.grid { stroke: #e4e4e4; }
svg.timeline rect.bar { stroke: #555; stroke-width: 0.3; }
svg.timeline rect.bwd { fill-opacity: 0.5; }
.warn { color: #a33; }
.oom { color: #c00; font-weight: bold; }
)";

/// "training (optimizer adam)" when \p G has update ops (training-graph's
/// `phase`), else "inference".
static std::string describeStep(const Graph &G) {
  for (const Op &Node : G.ops())
    if (ann::get(Node, ann::Phase).getValueOr("") == "update") {
      StringRef Type = Node.Type;
      Type.consume_back("Update");
      return "training (optimizer " + Type.lower() + ")";
    }
  return "inference";
}

/// The summary table: the placer, the step time against its bounds and
/// the best single device, transfers and memory.
static void writeHTMLSummary(HTMLWriter &H, const PlacedStep &S) {
  const Graph &G = *S.G;
  const Cluster &C = *S.C;
  const SimResult &R = S.Result;
  double Gap =
      S.Bounds.best() > 0 ? (R.StepTime / S.Bounds.best() - 1) * 100 : 0;
  H << "<h2>Summary</h2>\n<table class=\"summary\">\n";
  auto Row = [&](StringRef Key, const Twine &Value) {
    H << "<tr><th>";
    H.text(Key) << "</th><td>";
    H.text(Value.str()) << "</td></tr>\n";
  };
  if (!S.ModelFile.empty())
    Row("model", S.ModelFile);
  if (Optional<int64_t> Batch = ann::get(G, ann::Batch)) {
    int64_t Micro = ann::get(G, ann::MicroBatches).getValueOr(1);
    int64_t Replicas = ann::get(G, ann::Replicas).getValueOr(1);
    std::string Text = std::to_string(*Batch) + " (import-onnx{batch=})";
    int64_t Each = *Batch / (Micro * Replicas);
    if (Replicas > 1)
      Text += formatv(", as {0} replicas", Replicas).str() +
              (Micro > 1 ? " x " : " of ") +
              (Micro > 1 ? "" : std::to_string(Each));
    if (Micro > 1)
      Text += formatv("{0}{1} micro-batches of {2}",
                      Replicas > 1 ? "" : ", as ", Micro, Each)
                  .str();
    Row("batch", Text);
  } else {
    Row("batch", "as the model's inputs declare it");
  }
  Row("step", describeStep(G));
  std::string Inputs;
  raw_string_ostream InputsOS(Inputs);
  ListSeparator LS(", ");
  for (TensorId T : G.getInputs()) {
    const Tensor &In = G.getTensor(T);
    InputsOS << LS << In.Name << " ";
    printTensorType(InputsOS, In.Type);
  }
  InputsOS.flush();
  Row("inputs", Inputs.empty() ? "none" : Inputs);
  Row("placer", ann::get(G, ann::Placer).getValueOr("given"));
  if (S.Plan) {
    std::string Plan;
    raw_string_ostream OS(Plan);
    OS << S.Plan->MicroBatches << " micro-batches, "
       << getPipelineScheduleName(S.Plan->Schedule) << " over "
       << S.Stages.size() << " stages"
       << (S.Plan->Recompute ? ", recomputing activations" : "") << "; bubble "
       << format("%.1f", getPipelineBubble(R) * 100) << " %";
    Row("pipeline", OS.str());
    if (S.Plan->Replicas > 1) {
      std::string Rep;
      raw_string_ostream RO(Rep);
      RO << S.Plan->Replicas << " data-parallel, each on its own copy of "
         << "the stages' devices; " << R.NumBuckets << " gradient bucket"
         << (R.NumBuckets == 1 ? "" : "s") << " ("
         << formatBytes(R.AllReduceBytes) << ") all-reduced";
      Row("replicas", RO.str());
    }
  }
  Row("ops", Twine(G.getNumOps()));
  Row("predicted step time", formatSeconds(R.StepTime));
  Row("lower bound", formatLowerBounds(S.Bounds));
  Row("gap to the lower bound", formatv("{0:F1} %", Gap).str());
  if (S.Baseline.Device >= 0)
    Row("speed-up over the best single device",
        formatv("{0:F2}x ({1}: {2})",
                R.StepTime > 0 ? S.Baseline.StepTime / R.StepTime : 0.0,
                C.getDevices()[S.Baseline.Device].Name,
                formatSeconds(S.Baseline.StepTime))
            .str());
  else
    Row("speed-up over the best single device",
        "none: no single device holds the step");
  Row("transfers",
      Twine(R.NumTransfers) + " (" + formatBytes(R.TransferBytes) + ")");
  if (R.OOM) {
    H << "<tr><th>memory</th><td class=\"oom\">out of memory on ";
    H.text(C.getDevices()[R.OOMDevice].Name) << " at op ";
    H.text(G.getOp(R.OOMOp).Name) << " (";
    H.text(formatBytes(R.OOMBytesOver)) << " over)</td></tr>\n";
  } else {
    Row("memory", "fits on every device");
  }
  H << "</table>\n";
}

/// The plans the plan pass weighed: the chosen one, then the fastest of
/// each other kind, with their steps and throughputs.
static void writeHTMLPlans(HTMLWriter &H, const PlacedStep &S) {
  if (!S.Plans)
    return;
  const PlanSearch &P = *S.Plans;
  H << "<h2>Plans</h2>\n<p>";
  H.text(formatv("The plan pass simulated {0} plans in {1:F1} s{2}; the "
                 "chosen one first, then the fastest of each other kind.",
                 P.Tried, P.Seconds,
                 P.GlobalBatch ? formatv(" (batch {0})", P.GlobalBatch).str()
                               : std::string())
             .str());
  H << "</p>\n<table class=\"plans\">\n<tr><th>kind</th><th>replicas</th>"
       "<th>stages</th><th>micro-batches</th><th>step</th>"
       "<th>samples/s</th></tr>\n";
  for (const PlanCandidate &C : P.Plans) {
    H << "<tr><td>";
    H.text(C.Kind) << "</td>";
    H << formatv("<td>{0}</td><td>{1}</td><td>{2}{3}</td>", C.Replicas,
                 C.Stages, C.MicroBatches, C.Recompute ? ", recomputing" : "")
             .str();
    if (C.Fits && C.StepTime > 0) {
      H << "<td>";
      H.text(formatSeconds(C.StepTime)) << "</td><td>";
      if (P.GlobalBatch)
        H.text(formatv("{0:F1}", P.GlobalBatch / C.StepTime).str());
      H << "</td>";
    } else {
      H << "<td colspan=\"2\">";
      H.text(C.Note) << "</td>";
    }
    H << "</tr>\n";
  }
  H << "</table>\n";
}

/// Each device's live bytes over the step (the simulator's memory
/// samples), one row per device that holds any, drawn as a step line
/// against the device's capacity.
static void writeMemoryChart(HTMLWriter &H, const PlacedStep &S) {
  const Cluster &C = *S.C;
  const SimResult &R = S.Result;
  unsigned D = C.getNumDevices();
  std::vector<std::vector<std::pair<double, uint64_t>>> Samples(D);
  for (const MemorySample &M : R.Memory)
    Samples[M.Device].emplace_back(M.Time, M.Bytes);
  std::vector<unsigned> Shown;
  for (unsigned Dev = 0; Dev != D; ++Dev)
    if (R.PeakBytes[Dev])
      Shown.push_back(Dev);
  if (Shown.empty() || R.Memory.empty())
    return;
  constexpr double RowHeight = 44, Top = 8;
  double Step = R.StepTime > 0 ? R.StepTime : 1;
  double Scale = PlotWidth / Step;
  double Height = Top + Shown.size() * RowHeight + 8;
  H << "<h2>Memory over the step</h2>\n<p>Each device's live bytes "
       "(weights, activations, workspaces, received copies), from 0 to its "
       "peak; the label gives the peak against the capacity.</p>\n";
  openChart(H, "memory", Height, /*RightMargin=*/20,
            "live bytes per device over the simulated step");
  for (unsigned Row = 0; Row != Shown.size(); ++Row) {
    unsigned Dev = Shown[Row];
    double Base = Top + (Row + 1) * RowHeight - 6, Span = RowHeight - 12;
    double Peak = double(R.PeakBytes[Dev]);
    H.raw() << formatv("<text x=\"4\" y=\"{0}\" class=\"lane\">",
                       Base - Span / 2);
    H.text(C.getDevices()[Dev].Name + ": " + formatBytes(R.PeakBytes[Dev]) +
           " of " + formatBytes(C.getDeviceType(Dev).MemoryBytes))
        << "</text>\n";
    std::string Points;
    raw_string_ostream PS(Points);
    double Y = Base;
    PS << formatv("{0},{1}", LabelWidth, Base);
    for (auto [T, Bytes] : Samples[Dev]) {
      double X = LabelWidth + T * Scale;
      PS << formatv(" {0},{1}", X, Y);
      Y = Base - Span * double(Bytes) / Peak;
      PS << formatv(" {0},{1}", X, Y);
    }
    PS << formatv(" {0},{1}", LabelWidth + PlotWidth, Y);
    H.raw() << "<polyline fill=\"none\" stroke=\"" << getDeviceColor(Dev)
            << "\" stroke-width=\"1.5\" points=\"" << PS.str() << "\"/>\n";
  }
  H << "</svg>\n";
}

/// The nodes table's filter: shows the rows whose node, op type, phases
/// and device hold every word typed (or given as "#filter=WORDS" in the
/// page's address), and each device's count of them. Without scripts the
/// box stays hidden and the table lists every node.
static const char *const NodesScript = R"(
(function () {
  var box = document.getElementById('node-filter');
  var table = document.getElementById('node-table');
  var shown = document.getElementById('node-shown');
  var counts = document.querySelectorAll('#node-counts [data-device]');
  var rows = Array.prototype.slice.call(table.tBodies[0].rows);
  var keys = rows.map(function (r) {
    var cells = Array.prototype.slice.call(r.cells, 0, 4);
    return cells.map(function (c) { return c.textContent; })
        .join(' ').toLowerCase();
  });
  function update() {
    var words = box.value.toLowerCase().split(/\s+/).filter(Boolean);
    var total = {}, matching = {}, n = 0;
    rows.forEach(function (r, i) {
      var dev = r.getAttribute('data-device');
      var ok = words.every(function (w) { return keys[i].indexOf(w) >= 0; });
      r.hidden = !ok;
      total[dev] = (total[dev] || 0) + 1;
      if (ok) {
        matching[dev] = (matching[dev] || 0) + 1;
        ++n;
      }
    });
    counts.forEach(function (c) {
      var dev = c.getAttribute('data-device');
      c.textContent = (matching[dev] || 0) + ' of ' + (total[dev] || 0);
    });
    shown.textContent = 'showing ' + n + ' of ' + rows.length + ' nodes';
    if (words.length)
      document.getElementById('nodes').open = true;
  }
  var m = /^#filter=(.*)$/.exec(location.hash);
  if (m)
    box.value = decodeURIComponent(m[1]);
  box.hidden = false;
  box.addEventListener('input', update);
  update();
})();
)";

namespace {
/// The phases of a training step's ops (training-graph's `phase`), as the
/// nodes table names them; an op without one is forward.
enum class NodePhaseKind : uint8_t { Forward, Backward, Update };

/// What the nodes table says of a node besides its device: the op types
/// of its forward ops (the first three) and the phases its ops are in.
struct NodeFacts {
  SmallVector<std::string, 3> Types;
  unsigned NumTypes = 0;
  /// A bit per NodePhaseKind.
  uint8_t Phases = 0;
};
} // namespace

static constexpr const char *NodePhaseNames[] = {"forward", "backward",
                                                 "update"};

static std::vector<NodeFacts> computeNodeFacts(const PlacedStep &S) {
  const Graph &G = *S.G;
  std::vector<NodeFacts> Facts(S.Nodes.size());
  for (OpId O = 0, E = G.getNumOps(); O != E; ++O) {
    if (S.Origin[O].empty())
      continue;
    auto It = S.NodeIndex.find(S.Origin[O]);
    if (It == S.NodeIndex.end())
      continue;
    NodeFacts &F = Facts[It->second];
    StringRef Phase = ann::getString(G.getOp(O), ann::Phase);
    NodePhaseKind K = Phase == "backward" ? NodePhaseKind::Backward
                      : Phase == "update" ? NodePhaseKind::Update
                                          : NodePhaseKind::Forward;
    F.Phases |= 1u << unsigned(K);
    if (K != NodePhaseKind::Forward)
      continue;
    // A node that import expanded or unrolled has several; three say
    // enough.
    std::string Type = G.getQualifiedType(O);
    if (is_contained(F.Types, Type))
      continue;
    if (F.Types.size() < 3)
      F.Types.push_back(std::move(Type));
    ++F.NumTypes;
  }
  return Facts;
}

/// Every node of the user's model with its op types, phases, device and
/// compute time, in the order of its first op, and how many nodes each
/// device runs; a script filters the rows.
static void writeHTMLNodes(HTMLWriter &H, const PlacedStep &S) {
  if (S.Nodes.empty())
    return;
  const Cluster &C = *S.C;
  unsigned D = C.getNumDevices();
  std::vector<NodeFacts> Facts = computeNodeFacts(S);
  std::vector<unsigned> PerDevice(D, 0);
  for (const PlacedStep::NodePlacement &N : S.Nodes)
    ++PerDevice[N.Device];
  H << "<h2>Nodes by device</h2>\n<p class=\"node-tools\"><input "
       "type=\"search\" id=\"node-filter\" hidden size=\"40\" "
       "placeholder=\"filter by node, op type, phase or device\" "
       "aria-label=\"filter the nodes\"> <span id=\"node-shown\"></span></p>\n"
       "<ul id=\"node-counts\" aria-label=\"nodes per device\">\n"
       "<li>nodes per device:</li>\n";
  for (unsigned Dev = 0; Dev != D; ++Dev) {
    H.raw() << "<li><span class=\"swatch\" style=\"background:"
            << getDeviceColor(Dev) << "\"></span>";
    H.text(C.getDevices()[Dev].Name) << ": <span data-device=\"";
    H.text(C.getDevices()[Dev].Name)
        << "\">" << std::to_string(PerDevice[Dev]) << "</span></li>\n";
  }
  H << "</ul>\n<details id=\"nodes\">\n<summary>"
    << std::to_string(S.Nodes.size())
    << " nodes of the model: op type, phases, device and compute time of "
       "each</summary>\n<table class=\"nodes\" id=\"node-table\">\n<thead>"
       "<tr><th>node</th><th>op type</th><th>phases</th><th>device</th>"
       "<th>compute</th></tr></thead>\n<tbody>\n";
  for (unsigned I = 0, E = S.Nodes.size(); I != E; ++I) {
    const PlacedStep::NodePlacement &N = S.Nodes[I];
    const NodeFacts &F = Facts[I];
    double Time = 0;
    for (const auto &[Dev, T] : N.Time)
      Time += T;
    const std::string &Device = C.getDevices()[N.Device].Name;
    H << "<tr data-device=\"";
    H.text(Device) << "\"><td>";
    H.text(N.Name) << "</td><td>";
    std::string Types = join(F.Types, ", ");
    if (F.NumTypes > F.Types.size())
      Types += formatv(" and {0} more", F.NumTypes - F.Types.size()).str();
    H.text(Types) << "</td><td>";
    SmallVector<StringRef, 3> Phases;
    for (unsigned K = 0; K != array_lengthof(NodePhaseNames); ++K)
      if (F.Phases & (1u << K))
        Phases.push_back(NodePhaseNames[K]);
    H.text(join(Phases, ", ")) << "</td><td>";
    H.text(Device + (N.isSplit() ? " (split)" : ""))
        << "</td><td class=\"num\">";
    H.text(formatSeconds(Time)) << "</td></tr>\n";
  }
  H << "</tbody>\n</table>\n</details>\n<script>" << NodesScript
    << "</script>\n";
}

/// Per device: its ops, busy time, load and peak memory, and what the peak
/// holds.
static void writeHTMLDevices(HTMLWriter &H, const PlacedStep &S) {
  const Cluster &C = *S.C;
  const SimResult &R = S.Result;
  unsigned D = C.getNumDevices();
  // What the peak holds for the whole step: the weights at home on the
  // device (its first reader's) and the ops' persistent bytes, the
  // optimizer's state apart. The weights' gradients come from the
  // timeline; the rest of the peak is activations and their gradients,
  // received copies and workspaces.
  const Graph &G = *S.G;
  std::vector<uint64_t> Weights(D, 0), OptState(D, 0), Persistent(D, 0);
  for (TensorId T : G.getWeights()) {
    const Tensor &W = G.getTensor(T);
    if (!W.Uses.empty())
      Weights[S.Placement[W.Uses.front().User]] +=
          W.Type.getSizeInBytes().getValueOr(0);
  }
  for (OpId O = 0, E = G.getNumOps(); O != E; ++O) {
    const Op &Node = G.getOp(O);
    int64_t Bytes = ann::get(Node, ann::PersistentBytes).getValueOr(0);
    bool Update = ann::get(Node, ann::Phase).getValueOr("") == "update";
    (Update ? OptState : Persistent)[S.Placement[O]] += uint64_t(Bytes);
  }
  PeakGradients Grads = computePeakGradients(S);
  auto AnyOf = [](ArrayRef<uint64_t> Bytes) {
    return any_of(Bytes, [](uint64_t B) { return B != 0; });
  };
  bool ShowOptState = Grads.Any || AnyOf(OptState);
  bool ShowPersistent = AnyOf(Persistent);
  unsigned Parts = 2 + Grads.Any + ShowOptState + ShowPersistent;
  H << "<h2>Devices</h2>\n<table class=\"devices\">\n<tr>"
       "<th rowspan=\"2\">device</th><th rowspan=\"2\">type</th>"
       "<th rowspan=\"2\">ops</th><th rowspan=\"2\">busy</th>"
       "<th rowspan=\"2\" colspan=\"2\">load</th>"
       "<th rowspan=\"2\">peak memory</th><th rowspan=\"2\" colspan=\"2\">"
       "capacity</th><th colspan=\""
    << std::to_string(Parts) << "\" class=\"group\">of the peak</th></tr>\n"
    << "<tr><th>weights</th>" << (Grads.Any ? "<th>gradients</th>" : "")
    << (ShowOptState ? "<th>optimizer state</th>" : "")
    << (ShowPersistent ? "<th>other persistent</th>" : "")
    << "<th>activations and the rest</th></tr>\n";
  bool AnyBound = false;
  for (unsigned Dev = 0; Dev != D; ++Dev) {
    double Load = R.StepTime > 0 ? R.BusyTime[Dev] / R.StepTime * 100 : 0;
    uint64_t Cap = C.getDeviceType(Dev).MemoryBytes;
    double Mem = Cap ? double(R.PeakBytes[Dev]) / double(Cap) * 100 : 0;
    H.raw() << "<tr><td class=\"dev\"><span class=\"swatch\" "
               "style=\"background:"
            << getDeviceColor(Dev) << "\"></span>";
    H.text(C.getDevices()[Dev].Name);
    if (auto It = find(S.Stages, Dev); It != S.Stages.end())
      H.text((", stage " + Twine(It - S.Stages.begin())).str());
    H << "</td><td class=\"dev\">";
    H.text(C.getDeviceType(Dev).Name)
        << "</td><td class=\"num\">" << std::to_string(R.OpCount[Dev])
        << "</td><td class=\"num\">";
    H.text(formatSeconds(R.BusyTime[Dev])) << "</td><td class=\"num\">";
    H.text(formatv("{0:F1} %", Load).str()) << "</td><td>";
    writeMeter(H, Load, "#4e79a7");
    H << "</td><td class=\"num\">";
    H.text(formatBytes(R.PeakBytes[Dev])) << "</td><td class=\"num\">";
    H.text(formatBytes(Cap)) << "</td><td>";
    writeMeter(H, Mem, Mem > 100 ? "#c00" : "#59a14f");
    H << "</td>";
    if (!R.PeakBytes[Dev]) {
      H << "<td colspan=\"" << std::to_string(Parts) << "\"></td></tr>\n";
      continue;
    }
    uint64_t Held = Weights[Dev] + OptState[Dev] + Persistent[Dev];
    uint64_t Rest = R.PeakBytes[Dev] - std::min(R.PeakBytes[Dev], Held);
    // An upper bound on the gradients leaves a lower bound on the rest.
    uint64_t Grad = std::min(Grads.Bytes[Dev], Rest);
    bool Exact = Grads.Exact[Dev];
    AnyBound |= !Exact;
    auto Part = [&](StringRef Bound, uint64_t Bytes) {
      H << "<td class=\"num\">";
      H.text((Bound + formatBytes(Bytes)).str()) << "</td>";
    };
    Part("", Weights[Dev]);
    if (Grads.Any)
      Part(Exact ? "" : "\u2264 ", Grad);
    if (ShowOptState)
      Part("", OptState[Dev]);
    if (ShowPersistent)
      Part("", Persistent[Dev]);
    Part(Exact ? "" : "\u2265 ", Rest - Grad);
    H << "</tr>\n";
  }
  H << "</table>\n<p class=\"note\">Of the peak: <b>weights</b> are the "
       "weights kept on the device (a weight lives with its first reader); ";
  if (Grads.Any)
    H << "<b>gradients</b> are the weights' gradients held at the first "
         "moment the device reaches its peak, rebuilt from the simulated "
         "timeline (each from the start of the op that makes it until its "
         "update and the transfers that read it are done)"
      << (AnyBound ? "; \u2264 marks an upper bound where the timeline "
                     "gives no more (under a pipeline plan, every gradient "
                     "the device ever holds, twice where micro-batches "
                     "accumulate into it; for a peak that lasts no time, "
                     "the most it holds at any moment), and \u2265 the "
                     "lower bound that leaves on the rest"
                   : "")
      << "; ";
  if (ShowOptState)
    H << "<b>optimizer state</b> is what the update ops keep all step (the "
         "optimizer's moments, master weights); ";
  if (ShowPersistent)
    H << "<b>other persistent</b> is what other ops keep all step; ";
  H << "<b>activations and the rest</b> is the remainder of the peak: "
       "activations"
    << (Grads.Any ? " and their gradients" : "")
    << ", copies received from other devices and workspaces.</p>\n";
}

/// The bytes of every link direction that carried data.
static void writeHTMLLinks(HTMLWriter &H, const PlacedStep &S) {
  const Cluster &C = *S.C;
  const SimResult &R = S.Result;
  H << "<h2>Links</h2>\n";
  bool AnyLink = false;
  for (unsigned Ch = 0, E = C.getNumChannels(); Ch != E; ++Ch) {
    if (!R.ChannelBytes[Ch])
      continue;
    if (!AnyLink)
      H << "<table class=\"links\">\n<tr><th>link direction</th>"
           "<th>bytes</th></tr>\n";
    AnyLink = true;
    H << "<tr><td>";
    H.text(getChannelName(C, Ch)) << "</td><td class=\"num\">";
    H.text(formatBytes(R.ChannelBytes[Ch])) << "</td></tr>\n";
  }
  if (AnyLink)
    H << "</table>\n";
  else
    H << "<p>No data crosses a link.</p>\n";
}

/// The longest ops of the critical path.
static void writeHTMLCriticalPath(HTMLWriter &H, const PlacedStep &S) {
  const Graph &G = *S.G;
  const Cluster &C = *S.C;
  const SimResult &R = S.Result;
  if (R.CriticalPath.empty())
    return;
  std::vector<uint32_t> Path = R.CriticalPath;
  auto Dur = [&](uint32_t O) { return R.Ops[O].End - R.Ops[O].Start; };
  llvm::stable_sort(Path,
                    [&](uint32_t A, uint32_t B) { return Dur(A) > Dur(B); });
  size_t Shown = std::min<size_t>(Path.size(), 10);
  H << "<h2>Critical path</h2>\n<p>";
  H.text(
      (Twine(R.CriticalPath.size()) + " ops; the " + Twine(Shown) + " longest:")
          .str())
      << "</p>\n<table class=\"critical\">\n<tr><th>time</th><th>op</th>"
         "<th>type</th><th>device</th></tr>\n";
  for (size_t I = 0; I != Shown; ++I) {
    OpId O = R.getOp(Path[I]);
    const Op &Node = G.getOp(O);
    H << "<tr><td class=\"num\">";
    H.text(formatSeconds(Dur(Path[I]))) << "</td><td>";
    H.text(Node.SourceName.empty() ? Node.Name : Node.SourceName);
    if (!R.InstanceMicroBatch.empty())
      H.text((" (micro-batch " + Twine(R.InstanceMicroBatch[Path[I]]) + ")")
                 .str());
    H << "</td><td>";
    H.text(G.getQualifiedType(O)) << "</td><td>";
    H.text(C.getDevices()[S.Placement[O]].Name) << "</td></tr>\n";
  }
  H << "</table>\n";
}

static void writeHTMLWarnings(HTMLWriter &H, const PlacedStep &S) {
  if (S.Warnings.empty())
    return;
  H << "<h2>Warnings</h2>\n<ul class=\"warn\">\n";
  for (const std::string &W : S.Warnings) {
    H << "<li>";
    H.text(W) << "</li>\n";
  }
  H << "</ul>\n";
}

/// Graphviz's SVG, without its XML prolog and doctype.
static void writeHTMLGraph(HTMLWriter &H, StringRef GraphSVG) {
  if (GraphSVG.empty())
    return;
  size_t Start = GraphSVG.find("<svg");
  H << "<h2>Placed graph</h2>\n<details><summary>the graph, coloured by "
       "device</summary>\n"
    << (Start == StringRef::npos ? GraphSVG : GraphSVG.substr(Start))
    << "\n</details>\n";
}

void writeHTMLReport(raw_ostream &OS, const PlacedStep &S, StringRef GraphSVG) {
  const Graph &G = *S.G;
  const Cluster &C = *S.C;
  HTMLWriter H(OS);
  // Named by the model's file where there is one: exporters name every
  // graph alike ("torch_jit").
  StringRef Name =
      S.ModelFile.empty() ? G.getName() : sys::path::filename(S.ModelFile);
  std::string Title = ("dp: " + Name + " on " + C.getName()).str();
  H << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
    << "<title>";
  H.text(Title) << "</title>\n<style>" << HTMLStyle << "</style>\n</head>\n"
                << "<body>\n<h1>";
  H.text(Title) << "</h1>\n";

  writeHTMLSummary(H, S);
  writeHTMLPlans(H, S);
  // The device table before the timeline, which grows with the links.
  writeHTMLDevices(H, S);
  H << "<h2>Timeline</h2>\n<p>One lane per device and per link direction "
       "that carried data; hover over a bar for its ops. A training step's "
       "backward and update ops are the lighter bars."
    << (S.Plan ? " Under the pipeline plan, the bars are coloured by "
                 "micro-batch."
               : "")
    << "</p>\n";
  writeTimeline(H, S);
  writeMemoryChart(H, S);
  writeHTMLLinks(H, S);
  writeHTMLCriticalPath(H, S);
  writeHTMLWarnings(H, S);
  writeHTMLNodes(H, S);
  writeHTMLGraph(H, GraphSVG);
  H << "</body>\n</html>\n";
}

} // namespace dp
