// BatchPipe: items pushed by one thread, consumed in the order pushed by a thread of its own.
//
// push() only appends to the producer's open batch; a full batch, or send(), hands it over
// under a lock, so an item costs its append and a batch one lock and one wake-up. At most
// `max_waiting` batches wait for the consumer: past that, send() blocks until the consumer
// takes one. That bounds the memory, and passes the consumer's pace back to the producer, as a
// full ring passes the collector's to the program. The consumer runs `consume` on each batch;
// a batch's vector is cleared and reused, so a steady stream allocates nothing.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace vramtrace::storage {

template <typename Item>
class BatchPipe {
 public:
  using Consume = std::function<void(std::vector<Item>& batch)>;

  BatchPipe(std::size_t batch_size, std::size_t max_waiting, Consume consume)
      : batch_size_(batch_size < 1 ? 1 : batch_size),
        max_waiting_(max_waiting < 1 ? 1 : max_waiting),
        consume_(std::move(consume)) {
    open_.reserve(batch_size_);
    thread_ = std::thread([this] { run(); });
  }
  ~BatchPipe() { stop(); }
  BatchPipe(const BatchPipe&) = delete;
  BatchPipe& operator=(const BatchPipe&) = delete;

  // Makes the item in the open batch from `args`, with no temporary item on the way.
  template <typename... Args>
  void push(Args&&... args) {
    open_.emplace_back(std::forward<Args>(args)...);
    if (open_.size() >= batch_size_) send();
  }

  // Hands the open batch to the consumer now, if it holds anything.
  void send() {
    if (open_.empty()) return;
    std::unique_lock lock(mutex_);
    has_space_.wait(lock, [this] { return waiting_.size() < max_waiting_; });
    waiting_.push_back(std::move(open_));
    ++sent_;
    if (spare_.empty()) {
      open_ = {};
      open_.reserve(batch_size_);
    } else {
      open_ = std::move(spare_.back());
      spare_.pop_back();
    }
    has_work_.notify_one();
  }

  // Sends the open batch and returns once every batch sent has been consumed.
  void drain() {
    send();
    std::unique_lock lock(mutex_);
    all_consumed_.wait(lock, [this] { return consumed_ == sent_; });
  }

  // Consumes everything pushed, then ends the consumer's thread. Later calls do nothing.
  void stop() {
    if (!thread_.joinable()) return;
    send();
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    has_work_.notify_one();
    thread_.join();
  }

 private:
  void run() {
    std::unique_lock lock(mutex_);
    for (;;) {
      has_work_.wait(lock, [this] { return !waiting_.empty() || stopping_; });
      if (waiting_.empty()) return;  // stopping, and everything consumed
      std::vector<Item> batch = std::move(waiting_.front());
      waiting_.pop_front();
      has_space_.notify_one();
      lock.unlock();
      consume_(batch);
      batch.clear();
      lock.lock();
      spare_.push_back(std::move(batch));
      ++consumed_;
      all_consumed_.notify_all();
    }
  }

  const std::size_t batch_size_, max_waiting_;
  const Consume consume_;
  std::vector<Item> open_;  // the producer's alone

  std::mutex mutex_;  // guards what follows
  std::condition_variable has_work_, has_space_, all_consumed_;
  std::deque<std::vector<Item>> waiting_;
  std::vector<std::vector<Item>> spare_;
  std::uint64_t sent_ = 0, consumed_ = 0;
  bool stopping_ = false;

  std::thread thread_;
};

}  // namespace vramtrace::storage
