#include "data/loader.h"

#include <numeric>
#include <stdexcept>
#include <string>

#include "data/draws.h"

namespace emu::data {

DataLoader::DataLoader(const Dataset& dataset, int64_t batch_size, bool shuffle, bool drop_last,
                       uint64_t seed, int workers)
    : dataset_(dataset),
      batch_size_(batch_size),
      shuffle_(shuffle),
      drop_last_(drop_last),
      seed_(seed),
      workers_(workers) {
  if (batch_size < 1)
    throw std::invalid_argument("DataLoader: batch_size must be >= 1, got " + std::to_string(batch_size));
  if (workers < 0)
    throw std::invalid_argument("DataLoader: workers must be >= 0, got " + std::to_string(workers));
}

DataLoader::~DataLoader() { stop_workers(); }

int64_t DataLoader::batches_per_epoch() const {
  int64_t n = dataset_.size();
  return drop_last_ ? n / batch_size_ : (n + batch_size_ - 1) / batch_size_;
}

std::vector<int64_t> DataLoader::epoch_order(int64_t size, bool shuffle, uint64_t seed, int64_t epoch) {
  if (shuffle) return philox_permutation(size, seed, data_stream(DataDraw::Shuffle, epoch));
  std::vector<int64_t> order(static_cast<size_t>(size));
  std::iota(order.begin(), order.end(), int64_t{0});
  return order;
}

std::vector<int64_t> DataLoader::batch_indices(int64_t b) const {
  if (!started_) throw std::logic_error("DataLoader: start_epoch() before asking for batches");
  if (b < 0 || b >= end_)
    throw std::out_of_range("DataLoader: batch " + std::to_string(b) + " out of range (" +
                            std::to_string(end_) + " batches per epoch)");
  int64_t begin = b * batch_size_;
  int64_t stop = std::min<int64_t>(begin + batch_size_, static_cast<int64_t>(order_.size()));
  return std::vector<int64_t>(order_.begin() + begin, order_.begin() + stop);
}

DataLoader::Slot DataLoader::load(int64_t b) const {
  Slot s;
  try {
    s.batch = dataset_.get(batch_indices(b), seed_, epoch_);
  } catch (...) {
    s.error = std::current_exception();
  }
  return s;
}

void DataLoader::stop_workers() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
  threads_.clear();
  ready_.clear();
  stop_ = false;
}

void DataLoader::start_epoch(int64_t epoch, int64_t first_batch) {
  stop_workers();
  epoch_ = epoch;
  order_ = epoch_order(dataset_.size(), shuffle_, seed_, epoch);
  end_ = batches_per_epoch();
  if (first_batch < 0 || first_batch > end_)
    throw std::out_of_range("DataLoader: first_batch " + std::to_string(first_batch) + " out of range (0.." +
                            std::to_string(end_) + ")");
  started_ = true;
  next_out_ = first_batch;
  next_claim_ = first_batch;
  for (int w = 0; w < workers_ && w < end_ - first_batch; ++w)
    threads_.emplace_back([this] { worker_loop(); });
}

void DataLoader::worker_loop() {
  const int64_t ahead = 2 * static_cast<int64_t>(workers_);
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || next_claim_ >= end_ || next_claim_ < next_out_ + ahead; });
    if (stop_ || next_claim_ >= end_) return;
    int64_t b = next_claim_++;
    lock.unlock();
    Slot s = load(b);
    lock.lock();
    ready_.emplace(b, std::move(s));
    cv_.notify_all();
  }
}

bool DataLoader::next(Batch& out) {
  if (!started_) throw std::logic_error("DataLoader: start_epoch() before next()");
  if (next_out_ >= end_) return false;
  Slot s;
  if (threads_.empty()) {
    s = load(next_out_);
  } else {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return ready_.count(next_out_) != 0; });
    auto it = ready_.find(next_out_);
    s = std::move(it->second);
    ready_.erase(it);
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++next_out_;
  }
  cv_.notify_all();
  if (s.error) std::rethrow_exception(s.error);
  out = std::move(s.batch);
  return true;
}

}  // namespace emu::data
