"""The host cache sizes blocked kernels aim at (kernels/host_cache.py)."""
from collflow.kernels import host_cache, nn_kernels


def test_sysfs_sizes_are_parsed_with_their_units():
    assert host_cache._parse_size("48K\n") == 48 << 10
    assert host_cache._parse_size("32M") == 32 << 20
    assert host_cache._parse_size("512") == 512
    assert host_cache._parse_size("") is None
    assert host_cache._parse_size("big") is None


def test_block_bytes_follow_the_l2_within_bounds(monkeypatch):
    assert host_cache.l2_bytes() > 0
    for l2, want in ((256 << 10, 1 << 20), (1 << 20, 4 << 20), (2 << 20, 8 << 20), (32 << 20, 16 << 20)):
        monkeypatch.setattr(host_cache, "l2_bytes", lambda l2=l2: l2)
        assert host_cache.block_bytes() == want


def test_unreadable_sysfs_falls_back(monkeypatch):
    host_cache.l2_bytes.cache_clear()
    monkeypatch.setattr(host_cache.glob, "glob", lambda pattern: [])
    try:
        assert host_cache.l2_bytes() == host_cache._DEFAULT_L2
    finally:
        host_cache.l2_bytes.cache_clear()


def test_im2col_chunks_cover_the_batch_in_cache_sized_pieces():
    per_image = 196 * 800 * 4  # the MNIST tutorial's second conv layer
    chunks = nn_kernels._chunks(nn_kernels.np, 50, per_image)
    assert chunks[0][0] == 0 and chunks[-1][1] == 50
    assert all(a == b_prev for (a, _), (_, b_prev) in zip(chunks[1:], chunks[:-1]))
    assert max(b - a for a, b in chunks) * per_image <= max(nn_kernels._CHUNK_BYTES_CPU, per_image)
