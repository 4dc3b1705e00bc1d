//===- GLPK.h - A GLPK problem that cleans up after itself ------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
//
// For the libraries that link GLPK::glpk (dpSim's work bound, dpPlace's
// m-SCT): header-only, so that dpSupport itself needs no GLPK.
//
//===----------------------------------------------------------------------===//

#ifndef DP_SUPPORT_GLPK_H
#define DP_SUPPORT_GLPK_H

#include <glpk.h>

namespace dp {

/// A GLPK problem, deleted on scope exit, with GLPK's terminal output off
/// while it lives.
class GLPKProblem {
public:
  GLPKProblem() : LP(glp_create_prob()), OldTermOut(glp_term_out(GLP_OFF)) {}
  ~GLPKProblem() {
    glp_delete_prob(LP);
    glp_term_out(OldTermOut);
  }
  GLPKProblem(const GLPKProblem &) = delete;
  GLPKProblem &operator=(const GLPKProblem &) = delete;
  glp_prob *get() const { return LP; }

private:
  glp_prob *LP;
  int OldTermOut;
};

} // namespace dp

#endif // DP_SUPPORT_GLPK_H
