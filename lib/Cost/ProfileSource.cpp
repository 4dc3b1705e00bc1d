//===- ProfileSource.cpp - A user's profile as a cost source --------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
//
// profile=: the times the user measured in their own step (dp/Cost/
// Profile.h), for one device type of the cluster (profile-device=). They
// are whole op times: the profile saw the launches. With shared-profile=,
// an op the profile times also gets its time under its shared group's
// contention (`time_shared.<type>`).
//
//===----------------------------------------------------------------------===//

#include "dp/Cost/CostAnnotate.h"
#include "dp/Cost/CostSource.h"
#include "dp/Cost/Profile.h"
#include "dp/IR/Annotations.h"
#include "dp/Support/Diagnostics.h"

#include "llvm/ADT/StringExtras.h"

using namespace llvm;

namespace dp {

/// The device type a profile's times are for.
static Expected<unsigned> getProfileType(const Cluster &C, StringRef Name) {
  ArrayRef<DeviceType> Types = C.getTypes();
  if (!Name.empty()) {
    int T = C.lookupType(Name);
    if (T >= 0)
      return unsigned(T);
    std::string Known;
    ListSeparator LS(", ");
    for (const DeviceType &DT : Types)
      Known += (Twine(LS) + DT.Name).str();
    return makeError("cost-annotate: profile-device '" + Name +
                     "' is not a device type of cluster '" + C.getName() +
                     "' (it has " + Known + ")");
  }
  for (unsigned T = 0, E = Types.size(); T != E; ++T)
    if (Types[T].Kind == DeviceKind::GPU)
      return T;
  return 0u;
}

namespace {
class ProfileSource : public CostSource {
public:
  ProfileSource(OpProfile Profile, Optional<OpProfile> SharedProfile,
                unsigned ProfileType, StringRef TypeName)
      : CostSource(CostSourceKind::Profile), Profile(std::move(Profile)),
        SharedProfile(std::move(SharedProfile)), ProfileType(ProfileType),
        SharedTimeKey(ann::getSharedTimeKey(TypeName)) {}

  bool timesType(unsigned Type) const override { return Type == ProfileType; }

  bool time(OpCosting &Op) override {
    if (Optional<double> P = lookup(Profile, Op)) {
      Op.Times[ProfileType] = *P;
      return true;
    }
    ++Unmatched;
    Op.addNote("not in the profile: " + getCostSourceName(Op.Source) +
               " estimate");
    return false;
  }

  // The shared time is kept only beside a profiled time of the same type:
  // the two make the op's rate under contention.
  void annotateOp(const OpCosting &Op, AttributeList &A) override {
    if (SharedProfile && Op.Source == getKind())
      if (Optional<double> S = lookup(*SharedProfile, Op))
        A.set(SharedTimeKey, Attribute::getFloat(*S));
  }

  void annotateGraph(AttributeList &A) override {
    A.set("profile_unmatched", Attribute::getInt(int64_t(Unmatched)));
  }

  ArrayRef<std::string> getNotes() const override { return Profile.getNotes(); }

private:
  /// The time \p P gives \p Op (by its name, its source name, or its
  /// forward op's region), or None. An op timed by its node's own region
  /// (not a backward or update region) also pays the runtime's dispatch
  /// per node, where \p P measured it.
  static Optional<double> lookup(const OpProfile &P, const OpCosting &Op);

  OpProfile Profile;
  Optional<OpProfile> SharedProfile;
  unsigned ProfileType;
  std::string SharedTimeKey;
  uint64_t Unmatched = 0;
};
} // namespace

Optional<double> ProfileSource::lookup(const OpProfile &Prof,
                                       const OpCosting &Op) {
  const dp::Op &TheOp = Op.G.getOp(Op.Id);
  auto IsNode = [](StringRef Name) {
    return !Name.endswith("/grad") && !Name.endswith("/update");
  };
  auto WithDispatch = [&](StringRef Name, double T) {
    return IsNode(Name) ? T + Prof.getDispatch().getValueOr(0) : T;
  };
  if (Optional<double> P = Prof.lookup(TheOp.Name))
    return WithDispatch(TheOp.Name, *P);
  if (!TheOp.SourceName.empty())
    if (Optional<double> P = Prof.lookup(TheOp.SourceName))
      return WithDispatch(TheOp.SourceName, *P);
  // A trace names a backward op after its forward op's region, which may
  // bear the forward op's ONNX node name.
  if (Op.Forward == NoId)
    return None;
  StringRef ForwardSource = Op.G.getOp(Op.Forward).SourceName;
  if (ForwardSource.empty())
    return None;
  return Prof.lookup((ForwardSource + "/grad").str());
}

Expected<std::unique_ptr<CostSource>>
createProfileSource(const CostSourceSetup &Setup) {
  const CostOptions &Opts = Setup.Options;
  if (Opts.ProfilePath.empty())
    return nullptr;
  Expected<OpProfile> P =
      OpProfile::load(splitProfilePaths(Opts.ProfilePath), Opts.ProfileStat);
  if (!P)
    return P.takeError();
  Optional<OpProfile> Shared;
  if (!Opts.SharedProfilePath.empty()) {
    Expected<OpProfile> S = OpProfile::load(
        splitProfilePaths(Opts.SharedProfilePath), Opts.ProfileStat);
    if (!S)
      return S.takeError();
    if (S->getTimeKind() != P->getTimeKind())
      return makeError("cost-annotate: shared-profile= times " +
                       getTimeKindName(S->getTimeKind()) +
                       " but profile= " + getTimeKindName(P->getTimeKind()) +
                       "; give profiles of the same kind");
    Shared = std::move(*S);
  }
  Expected<unsigned> T = getProfileType(Setup.TheCluster, Opts.ProfileDevice);
  if (!T)
    return T.takeError();
  return std::make_unique<ProfileSource>(std::move(*P), std::move(Shared), *T,
                                         Setup.TheCluster.getTypes()[*T].Name);
}

} // namespace dp
