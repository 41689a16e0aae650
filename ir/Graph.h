// The graph IR: values in SSA form (each produced once, by one node output, a graph input or a
// constant), nodes kept in topological order, static shapes everywhere.
#pragma once

#include "ir/Attrs.h"
#include "ir/OpDef.h"
#include "ir/Tensor.h"

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace triad::ir {

class Node;

/// What a constant was folded from when it is a DequantizeLinear of constants: the integer
/// tensor, its scale and zero point (null: none) and the quantization axis (-1: per tensor), so
/// that targets can compute with the integers (ir/passes/FuseQdq.cpp on the CPU, the FPGA's integer
/// grids). Set where a DequantizeLinear is folded (ir::recordFoldedDequantize).
struct DequantizedFrom {
  std::shared_ptr<const Tensor> q, scale, zeroPoint;
  int64_t axis = -1;
};

class Value {
public:
  int id() const { return id_; }
  const std::string& name() const { return name_; }
  const TensorType& type() const { return type_; }
  void setType(TensorType t) { type_ = std::move(t); }

  /// The node producing this value; null for graph inputs and constants.
  Node* producer() const { return producer_; }
  int producerOutput() const { return producerOutput_; }

  bool isConstant() const { return constant_ != nullptr; }
  const Tensor& constant() const { return *constant_; }
  const std::shared_ptr<const Tensor>& constantPtr() const { return constant_; }
  /// For a constant folded from a DequantizeLinear of constants: its operands (else null).
  const std::shared_ptr<const DequantizedFrom>& dequantizedFrom() const { return dequantized_; }
  void setDequantizedFrom(std::shared_ptr<const DequantizedFrom> d) { dequantized_ = std::move(d); }

  /// The nodes reading this value, once per input slot (graph outputs are not listed). Kept up
  /// to date by the graph, so that rewiring a use costs the value's uses, not the graph's size.
  const std::vector<Node*>& users() const { return users_; }

private:
  friend class Graph;
  friend class Node;
  void removeUser(const Node* n);
  std::vector<Node*> users_;
  int id_ = 0;
  std::string name_;
  TensorType type_;
  Node* producer_ = nullptr;
  int producerOutput_ = -1;
  std::shared_ptr<const Tensor> constant_;
  std::shared_ptr<const DequantizedFrom> dequantized_;
};

class Node {
public:
  int id() const { return id_; }
  OpKind kind() const { return kind_; }
  const OpDef& def() const { return opDef(kind_); }
  /// The ONNX node name (may be empty in the source model; the importer then makes one up).
  const std::string& name() const { return name_; }
  /// IR inputs: the ONNX inputs minus shape operands; nullptr marks an absent optional input.
  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  Value* input(size_t i) const { return i < inputs_.size() ? inputs_[i] : nullptr; }
  Value* output(size_t i) const { return outputs_[i]; }
  const Attrs& attrs() const { return *attrs_; }
  const std::shared_ptr<const Attrs>& attrsPtr() const { return attrs_; }
  template <typename A> const A& attrs() const {
    auto* a = dynamic_cast<const A*>(attrs_.get());
    TRIAD_ASSERT(a, "node {} has other attributes", name_);
    return *a;
  }
  void setInput(size_t i, Value* v);

private:
  friend class Graph;
  int id_ = 0;
  OpKind kind_{};
  std::string name_;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
  std::shared_ptr<const Attrs> attrs_;
};

class Graph {
public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  Graph(Graph&&) = default;
  Graph& operator=(Graph&&) = default;

  /// A copy with the same names, types, attributes and constants (shared, not copied), for a
  /// target that rewrites the graph it compiles. Values nothing uses or produces are left out.
  Graph clone() const;

  std::string name;
  int opset = 0; // default-domain opset of the source model (informational after import)

  Value* addInput(std::string name, TensorType type);
  Value* addConstant(std::string name, Tensor value);
  /// A constant sharing its tensor with another graph (subgraphs of a partitioned model).
  Value* addConstant(std::string name, std::shared_ptr<const Tensor> value);
  /// Appends a node; outputs are created with the given names and types. Inputs must already
  /// exist (topological order is kept by construction; the verifier checks it anyway).
  Node* addNode(OpKind kind, std::string name, std::vector<Value*> inputs,
                std::shared_ptr<const Attrs> attrs, std::vector<std::string> outputNames,
                std::vector<TensorType> outputTypes);
  void addOutput(Value* v) { outputs_.push_back(v); }
  void setOutput(size_t i, Value* v) { outputs_[i] = v; }

  /// Points every use of `from` (node inputs and graph outputs) at `to`.
  void replaceAllUses(Value* from, Value* to);
  /// Sets input i of `n`, growing its input list with absent inputs if needed.
  void setNodeInput(Node* n, size_t i, Value* v);
  /// Renames a value (names are unique: the caller frees the name first if it is taken).
  void renameValue(Value* v, std::string name);

  /// Removes nodes for which `dead` is true (one pass over the graph). Values they produced stay
  /// owned by the graph but lose their producer; the verifier reports any that are still used.
  void removeNodes(const std::function<bool(const Node&)>& dead);
  /// Restores topological order after a pass appended nodes whose users come earlier: a stable
  /// sort (nodes already in order keep their relative order). Throws Internal on a cycle.
  void sortNodes();

  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  const std::vector<std::unique_ptr<Node>>& nodes() const { return nodes_; }
  const std::vector<std::unique_ptr<Value>>& values() const { return values_; }
  std::vector<Value*> constants() const;

  Value* findValue(const std::string& name) const;
  /// Number of uses of each value id (node inputs and graph outputs).
  std::vector<int> useCounts() const;

private:
  Value* newValue(std::string name, TensorType type);
  std::vector<std::unique_ptr<Value>> values_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
  std::unordered_map<std::string, Value*> byName_;
  int nextNodeId_ = 0;
};

} // namespace triad::ir
