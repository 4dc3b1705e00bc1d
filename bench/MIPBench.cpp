//===- MIPBench.cpp - Building a program for CBC --------------------------===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Measures handing a mixed-integer program to CBC, in one run, for
/// programs of R rows shaped like place{algo=mip}'s (one column per ten
/// rows, half of them binary, five nonzeros a row, fixed seed):
///
///   BM_RowByRow/R     Cbc_addCol per column, Cbc_addRow per row (what
///                     dp did before CBCProgram)
///   BM_InOnePiece/R   CBCProgram (include/dp/Support/CBC.h): the rows
///                     collected, then one Cbc_loadProblem
///
/// and prints the ratio of the two at each R. Nothing is solved. Usage:
///
///   dp-bench-mip [benchmark flags]
///
//===----------------------------------------------------------------------===//

#include "dp/Support/CBC.h"

#include "BenchReporter.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

using namespace dp;

namespace {

constexpr int Sizes[] = {2000, 8000, 32000};

/// A program of \p Rows rows: the rows' columns and coefficients.
struct Program {
  int Columns;
  std::vector<std::vector<int>> Cols;
  std::vector<std::vector<double>> Coefs;
};

const Program &program(int Rows) {
  static std::map<int, Program> Cache;
  Program &P = Cache[Rows];
  if (!P.Cols.empty())
    return P;
  std::mt19937 Rng(1);
  P.Columns = Rows / 10;
  std::uniform_int_distribution<int> Column(0, P.Columns - 1);
  std::uniform_real_distribution<double> Coef(-100, 100);
  for (int R = 0; R != Rows; ++R) {
    std::vector<int> Cols;
    while (Cols.size() != 5) {
      int C = Column(Rng);
      if (std::find(Cols.begin(), Cols.end(), C) == Cols.end())
        Cols.push_back(C);
    }
    std::vector<double> Coefs;
    for (int I = 0; I != 5; ++I)
      Coefs.push_back(Coef(Rng));
    P.Cols.push_back(std::move(Cols));
    P.Coefs.push_back(std::move(Coefs));
  }
  return P;
}

void BM_RowByRow(benchmark::State &State) {
  const Program &P = program(int(State.range(0)));
  for (auto _ : State) {
    Cbc_Model *M = Cbc_newModel();
    Cbc_setLogLevel(M, 0);
    for (int C = 0; C != P.Columns; ++C) {
      std::string Name = "c" + std::to_string(C);
      Cbc_addCol(M, Name.c_str(), 0, C % 2 ? 1 : 1e3, 0, C % 2, 0, nullptr,
                 nullptr);
    }
    for (size_t R = 0; R != P.Cols.size(); ++R)
      Cbc_addRow(M, "", 5, P.Cols[R].data(), P.Coefs[R].data(), 'G', -1);
    benchmark::DoNotOptimize(Cbc_getNumRows(M));
    Cbc_deleteModel(M);
  }
}

void BM_InOnePiece(benchmark::State &State) {
  const Program &P = program(int(State.range(0)));
  for (auto _ : State) {
    CBCProgram M;
    for (int C = 0; C != P.Columns; ++C)
      M.addColumn(0, C % 2 ? 1 : 1e3, 0, C % 2);
    for (size_t R = 0; R != P.Cols.size(); ++R)
      M.addRow(P.Cols[R], P.Coefs[R], 'G', -1);
    M.load();
    benchmark::DoNotOptimize(Cbc_getNumRows(M.get()));
  }
}

/// Prints the usual table, then row by row against in one piece.
class RatioReporter : public SecondsReporter {
public:
  void Finalize() override {
    ConsoleReporter::Finalize();
    std::printf("\n");
    for (int Rows : Sizes) {
      std::string Arg = "/" + std::to_string(Rows);
      const double *Old = seconds("BM_RowByRow" + Arg),
                   *New = seconds("BM_InOnePiece" + Arg);
      if (Old && New)
        std::printf("%6d rows: row by row %10.3f ms, in one piece %8.3f ms, "
                    "%.1fx faster\n",
                    Rows, *Old * 1e3, *New * 1e3, *Old / *New);
    }
  }
};

} // namespace

int main(int argc, char **argv) {
  benchmark::Initialize(&argc, argv);
  for (int Rows : Sizes) {
    program(Rows); // Prepare outside the timings.
    benchmark::RegisterBenchmark("BM_RowByRow", BM_RowByRow)
        ->Arg(Rows)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("BM_InOnePiece", BM_InOnePiece)
        ->Arg(Rows)
        ->Unit(benchmark::kMillisecond);
  }
  RatioReporter Reporter;
  benchmark::RunSpecifiedBenchmarks(&Reporter);
  benchmark::Shutdown();
  return 0;
}
