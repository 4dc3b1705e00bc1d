//===- WorkBound.cpp - The heterogeneous work bound, a linear program -----===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
//
// The smallest T such that the ops' work can be split, fractionally, over
// the cluster's device types with no type busier than T times its rate,
// within what memory allows. Every placement that fits gives such a split
// (each op wholly on its device), so T is a lower bound on its step.
//
// Per device type k (n_k devices, capacity M_k, rate R_k: n_k less what
// shared groups within the type lose to contention) and per class c of
// interchangeable ops (equal time on every type, equal footprints; n_c
// ops), y[c][k] is how many of class c's ops run on type k:
//
//   minimize T  subject to
//     sum_k y[c][k] = n_c                        every class
//     sum_c t[c][k] y[c][k] <= R_k T             every type
//     sum_c P[c] y[c][k] <= n_k M_k              every type
//     y[c][k] = 0 where class c's op alone does not fit type k
//
// P is what the simulator allocates on an op's device before the step
// and never frees: the op's persistent bytes and the weights and inputs
// it is the first reader of (their home). An op does not fit a type when
// that, its workspace, its inputs and its results exceed the type's
// memory: they are all live on its device while it runs.
//
//===----------------------------------------------------------------------===//

#include "dp/Sim/Simulator.h"
#include "dp/Support/GLPK.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

using namespace llvm;

namespace dp {

namespace {
/// One class of interchangeable ops.
struct OpClass {
  std::vector<double> Time; ///< per device type
  uint64_t Persistent = 0;
  uint64_t FitsMask = 0; ///< bit k: one op fits type k
  double Count = 0;
};

/// Each device type's devices, its rate (devices less what its shared
/// groups lose to contention) and a representative device (~0u: none).
struct TypeRates {
  std::vector<double> Count, Rate;
  std::vector<unsigned> Rep;
};
} // namespace

static TypeRates getTypeRates(const SimGraph &G) {
  const Cluster &C = G.getCluster();
  unsigned NumTypes = C.getTypes().size();
  TypeRates T{std::vector<double>(NumTypes, 0),
              std::vector<double>(NumTypes, 0),
              std::vector<unsigned>(NumTypes, ~0u)};
  for (unsigned Dev = 0, D = G.getNumDevices(); Dev != D; ++Dev) {
    unsigned K = C.getDevices()[Dev].Type;
    T.Count[K] += 1;
    T.Rate[K] += 1;
    if (T.Rep[K] == ~0u)
      T.Rep[K] = Dev;
  }
  for (unsigned GrpIdx = 0, E = C.getSharedGroups().size(); GrpIdx != E;
       ++GrpIdx) {
    const SharedGroup &Grp = C.getSharedGroups()[GrpIdx];
    unsigned K = C.getDevices()[Grp.Devices[0]].Type;
    bool OneType = llvm::all_of(Grp.Devices, [&](unsigned Dev) {
      return C.getDevices()[Dev].Type == K;
    });
    // A group over several types constrains no single type: leaving it
    // out only weakens the bound.
    if (OneType)
      T.Rate[K] -= Grp.Devices.size() - G.getGroupCapacity(GrpIdx);
  }
  return T;
}

/// The classes of ops with equal times, home bytes and fit; none when an
/// op fits no type (no placement fits: nothing to bound).
/// \p Running is what each op needs on its device while it runs.
static std::vector<OpClass> getOpClasses(const SimGraph &G, const TypeRates &T,
                                         ArrayRef<uint64_t> Running) {
  const Cluster &C = G.getCluster();
  unsigned NumTypes = C.getTypes().size(), NumOps = G.getNumOps();
  // What each op keeps on its device (its home tensors included).
  std::vector<uint64_t> Persistent = getResidentBytes(G);
  std::vector<OpClass> Classes;
  std::map<std::pair<std::vector<double>, std::pair<uint64_t, uint64_t>>,
           unsigned>
      ClassOf;
  for (uint32_t Op = 0; Op != NumOps; ++Op) {
    std::vector<double> Time(NumTypes);
    uint64_t Fits = 0;
    for (unsigned K = 0; K != NumTypes; ++K) {
      if (T.Rep[K] == ~0u)
        continue; // a type without devices takes no op
      Time[K] = G.getTime(Op, T.Rep[K]);
      if (Running[Op] <= C.getTypes()[K].MemoryBytes &&
          Persistent[Op] <= C.getTypes()[K].MemoryBytes)
        Fits |= uint64_t(1) << K;
    }
    if (!Fits)
      return {};
    auto [It, New] = ClassOf.try_emplace({Time, {Persistent[Op], Fits}},
                                         unsigned(Classes.size()));
    if (New)
      Classes.push_back({std::move(Time), Persistent[Op], Fits, 0});
    Classes[It->second].Count += 1;
  }
  return Classes;
}

/// The linear program of the file comment over \p Classes, solved: T in
/// seconds, or 0 when it has no solution or its numbers are out of range.
static double solveWorkProgram(const Cluster &C, const TypeRates &T,
                               const std::vector<OpClass> &Classes,
                               unsigned NumOps) {
  unsigned NumTypes = C.getTypes().size();
  // Columns: y[c][k] for the types class c fits, then T (last).
  GLPKProblem Prob;
  glp_prob *LP = Prob.get();
  glp_set_obj_dir(LP, GLP_MIN);
  std::vector<std::vector<int>> Col(Classes.size(),
                                    std::vector<int>(NumTypes, 0));
  int NumCols = 0;
  for (size_t Cl = 0; Cl != Classes.size(); ++Cl)
    for (unsigned K = 0; K != NumTypes; ++K)
      if (Classes[Cl].FitsMask >> K & 1)
        Col[Cl][K] = ++NumCols;
  int TCol = ++NumCols;
  glp_add_cols(LP, NumCols);
  for (int J = 1; J != TCol; ++J)
    glp_set_col_bnds(LP, J, GLP_LO, 0.0, 0.0);
  glp_set_col_bnds(LP, TCol, GLP_LO, 0.0, 0.0);
  glp_set_obj_coef(LP, TCol, 1.0);

  // Times in units of the mean op's fastest time, so that the matrix's
  // entries are near 1.
  double Scale = 0;
  for (const OpClass &Cl : Classes) {
    double Fastest = std::numeric_limits<double>::infinity();
    for (unsigned K = 0; K != NumTypes; ++K)
      if (Cl.FitsMask >> K & 1)
        Fastest = std::min(Fastest, Cl.Time[K]);
    Scale += Cl.Count * Fastest;
  }
  Scale = Scale > 0 ? Scale / NumOps : 1;

  std::vector<int> Rows{0}, Cols{0};
  std::vector<double> Vals{0};
  bool Finite = std::isfinite(Scale) && Scale > 0;
  auto Add = [&](int Row, int Column, double V) {
    Finite &= std::fabs(V) < 1e15; // false for inf and NaN too
    Rows.push_back(Row);
    Cols.push_back(Column);
    Vals.push_back(V);
  };
  for (size_t Cl = 0; Cl != Classes.size(); ++Cl) {
    int Row = glp_add_rows(LP, 1);
    glp_set_row_bnds(LP, Row, GLP_FX, Classes[Cl].Count, Classes[Cl].Count);
    for (unsigned K = 0; K != NumTypes; ++K)
      if (Col[Cl][K])
        Add(Row, Col[Cl][K], 1.0);
  }
  for (unsigned K = 0; K != NumTypes; ++K) {
    if (!T.Count[K])
      continue;
    int Row = glp_add_rows(LP, 1);
    glp_set_row_bnds(LP, Row, GLP_UP, 0.0, 0.0);
    for (size_t Cl = 0; Cl != Classes.size(); ++Cl)
      if (Col[Cl][K] && Classes[Cl].Time[K] > 0)
        Add(Row, Col[Cl][K], Classes[Cl].Time[K] / Scale);
    Add(Row, TCol, -T.Rate[K]);
    // Memory, in units of the type's capacity.
    double Capacity = double(C.getTypes()[K].MemoryBytes);
    if (Capacity <= 0)
      continue;
    int MemRow = glp_add_rows(LP, 1);
    glp_set_row_bnds(LP, MemRow, GLP_UP, 0.0, T.Count[K]);
    for (size_t Cl = 0; Cl != Classes.size(); ++Cl)
      if (Col[Cl][K] && Classes[Cl].Persistent)
        Add(MemRow, Col[Cl][K], double(Classes[Cl].Persistent) / Capacity);
  }
  if (!Finite) // times too large or too spread (GLPK stops the process on
    return 0;  // infinite ones)
  glp_load_matrix(LP, int(Rows.size()) - 1, Rows.data(), Cols.data(),
                  Vals.data());
  glp_scale_prob(LP, GLP_SF_AUTO);
  glp_smcp Parm;
  glp_init_smcp(&Parm);
  Parm.presolve = GLP_ON;
  if (glp_simplex(LP, &Parm) != 0 || glp_get_status(LP) != GLP_OPT)
    return 0; // infeasible (nothing fits) or unsolved: no bound
  // Simplex's optimum is exact to its tolerances; shave them off.
  return std::max(0.0, glp_get_obj_val(LP) * Scale * (1 - 1e-7));
}

double computeHeterogeneousWorkBound(const SimGraph &G) {
  const Cluster &C = G.getCluster();
  if (!G.getNumDevices() || !G.getNumOps() || C.getTypes().size() > 64)
    return 0;
  unsigned NumOps = G.getNumOps();
  std::vector<uint64_t> Running(NumOps, 0);
  for (uint32_t Op = 0; Op != NumOps; ++Op) {
    uint64_t Bytes = G.OpPersistent[Op] + G.OpWorkspace[Op];
    for (unsigned I = G.OpInputsBegin[Op]; I != G.OpInputsBegin[Op + 1]; ++I)
      Bytes += G.TensorBytes[G.OpInputs[I]];
    for (unsigned I = G.OpResultsBegin[Op]; I != G.OpResultsBegin[Op + 1]; ++I)
      Bytes += G.TensorBytes[G.OpResults[I]];
    Running[Op] = Bytes;
  }
  TypeRates T = getTypeRates(G);
  std::vector<OpClass> Classes = getOpClasses(G, T, Running);
  if (Classes.empty())
    return 0;
  return solveWorkProgram(C, T, Classes, NumOps);
}

} // namespace dp
