//===- Modules.h - The networks of the learned placers ----------*- C++ -*-===//
//
// Part of the dp project.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// libtorch modules shared by the learned placers: the GCN encoder and its
/// Deep Graph Infomax pre-training (Mars 3.1-3.2), the segment-level
/// seq2seq placer with content-based attention (Mars 3.3; with one segment
/// it is the seq2seq placer of ColocRL and the Hierarchical Planner), the
/// PPO update (Mars 3.4, EAGLE), and what they need from a LearnTask.
/// Only lib/Learn includes this header.
///
//===----------------------------------------------------------------------===//

#ifndef DP_LIB_LEARN_MODULES_H
#define DP_LIB_LEARN_MODULES_H

#include "PolicySearch.h"
#include "Recurrence.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <torch/nn.h>
#include <torch/optim.h>

#include <cstdint>
#include <functional>
#include <random>
#include <utility>
#include <vector>

namespace dp {
class PolicySearch;
namespace learn {

/// Sets libtorch's thread count (\p Threads, or every core) and seeds its
/// generator (parameter initialization) with \p Seed; returns the placer's
/// own generator (sampling), seeded with \p Seed as well.
std::mt19937_64 setUpTorch(unsigned Threads, uint64_t Seed);

/// Option device=auto|cpu|cuda.
enum class DeviceChoice : uint8_t { Auto, CPU, CUDA };
/// Declares device=auto|cpu|cuda.
OptionTable &addDeviceOption(OptionTable &T, DeviceChoice &Device);
/// The device \p Choice names (auto, the default: CUDA when libtorch sees
/// a CUDA device, else the host); an error naming \p Placer when
/// device=cuda and there is none.
llvm::Expected<torch::Device> getTorchDevice(DeviceChoice Choice,
                                             llvm::StringRef Placer);

/// The task's features as a [NumUnits, NumFeatures] tensor.
torch::Tensor getFeatures(const LearnTask &T);
/// D^-1/2 (A + I) D^-1/2 of the undirected unit graph, sparse [U, U].
torch::Tensor getNormalizedAdjacency(const LearnTask &T);

/// GCN layers with PReLU (Mars eq. 1): H' = PReLU(Â H W).
class GCNEncoderImpl : public torch::nn::Module {
public:
  GCNEncoderImpl(int64_t In, int64_t Hidden, unsigned Layers);
  torch::Tensor forward(const torch::Tensor &X, const torch::Tensor &Adj);
  int64_t getHidden() const { return Hidden; }

private:
  int64_t Hidden;
  std::vector<torch::nn::Linear> Weights;
  std::vector<torch::nn::PReLU> Activations;
};
TORCH_MODULE(GCNEncoder);

/// Deep Graph Infomax pre-training of \p Enc (Mars 3.2): corruption by
/// permuting the rows of \p X, readout sigmoid(mean), bilinear
/// discriminator, binary cross-entropy; Adam at \p LearningRate. Leaves
/// \p Enc with the parameters of the lowest loss and returns the loss of
/// every iteration. Stops early, before an iteration, when \p Stop (if
/// given) says so.
std::vector<double> pretrainDGI(GCNEncoder &Enc, const torch::Tensor &X,
                                const torch::Tensor &Adj, unsigned Iterations,
                                double LearningRate, std::mt19937_64 &Rng,
                                const std::function<bool()> &Stop = nullptr);

/// Where the seq2seq decoder attends, and with what query (EAGLE's paper,
/// section 3 and Fig. 4, names the two forms of Bahdanau et al.'s additive
/// attention that the Google placers and EAGLE use).
enum class AttentionKind : uint8_t {
  /// The query is the decoder's previous hidden state; the context joins
  /// the decoder LSTM's input (EAGLE's Fig. 4a, "before"; Mars's
  /// "context-based input attention").
  Before,
  /// The query is the decoder's previous hidden state too; the context
  /// joins the LSTM's new state after it, tanh(W [h; context]) giving the
  /// logits (Fig. 4b, "after": the Hierarchical Planner's form).
  After,
  /// No decoder query: each encoder position attends over its segment
  /// with its own encoding as the query (scaled dot product), once per
  /// segment, and the result is the decoder's input. dp's earlier form,
  /// kept for the ablation.
  Self,
};
/// Declares attention=before|after|self.
OptionTable &addAttentionOption(OptionTable &T, AttentionKind &Kind);

/// Segment-level seq2seq (Mars 3.3): the sequence is cut into segments; a
/// bidirectional LSTM encodes each, starting from the state the previous
/// segment ended in; an LSTM decoder, which starts from the segment's
/// encoder state, reads at each position that position's encoding, the
/// device it chose last and (AttentionKind) an attended context of the
/// segment's encodings. Segment 0 means one segment.
class SegmentSeq2SeqImpl : public torch::nn::Module {
public:
  SegmentSeq2SeqImpl(int64_t In, int64_t Hidden, int64_t NumDevices,
                     int64_t Segment,
                     AttentionKind Attention = AttentionKind::Before);

  /// What the decoder needs of an encoded sequence, per segment.
  struct Encoding {
    /// The decoder's input-side gate pre-activations, [Ls, 4H] (batched:
    /// [Ls, B, 4H]).
    std::vector<torch::Tensor> InputGates;
    /// With a decoder query (Before, After): the segment's encodings
    /// [N, Ls, 2H] and their attention keys [N, Ls, H], N = 1 for one
    /// sequence, B for a batch of them.
    std::vector<torch::Tensor> Memory, Keys;
    /// Before: the encodings as decoder gate inputs, [N, Ls, 4H] (the
    /// context's gates are the attention-weighted sum of these rows).
    std::vector<torch::Tensor> MemoryGates;
    /// The decoder's initial state, [1, H] each (batched: [B, H]).
    std::vector<torch::Tensor> H0, C0;
    int64_t Length = 0;
  };
  /// Encodes \p Seq, [L, In] in sequence order; or B sequences at once,
  /// [L, B, In], for batches of B placements, the b-th placement reading
  /// sequence b.
  Encoding encode(const torch::Tensor &Seq);

  /// Samples \p Batch placements (a device per position, [Batch, L] int64)
  /// with their per-position log-probabilities [Batch, L], both on the
  /// host; \p Greedy takes the likeliest device instead. No gradients.
  std::pair<torch::Tensor, torch::Tensor> sample(const Encoding &E,
                                                 int64_t Batch,
                                                 std::mt19937_64 &Rng,
                                                 bool Greedy = false);
  /// Log-probabilities and entropies, [B, L] each, of \p Actions [B, L]
  /// (on any device; the results are on the module's).
  std::pair<torch::Tensor, torch::Tensor>
  evaluate(const Encoding &E, const torch::Tensor &Actions);

  int64_t getNumDevices() const { return NumDevices; }
  /// Where the parameters are (the host, or a CUDA device).
  torch::Device device() const { return Output->weight.device(); }

  /// Squashes the decoder's logits to TanhConstant * tanh(logits /
  /// Temperature), as the Hierarchical Planner does (its C and T); a
  /// TanhConstant of 0 (the default) leaves them raw.
  void setLogitSquash(double Temperature, double TanhConstant);

  AttentionKind getAttention() const { return Attention; }

  /// Whether the decoder runs its recurrence fused (Recurrence.h: one
  /// autograd node per segment, the backward pass written out), as it does
  /// on the host by default, or as one operator per step (the reference
  /// form, and the only one on CUDA). Both compute the same function.
  void setFused(bool Fused) { this->Fused = Fused; }
  bool isFused() const { return Fused && device().is_cpu(); }

private:
  /// One decoder step of segment \p S from (\p H, \p C), reading
  /// \p InputGates (the position's) and \p Prev ([B] int64, the devices
  /// chosen one position before); returns what the logits read ([B, H]:
  /// the new H, or with After attention its combination with the context).
  torch::Tensor step(const Encoding &E, size_t S,
                     const torch::Tensor &InputGates, const torch::Tensor &Prev,
                     const torch::Tensor &RecurrentT, torch::Tensor &H,
                     torch::Tensor &C);
  /// Additive attention of segment \p S's encodings for the decoder
  /// states \p Query [B, H]: the context [B, 2H].
  torch::Tensor attend(const Encoding &E, size_t S, const torch::Tensor &Query);
  /// The decoder over segment \p S following \p Actions [B, Ls] (\p Prev:
  /// the devices before the segment); its hidden states [Ls, B, H].
  torch::Tensor follow(const Encoding &E, size_t S, const torch::Tensor &Prev,
                       const torch::Tensor &Actions);
  /// The decoder over segment \p S choosing each device (appended to
  /// \p Chosen position-major); \p Prev ends as the last choices.
  torch::Tensor choose(const Encoding &E, size_t S, torch::Tensor &Prev,
                       std::mt19937_64 &Rng, bool Greedy,
                       std::vector<int64_t> &Chosen);
  /// The unfused decoder over segment \p S for \p Batch placements, one
  /// step() per position I: \p Before(I) gives the devices chosen one
  /// position before, and \p Then sees the step's output; the outputs
  /// [Ls, B, H].
  torch::Tensor decode(const Encoding &E, size_t S, int64_t Batch,
                       llvm::function_ref<torch::Tensor(int64_t)> Before,
                       llvm::function_ref<void(const torch::Tensor &)> Then);

  /// The encoder LSTM over segment input \p In [Ls, B, In] from state
  /// (\p H, \p C) ([2, B, H] each), which it leaves as the final state:
  /// its outputs [Ls, B, 2H], through Recurrence.h.
  torch::Tensor encodeFused(const torch::Tensor &In, torch::Tensor &H,
                            torch::Tensor &C);
  /// follow() and choose() through Recurrence.h.
  torch::Tensor followFused(const Encoding &E, size_t S,
                            const torch::Tensor &Prev,
                            const torch::Tensor &Actions);
  torch::Tensor chooseFused(const Encoding &E, size_t S, torch::Tensor &Prev,
                            std::mt19937_64 &Rng, bool Greedy,
                            std::vector<int64_t> &Chosen);
  /// The recurrence's weights for segment \p S.
  RecurrenceWeights getRecurrenceWeights(const Encoding &E, size_t S) const;
  /// With After attention: what the logits read, tanh(W [h; context]),
  /// for states \p H [..., B, H] and attention weights \p A [..., B, Ls]
  /// of segment \p S.
  torch::Tensor combine(const Encoding &E, size_t S, const torch::Tensor &H,
                        const torch::Tensor &A);
  /// Draws a device per row of \p Out [B, H] (appended to \p Chosen);
  /// \p Prev becomes the draws.
  void draw(const torch::Tensor &Out, torch::Tensor &Prev, std::mt19937_64 &Rng,
            bool Greedy, std::vector<int64_t> &Chosen);

  /// The decoder's first "previous device" for \p Batch sequences: the
  /// action-gate row that stands for none yet.
  torch::Tensor noDeviceYet(int64_t Batch) const;
  /// The decoder's logits over the devices for hidden states \p H.
  torch::Tensor logits(const torch::Tensor &H);

  int64_t Hidden, NumDevices, Segment;
  AttentionKind Attention;
  double Temperature = 1, TanhConstant = 0;
  bool Fused = true;
  torch::nn::LSTM Encoder{nullptr};
  torch::nn::Linear Query{nullptr}, Key{nullptr};
  /// Before and After: the additive score's v; Before: the context's
  /// gates; After: the combination of state and context.
  torch::nn::Linear Score{nullptr}, ContextGates{nullptr}, Combine{nullptr};
  torch::nn::Linear DecoderInput{nullptr}, Output{nullptr};
  torch::Tensor DecoderRecurrent, ActionGates;
};
TORCH_MODULE(SegmentSeq2Seq);

/// An index drawn from the categorical distribution \p Probs (\p N
/// entries summing to 1) with one draw of \p Rng, or the likeliest (the
/// first among ties, no draw) when \p Greedy.
int64_t sampleIndex(const float *Probs, int64_t N, std::mt19937_64 &Rng,
                    bool Greedy);

/// One sampled placement, kept for PPO's updates.
struct PolicySample {
  torch::Tensor Actions; ///< [L] int64
  torch::Tensor OldLogp; ///< [L], under the policy that sampled it
  double Advantage = 0;
};

struct PPOConfig {
  double Clip = 0.2;
  double EntropyCoef = 0.001;
  double MaxGradNorm = 1.0;
  unsigned Epochs = 3;
  unsigned MiniBatches = 4;
  /// Standardize the advantages over the samples of an update (mean 0,
  /// deviation 1), as common PPO implementations do. Without it the slow
  /// moving-average baseline lags an improving policy, every advantage
  /// turns positive, and the policy settles early (docs/placers/mars.md).
  bool StandardizeAdvantages = true;
};

/// Log-probabilities and entropies [B, L] of actions [B, L] under the
/// current parameters (with gradients).
using LogpFn =
    std::function<std::pair<torch::Tensor, torch::Tensor>(const torch::Tensor &)>;

/// PPO's clipped surrogate, per decision: the samples are shuffled into
/// mini-batches, each updated for Epochs epochs; gradients are clipped to
/// MaxGradNorm. Returns the mean loss of the last epoch.
double updatePPO(llvm::ArrayRef<PolicySample> Samples, const PPOConfig &C,
                 torch::optim::Optimizer &Opt,
                 const std::vector<torch::Tensor> &Params, const LogpFn &Logp,
                 std::mt19937_64 &Rng);

/// The training setup of Google's REINFORCE placers as the Hierarchical
/// Planner states it (ColocRL and the Hierarchical Planner): Adam,
/// gradients clipped to norm 1, decoder logits C * tanh(logits / T) with
/// T = 10 and C = 5, k = 4 placements per update, and the baseline decay
/// of the authors' code (TensorFlow grappler's bl_dec).
struct ReinforceConfig {
  double Temperature = 10;
  double TanhConstant = 5;
  double MaxGradNorm = 1.0;
  unsigned SamplesPerUpdate = 4;
  double BaselineDecay = 0.9;
};

/// One step of \p Opt on \p Loss, gradients clipped to norm \p MaxGradNorm.
void minimize(const torch::Tensor &Loss, torch::optim::Optimizer &Opt,
              const std::vector<torch::Tensor> &Params, double MaxGradNorm);

/// One REINFORCE step: minimizes -mean(Advantages * \p Logp), where
/// \p Logp [B] holds the log-probabilities (with gradients) of B sampled
/// placements; gradients clipped to C.MaxGradNorm.
void updateReinforce(const torch::Tensor &Logp,
                     llvm::ArrayRef<float> Advantages, const ReinforceConfig &C,
                     torch::optim::Optimizer &Opt,
                     const std::vector<torch::Tensor> &Params);

/// Placements that a placer with a loaded policy (load=) samples when no
/// finetune= is given: its likeliest placement and a few draws.
constexpr uint64_t ZeroShotSamples = 10;
/// \p S with the sample budget of a loaded policy: finetune=N, or
/// ZeroShotSamples without it.
SearchOptions getSearchBudget(const SearchOptions &S);
/// Places zero-shot: \p Draw(Batch, Greedy) samples and scores Batch
/// placements, first the likeliest one, then batches of \p Batch until
/// \p Search's budget is spent.
void placeZeroShot(PolicySearch &Search, int64_t Batch,
                   llvm::function_ref<void(int64_t, bool)> Draw);

/// Ends \p Search and returns its result; with S.SaveFile, \p M and
/// \p Meta (architecture facts checked when loading) serialized into its
/// SavedPolicy, which the caller writes to S.SaveFile.
llvm::Expected<SearchResult> finishSearch(PolicySearch &Search,
                                          torch::nn::Module &M,
                                          llvm::ArrayRef<int64_t> Meta,
                                          const SearchOptions &S,
                                          llvm::StringRef Placer);
/// Loads \p M from \p File, which must have been saved with \p Meta;
/// \p MetaNames names each entry for the error.
llvm::Error loadPolicy(torch::nn::Module &M, llvm::ArrayRef<int64_t> Meta,
                       llvm::ArrayRef<const char *> MetaNames,
                       llvm::StringRef File, llvm::StringRef Placer);

} // namespace learn
} // namespace dp

#endif // DP_LIB_LEARN_MODULES_H
