// page_alloc_shared.cc: the memory behind the shared pool's frames
// (__GFP_VMAPPABLE), which vmap() maps a second time. A frame of private
// anonymous memory has no name another mapping could use; a frame of a
// memfd has one, its file offset. So the pool's 2 MiB chunks are ranges of
// one memfd, grown as chunks are added, and each allocation above the chunk
// order has a memfd of its own. Giving memory back punches it out of the
// file (MADV_DONTNEED would only drop this mapping's page tables).
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <mutex>
#include <vector>

#include "page_alloc_internal.hpp"

namespace iov::internal {
namespace {

struct shared_file {
  std::mutex lock;
  int fd = -1;
  int64_t size = 0;                  // the file's length: every offset handed out is below it
  std::vector<int64_t> free_ranges;  // chunk offsets given back, punched out (read as zeroes)
};

shared_file& the_file() {
  static auto* f = new shared_file;  // never destroyed: threads may exit after main
  return *f;
}

int new_memfd(const char* name) { return memfd_create(name, MFD_CLOEXEC); }

// A chunk's offset in the file: a recycled one, or the file grown by a chunk.
bool take_offset(shared_file& f, int64_t* file_offset) {
  std::lock_guard g(f.lock);
  if (f.fd < 0 && (f.fd = new_memfd("iov-vmappable")) < 0)
    return false;
  if (!f.free_ranges.empty()) {
    *file_offset = f.free_ranges.back();
    f.free_ranges.pop_back();
    return true;
  }
  if (ftruncate(f.fd, static_cast<off_t>(f.size + CHUNK_SIZE)) != 0)
    return false;
  *file_offset = f.size;
  f.size += CHUNK_SIZE;
  return true;
}

void give_offset(shared_file& f, int64_t file_offset) {
  fallocate(f.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(file_offset), CHUNK_SIZE);
  std::lock_guard g(f.lock);
  f.free_ranges.push_back(file_offset);
}

}  // namespace

void* shared_chunk_map(int64_t* file_offset) noexcept {
  shared_file& f = the_file();
  if (!take_offset(f, file_offset))
    return nullptr;
  void* mem = map_aligned(CHUNK_SIZE, CHUNK_SIZE, f.fd, *file_offset);
  if (!mem) {
    give_offset(f, *file_offset);
    return nullptr;
  }
  // shmem rarely has huge pages (shmem_enabled is "never" by default), and
  // 512 faults cost twice one populating call (docs/memory.md): the chunk is
  // resident at once, as the default pool's is on a huge page. A kernel
  // before 5.14 refuses the call and the frames fault in one by one.
  madvise(mem, CHUNK_SIZE, MADV_POPULATE_WRITE);
  return mem;
}

void shared_chunk_unmap(void* base, int64_t file_offset) noexcept {
  munmap(base, CHUNK_SIZE);
  give_offset(the_file(), file_offset);
}

bool shared_release(void* addr, size_t bytes) noexcept { return madvise(addr, bytes, MADV_REMOVE) == 0; }

void* shared_direct_map(size_t bytes, int* fd) noexcept {
  *fd = new_memfd("iov-vmappable-direct");
  if (*fd < 0)
    return nullptr;
  void* mem = ftruncate(*fd, static_cast<off_t>(bytes)) == 0 ? map_aligned(bytes, bytes, *fd, 0) : nullptr;
  if (!mem)
    close(*fd);
  return mem;
}

void shared_direct_unmap(void* base, size_t bytes, int fd) noexcept {
  munmap(base, bytes);
  close(fd);  // the file's pages go with its last mapping
}

bool frame_backing(const page* p, int* fd, int64_t* file_offset) noexcept {
  auto addr = reinterpret_cast<uintptr_t>(p);
  void* r = region_of(addr);
  if (!r)
    return false;
  if (*static_cast<region_kind*>(r) == region_kind::chunk) {
    auto* c = static_cast<chunk*>(r);
    if (c->file_offset < 0)
      return false;
    *fd = the_file().fd;
    *file_offset = c->file_offset + static_cast<int64_t>(addr - c->base);
    return true;
  }
  auto* d = static_cast<direct_mapping*>(r);
  if (d->fd < 0)
    return false;
  *fd = d->fd;
  *file_offset = static_cast<int64_t>(addr - d->base);
  return true;
}

}  // namespace iov::internal
