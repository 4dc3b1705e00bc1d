//===- ScotchPlacer.cpp - Static mapping with Scotch ----------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The `scotch` placer: SCOTCH_graphMap maps the unit graph onto a target
/// architecture built from the cluster (SCOTCH_archBuild0 on the complete
/// graph of the devices, a device weighing its speed and a device pair the
/// seconds per byte of its route), so that heavy traffic takes fast routes
/// and compute is balanced in proportion to speed. The result is then made
/// to fit in memory.
///
//===----------------------------------------------------------------------===//

#include "Placers.h"
#include "dp/Place/GraphPartition.h"
#include "dp/Support/Diagnostics.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include <scotch.h>

using namespace llvm;

namespace dp {

/// A failure of the library, which the placer prefixes with its name.
static Error makeLibraryError(const Twine &Message) {
  return createStringError(inconvertibleErrorCode(), Message);
}

// Scotch sums loads in SCOTCH_Num (32-bit in Debian's build) and weighs
// them by domain weights and distances. Scaled weights sum to at most the
// budget plus one per vertex or arc, so with fewer than 2^22 of each,
// vertex loads (< 2^23) times speeds (<= 2^7) and edge loads (< 2^23)
// times distances (< 2^8) stay below 2^31.
static_assert(sizeof(SCOTCH_Num) >= 4, "Scotch with 16-bit numbers");
static constexpr int64_t ScotchVertexBudget = int64_t(1) << 22;
static constexpr int64_t ScotchEdgeBudget = int64_t(1) << 21;
static constexpr double ScotchMaxSpeed = 128;
static constexpr double ScotchMaxDistance = 255;
/// Vertices, and arcs (two per edge), of the graphs Scotch is given.
static constexpr uint64_t ScotchSizeLimit = uint64_t(1) << 22;

namespace {
/// A graph as Scotch takes it: vertex starts (one past the last too),
/// vertex loads, neighbours and edge loads.
struct ScotchArrays {
  std::vector<SCOTCH_Num> Vert, VeLo, Edge, EdLo;
};
} // namespace

/// The source graph: loads from constraint 0, at least 1 each.
static ScotchArrays makeSourceArrays(const PartitionGraph &G,
                                     const Adjacency &Adj) {
  unsigned N = G.NumVertices, NCon = G.NumConstraints;
  ScotchArrays S;
  S.Vert.assign(Adj.Begin.begin(), Adj.Begin.end());
  S.Edge.assign(Adj.Neighbours.begin(), Adj.Neighbours.end());
  std::vector<double> Column(N);
  for (unsigned V = 0; V != N; ++V)
    Column[V] = G.VertexWeights[size_t(V) * NCon];
  for (int64_t W : scaleWeights(Column, ScotchVertexBudget, true))
    S.VeLo.push_back(SCOTCH_Num(W));
  for (int64_t W : scaleWeights(Adj.Weights, ScotchEdgeBudget, false))
    S.EdLo.push_back(SCOTCH_Num(W));
  return S;
}

/// The target: the complete graph of the processors, weighing speed
/// (fastest: 128) and distance (shortest: 4, so a 25 % slower route already
/// costs more; at most 255). archBuild0 takes distances as shortest paths,
/// which in a complete graph are the direct edges when distances obey the
/// triangle inequality, as route times do.
static ScotchArrays makeTargetArrays(ArrayRef<double> Speed,
                                     ArrayRef<double> Distance) {
  unsigned K = Speed.size();
  double MaxSpeed = *std::max_element(Speed.begin(), Speed.end());
  double MinDistance = 0;
  for (unsigned A = 0; A != K; ++A)
    for (unsigned B = 0; B != K; ++B)
      if (A != B && (MinDistance == 0 || Distance[A * K + B] < MinDistance))
        MinDistance = Distance[A * K + B];
  assert(MaxSpeed > 0 && MinDistance > 0 && "speeds and distances positive");
  ScotchArrays T;
  for (unsigned A = 0; A != K; ++A) {
    T.Vert.push_back(SCOTCH_Num(T.Edge.size()));
    T.VeLo.push_back(
        SCOTCH_Num(std::clamp(std::round(ScotchMaxSpeed * Speed[A] / MaxSpeed),
                              1.0, ScotchMaxSpeed)));
    for (unsigned B = 0; B != K; ++B) {
      if (A == B)
        continue;
      // Symmetric: the mean of both directions.
      double D = (Distance[A * K + B] + Distance[B * K + A]) / 2;
      T.Edge.push_back(SCOTCH_Num(B));
      T.EdLo.push_back(SCOTCH_Num(
          std::clamp(std::round(4 * D / MinDistance), 1.0, ScotchMaxDistance)));
    }
  }
  T.Vert.push_back(SCOTCH_Num(T.Edge.size()));
  return T;
}

namespace {
/// Scotch's objects for one mapping. The graphs borrow the arrays they
/// are built from, which must outlive this.
class ScotchMapper {
public:
  ScotchMapper() = default;
  ScotchMapper(const ScotchMapper &) = delete;
  ScotchMapper &operator=(const ScotchMapper &) = delete;
  ~ScotchMapper();

  /// One thread and a seeded generator of the context's own: Scotch's
  /// threaded bipartitioning is not deterministic.
  Error setUp(uint64_t Seed);
  Error buildTarget(const ScotchArrays &T);
  Error buildSource(const ScotchArrays &S);
  /// Maps the source onto the target's \p K processors.
  Expected<std::vector<uint32_t>> map(unsigned K, double Imbalance);

private:
  bool HasContext = false, HasObjects = false;
  SCOTCH_Context Context;
  SCOTCH_Graph Target, TargetBound, Source, SourceBound;
  SCOTCH_Arch Arch;
  SCOTCH_Strat ArchStrat, MapStrat;
  unsigned N = 0;
};
} // namespace

ScotchMapper::~ScotchMapper() {
  // Bound graphs go before the graphs and the context they borrow.
  if (HasObjects) {
    SCOTCH_stratExit(&MapStrat);
    SCOTCH_stratExit(&ArchStrat);
    SCOTCH_archExit(&Arch);
    SCOTCH_graphExit(&SourceBound);
    SCOTCH_graphExit(&Source);
    SCOTCH_graphExit(&TargetBound);
    SCOTCH_graphExit(&Target);
  }
  if (HasContext)
    SCOTCH_contextExit(&Context);
}

Error ScotchMapper::setUp(uint64_t Seed) {
  if (SCOTCH_contextInit(&Context) != 0)
    return makeLibraryError("Scotch: cannot create a context");
  HasContext = true;
  if (SCOTCH_contextThreadSpawn(&Context, 1, nullptr) != 0 ||
      SCOTCH_contextRandomClone(&Context) != 0 ||
      SCOTCH_contextOptionSetNum(&Context, SCOTCH_OPTIONNUMDETERMINISTIC, 1) !=
          0)
    return makeLibraryError("Scotch: cannot set up the context");
  SCOTCH_contextRandomSeed(&Context, SCOTCH_Num(Seed & 0x7fffffff));

  SCOTCH_graphInit(&Target);
  SCOTCH_graphInit(&TargetBound);
  SCOTCH_graphInit(&Source);
  SCOTCH_graphInit(&SourceBound);
  SCOTCH_archInit(&Arch);
  SCOTCH_stratInit(&ArchStrat);
  SCOTCH_stratInit(&MapStrat);
  HasObjects = true;
  return Error::success();
}

Error ScotchMapper::buildTarget(const ScotchArrays &T) {
  SCOTCH_Num K = SCOTCH_Num(T.Vert.size() - 1);
  if (SCOTCH_graphBuild(&Target, 0, K, T.Vert.data(), T.Vert.data() + 1,
                        T.VeLo.data(), nullptr, SCOTCH_Num(T.Edge.size()),
                        T.Edge.data(), T.EdLo.data()) != 0 ||
      SCOTCH_contextBindGraph(&Context, &Target, &TargetBound) != 0 ||
      SCOTCH_archBuild0(&Arch, &TargetBound, 0, nullptr, &ArchStrat) != 0)
    return makeLibraryError("Scotch: cannot build the target architecture");
  return Error::success();
}

Error ScotchMapper::buildSource(const ScotchArrays &S) {
  N = S.Vert.size() - 1;
  if (SCOTCH_graphBuild(&Source, 0, SCOTCH_Num(N), S.Vert.data(),
                        S.Vert.data() + 1, S.VeLo.data(), nullptr,
                        SCOTCH_Num(S.Edge.size()), S.Edge.data(),
                        S.EdLo.empty() ? nullptr : S.EdLo.data()) != 0 ||
      SCOTCH_contextBindGraph(&Context, &Source, &SourceBound) != 0)
    return makeLibraryError("Scotch: cannot build the graph");
  return Error::success();
}

Expected<std::vector<uint32_t>> ScotchMapper::map(unsigned K,
                                                  double Imbalance) {
  if (SCOTCH_stratGraphMapBuild(&MapStrat, SCOTCH_STRATQUALITY, SCOTCH_Num(K),
                                Imbalance) != 0)
    return makeLibraryError("Scotch: cannot build the mapping strategy");

  std::vector<SCOTCH_Num> Part(N, 0);
  if (SCOTCH_graphMap(&SourceBound, &Arch, &MapStrat, Part.data()) != 0)
    return makeLibraryError("Scotch: SCOTCH_graphMap failed");
  std::vector<uint32_t> Result(N);
  for (unsigned V = 0; V != N; ++V) {
    assert(Part[V] >= 0 && unsigned(Part[V]) < K &&
           "Scotch terminal out of range");
    Result[V] = uint32_t(Part[V]);
  }
  return Result;
}

Expected<std::vector<uint32_t>> mapGraphScotch(const PartitionGraph &G,
                                               ArrayRef<double> Speed,
                                               ArrayRef<double> Distance,
                                               const PartitionOptions &Opts) {
  unsigned N = G.NumVertices, K = Speed.size();
  assert(K > 0 && "mapping onto no processors");
  assert(G.NumConstraints > 0 &&
         G.VertexWeights.size() == size_t(N) * G.NumConstraints &&
         Distance.size() == size_t(K) * K &&
         "a weight per vertex and constraint, a distance per pair");
  if (N == 0)
    return std::vector<uint32_t>();
  if (K == 1)
    return std::vector<uint32_t>(N, 0);
  if (uint64_t(N) >= ScotchSizeLimit)
    return makeLibraryError("Scotch: the graph has too many vertices (" +
                            Twine(N) + ")");
  Adjacency Adj = G.getAdjacency();
  if (uint64_t(Adj.Neighbours.size()) >= ScotchSizeLimit)
    return makeLibraryError("Scotch: the graph has too many edges (" +
                            Twine(Adj.Neighbours.size() / 2) + ")");

  ScotchArrays Source = makeSourceArrays(G, Adj);
  ScotchArrays Target = makeTargetArrays(Speed, Distance);
  ScotchMapper Mapper;
  if (Error E = Mapper.setUp(Opts.Seed))
    return std::move(E);
  if (Error E = Mapper.buildTarget(Target))
    return std::move(E);
  if (Error E = Mapper.buildSource(Source))
    return std::move(E);
  return Mapper.map(K, Opts.Imbalance);
}

/// One Scotch mapping of \p P's units onto Request.Devices.
static Expected<std::vector<uint32_t>>
mapUnits(const PlacementProblem &P, const PartitionRequest &Request) {
  const Cluster &C = P.getCluster();
  ArrayRef<unsigned> Devices = Request.Devices;
  unsigned K = Devices.size();
  PartitionGraph G = buildUnitGraph(P, Devices, /*WithMemory=*/false);
  std::vector<double> Speed = getDeviceSpeeds(P, Devices);
  // Seconds per byte of each route.
  std::vector<double> Distance(size_t(K) * K, 0.0);
  for (unsigned A = 0; A != K; ++A)
    for (unsigned B = 0; B != K; ++B)
      if (A != B)
        Distance[A * K + B] = 1 / C.getRouteBandwidth(Devices[A], Devices[B]);
  Expected<std::vector<uint32_t>> Parts =
      mapGraphScotch(G, Speed, Distance, Request.Options);
  if (!Parts)
    return Parts.takeError();
  return placeParts(*Parts, Devices);
}

Expected<std::vector<uint32_t>> placeScotch(const PlacementProblem &P,
                                            const PlaceOptions &Opts) {
  return placeByPartitioning(P, "scotch", Opts, mapUnits);
}

} // namespace dp
