// Part of the CPU run-time kernels (triad_kernels.h includes every part).
// The worker pool (parallel_for, set_num_threads, the adaptive governor) and per-thread
// scratch buffers.
#pragma once

#include "triad_simd.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace triad_rt {

// ============================================================================================
// Threading
// ============================================================================================

/// Below this much work (multiply-adds or element-ops) a call stays on the calling thread.
constexpr double kParallelMinWork = 1 << 18;

namespace detail {
inline int& thread_setting() {
  static int n = 0;
  return n;
}
} // namespace detail

/// Threads used by every kernel (n < 1 resets to the default, OpenMP's max threads).
inline void set_num_threads(int n) {
  detail::thread_setting() = n < 1 ? 0 : n;
}
inline int num_threads() {
  int n = detail::thread_setting();
  if (n > 0) return n;
  // hardware_concurrency() reads /sys/devices/system/cpu/online: once, not per layer.
  static const int hw = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  return hw;
}

namespace detail {
/// One parallel job: items [0, n) taken from `next` by whoever comes first, in runs [b, e) that
/// fn(ctx, b, e) computes. Each claim takes (items left) / div items (at least 1; div 0: one
/// at a time): large contiguous runs first, single items at the end (guided scheduling), so a
/// thread that starts late or runs slow leaves at most one item for the others to wait on.
struct Job {
  void (*fn)(void*, ptrdiff_t, ptrdiff_t) = nullptr;
  void* ctx = nullptr;
  ptrdiff_t n = 0;
  ptrdiff_t div = 0;
  std::atomic<ptrdiff_t> next{0};
  std::atomic<int> refs{0}; // workers inside the job (changed under the pool's mutex)
};

inline bool& inside_job() {
  thread_local bool inside = false;
  return inside;
}

/// How long an idle worker (and a caller waiting for workers) spins before sleeping, in
/// microseconds: TRIAD_SPIN_US, default 50. Layers follow each other within microseconds, so
/// a short spin catches the next job without the futex wake-up (several microseconds, often
/// more than a small layer's whole parallel part); bounded, so an idle model costs nothing.
inline int spin_us() {
  static const int us = [] {
    const char* e = std::getenv("TRIAD_SPIN_US");
    return e ? std::max(0, std::atoi(e)) : 50;
  }();
  return us;
}
/// Whether the pool adapts to a busy machine (ParallelGovernor, and spinning turned off after a
/// spinning thread was descheduled): yes unless TRIAD_POOL_ADAPT=0 (for comparisons).
inline bool pool_adapts() {
  static const bool on = [] {
    const char* e = std::getenv("TRIAD_POOL_ADAPT");
    return !(e && e[0] == '0' && e[1] == 0);
  }();
  return on;
}
/// Until when spinning is off (steady_clock ticks): set when a spinning thread finds it was
/// descheduled, i.e. another process wants this core. Spinning then only takes time from the
/// threads it waits for (or from the neighbour), so everyone sleeps at once for a while.
inline std::atomic<int64_t>& no_spin_until() {
  static std::atomic<int64_t> t{0};
  return t;
}
/// How long spinning stays off after a thread was descheduled while spinning.
constexpr std::chrono::milliseconds kNoSpinAfterPreemption{20};
/// A gap this long between two looks at the clock in a spin loop (normally a few microseconds
/// apart) means the thread was descheduled.
constexpr std::chrono::microseconds kPreemptedGap{100};

/// Spins until done() or the spin time is up; true if done. Stops early, and turns spinning off
/// for every thread for kNoSpinAfterPreemption, when the spinning thread is descheduled.
template <class F> inline bool spin_until(F done) {
  const int us = spin_us();
  if (us <= 0) return done();
  using clock = std::chrono::steady_clock;
  auto t0 = clock::now(), last = t0;
  const bool adapt = pool_adapts();
  if (adapt && t0.time_since_epoch().count() < no_spin_until().load(std::memory_order_relaxed))
    return done();
  for (int i = 0;; ++i) {
    if (done()) return true;
#if defined(__SSE2__)
    _mm_pause();
#endif
    if ((i & 63) == 63) {
      auto t = clock::now();
      if (adapt && t - last > kPreemptedGap) {
        no_spin_until().store((t + kNoSpinAfterPreemption).time_since_epoch().count(),
                              std::memory_order_relaxed);
        return done();
      }
      if (t - t0 > std::chrono::microseconds(us)) return done();
      last = t;
    }
  }
}

/// Whether parallel jobs pay off right now, judged by the thread that posts them (one per
/// calling thread). After each parallel job it compares the job's wall time with what the
/// caller alone would have taken (its own time per item times the items). On a shared machine
/// workers can be descheduled for a whole time slice, before or while holding an item, and the
/// job then takes longer than running inline would have. When that is the trend (a moving
/// average of the ratio above kLossLimit), the next jobs run inline, a stretch that doubles
/// while the trend persists (up to kMaxInline jobs, a few seconds of a large model) and resets
/// when threads pay again; the first parallel job after a stretch (which wakes sleeping workers)
/// is not judged. Each judged job can cost a time slice (a worker descheduled holding an item),
/// so after a stretch one more slow job starts the next.
class ParallelGovernor {
public:
  static constexpr double kLossLimit = 0.95; // average job time / inline estimate
  static constexpr int kMinInline = 16, kMaxInline = 16384;
  /// Whether the next job may use worker threads (counts down an inline stretch).
  bool allow() {
    if (inline_left_ > 0) {
      --inline_left_;
      if (inline_left_ == 0) warmup_ = true;
      return false;
    }
    return true;
  }
  /// A parallel job of `n` items took `elapsed` (any unit); the caller ran `own_items` of them
  /// in `own_time`.
  void record(ptrdiff_t n, ptrdiff_t own_items, double elapsed, double own_time) {
    if (warmup_) {
      warmup_ = false;
      return;
    }
    if (own_items <= 0 || own_time <= 0 || n <= 0) return;
    const double ratio = elapsed / (own_time / static_cast<double>(own_items) * n);
    loss_ = 0.75 * loss_ + 0.25 * ratio;
    if (loss_ > kLossLimit && ratio > kLossLimit) {
      // The average stays where it is: one more slow job after the stretch starts the next.
      inline_left_ = stretch_;
      stretch_ = std::min(2 * stretch_, kMaxInline);
    } else if (ratio < 0.9) {
      stretch_ = kMinInline;
    }
  }
  int inline_left() const { return inline_left_; }
  double loss() const { return loss_; }

private:
  static constexpr double kStart = 0.75;
  double loss_ = kStart;
  int inline_left_ = 0, stretch_ = kMinInline;
  bool warmup_ = false;
};

inline ParallelGovernor& governor() {
  thread_local ParallelGovernor g;
  return g;
}

/// Worker threads that spin briefly, then sleep between jobs. The caller of run() works on its
/// own job and then waits only for items that workers already took.
class Pool {
public:
  ~Pool() {
    {
      std::lock_guard<std::mutex> l(m_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : workers_)
      t.join();
  }
  void run(int threads, ptrdiff_t n, ptrdiff_t div, void (*fn)(void*, ptrdiff_t, ptrdiff_t),
           void* ctx) {
    const auto t0 = std::chrono::steady_clock::now();
    Job job;
    job.fn = fn;
    job.ctx = ctx;
    job.n = n;
    job.div = div;
    {
      std::lock_guard<std::mutex> l(m_);
      while (static_cast<int>(workers_.size()) < threads - 1)
        workers_.emplace_back([this] { work(); });
      job_ = &job;
      wanted_ = threads - 1;
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    const auto t1 = std::chrono::steady_clock::now();
    const ptrdiff_t own = drain(job);
    const auto t2 = std::chrono::steady_clock::now();
    {
      std::lock_guard<std::mutex> l(m_);
      job_ = nullptr; // late workers find nothing
    }
    if (!spin_until([&] { return job.refs.load(std::memory_order_acquire) == 0; })) {
      std::unique_lock<std::mutex> l(m_);
      done_.wait(l, [&] { return job.refs.load(std::memory_order_relaxed) == 0; });
    }
    const auto t3 = std::chrono::steady_clock::now();
    governor().record(n, own, std::chrono::duration<double>(t3 - t0).count(),
                      std::chrono::duration<double>(t2 - t1).count());
  }

private:
  /// Runs items of `job` until none is left; returns how many this thread ran.
  static ptrdiff_t drain(Job& job) {
    bool& inside = inside_job();
    bool was = inside;
    inside = true;
    ptrdiff_t ran = 0;
    for (;;) {
      ptrdiff_t b, take = 1;
      if (job.div <= 0) {
        b = job.next.fetch_add(1, std::memory_order_relaxed);
      } else {
        b = job.next.load(std::memory_order_relaxed);
        do
          take = std::max<ptrdiff_t>(1, (job.n - b) / job.div);
        while (b < job.n &&
               !job.next.compare_exchange_weak(b, b + take, std::memory_order_relaxed));
      }
      if (b >= job.n) break;
      take = std::min(take, job.n - b);
      job.fn(job.ctx, b, b + take);
      ran += take;
    }
    inside = was;
    return ran;
  }
  void work() {
    uint64_t seen = 0;
    for (;;) {
      spin_until([&] {
        return generation_.load(std::memory_order_acquire) != seen ||
               stop_.load(std::memory_order_relaxed);
      });
      Job* job;
      {
        std::unique_lock<std::mutex> l(m_);
        wake_.wait(l, [&] {
          return stop_ ||
                 (job_ && generation_.load(std::memory_order_relaxed) != seen && wanted_ > 0);
        });
        if (stop_) return;
        seen = generation_.load(std::memory_order_relaxed);
        --wanted_;
        job = job_;
        job->refs.fetch_add(1, std::memory_order_relaxed);
      }
      drain(*job);
      {
        std::lock_guard<std::mutex> l(m_);
        if (job->refs.fetch_sub(1, std::memory_order_release) == 1) done_.notify_all();
      }
    }
  }
  std::mutex m_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> workers_;
  Job* job_ = nullptr;
  std::atomic<uint64_t> generation_{0};
  int wanted_ = 0;                // workers the current job may still take
  std::atomic<bool> stop_{false}; // set under the mutex; read by spinning workers without it
};

inline Pool& pool() {
  static Pool p;
  return p;
}

/// f(i) for i in [0, n) on up to `threads` threads (the caller included), items claimed one at
/// a time, or guided (see Job) when div > 0.
template <class F> void pool_for(int threads, ptrdiff_t n, F& f, ptrdiff_t div = 0) {
  if (threads <= 1 || n <= 1 || inside_job() || (pool_adapts() && !governor().allow())) {
    for (ptrdiff_t i = 0; i < n; ++i)
      f(i);
    return;
  }
  pool().run(
      threads, n, div,
      [](void* c, ptrdiff_t b, ptrdiff_t e) {
        for (ptrdiff_t i = b; i < e; ++i)
          (*static_cast<F*>(c))(i);
      },
      &f);
}

/// Threads worth using for `items` independent items of `work_per_item` each (1 = inline).
inline int threads_for(ptrdiff_t items, double work_per_item) {
  int nt = num_threads();
  if (nt <= 1 || items <= 1 || static_cast<double>(items) * work_per_item < kParallelMinWork)
    return 1;
  return static_cast<int>(std::min<ptrdiff_t>(nt, items));
}
} // namespace detail

/// f(i) for i in [0, n) over threads when n * work_per_item is large enough: guided runs of
/// contiguous items (each claim a 1/(2*threads) share of what is left), so the threads finish
/// within one item of each other. (Fixed chunks of n/(4*threads) items left up to a whole chunk
/// to one thread when the other started a few microseconds late: ResNet-50's 7x7 stem ran
/// 1.68x faster on two threads than on one.)
template <class F> inline void parallel_for(ptrdiff_t n, double work_per_item, F&& f) {
  const int nt = detail::threads_for(n, work_per_item);
  auto item = [&f](ptrdiff_t i) { f(i); };
  detail::pool_for(nt, n, item, 2 * static_cast<ptrdiff_t>(nt));
}

// ============================================================================================
// Scratch memory
// ============================================================================================

namespace detail {
struct AlignedBuffer {
  float* p = nullptr;
  size_t n = 0;
  AlignedBuffer() = default;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  ~AlignedBuffer() { std::free(p); }
  float* get(size_t floats) {
    if (floats > n) {
      std::free(p);
      size_t bytes = (floats * sizeof(float) + 63) / 64 * 64;
      p = static_cast<float*>(std::aligned_alloc(64, bytes));
      if (!p) {
        n = 0;
        throw std::bad_alloc();
      }
      n = floats;
    }
    return p;
  }
};
/// Per-thread growing buffers: slot 0 packs A blocks, slot 1 packs B blocks, slot 2 edge tiles,
/// slots 3-4 the depthwise convolution's grid and output, slot 5 a padded input row, slot 6 the
/// padded tap rows of a planar-input blocked convolution, slots 7-8 an int8 convolution's block
/// of pixels (row pointers, packed), slot 9 its rows' requantization parameters.
inline float* tls_buffer(int slot, size_t floats) {
  thread_local AlignedBuffer bufs[10];
  return bufs[slot].get(floats);
}
} // namespace detail

} // namespace triad_rt
