"""tf.matching_files, read_file, write_file and train.match_filenames_once
(graph/ops/file_ops.py): sorted glob results, bytes kept through a round trip, clear errors,
and the TF1 pattern match_filenames_once -> string_input_producer -> read_file."""
import os

import numpy as np
import pytest

import collflow.compat.v1 as tf


def test_files_round_trip_and_errors(tmp_path):
    for name, body in (("b.txt", "beta"), ("a.txt", "alpha\n"), ("c.bin", "x")):
        (tmp_path / name).write_text(body)
    raw = bytes([0, 255, 10, 200])
    with tf.Graph().as_default():
        names = tf.matching_files(str(tmp_path / "*.txt"))
        both = tf.io.matching_files([str(tmp_path / "a*"), str(tmp_path / "*.bin")])
        fname = tf.placeholder(tf.string, [])
        content = tf.read_file(fname)
        out_path = str(tmp_path / "sub" / "out.bin")
        write = tf.io.write_file(out_path, content)
        once = tf.train.match_filenames_once(str(tmp_path / "*.txt"))
        with tf.Session() as s:
            assert list(s.run(names)) == [str(tmp_path / "a.txt").encode(), str(tmp_path / "b.txt").encode()]
            assert list(s.run(both)) == [str(tmp_path / "a.txt").encode(), str(tmp_path / "c.bin").encode()]
            assert s.run(content, {fname: str(tmp_path / "a.txt")}) == b"alpha\n"
            (tmp_path / "raw.bin").write_bytes(raw)
            s.run(write, {fname: str(tmp_path / "raw.bin")})
            with open(out_path, "rb") as f:
                assert f.read() == raw  # undecodable bytes survive the round trip
            assert not [n for n in os.listdir(tmp_path / "sub") if ".tmp" in n]
            with pytest.raises(tf.errors.NotFoundError, match="no such file"):
                s.run(content, {fname: str(tmp_path / "missing")})
            s.run(tf.local_variables_initializer())
            (tmp_path / "d.txt").write_text("late")  # after initialization: not in the list
            assert len(s.run(once)) == 2


def test_match_filenames_once_feeds_a_reader_pipeline(tmp_path):
    for i in range(3):
        (tmp_path / f"part{i}.txt").write_text(f"file {i}")
    with tf.Graph().as_default():
        files = tf.train.match_filenames_once(str(tmp_path / "part*.txt"))
        q = tf.train.string_input_producer(files, num_epochs=1, shuffle=False)
        body = tf.read_file(q.dequeue())
        with tf.Session() as s:
            s.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(s, coord)
            got = []
            try:
                while True:
                    got.append(s.run(body))
            except tf.errors.OutOfRangeError:
                pass
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=5)
    assert got == [b"file 0", b"file 1", b"file 2"]
    assert np.asarray(got).shape == (3,)
