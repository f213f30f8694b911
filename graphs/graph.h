// The computation graph shared by every part of gosim.
//
// A Graph is immutable once built (see GraphBuilder). Node ids are a
// topological order: every edge goes from a smaller id to a larger one. Edges
// are stored once and indexed twice, as CSR arrays of in- and out-edges.
//
// Units: FLOPs are floating-point operations (a multiply-add counts 2), sizes
// are bytes, times are seconds. The graph knows nothing of devices except the
// optional per-device-kind measured times that profiled graphs carry.
//
// Tensors: each node has zero or more outputs; output k of node n is tensor
// tensor_offset(n) + k. A data edge names the output it consumes; a control
// edge (output_index == kControl) carries no data and 0 bytes.
#ifndef GOSIM_GRAPHS_GRAPH_H_
#define GOSIM_GRAPHS_GRAPH_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gosim::graphs {

using NodeId = int32_t;
using EdgeId = int32_t;
using TensorId = int32_t;

enum class DType : uint8_t {
  kUnknown = 0,
  kFloat32,
  kFloat16,
  kBFloat16,
  kFloat64,
  kInt64,
  kInt32,
  kInt16,
  kInt8,
  kUInt8,
  kBool,
  // A float32 tensor computed on TF32 tensor cores (a matrix product that
  // PyTorch runs with allow_tf32): stored as float32, priced at the TF32
  // peak (DeviceSpec::PeakFlops) or with a profile's "[tf32]" fits. Last, so
  // that the numbers of the other dtypes (the binary format's) stay.
  kTFloat32,
};
inline constexpr DType kLastDType = DType::kTFloat32;
// "float32", "float16", ..., "tfloat32"; ParseDType accepts those and common
// aliases ("f32", "float", "half", "tf32", "torch.float32"); unknown text
// gives kUnknown.
std::string_view DTypeName(DType dtype);
DType ParseDType(std::string_view text);
// Bytes per element (0 for kUnknown).
int DTypeSize(DType dtype);

// Which part of a training step a node belongs to.
enum class Phase : uint8_t { kForward = 0, kBackward = 1, kUpdate = 2 };
std::string_view PhaseName(Phase phase);
// Accepts "forward"/"backward"/"update"; returns false on anything else.
bool ParsePhase(std::string_view text, Phase* phase);

struct TensorInfo {
  int64_t bytes = 0;           // size of the tensor (what a transfer moves)
  std::vector<int64_t> shape;  // empty when unknown (or a scalar with bytes > 0)
  DType dtype = DType::kUnknown;
  // The tensor is a view of memory that already exists: of the node's data
  // inputs (a view such as a transpose or a slice, or an in-place op's
  // result) or of the node's persistent bytes (a weight's read). It takes no
  // device memory of its own, and the node's data inputs stay allocated
  // while it is alive. A copy sent to another device is a real copy.
  bool alias = false;

  // Device memory the tensor takes where it is produced.
  int64_t resident_bytes() const { return alias ? 0 : bytes; }

  bool operator==(const TensorInfo&) const = default;
};

// A measured execution time of a node on one kind of device.
struct MeasuredTime {
  // e.g. "V100", "A100", "cpu"; "any" applies to every accelerator, not to
  // CPU devices (sim::MeasuredTimeFor).
  std::string device_kind;
  double seconds = 0.0;

  bool operator==(const MeasuredTime&) const = default;
};

struct Node {
  std::string name;           // unique within the graph
  int32_t op = 0;             // interned op type: Graph::op_type_name(op)
  double flops = 0.0;         // floating-point operations
  int64_t bytes_read = 0;     // bytes read from device memory by the kernel
  int64_t bytes_written = 0;  // bytes written to device memory by the kernel
  std::vector<TensorInfo> outputs;
  int64_t persistent_bytes = 0;  // weights and optimizer state resident all step
  int32_t colocation = -1;       // interned colocation group, -1 = none
  std::string scope;             // e.g. "encoder/layer_2/attention"
  Phase phase = Phase::kForward;
  std::vector<MeasuredTime> measured;
};

struct Edge {
  static constexpr int32_t kControl = -1;
  NodeId src = 0;
  NodeId dst = 0;
  int32_t output_index = kControl;  // which output of src; kControl for control edges
  int64_t bytes = 0;                // bytes of the tensor moved (0 for control edges)

  bool is_control() const { return output_index == kControl; }
};

class Graph {
 public:
  Graph() = default;

  const std::string& name() const { return name_; }
  int32_t num_nodes() const { return static_cast<int32_t>(nodes_.size()); }
  int32_t num_edges() const { return static_cast<int32_t>(edges_.size()); }
  int32_t num_tensors() const { return tensor_offsets_.empty() ? 0 : tensor_offsets_.back(); }

  const Node& node(NodeId id) const { return nodes_[static_cast<size_t>(id)]; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const Edge& edge(EdgeId id) const { return edges_[static_cast<size_t>(id)]; }
  const std::vector<Edge>& edges() const { return edges_; }

  // Edge ids entering / leaving `id`, in ascending (src, output) / (dst) order.
  std::span<const EdgeId> in_edges(NodeId id) const {
    return {in_edge_ids_.data() + in_offsets_[id], in_edge_ids_.data() + in_offsets_[id + 1]};
  }
  std::span<const EdgeId> out_edges(NodeId id) const {
    return {out_edge_ids_.data() + out_offsets_[id], out_edge_ids_.data() + out_offsets_[id + 1]};
  }
  int32_t in_degree(NodeId id) const { return in_offsets_[id + 1] - in_offsets_[id]; }
  int32_t out_degree(NodeId id) const { return out_offsets_[id + 1] - out_offsets_[id]; }

  // Tensor id of output `k` of node `id`.
  TensorId tensor(NodeId id, int32_t k) const { return tensor_offsets_[id] + k; }
  TensorId tensor_offset(NodeId id) const { return tensor_offsets_[id]; }
  // The node producing tensor `t`.
  NodeId tensor_producer(TensorId t) const;

  const std::string& op_type_name(int32_t op) const { return op_types_[static_cast<size_t>(op)]; }
  const std::string& op_type_name_of(NodeId id) const { return op_type_name(node(id).op); }
  const std::vector<std::string>& op_types() const { return op_types_; }
  // Interned id of an op type name, or -1 when the graph has no such op.
  int32_t FindOpType(std::string_view name) const;

  const std::vector<std::string>& colocation_groups() const { return colocation_groups_; }

  // How many parameters the update-phase nodes of op type `op` update,
  // counted by colocation group (a node without one counts alone); 0 when
  // no update node has that type. An exported SGD step with momentum has
  // two `aten::add_` per parameter: 2 x P nodes, P parameters. A
  // multi-tensor (foreach) optimizer applies such an op to all of them in
  // one call (sim/cost_models.h, CalibratedOptions::multi_tensor_updates).
  int32_t update_parameters(int32_t op) const {
    return op >= 0 && op < static_cast<int32_t>(update_parameters_.size())
               ? update_parameters_[static_cast<size_t>(op)]
               : 0;
  }

  // Node id by name, or nullopt.
  std::optional<NodeId> FindNode(std::string_view name) const;

  // The file the graph was read from ("" for generated graphs).
  const std::string& source() const { return source_; }

 private:
  friend class GraphBuilder;

  std::string name_;
  std::string source_;
  std::vector<Node> nodes_;
  std::vector<Edge> edges_;
  std::vector<int32_t> update_parameters_;  // per op type (update_parameters)
  std::vector<int32_t> in_offsets_{0};
  std::vector<EdgeId> in_edge_ids_;
  std::vector<int32_t> out_offsets_{0};
  std::vector<EdgeId> out_edge_ids_;
  std::vector<TensorId> tensor_offsets_{0};
  std::vector<std::string> op_types_;
  std::vector<std::string> colocation_groups_;
  std::unordered_map<std::string, NodeId> by_name_;
};

}  // namespace gosim::graphs

#endif  // GOSIM_GRAPHS_GRAPH_H_
