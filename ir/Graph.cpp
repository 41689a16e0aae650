#include "ir/Graph.h"

#include <algorithm>
#include <set>
#include <unordered_set>

namespace triad::ir {

void Value::removeUser(const Node* n) {
  auto it = std::find(users_.begin(), users_.end(), n);
  if (it != users_.end()) users_.erase(it);
}

void Node::setInput(size_t i, Value* v) {
  if (inputs_[i] == v) return;
  if (inputs_[i]) inputs_[i]->removeUser(this);
  inputs_[i] = v;
  if (v) v->users_.push_back(this);
}

Value* Graph::newValue(std::string name, TensorType type) {
  auto v = std::make_unique<Value>();
  v->id_ = int(values_.size());
  v->name_ = std::move(name);
  v->type_ = std::move(type);
  Value* raw = v.get();
  values_.push_back(std::move(v));
  if (!raw->name_.empty()) byName_[raw->name_] = raw;
  return raw;
}

Graph Graph::clone() const {
  Graph c;
  c.name = name;
  c.opset = opset;
  std::unordered_map<const Value*, Value*> map;
  auto copyConstant = [&](const Value* v) {
    Value* nv = c.addConstant(v->name(), v->constantPtr());
    nv->setDequantizedFrom(v->dequantizedFrom());
    map[v] = nv;
  };
  for (const Value* v : inputs_)
    map[v] = c.addInput(v->name(), v->type());
  for (const Value* v : constants())
    copyConstant(v);
  for (const auto& n : nodes_) {
    std::vector<Value*> ins;
    for (const Value* v : n->inputs())
      ins.push_back(v ? map.at(v) : nullptr);
    std::vector<std::string> names;
    std::vector<TensorType> types;
    for (const Value* v : n->outputs()) {
      names.push_back(v->name());
      types.push_back(v->type());
    }
    Node* nn = c.addNode(n->kind(), n->name(), std::move(ins), n->attrsPtr(), std::move(names),
                         std::move(types));
    for (size_t i = 0; i < n->outputs().size(); ++i)
      map[n->output(i)] = nn->output(i);
  }
  for (const Value* v : outputs_)
    c.addOutput(map.at(v));
  return c;
}

Value* Graph::addInput(std::string name, TensorType type) {
  Value* v = newValue(std::move(name), std::move(type));
  inputs_.push_back(v);
  return v;
}

Value* Graph::addConstant(std::string name, Tensor value) {
  Value* v = newValue(std::move(name), value.type());
  v->constant_ = std::make_shared<const Tensor>(std::move(value));
  return v;
}

Value* Graph::addConstant(std::string name, std::shared_ptr<const Tensor> value) {
  Value* v = newValue(std::move(name), value->type());
  v->constant_ = std::move(value);
  return v;
}

Node* Graph::addNode(OpKind kind, std::string name, std::vector<Value*> inputs,
                     std::shared_ptr<const Attrs> attrs, std::vector<std::string> outputNames,
                     std::vector<TensorType> outputTypes) {
  TRIAD_ASSERT(outputNames.size() == outputTypes.size(), "output names/types mismatch");
  auto n = std::make_unique<Node>();
  n->id_ = nextNodeId_++;
  n->kind_ = kind;
  n->name_ = std::move(name);
  n->inputs_ = std::move(inputs);
  for (Value* in : n->inputs_)
    if (in) in->users_.push_back(n.get());
  n->attrs_ = attrs ? std::move(attrs) : std::make_shared<NoAttrs>();
  for (size_t i = 0; i < outputNames.size(); ++i) {
    Value* v = newValue(std::move(outputNames[i]), std::move(outputTypes[i]));
    v->producer_ = n.get();
    v->producerOutput_ = int(i);
    n->outputs_.push_back(v);
  }
  Node* raw = n.get();
  nodes_.push_back(std::move(n));
  return raw;
}

void Graph::replaceAllUses(Value* from, Value* to) {
  if (from == to) return;
  std::vector<Node*> users = std::move(from->users_);
  from->users_.clear();
  // A node reading `from` in several slots is listed once per slot: rewire each slot once.
  for (Node* n : users)
    for (Value*& in : n->inputs_)
      if (in == from) {
        in = to;
        if (to) to->users_.push_back(n);
        break;
      }
  for (Value*& out : outputs_)
    if (out == from) out = to;
}

void Graph::setNodeInput(Node* n, size_t i, Value* v) {
  if (n->inputs_.size() <= i) n->inputs_.resize(i + 1, nullptr);
  n->setInput(i, v);
}

void Graph::renameValue(Value* v, std::string name) {
  auto it = byName_.find(v->name_);
  if (it != byName_.end() && it->second == v) byName_.erase(it);
  v->name_ = std::move(name);
  if (!v->name_.empty()) byName_[v->name_] = v;
}

void Graph::removeNodes(const std::function<bool(const Node&)>& dead) {
  std::unordered_set<const Node*> removed;
  std::vector<Value*> touched; // values that lose users
  for (const auto& n : nodes_) {
    if (!dead(*n)) continue;
    removed.insert(n.get());
    for (Value* v : n->outputs_)
      v->producer_ = nullptr;
    for (Value* v : n->inputs_)
      if (v) touched.push_back(v);
  }
  if (removed.empty()) return;
  for (Value* v : touched)
    std::erase_if(v->users_, [&](const Node* u) { return removed.count(u) > 0; });
  std::erase_if(nodes_, [&](const std::unique_ptr<Node>& n) { return removed.count(n.get()) > 0; });
}

void Graph::sortNodes() {
  // Kahn's algorithm, always taking the ready node that came first in the current order.
  std::unordered_map<const Node*, size_t> position;
  for (size_t i = 0; i < nodes_.size(); ++i)
    position[nodes_[i].get()] = i;
  std::vector<int> pending(nodes_.size(), 0);
  std::vector<std::vector<size_t>> users(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i)
    for (Value* v : nodes_[i]->inputs_) {
      if (!v || !v->producer_) continue;
      auto it = position.find(v->producer_);
      if (it == position.end()) continue; // produced by a removed node: the verifier reports it
      ++pending[i];
      users[it->second].push_back(i);
    }
  std::set<size_t> ready;
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (pending[i] == 0) ready.insert(i);
  std::vector<std::unique_ptr<Node>> sorted;
  sorted.reserve(nodes_.size());
  while (!ready.empty()) {
    size_t i = *ready.begin();
    ready.erase(ready.begin());
    for (size_t u : users[i])
      if (--pending[u] == 0) ready.insert(u);
    sorted.push_back(std::move(nodes_[i]));
  }
  TRIAD_ASSERT(sorted.size() == nodes_.size(), "graph '{}' has a cycle", name);
  nodes_ = std::move(sorted);
}

std::vector<Value*> Graph::constants() const {
  std::vector<Value*> out;
  for (const auto& v : values_)
    if (v->isConstant()) out.push_back(v.get());
  return out;
}

Value* Graph::findValue(const std::string& name) const {
  auto it = byName_.find(name);
  return it == byName_.end() ? nullptr : it->second;
}

std::vector<int> Graph::useCounts() const {
  std::vector<int> uses(values_.size(), 0);
  for (const auto& n : nodes_)
    for (Value* v : n->inputs())
      if (v) ++uses[size_t(v->id())];
  for (Value* v : outputs_)
    ++uses[size_t(v->id())];
  return uses;
}

} // namespace triad::ir
