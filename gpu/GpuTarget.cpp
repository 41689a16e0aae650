#include "gpu/GpuTarget.h"

#include "ir/Diagnostics.h"
#include "ir/Escape.h"
#include "ir/Interpreter.h"
#include "ir/passes/Pass.h"

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fmt/format.h>
#include <fstream>
#include <mutex>
#include <thread>

namespace triad::gpu {

using namespace ir;

std::string GpuRunProfile::table() const {
  std::string s = fmt::format("{:<44} {:<22} {:>10} {:>6}\n", "layer", "kind", "ms", "%");
  double total = kernelMs + hostMs;
  for (const GpuLayerTime& l : layers) {
    std::string name = escape::printable(l.layer); // the model's names, for a terminal
    if (name.size() > 44) name = name.substr(0, 41) + "...";
    s += fmt::format("{:<44} {:<22} {:>10.3f} {:>5.1f}%\n", name, l.kind, l.ms,
                     total > 0 ? 100.0 * l.ms / total : 0.0);
  }
  s += fmt::format("{:<67} {:>10.3f}\n", "kernels (device time)", kernelMs);
  s +=
      fmt::format("{:<67} {:>10.3f}\n", "host steps (reference kernels + their transfers)", hostMs);
  s += fmt::format("{:<67} {:>10.3f}\n",
                   fmt::format("host-to-device transfers ({} bytes)", hostToDeviceBytes),
                   hostToDeviceMs);
  s += fmt::format("{:<67} {:>10.3f}\n",
                   fmt::format("device-to-host transfers ({} bytes)", deviceToHostBytes),
                   deviceToHostMs);
  s += fmt::format("{:<67} {:>10.3f}\n", "run (wall clock)", wallMs);
  return s;
}

namespace {

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

size_t bytesOf(const Value* v) {
  return size_t(numElements(v->type().shape)) * dtypeSize(v->type().dtype);
}

class LanePool;

class GpuModel final : public GpuExecutable {
public:
  /// `owned`, when set, is the graph `g` refers to (the target's rewritten copy): kept alive
  /// as long as the model and its lanes.
  GpuModel(const Graph& g, const GpuOptions& o, std::shared_ptr<const Graph> owned = nullptr)
      : owned_(std::move(owned)), g_(g), options_(o), device_(selectDevice(o.device)) {
    ContextOptions co;
    co.cacheDir = o.cacheDir;
    ctx_ = std::make_unique<Context>(device_, co);
    std::optional<TuningDb> db;
    if (o.useTuning) db.emplace(o.tuningPath ? *o.tuningPath : TuningDb::defaultPath());
    GpuCodeGenOptions go;
    go.fuse = o.fuse;
    go.device = &device_;
    go.tuning = db ? &*db : nullptr;
    program_ = generateOpenCL(g, go);
    if (const char* dump = std::getenv("TRIAD_GPU_SOURCE"); dump && *dump) {
      std::ofstream f(dump); // the generated program, for reading and debugging
      f << program_.source;
      if (!f)
        fail(ErrorKind::Io, "cannot write the OpenCL source to '{}' (TRIAD_GPU_SOURCE)", dump);
    }
    double before = ctx_->buildStats().compileSeconds;
    // The program's name (errors, the binary cache's file name): an identifier, not the model's
    // string.
    std::string name = kernelIdentifier(g.name.empty() ? "model" : g.name);
    built_ = ctx_->build(program_.source, o.buildOptions, "model_" + name);
    compileSeconds_ = ctx_->buildStats().compileSeconds - before;

    for (size_t b = 0; b < program_.bufferNames.size(); ++b)
      buffers_.push_back(ctx_->buffer(program_.bufferBytes[b], program_.bufferNames[b]));
    ctx_->write(buffers_[1], program_.weights.data(), program_.weights.size());
    ctx_->finish();
    ctx_->profile().clear();
    for (const GpuStep& s : program_.steps) {
      kernels_.emplace_back();
      if (s.kernel.empty()) continue;
      Kernel k = built_.kernel(s.kernel);
      for (size_t i = 0; i < s.buffers.size(); ++i)
        k.arg(cl_uint(i), buffers_[size_t(s.buffers[i])]);
      kernels_.back() = std::move(k);
    }
  }

  const GpuProgram& program() const override { return program_; }
  const DeviceInfo& device() const override { return device_; }
  const BuildStats& buildStats() const override { return ctx_->buildStats(); }
  double compileSeconds() const override { return compileSeconds_; }
  const GpuRunProfile& lastProfile() const override { return profile_; }

  void setProfiling(bool on) override {
    profiling_ = on;
    accumulated_.clear();
  }
  std::vector<LayerTime> profile() const override { return accumulated_; }

  ~GpuModel() override;
  void setInFlight(int lanes) override;
  int inFlight() const override;
  std::future<std::vector<Tensor>> submit(std::vector<Tensor> inputs) override;

  std::vector<Tensor> run(std::span<const Tensor> inputs) override {
    if (inputs.size() != g_.inputs().size())
      fail(ErrorKind::Runtime, "graph '{}' takes {} inputs, {} given", g_.name, g_.inputs().size(),
           inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Value* v = g_.inputs()[i];
      if (inputs[i].dtype() != v->type().dtype || inputs[i].shape() != v->type().shape)
        fail(ErrorKind::Runtime, "input '{}' expects {}, got {}", v->name(),
             typeToString(v->type()), typeToString(inputs[i].type()));
    }
    auto t0 = std::chrono::steady_clock::now();
    ctx_->profile().clear();
    hostRanges_.clear();
    hostMs_.assign(program_.steps.size(), 0.0);
    for (size_t i = 0; i < inputs.size(); ++i)
      ctx_->write(buffers_[2 + i], inputs[i].raw(), inputs[i].byteSize());
    std::vector<int32_t> status(program_.checkSlots, 0);
    if (!status.empty())
      ctx_->write(buffers_[size_t(program_.statusBuffer)], status.data(), status.size() * 4);
    for (size_t s = 0; s < program_.steps.size(); ++s) {
      if (program_.steps[s].kernel.empty())
        runHost(s);
      else
        ctx_->launch(kernels_[s], program_.steps[s].range);
    }
    std::vector<Tensor> outs;
    for (const Value* v : g_.outputs()) {
      outs.emplace_back(v->type());
      if (v->isConstant()) {
        if (bytesOf(v)) std::memcpy(outs.back().raw(), v->constant().raw(), bytesOf(v));
        continue;
      }
      BufferRef r = program_.where[size_t(v->id())];
      TRIAD_ASSERT(r.buffer >= 0, "graph output '{}' has no storage", v->name());
      ctx_->read(buffers_[size_t(r.buffer)], outs.back().raw(), bytesOf(v), size_t(r.offset));
    }
    if (!status.empty())
      ctx_->read(buffers_[size_t(program_.statusBuffer)], status.data(), status.size() * 4);
    ctx_->finish();
    for (const GpuStep& st : program_.steps) // the first failed check in execution order
      if (st.checkSlot >= 0 && status[size_t(st.checkSlot)] != 0)
        fail(ErrorKind::Runtime, "node '{}' ({}): {}", st.nodes.front()->name(),
             opKindName(st.nodes.front()->kind()), st.checkWhat);
    collectProfile(msSince(t0));
    return outs;
  }

private:
  /// A node without a GPU lowering: read its inputs back, run the reference kernel, write its
  /// outputs (after everything enqueued before it has finished).
  void runHost(size_t s) {
    const Node& n = *program_.steps[s].hostNode;
    ctx_->finish();
    auto t0 = std::chrono::steady_clock::now();
    size_t mark = ctx_->profile().events.size();
    std::vector<Tensor> copies;
    copies.reserve(n.inputs().size());
    std::vector<const Tensor*> ptrs;
    for (Value* v : n.inputs()) {
      if (!v) {
        ptrs.push_back(nullptr);
      } else if (v->isConstant()) {
        ptrs.push_back(&v->constant());
      } else {
        copies.emplace_back(v->type());
        BufferRef r = program_.where[size_t(v->id())];
        TRIAD_ASSERT(r.buffer >= 0, "value '{}' has no storage", v->name());
        ctx_->read(buffers_[size_t(r.buffer)], copies.back().raw(), bytesOf(v), size_t(r.offset));
        ptrs.push_back(&copies.back());
      }
    }
    std::vector<Tensor> results;
    try {
      results = evalNode(n, ptrs);
    } catch (const Error& e) {
      fail(e.kind(), "node '{}' ({}, run on the host): {}", n.name(), opKindName(n.kind()),
           e.what());
    }
    for (size_t i = 0; i < results.size() && i < n.outputs().size(); ++i) {
      BufferRef r = program_.where[size_t(n.output(i)->id())];
      if (r.buffer < 0) continue; // an output nobody reads
      ctx_->write(buffers_[size_t(r.buffer)], results[i].raw(), results[i].byteSize(),
                  size_t(r.offset));
    }
    ctx_->finish();
    hostRanges_.push_back({mark, ctx_->profile().events.size()});
    hostMs_[s] = msSince(t0);
  }

  void collectProfile(double wallMs) {
    GpuRunProfile p;
    p.wallMs = wallMs;
    const auto& events = ctx_->profile().events;
    std::vector<bool> inHost(events.size(), false);
    for (auto [a, b] : hostRanges_)
      for (size_t i = a; i < b && i < events.size(); ++i)
        inHost[i] = true;
    std::map<std::string, uint64_t> perKernel;
    for (size_t i = 0; i < events.size(); ++i) {
      const ProfileEvent& e = events[i];
      if (e.kind == ProfileEvent::Kind::Kernel) {
        perKernel[e.name] += e.ns;
      } else if (!inHost[i]) {
        bool h2d = e.kind == ProfileEvent::Kind::HostToDevice;
        (h2d ? p.hostToDeviceMs : p.deviceToHostMs) += double(e.ns) * 1e-6;
        (h2d ? p.hostToDeviceBytes : p.deviceToHostBytes) += e.bytes;
      }
    }
    for (size_t s = 0; s < program_.steps.size(); ++s) {
      const GpuStep& st = program_.steps[s];
      GpuLayerTime l{st.layer, st.kernel, st.kind, 0};
      if (st.kernel.empty()) {
        l.ms = hostMs_[s];
        p.hostMs += l.ms;
      } else {
        l.ms = double(perKernel[st.kernel]) * 1e-6;
        p.kernelMs += l.ms;
      }
      p.layers.push_back(std::move(l));
    }
    profile_ = std::move(p);
    if (!profiling_) return;
    if (accumulated_.empty()) {
      for (const GpuLayerTime& l : profile_.layers)
        accumulated_.push_back({l.layer, 0, l.kernel.empty() ? "host" : "layer"});
      accumulated_.push_back({"host-to-device transfers", 0, "h2d"});
      accumulated_.push_back({"device-to-host transfers", 0, "d2h"});
    }
    for (size_t i = 0; i < profile_.layers.size(); ++i)
      accumulated_[i].milliseconds += profile_.layers[i].ms;
    accumulated_[profile_.layers.size()].milliseconds += profile_.hostToDeviceMs;
    accumulated_[profile_.layers.size() + 1].milliseconds += profile_.deviceToHostMs;
  }

  std::shared_ptr<const Graph> owned_; // first: destroyed after the lanes that use g_
  const Graph& g_;
  GpuOptions options_;
  DeviceInfo device_;
  std::unique_ptr<Context> ctx_;
  GpuProgram program_;
  Program built_;
  double compileSeconds_ = 0;
  std::vector<Buffer> buffers_;
  std::vector<Kernel> kernels_; // by step (empty for host steps)
  std::vector<std::pair<size_t, size_t>> hostRanges_;
  std::vector<double> hostMs_;
  GpuRunProfile profile_;
  bool profiling_ = false;
  std::vector<LayerTime> accumulated_; // since setProfiling(true)
  std::unique_ptr<LanePool> lanes_;    // the asynchronous mode's lanes
};

/// The asynchronous mode's lanes: one GpuModel (own context, queue and buffers) and one host
/// thread each, taking jobs from one queue in submission order.
class LanePool {
public:
  LanePool(const Graph& g, const GpuOptions& o, int n) {
    for (int i = 0; i < n; ++i)
      lanes_.push_back(std::make_unique<GpuModel>(g, o));
    for (auto& lane : lanes_)
      threads_.emplace_back([this, m = lane.get()] { serve(*m); });
  }
  ~LanePool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : threads_)
      t.join(); // the queued jobs are finished first
  }
  int size() const { return int(lanes_.size()); }

  std::future<std::vector<Tensor>> submit(std::vector<Tensor> inputs) {
    Job j{std::move(inputs), {}};
    std::future<std::vector<Tensor>> f = j.result.get_future();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      jobs_.push_back(std::move(j));
    }
    wake_.notify_one();
    return f;
  }

private:
  struct Job {
    std::vector<Tensor> inputs;
    std::promise<std::vector<Tensor>> result;
  };

  void serve(GpuModel& lane) {
    for (;;) {
      Job j;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
        if (jobs_.empty()) return; // stopping, and nothing left
        j = std::move(jobs_.front());
        jobs_.pop_front();
      }
      try {
        j.result.set_value(lane.run(j.inputs));
      } catch (...) {
        j.result.set_exception(std::current_exception());
      }
    }
  }

  std::vector<std::unique_ptr<GpuModel>> lanes_;
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Job> jobs_;
  bool stop_ = false;
};

GpuModel::~GpuModel() = default;

void GpuModel::setInFlight(int lanes) {
  if (lanes < 0) fail(ErrorKind::Usage, "the number of runs in flight must be >= 0, got {}", lanes);
  if (lanes_ && lanes_->size() == lanes) return;
  lanes_.reset(); // drains the old lanes
  if (lanes > 0) lanes_ = std::make_unique<LanePool>(g_, options_, lanes);
}

int GpuModel::inFlight() const {
  return lanes_ ? lanes_->size() : 0;
}

std::future<std::vector<Tensor>> GpuModel::submit(std::vector<Tensor> inputs) {
  if (!lanes_) setInFlight(1);
  return lanes_->submit(std::move(inputs));
}

class GpuTarget final : public Target {
public:
  explicit GpuTarget(GpuOptions o) : opts_(std::move(o)) {}
  std::string_view name() const override { return "gpu"; }
  std::string_view description() const override {
    return "generated OpenCL C kernels (tiled GEMM/convolution with fused epilogues), one "
           "program per model, on any OpenCL 1.2 device (PoCL on CPUs)";
  }
  Support supports(const Node& n) const override { return gpuSupport(n); }
  std::unique_ptr<Executable> compile(const Graph& g, const CompileSettings&) const override {
    // QDQ models: the integer kernels, on a rewritten copy (the caller's graph stays as is).
    std::shared_ptr<const Graph> owned = qdqIntegerCopy(g, opts_.qdqInteger, "TRIAD_GPU_QDQ");
    return std::make_unique<GpuModel>(owned ? *owned : g, opts_, owned);
  }

private:
  GpuOptions opts_;
};

} // namespace

std::unique_ptr<Target> makeGpuTarget(GpuOptions opts) {
  return std::make_unique<GpuTarget>(std::move(opts));
}

} // namespace triad::gpu
