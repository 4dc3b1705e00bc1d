//===- CostSource.cpp - The registry of cost sources ----------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//

#include "dp/Cost/CostSource.h"

using namespace llvm;

namespace dp {

void OpCosting::addNote(const Twine &More) {
  if (!Note.empty())
    Note += "; ";
  Note += More.str();
}

CostSource::~CostSource() = default;

StringRef CostSource::getName() const { return getCostSourceName(Kind); }

void CostSource::setTimes(OpCosting &Op, double Seconds,
                          double Launches) const {
  for (unsigned D = 0, E = Op.Times.size(); D != E; ++D)
    if (timesType(D))
      Op.Times[D] = Seconds + Launches * Op.Types[D].LaunchOverhead;
}

static const CostSourceInfo CostSources[] = {
#define COST_SOURCE(KIND, NAME, ID, DESCRIPTION)                               \
  {CostSourceKind::KIND, NAME, DESCRIPTION, false, create##ID##Source},
#define PROFILE_COST_SOURCE(KIND, NAME, ID, DESCRIPTION)                       \
  {CostSourceKind::KIND, NAME, DESCRIPTION, true, create##ID##Source},
#include "dp/Cost/CostSources.def"
};

static constexpr EnumEntry<CostSourceKind> ChoosableCostSources[] = {
#define COST_SOURCE(KIND, NAME, ID, DESCRIPTION) {NAME, CostSourceKind::KIND},
#include "dp/Cost/CostSources.def"
};

ArrayRef<CostSourceInfo> getCostSources() { return CostSources; }

const CostSourceInfo &getCostSourceInfo(CostSourceKind Kind) {
  assert(size_t(Kind) < std::size(CostSources) &&
         CostSources[size_t(Kind)].Kind == Kind &&
         "CostSources.def lists every kind in enum order");
  return CostSources[size_t(Kind)];
}

StringRef getCostSourceName(CostSourceKind Kind) {
  return getCostSourceInfo(Kind).Name;
}

ArrayRef<EnumEntry<CostSourceKind>> getChoosableCostSources() {
  return ChoosableCostSources;
}

} // namespace dp
