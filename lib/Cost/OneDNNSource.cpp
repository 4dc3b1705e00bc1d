//===- OneDNNSource.cpp - oneDNN measurements as a cost source ------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
//
// source=onednn: ops measured on this CPU with oneDNN (dp/Cost/OneDNN.h),
// whose times are for the cluster's cpu types. Ops oneDNN cannot run keep
// the roofline, which for those types uses this machine's memory
// bandwidth.
//
//===----------------------------------------------------------------------===//

#include "dp/Cost/CostAnnotate.h"
#include "dp/Cost/CostSource.h"
#include "dp/Cost/OneDNN.h"

#include "llvm/Support/Timer.h"

using namespace llvm;

namespace dp {

namespace {
class OneDNNSource : public CostSource {
public:
  OneDNNSource(ArrayRef<DeviceType> Types, unsigned FirstCPU,
               std::unique_ptr<OneDNNMeasurer> Measurer,
               std::unique_ptr<Timer> MeasureTimer)
      : CostSource(CostSourceKind::OneDNN), Types(Types), FirstCPU(FirstCPU),
        Measurer(std::move(Measurer)), MeasureTimer(std::move(MeasureTimer)) {
    TimeRegion Region(this->MeasureTimer.get());
    Bandwidth = this->Measurer->getMemoryBandwidth();
  }

  bool timesType(unsigned Type) const override {
    return Types[Type].Kind == DeviceKind::CPU;
  }

  void calibrate(MutableArrayRef<DeviceType> RooflineTypes) override {
    for (DeviceType &T : RooflineTypes)
      if (T.Kind == DeviceKind::CPU)
        T.MemoryBandwidth = Bandwidth;
  }

  bool time(OpCosting &Op) override;

  ArrayRef<std::string> getNotes() const override {
    return Measurer->getNotes();
  }
  Error finish() override { return Measurer->saveCache(); }

private:
  ArrayRef<DeviceType> Types;
  unsigned FirstCPU;
  std::unique_ptr<OneDNNMeasurer> Measurer;
  std::unique_ptr<Timer> MeasureTimer;
  double Bandwidth;
};
} // namespace

// The measure limit compares the estimate so far on the first cpu type;
// a backward op's primitives each pay a launch, a forward op its kind's
// launch fraction.
bool OneDNNSource::time(OpCosting &Op) {
  TimeRegion Region(MeasureTimer.get());
  if (Op.Forward != NoId) {
    Measurement M =
        Measurer->measureBackward(Op.G, Op.Id, Op.Forward, Op.Times[FirstCPU]);
    if (M.Status != MeasureStatusKind::Measured)
      return false;
    setTimes(Op, M.Seconds, M.Primitives);
    Op.WorkspaceBytes = M.WorkspaceBytes;
    return true;
  }
  if (isBackwardOp(Op.G.getOp(Op.Id)))
    return false;
  Measurement M = Measurer->measure(Op.G, Op.Id, Op.Times[FirstCPU]);
  if (M.Status == MeasureStatusKind::OverLimit)
    Op.addNote("not measured with oneDNN: over the measure limit");
  if (M.Status != MeasureStatusKind::Measured)
    return false;
  setTimes(Op, M.Seconds, getCostKindInfo(Op.Work->Kind).LaunchFraction);
  Op.WorkspaceBytes = M.WorkspaceBytes;
  return true;
}

Expected<std::unique_ptr<CostSource>>
createOneDNNSource(const CostSourceSetup &Setup) {
  ArrayRef<DeviceType> Types = Setup.TheCluster.getTypes();
  auto CPU = find_if(
      Types, [](const DeviceType &T) { return T.Kind == DeviceKind::CPU; });
  if (Setup.Options.Source != CostSourceKind::OneDNN || CPU == Types.end())
    return nullptr;
  OneDNNOptions MOpts;
  MOpts.Runs = Setup.Options.Runs;
  MOpts.CacheDir = Setup.Options.CacheDir;
  MOpts.MeasureLimit = Setup.Options.MeasureLimit;
  Expected<std::unique_ptr<OneDNNMeasurer>> M =
      OneDNNMeasurer::create(std::move(MOpts));
  if (!M)
    return M.takeError();
  std::unique_ptr<Timer> MeasureTimer;
  if (Setup.Timers)
    MeasureTimer = std::make_unique<Timer>(
        "onednn", "cost-annotate: oneDNN measurement", *Setup.Timers);
  return std::make_unique<OneDNNSource>(Types, unsigned(CPU - Types.begin()),
                                        std::move(*M), std::move(MeasureTimer));
}

} // namespace dp
