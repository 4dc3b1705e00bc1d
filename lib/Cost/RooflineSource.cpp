//===- RooflineSource.cpp - The roofline model as a cost source -----------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
//
// The source beneath every other: it times every op on every device type
// from the work the roofline analysed (dp/Cost/OpCost.h), on the device
// types as the other sources calibrated them. An op whose costs derive
// from its forward op's keeps the derived multiple.
//
//===----------------------------------------------------------------------===//

#include "dp/Cost/CostSource.h"

using namespace llvm;

namespace dp {

namespace {
class RooflineSource : public CostSource {
public:
  RooflineSource() : CostSource(CostSourceKind::Roofline) {}

  bool timesType(unsigned) const override { return true; }

  bool time(OpCosting &Op) override {
    if (!Op.Work)
      return false;
    for (unsigned D = 0, E = Op.Times.size(); D != E; ++D)
      Op.Times[D] = getRooflineTime(*Op.Work, Op.Types[D]);
    return true;
  }
};
} // namespace

Expected<std::unique_ptr<CostSource>>
createRooflineSource(const CostSourceSetup &) {
  return std::make_unique<RooflineSource>();
}

} // namespace dp
