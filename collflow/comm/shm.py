"""Intra-node all-reduce over shared memory, used by the MPI backend when every rank is on one host.

Why: on one host MPI copies every byte of an all-reduce through its own shared-memory
channels.  Here each rank's buffers can live in shared memory from the start (the fusion
buckets that gradients are computed into, the result buffers), so a rank reads its peers'
gradients where they were computed and writes the sums straight into every rank's result
buffer: one pass over the data, no copies.

Arenas.  Every rank owns one arena: a /dev/shm file it creates, which every rank of the node
maps and which is unlinked as soon as all have mapped it, so nothing outlives the job, even a
killed one.  A rank killed inside that handshake (milliseconds at start-up) leaves its file;
the file's name carries its creator's pid, and the next job of the same user on the host
removes files whose creator is gone (`remove_stale_arenas`).
An arena holds
  - a control block: the rank's phase counter (how many synchronisations it reached), its
    broken flag and message, and what it is doing: sequence number, piece, the collective's
    signature record, where its input and output are (offsets into its arena);
  - two staging areas (input, output) for arrays that are not in the arena;
  - a pool for the arrays `ShmWorld.empty` hands out (collectives on them need no staging).
The file is sparse; pages are reserved (posix_fallocate) before anything touches them, so a
full /dev/shm makes an allocation fall back to private memory instead of raising SIGBUS.

Algorithm, per piece of at most `staging` bytes (the number of pieces depends only on the
size, so every rank runs the same sequence of synchronisations):
  1. publish (seq, piece, record, input offset, output offset); arrive at the next phase and
     wait until every rank has; compare the published records: a mismatch is an error that
     names every rank's collective, raised on every rank;
  2. rank r owns elements [lo_r, hi_r) of the piece: it reduces them over all ranks' inputs
     in rank order and writes the result into every rank's output.  Each element is
     computed once, by its owner, so every rank gets the same bits;
  3. arrive at the next phase and wait: every output is complete and every input was read
     (the caller may reuse its buffers at once).
An input outside the arena is staged (only the parts other ranks read); an output outside
it receives the other owners' parts through the output staging area.

Memory ordering: a rank stores its data before its phase counter and loads a peer's counter
before the peer's data.  x86-64 keeps stores in order and loads in order (TSO), which is
what this relies on; other architectures use MPI's all-reduce (see `available`).  A wait (`run`)
calls `poll` (the communicator's MPI progress and failure notices) every millisecond, checks
the peers' broken flags, and past its deadline raises ShmTimeout with the missing ranks.
Nothing waits inside `advance`: a progress thread can move collectives on between the
computations of its rank without holding the interpreter in a spin.
"""
from __future__ import annotations

import ctypes
import mmap
import os
import platform
import threading
import time
import weakref
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .base import sleep_backoff

# the stages of one piece of an all-reduce (ShmOp.stage; see the module doc): publish the
# piece and arrive; reduce the owned range once every rank published; finish once every
# rank reduced (copy the staged parts out); done after the last piece
_PUBLISH, _REDUCE, _FINISH, _DONE = 0, 1, 2, 3

__all__ = ["ShmWorld", "ShmMismatch", "ShmPeerBroken", "ShmTimeout", "available"]

# control block: int64 words; the phase counter and the broken flag on their own cache lines
_W_ARRIVE = 0
_W_BROKEN = 8          # 0, or the failure code (the communicator's _FAIL_* codes)
_W_SEQ, _W_PIECE, _W_SRC, _W_DST, _W_COUNT = 16, 17, 18, 19, 20
_W_REC = 24            # the signature record body, _REC_BYTES bytes
_REC_BYTES = 248
_W_MSG_LEN = 63
_W_MSG = 64            # the broken message, up to _MSG_BYTES bytes
_MSG_BYTES = 1024
_CTL_BYTES = 64 << 10
_ALIGN = 64            # blocks and owners' element ranges start on a cache line
_CHECK_S = 1e-3        # a wait looks beyond the phase counters (poll, flags, clock) this often

_TSO_MACHINES = ("x86_64", "amd64", "i386", "i686", "x86")


class ShmMismatch(Exception):
    """Ranks published different collectives for the same phase: {rank: (seq, record body)}."""

    def __init__(self, published: Dict[int, Tuple[int, bytes]]):
        super().__init__("mismatched collectives")
        self.published = published


class ShmPeerBroken(Exception):
    """A peer marked its communicator broken (code, message)."""

    def __init__(self, rank: int, code: int, message: str):
        super().__init__(message)
        self.rank, self.code, self.message = rank, code, message


class ShmTimeout(Exception):
    """The wait for a phase passed its deadline; `missing` did not arrive."""

    def __init__(self, missing: List[int]):
        super().__init__("timeout")
        self.missing = missing


_OFF_DISABLED = "turned off (shm=False or COLLFLOW_SHM=0)"
_OFF_HOSTS = "the ranks span several hosts"
_OFF_PLATFORM = "it relies on x86-64 memory ordering"


def available(enabled: bool = True) -> Tuple[bool, str]:
    """Whether this process can use the engine at all (platform and settings), and why not."""
    if not enabled or os.environ.get("COLLFLOW_SHM", "1") == "0":
        return False, _OFF_DISABLED
    if platform.machine().lower() not in _TSO_MACHINES:
        return False, f"{_OFF_PLATFORM} (this is {platform.machine()})"
    if not os.path.isdir("/dev/shm") or not os.access("/dev/shm", os.W_OK):
        return False, "/dev/shm is missing or not writable"
    return True, ""


_ARENA_PREFIX = "collflow-"
STALE_AFTER_S = 60.0  # a handshake takes milliseconds: an older file of a dead pid is a leftover


def _arena_name(token: str, rank: int, pid: int) -> str:
    """The file name of `rank`'s arena (created by process `pid`); remove_stale_arenas parses it."""
    return f"{_ARENA_PREFIX}{os.getuid()}-{token}-{rank}-{pid}"


def remove_stale_arenas(directory: str = "/dev/shm", min_age_s: float = STALE_AFTER_S) -> List[str]:
    """Removes this user's arena files left by ranks killed during the start-up handshake:
    at once those whose creator (the pid in the name) no longer runs; those whose pid runs
    only when last modified over `min_age_s` ago (a handshake takes milliseconds, so the pid
    was reused).  The paths removed.  Best effort: errors (a file another rank removed
    first, an unreadable directory) are ignored."""
    removed: List[str] = []
    mine = f"{_ARENA_PREFIX}{os.getuid()}-"
    try:
        entries = os.listdir(directory)
    except OSError:
        return removed
    now = time.time()
    for name in entries:
        if not name.startswith(mine):
            continue
        parts = name[len(mine):].split("-")  # token, rank, pid
        if len(parts) != 3 or not parts[2].isdigit():
            continue  # not a name this module makes
        pid = int(parts[2])
        if pid == os.getpid():
            continue
        try:
            os.kill(pid, 0)
            alive = True  # the creator, in its handshake, or a reuse of its pid
        except ProcessLookupError:
            alive = False
        except OSError:  # e.g. EPERM: a process of that pid exists
            alive = True
        path = os.path.join(directory, name)
        try:
            if alive and now - os.stat(path).st_mtime < min_age_s:
                continue
            os.unlink(path)
            removed.append(path)
        except OSError:
            pass
    return removed


def expected_off(why: str) -> bool:
    """Whether `why` (from create) is an ordinary reason, not worth a log line."""
    return why.startswith((_OFF_DISABLED, _OFF_HOSTS, _OFF_PLATFORM))


def _env_mb(name: str, default: int) -> int:
    v = os.environ.get(name)
    if not v:
        return default << 20
    try:
        mb = float(v)
    except ValueError:
        raise ValueError(f"{name} must be a number of MiB, got {v!r}") from None
    if not mb > 0:
        raise ValueError(f"{name} must be positive, got {v!r}")
    return int(mb * (1 << 20))


_BLOCK_TYPES: Dict[int, type] = {}


def _block_type(nbytes: int) -> type:
    """A ctypes array type of `nbytes` whose instances take weak references: the exporter of
    an arena block, alive as long as any NumPy view of the block is (its base chain)."""
    t = _BLOCK_TYPES.get(nbytes)
    if t is None:
        if len(_BLOCK_TYPES) >= 1024:  # many sizes: start over (live blocks keep their types)
            _BLOCK_TYPES.clear()
        t = _BLOCK_TYPES[nbytes] = type(f"_Block{nbytes}", (ctypes.c_char * nbytes,), {})
    return t


class _Pool:
    """First-fit allocator over [start, end) of the own arena, reserving pages on first use.

    `release` is called by weakref finalizers, so it may run inside a garbage collection that
    starts while this thread is in alloc() or release() with the lock held: it only queues
    the block (list.append is atomic), and whoever holds the lock next puts it back."""

    def __init__(self, fd: int, start: int, end: int, reserved: int):
        self.fd = fd
        self.free: List[List[int]] = [[start, end - start]] if end > start else []
        self.reserved = reserved       # the file's pages [0, reserved) exist (never given back)
        self.frozen = False            # after a failure nothing is reused (peers may still write)
        self.lock = threading.Lock()
        self.in_use = 0
        self._released: List[Tuple[int, int]] = []

    def release(self, off: int, nbytes: int) -> None:
        self._released.append((off, nbytes))
        if self.lock.acquire(blocking=False):
            try:
                self._drain()
            finally:
                self.lock.release()

    def _drain(self) -> None:
        """(lock held) Puts the queued blocks back in the free list."""
        while self._released:
            off, nbytes = self._released.pop()
            if not self.frozen:
                self._put_back(off, -(-nbytes // _ALIGN) * _ALIGN)

    def alloc(self, nbytes: int) -> Optional[int]:
        size = -(-nbytes // _ALIGN) * _ALIGN
        with self.lock:
            self._drain()
            if self.frozen:
                return None
            for k, (off, avail) in enumerate(self.free):
                if avail >= size:
                    break
            else:
                return None
            end = off + size
            if end > self.reserved:
                try:
                    os.posix_fallocate(self.fd, self.reserved, end - self.reserved)
                except OSError:
                    return None  # /dev/shm is full: the caller uses private memory
                self.reserved = end
            if avail == size:
                del self.free[k]
            else:
                self.free[k] = [end, avail - size]
            self.in_use += size
            return off

    def _put_back(self, off: int, size: int) -> None:
        """(lock held) Returns [off, off + size) to the free list, merged with its neighbours."""
        self.in_use -= size
        free = self.free
        k = 0
        while k < len(free) and free[k][0] < off:
            k += 1
        free.insert(k, [off, size])
        if k + 1 < len(free) and off + size == free[k + 1][0]:
            free[k][1] += free[k + 1][1]
            del free[k + 1]
        if k > 0 and free[k - 1][0] + free[k - 1][1] == off:
            free[k - 1][1] += free[k][1]
            del free[k]


class ShmWorld:
    """The arenas of the ranks of one host and the all-reduce over them (see the module doc).

    Create with `ShmWorld.create(comm, ...)`, collectively over an mpi4py intracommunicator
    whose ranks all share this host; it returns (None, reason) where the engine cannot be used
    on some rank.  `start` describes one all-reduce; `advance` moves it on without waiting
    (a progress thread), `run` until it is complete (a waiting thread).  One thread at a time
    drives them, one collective after the other, in the same order on every rank.
    """

    def __init__(self, rank: int, size: int, fd: int, maps: List[mmap.mmap], arena: int, staging: int,
                 yield_cpu: bool):
        self.rank, self.size = rank, size
        self._fd = fd
        self._maps = maps
        self.arena_bytes = arena
        self.staging_bytes = staging
        self._yield = yield_cpu
        self._u8 = [np.frombuffer(m, dtype=np.uint8) for m in maps]
        self._ctl = [u[:_CTL_BYTES].view(np.int64) for u in self._u8]
        self._me = self._ctl[rank]
        self._peers = [p for p in range(size) if p != rank]
        self._stage_in = _CTL_BYTES
        self._stage_out = _CTL_BYTES + staging
        pool_start = _CTL_BYTES + 2 * staging
        self._pool = _Pool(fd, pool_start, arena, pool_start)
        self._base = ctypes.addressof(ctypes.c_char.from_buffer(maps[rank]))
        self._phase = 0
        self._closed = False
        self._scratch_bufs: List[Optional[np.ndarray]] = [None, None]

    def _scratch(self, size: int, dtype: Any, slot: int = 0) -> np.ndarray:
        """A temporary of `size` elements, reused from collective to collective (a fresh one of
        megabytes costs its page faults every time)."""
        nbytes = size * np.dtype(dtype).itemsize
        b = self._scratch_bufs[slot]
        if b is None or b.nbytes < nbytes:
            b = self._scratch_bufs[slot] = np.empty(max(nbytes, 1), np.uint8)
        return b[:nbytes].view(dtype)

    # -- creation (collective) ------------------------------------------------------------------
    @classmethod
    def create(cls, comm: Any, enabled: bool = True, yield_cpu: bool = False, arena_bytes: Optional[int] = None,
               staging_bytes: Optional[int] = None) -> Tuple[Optional["ShmWorld"], str]:
        """Maps every rank's arena, collectively over `comm` (an mpi4py intracommunicator;
        every rank calls it, also where `enabled` is False).  (world, "") or (None, why not):
        the world exists on every rank or on none."""
        from mpi4py import MPI
        rank, size = comm.Get_rank(), comm.Get_size()
        ok, why = available(enabled)
        try:
            arena = arena_bytes if arena_bytes is not None else _env_mb("COLLFLOW_SHM_ARENA_MB", 4096)
            # 16 MiB pieces: every piece costs two meeting points of all ranks, and a rank that
            # waits past a millisecond sleeps; a 16 MiB array from plain memory all-reduced in
            # 4 pieces instead of 1 measured 0.61x raw MPI against 0.73x (comm.allreduce) and
            # 0.91x against 1.28x (graph FusedAllReduce), bench_allreduce.py, np=2
            staging = staging_bytes if staging_bytes is not None else _env_mb("COLLFLOW_SHM_STAGING_MB", 16)
        except ValueError as e:
            ok, why, arena, staging = False, str(e), 0, 0
        staging = -(-staging // _ALIGN) * _ALIGN
        arena = max(arena, _CTL_BYTES + 2 * staging)
        why = _agree(comm, ok, why)
        if why:
            return None, why
        node = comm.Split_type(MPI.COMM_TYPE_SHARED)
        same_host = node.Get_size() == size
        node.Free()
        if not same_host:  # alike on every rank
            return None, _OFF_HOSTS
        # rank 0's token (the file names) and sizes: every rank must lay its arena out alike
        token, arena, staging = comm.bcast((os.urandom(8).hex(), arena, staging) if rank == 0 else None, root=0)
        remove_stale_arenas()
        # every rank's file name carries its pid: the ranks learn each other's
        pids = comm.allgather(os.getpid())
        names = [os.path.join("/dev/shm", _arena_name(token, r, pids[r])) for r in range(size)]
        fd = -1
        try:
            fd = os.open(names[rank], os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
            os.ftruncate(fd, arena)
            os.posix_fallocate(fd, 0, _CTL_BYTES + 2 * staging)
            ok, why = True, ""
        except OSError as e:
            ok, why = False, f"creating {names[rank]} ({arena} bytes) failed: {e}"
        why = _agree(comm, ok, why)
        maps: List[mmap.mmap] = []
        if not why:
            try:
                for r, name in enumerate(names):
                    if r == rank:
                        maps.append(mmap.mmap(fd, arena))
                    else:
                        pfd = os.open(name, os.O_RDWR)
                        try:
                            maps.append(mmap.mmap(pfd, arena))
                        finally:
                            os.close(pfd)
            except (OSError, ValueError) as e:
                why = f"mapping the arenas failed: {e}"
            why = _agree(comm, not why, why)  # also: every rank has mapped every arena
        if fd >= 0:
            try:
                os.unlink(names[rank])
            except OSError:
                pass
        if why:
            for m in maps:
                m.close()
            if fd >= 0:
                os.close(fd)
            return None, why
        return cls(rank, size, fd, maps, arena, staging, yield_cpu), ""

    def close(self) -> None:
        """Stops handing out blocks.  The mappings go when the last array on them does."""
        if self._closed:
            return
        self._closed = True
        self._pool.frozen = True
        try:
            os.close(self._fd)
        except OSError:
            pass

    # -- the pool ----------------------------------------------------------------------------------
    def block(self, nbytes: int) -> Optional[Any]:
        """`nbytes` of this rank's arena as a buffer object (its pages go back to the pool
        when it and every array on it are gone), or None when the pool has no room."""
        if nbytes <= 0 or self._closed:
            return None
        off = self._pool.alloc(nbytes)
        if off is None:
            return None
        b = _block_type(nbytes).from_buffer(self._maps[self.rank], off)
        f = weakref.finalize(b, self._pool.release, off, nbytes)
        f.atexit = False
        return b

    def empty(self, shape: Any, dtype: Any) -> Optional[np.ndarray]:
        """An uninitialised array in this rank's arena, or None when the pool has no room."""
        dt = np.dtype(dtype)
        shape = (int(shape),) if np.ndim(shape) == 0 else tuple(int(s) for s in shape)
        b = self.block(int(np.prod(shape, dtype=np.int64)) * dt.itemsize)
        # built on the block (not a reshaped view): the array is the base of every view of
        # it, as with np.empty, so reference counts tell whether anyone holds a view
        return None if b is None else np.ndarray(shape, dt, buffer=b)

    def offset_of(self, a: np.ndarray) -> int:
        """Where C-contiguous `a` starts in this rank's arena, or -1 if it is not inside it."""
        off = a.__array_interface__["data"][0] - self._base
        return off if 0 <= off and off + a.nbytes <= self.arena_bytes else -1

    @property
    def pool_in_use(self) -> int:
        """Bytes of the pool handed out and not yet released."""
        return self._pool.in_use

    def freeze(self) -> None:
        """After a failure: peers may still write into blocks of this rank, so none is reused."""
        self._pool.frozen = True

    # -- failure -----------------------------------------------------------------------------------
    def mark_broken(self, code: int, message: str) -> None:
        """Tells the peers (through the control block) that this rank's communicator broke."""
        me = self._me
        if me[_W_BROKEN]:
            return
        b = message.encode("utf-8")[:_MSG_BYTES]
        off = _W_MSG * 8
        self._u8[self.rank][off:off + len(b)] = np.frombuffer(b, dtype=np.uint8)
        me[_W_MSG_LEN] = len(b)
        me[_W_BROKEN] = code
        self.freeze()

    def published(self, p: int) -> Tuple[int, bytes]:
        """(sequence number, record body) of the collective rank p last entered here."""
        c = self._ctl[p]
        off = _W_REC * 8
        return int(c[_W_SEQ]), bytes(self._u8[p][off:off + _REC_BYTES])

    # -- the all-reduce ----------------------------------------------------------------------------
    def start(self, x: np.ndarray, out: np.ndarray, op: str, seq: int, record: bytes) -> "ShmOp":
        """An all-reduce of C-contiguous x into out (same shape and dtype; out may be x), to be
        advanced by `advance` or `run`.  `record`: the collective's signature body (ranks
        compare them), `seq` its number.  Collectives run one at a time, in the same order on
        every rank: start the next once this one is complete."""
        return ShmOp(x, out, op, seq, record.ljust(_REC_BYTES, b"\0")[:_REC_BYTES],
                     self.offset_of(x), self.offset_of(out), max(1, self.staging_bytes // x.itemsize))

    def check_broken(self) -> None:
        """Raises ShmPeerBroken if a peer marked its communicator broken."""
        for p in self._peers:
            c = self._ctl[p]
            code = int(c[_W_BROKEN])
            if code:
                n = int(c[_W_MSG_LEN])
                off = _W_MSG * 8
                msg = bytes(self._u8[p][off:off + n]).decode("utf-8", "replace")
                raise ShmPeerBroken(p, code, msg)

    def missing(self, o: "ShmOp") -> List[int]:
        """The peers that have not reached the phase `o` waits for."""
        return [p for p in self._peers if self._ctl[p][_W_ARRIVE] < o.phase]

    def run(self, o: "ShmOp", deadline: float, poll: Callable[[], None],
            conflicts: Callable[[bytes, bytes], bool]) -> None:
        """Advances `o` until it is complete.  Every millisecond of waiting it checks the
        peers' broken flags and calls `poll` (which may raise); past `deadline`
        (time.monotonic) it raises ShmTimeout naming the ranks that did not arrive."""
        start = next_check = 0.0
        while not self.advance(o, conflicts):
            now = time.monotonic()
            if not start:
                start, next_check = now, now + _CHECK_S
            elif now >= next_check:
                self.check_broken()
                poll()
                if now >= deadline:
                    raise ShmTimeout(self.missing(o))
                next_check = now + _CHECK_S
            sleep_backoff(start, now, self._yield)

    def advance(self, o: "ShmOp", conflicts: Callable[[bytes, bytes], bool]) -> bool:
        """Moves `o` on as far as it goes without waiting; True once it is complete.  Raises
        ShmMismatch when the ranks' records differ (`conflicts(mine, theirs)`)."""
        ctl = self._ctl
        while True:
            st = o.stage
            if st == _PUBLISH:    # publish piece k and arrive
                self._publish(o)
            elif st == _REDUCE:   # everyone published: reduce the owned range into every output
                for p in self._peers:
                    if ctl[p][_W_ARRIVE] < o.phase:
                        return False
                if o.k == 0:
                    self._compare(o.seq, o.record, conflicts)
                self._check_piece(o.k, o.m)
                self._reduce_owned(o)
                self._phase += 1
                o.phase = self._phase
                self._me[_W_ARRIVE] = o.phase
                o.stage = _FINISH
            elif st == _FINISH:   # every output is complete, every input read
                for p in self._peers:
                    if ctl[p][_W_ARRIVE] < o.phase:
                        return False
                if o.o_off < 0:  # the other owners' parts came through the output staging area
                    m, lo, hi, a = o.m, o.lo, o.hi, o.a
                    stg = self._u8[self.rank][self._stage_out:self._stage_out + m * o.isz].view(o.dtype)
                    if lo > 0:
                        np.copyto(o.os[a:a + lo], stg[:lo])
                    if hi < m:
                        np.copyto(o.os[a + hi:a + m], stg[hi:])
                o.k += 1
                o.stage = _PUBLISH if o.k < o.pieces else _DONE
            else:
                o.x = o.out = o.xs = o.os = None
                return True

    def _publish(self, o: "ShmOp") -> None:
        k, isz = o.k, o.isz
        a = k * o.per
        m = min(o.n, a + o.per) - a
        align = max(1, _ALIGN // isz)
        size = self.size
        lo = (m * self.rank // size) // align * align
        hi = m if self.rank == size - 1 else (m * (self.rank + 1) // size) // align * align
        o.a, o.m, o.lo, o.hi = a, m, lo, hi
        me = self._me
        if k == 0:
            roff = _W_REC * 8
            self._u8[self.rank][roff:roff + _REC_BYTES] = np.frombuffer(o.record, dtype=np.uint8)
            me[_W_SEQ] = o.seq
        if o.x_off < 0:  # staged: the parts the other owners read
            stg = self._u8[self.rank][self._stage_in:self._stage_in + m * isz].view(o.dtype)
            if lo > 0:
                np.copyto(stg[:lo], o.xs[a:a + lo])
            if hi < m:
                np.copyto(stg[hi:], o.xs[a + hi:a + m])
        me[_W_PIECE] = k
        me[_W_COUNT] = m
        me[_W_SRC] = self._stage_in if o.x_off < 0 else o.x_off + a * isz
        me[_W_DST] = self._stage_out if o.o_off < 0 else o.o_off + a * isz
        self._phase += 1
        o.phase = self._phase
        me[_W_ARRIVE] = o.phase   # last: peers read the fields above once they see it
        o.stage = _REDUCE

    def _reduce_owned(self, o: "ShmOp") -> None:
        """Rank r's elements [lo, hi) of the piece: reduced over every rank's input in rank
        order, written into this rank's output and every peer's.  (Doing it a cache-sized
        block at a time measured slower: 0.77-0.88 ms against 0.57 ms for 7.4 MB, 2 ranks.)"""
        lo, hi, a, isz, dt = o.lo, o.hi, o.a, o.isz, o.dtype
        if hi <= lo:
            return
        nb = (hi - lo) * isz
        srcs = []
        for p in range(self.size):
            if p == self.rank:
                srcs.append(o.xs[a + lo:a + hi])
            else:
                s0 = int(self._ctl[p][_W_SRC]) + lo * isz
                srcs.append(self._u8[p][s0:s0 + nb].view(dt))
        acc = o.os[a + lo:a + hi]
        _reduce(srcs, acc, o.op, self._scratch)
        for p in self._peers:
            d0 = int(self._ctl[p][_W_DST]) + lo * isz
            np.copyto(self._u8[p][d0:d0 + nb].view(dt), acc)

    def _compare(self, seq: int, mine: bytes, conflicts: Callable[[bytes, bytes], bool]) -> None:
        bad = {}
        for p in self._peers:
            pseq, body = self.published(p)
            if pseq != seq or conflicts(mine, body):
                bad[p] = (pseq, body)
        if bad:
            bad[self.rank] = (seq, mine)
            raise ShmMismatch(bad)

    def _check_piece(self, k: int, m: int) -> None:
        # equal records imply equal sizes; this guards the arithmetic all the same
        for p in self._peers:
            c = self._ctl[p]
            if int(c[_W_PIECE]) != k or int(c[_W_COUNT]) != m:
                raise ShmMismatch({p: self.published(p), self.rank: self.published(self.rank)})


class ShmOp:
    """The state of one all-reduce (ShmWorld.start): piece k of `pieces`, at `stage`
    0 (to publish), 1 (waiting for every rank to publish), 2 (waiting for every rank to
    have written its part), 3 (complete); `phase` is the phase it waits for."""

    __slots__ = ("x", "out", "op", "seq", "record", "xs", "os", "x_off", "o_off", "per", "n", "isz", "dtype",
                 "pieces", "k", "stage", "phase", "a", "m", "lo", "hi")

    def __init__(self, x: np.ndarray, out: np.ndarray, op: str, seq: int, record: bytes, x_off: int, o_off: int,
                 per: int):
        self.x, self.out, self.op, self.seq, self.record = x, out, op, seq, record
        self.xs, self.os = x.reshape(-1), out.reshape(-1)
        self.x_off, self.o_off, self.per = x_off, o_off, per
        self.n, self.isz, self.dtype = x.size, x.itemsize, x.dtype
        self.pieces = max(1, -(-self.n // per))
        self.k = self.phase = 0
        self.stage = _PUBLISH
        self.a = self.m = self.lo = self.hi = 0


_UFUNCS = {"sum": np.add, "max": np.maximum, "min": np.minimum, "prod": np.multiply}


def _scratch_alloc(size: int, dtype: Any, slot: int = 0) -> np.ndarray:
    return np.empty(size, dtype)


def _reduce(srcs: Sequence[np.ndarray], acc: np.ndarray, op: str,
            scratch: Callable[..., np.ndarray] = _scratch_alloc) -> None:
    """acc = op over srcs, in this order (always rank order, so where the buffers lie never
    changes the bits); acc may be one of srcs (an in-place all-reduce).  `scratch(size,
    dtype, slot)` gives reusable temporaries (slots 0 and 1).

    "mean" of floats is s0 + sum(s_r - s0) / n: differences of close values are exact, so
    the mean of equal arrays is that array, and of replicas a step apart it is rounded about
    once, like the step itself (sum / n rounds a sum of n full-size values: replicas averaged
    every step would creep by ulps).  Two ranks' (s0 + s1) / 2 has those properties already
    (one rounding; the halving is exact) in one pass less.  16-bit values are reduced in
    float32."""
    dt = acc.dtype
    n = len(srcs)
    with np.errstate(all="ignore"):  # IEEE results (inf, nan) as MPI gives them, no warnings
        if op == "mean" and n == 2 and dt.itemsize >= 4:
            np.add(srcs[0], srcs[1], out=acc)
            np.multiply(acc, acc.dtype.type(0.5), out=acc)
            return
        if op == "mean":
            wide = np.dtype(np.float32) if dt.itemsize < 4 else dt
            t = scratch(acc.size, wide, 0).reshape(acc.shape)
            np.subtract(srcs[1], srcs[0], out=t, dtype=wide)
            if n > 2:
                u = scratch(acc.size, wide, 1).reshape(acc.shape)
                for s in srcs[2:]:
                    np.subtract(s, srcs[0], out=u, dtype=wide)
                    t += u
            t /= wide.type(n)
            # reads only srcs[0] and t: acc may be any of the sources
            np.add(srcs[0], t, out=acc, dtype=wide, casting="same_kind")
            return
        if any(np.may_share_memory(acc, s) for s in srcs[2:]):
            # acc is written by the first step, before a later source it aliases is read
            t = scratch(acc.size, dt, 0).reshape(acc.shape)
            _reduce(srcs, t, op)
            np.copyto(acc, t)
            return
        if dt.kind == "b":
            f = np.logical_or if op == "max" else np.logical_and
        else:
            f = _UFUNCS[op]
        if dt.itemsize < 4 and dt.kind == "f" and op == "sum" and n > 2:
            # accumulate 16-bit sums in float32 (one rounding at the end, like a 2-rank sum)
            t = scratch(acc.size, np.float32, 0).reshape(acc.shape)
            np.add(srcs[0], srcs[1], out=t, dtype=np.float32)
            for s in srcs[2:]:
                np.add(t, s, out=t)
            np.copyto(acc, t, casting="same_kind")
            return
        f(srcs[0], srcs[1], out=acc)
        for s in srcs[2:]:
            f(acc, s, out=acc)


def _agree(comm: Any, ok: bool, why: str) -> str:
    """'' when every rank is ok, else a reason (this rank's, or that another rank failed)."""
    from mpi4py import MPI
    if comm.allreduce(1 if ok else 0, op=MPI.MIN):
        return ""
    return why or "it could not be set up on another rank"
