//===- CBC.h - A CBC program built in one piece -----------------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
//
// For the libraries that link CBC::cbc (dpSim's segment bound, dpPlace's
// place{algo=mip}): header-only, so that dpSupport itself needs no CBC.
//
//===----------------------------------------------------------------------===//

#ifndef DP_SUPPORT_CBC_H
#define DP_SUPPORT_CBC_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <Cbc_C_Interface.h>

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace dp {

/// A mixed-integer program for CBC, deleted on scope exit, with CBC's log
/// off. Columns and rows are collected here and handed to CBC in one
/// piece by load(): CBC's addRow resizes the matrix for each row, so a
/// program built row by row takes time in the square of its rows (8 s for
/// 32,000 rows, against 6 ms in one piece: dp-bench-mip).
class CBCProgram {
public:
  CBCProgram() : M(Cbc_newModel()) { Cbc_setLogLevel(M, 0); }
  ~CBCProgram() { Cbc_deleteModel(M); }
  CBCProgram(const CBCProgram &) = delete;
  CBCProgram &operator=(const CBCProgram &) = delete;

  /// A new column in [Lower, Upper] with cost \p Objective; its index.
  int addColumn(double Lower, double Upper, double Objective, bool Integer) {
    assert(!Loaded && "the program was loaded");
    ColLower.push_back(Lower);
    ColUpper.push_back(Upper);
    ColCost.push_back(Objective);
    ColInteger.push_back(Integer);
    return int(ColLower.size() - 1);
  }
  /// sum Coefs[i] * x[Cols[i]] >= Rhs (Sense 'G'), <= Rhs ('L') or = Rhs
  /// ('E').
  void addRow(llvm::ArrayRef<int> Cols, llvm::ArrayRef<double> Coefs,
              char Sense, double Rhs) {
    assert(!Loaded && "the program was loaded");
    assert(Cols.size() == Coefs.size() && "one coefficient per column");
    RowBegin.push_back(unsigned(RowCols.size()));
    RowCols.append(Cols.begin(), Cols.end());
    RowCoefs.append(Coefs.begin(), Coefs.end());
    RowLower.push_back(Sense == 'L' ? -Infinity : Rhs);
    RowUpper.push_back(Sense == 'G' ? Infinity : Rhs);
  }

  /// Hands the columns and rows to CBC; after the last of them, before a
  /// MIP start or solving.
  void load() {
    assert(!Loaded && "the program was loaded");
    int NumCols = getNumColumns(), NumRows = int(RowLower.size());
    // Compressed sparse columns, from the rows.
    std::vector<CoinBigIndex> Start(size_t(NumCols) + 1, 0);
    for (int Col : RowCols)
      ++Start[size_t(Col) + 1];
    for (int C = 0; C != NumCols; ++C)
      Start[size_t(C) + 1] += Start[C];
    std::vector<CoinBigIndex> Next(Start.begin(), Start.end() - 1);
    std::vector<int> Index(RowCols.size());
    std::vector<double> Value(RowCols.size());
    for (int R = 0; R != NumRows; ++R)
      for (unsigned I = RowBegin[R], E = rowEnd(R); I != E; ++I) {
        CoinBigIndex &At = Next[RowCols[I]];
        Index[At] = R;
        Value[At] = RowCoefs[I];
        ++At;
      }
    Cbc_loadProblem(M, NumCols, NumRows, Start.data(), Index.data(),
                    Value.data(), ColLower.data(), ColUpper.data(),
                    ColCost.data(), RowLower.data(), RowUpper.data());
    for (int C = 0; C != NumCols; ++C) {
      // Unique names: CBC matches a MIP start to the columns by name.
      std::string Name = "c" + std::to_string(C);
      Cbc_setColName(M, C, Name.c_str());
      if (ColInteger[C])
        Cbc_setInteger(M, C);
    }
    Loaded = true;
  }

  /// The largest amount by which \p Values (one per column) miss a row.
  double getViolation(llvm::ArrayRef<double> Values) const {
    double Worst = 0;
    for (int R = 0, E = int(RowLower.size()); R != E; ++R) {
      double Sum = 0;
      for (unsigned I = RowBegin[R], End = rowEnd(R); I != End; ++I)
        Sum += RowCoefs[I] * Values[RowCols[I]];
      Worst = std::max({Worst, RowLower[R] - Sum, Sum - RowUpper[R]});
    }
    return Worst;
  }

  Cbc_Model *get() const { return M; }
  int getNumColumns() const { return int(ColLower.size()); }
  uint64_t getNumRows() const { return RowLower.size(); }

private:
  static constexpr double Infinity = std::numeric_limits<double>::max();
  unsigned rowEnd(int R) const {
    return size_t(R) + 1 == RowBegin.size() ? unsigned(RowCols.size())
                                            : RowBegin[R + 1];
  }

  Cbc_Model *M;
  bool Loaded = false;
  std::vector<double> ColLower, ColUpper, ColCost;
  std::vector<bool> ColInteger;
  std::vector<unsigned> RowBegin;
  llvm::SmallVector<int, 0> RowCols;
  llvm::SmallVector<double, 0> RowCoefs;
  std::vector<double> RowLower, RowUpper;
};

} // namespace dp

#endif // DP_SUPPORT_CBC_H
