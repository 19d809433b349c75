// DataLoader: the batches of one epoch, in a fixed order, prepared ahead by
// background threads.
//
// Order: with shuffle, epoch e visits the examples in the order
// philox_permutation(size, seed, data_stream(Shuffle, e)) (data/draws.h),
// otherwise 0..size-1; batch b is positions [b * batch_size, (b + 1) * batch_size)
// of that order (the last one shorter unless drop_last). Batch b is made by
// dataset.get(its indices, seed, epoch), so its contents (augmentation
// included) depend only on (seed, epoch, b), never on the number of workers,
// thread timing or on which batches were asked for before: a run resumed at
// (epoch, first_batch) sees the same batches as an uninterrupted one.
//
// Workers: with workers > 0, that many threads call dataset.get for upcoming
// batches (at most 2 * workers batches ahead of the consumer) while the
// caller trains on the current one; next() hands batches out in order. With
// workers == 0, next() loads each batch itself. An exception thrown by
// dataset.get for batch b is rethrown by the next() that would return b.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "data/dataset.h"

namespace emu::data {

class DataLoader {
 public:
  // The dataset must outlive the loader.
  DataLoader(const Dataset& dataset, int64_t batch_size, bool shuffle, bool drop_last, uint64_t seed,
             int workers);
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  int64_t batches_per_epoch() const;
  // Begins epoch `epoch` at batch `first_batch` (0 .. batches_per_epoch());
  // abandons whatever the previous epoch had not handed out.
  void start_epoch(int64_t epoch, int64_t first_batch = 0);
  // The next batch of the epoch into `out`; false (out untouched) after the last.
  bool next(Batch& out);

  int64_t epoch() const { return epoch_; }
  // The index of the batch the next call to next() returns.
  int64_t next_batch() const { return next_out_; }
  // The example indices of batch b of the current epoch.
  std::vector<int64_t> batch_indices(int64_t b) const;
  // The example order of an epoch.
  static std::vector<int64_t> epoch_order(int64_t size, bool shuffle, uint64_t seed, int64_t epoch);

 private:
  struct Slot {
    Batch batch;
    std::exception_ptr error;
  };
  Slot load(int64_t b) const;
  void worker_loop();
  void stop_workers();

  const Dataset& dataset_;
  int64_t batch_size_;
  bool shuffle_, drop_last_;
  uint64_t seed_;
  int workers_;

  bool started_ = false;
  int64_t epoch_ = 0;
  std::vector<int64_t> order_;
  int64_t next_out_ = 0;  // next batch next() returns
  int64_t end_ = 0;       // batches in the epoch

  // Worker state, guarded by mutex_.
  std::mutex mutex_;
  std::condition_variable cv_;
  int64_t next_claim_ = 0;  // next batch a worker takes
  bool stop_ = false;
  std::map<int64_t, Slot> ready_;
  std::vector<std::thread> threads_;
};

}  // namespace emu::data
